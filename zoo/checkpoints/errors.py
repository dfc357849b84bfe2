"""Errors raised by checkpoint loaders."""


class CheckpointMismatchError(ValueError):
    """The checkpoint's tensors do not fit the model.

    `problems` lists every offending tensor as `(name, expected, actual)`,
    where `expected`/`actual` are shapes or the word "missing"/"unexpected".
    """

    def __init__(self, source, problems):
        self.source = str(source)
        self.problems = list(problems)
        lines = [
            f"Checkpoint {self.source} does not fit the model: "
            f"{len(self.problems)} tensor(s) differ (name: expected -> found):"
        ]
        for name, expected, actual in self.problems:
            lines.append(f"  {name}: {expected} -> {actual}")
        lines.append(
            "Check that the config (bert_config.json / config.json) belongs to these "
            "weights; pass allow_partial=True to load the matching tensors anyway."
        )
        super().__init__("\n".join(lines))


class SafetensorsFileError(ValueError):
    """A `model.safetensors` file that breaks the format's rules, or whose
    tensors cannot be what the model expects (a dtype, a shape against
    config.json). The message is one line: the file, the field or tensor,
    what it holds, and what to do."""
