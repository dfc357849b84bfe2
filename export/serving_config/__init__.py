"""A TF Serving base directory, added to and never rewritten (issue #35).

    BASE/NAME/VERSION/            a SavedModel (`export_saved_model`, atomic)
    BASE/models.config            TF Serving's model list: one `config { ... }`
                                  entry per model. zoo export adds its model's
                                  entry and keeps every other entry verbatim
                                  (comments and layout included).
    BASE/batching_parameters.txt  batching settings, and
    BASE/README.md                the server command: written only when absent
                                  or ours (their first line says so); a user's
                                  own file is kept, and ours goes beside it
                                  (batching_parameters.zoo.txt, README.zoo.md).

An entry for NAME that is not ours is a conflict, refused before the version
is written unless `overwrite` (--force), which points it at BASE/NAME: an
entry with another base_path (TF Serving would serve the other model under
the name), or BASE/NAME holding versions zoo did not write (TF Serving
serves the highest version, so ours would replace the user's). A
models.config this module cannot read is refused, never overwritten.

models.config is protobuf text format (a `ModelServerConfig`). Reading it
with tensorflow-serving-api would add a dependency for one message; a small
scanner suffices (`parse_text_proto`): strings with escapes, `#` comments,
`{}` and `<>` messages, lists, scalars. It keeps every field's offsets, so
an entry can be replaced or added without touching the rest of the text.

models.config is read only when it is a regular file of at most
`MAX_CONFIG_BYTES` (1 MB: an entry is about 150 bytes, a few hundred with a
version policy, so that is thousands of models; a 100 MB file would cost
gigabytes of tokens), and messages may nest `MAX_DEPTH` (32) levels (a
ModelServerConfig nests 5: model_config_list, config, model_version_policy,
specific, and a list), so a hostile file is refused with a line, not by
memory or Python's recursion limit.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import re

from zoo.utils.atomic import atomic_file, check_replaceable, written_by_zoo
from zoo.utils.jsonfile import read_json_object
from zoo.utils.safe_files import UnsafeFileError, open_regular, read_bounded

CONFIG = "models.config"
BATCHING = "batching_parameters.txt"
README = "README.md"
# Where ours go when the user has their own batching_parameters.txt / README.md.
OWN_BATCHING = "batching_parameters.zoo.txt"
OWN_README = "README.zoo.md"
# The first line of each file we write: how a later export knows it is ours.
BATCHING_HEADER = (
    "# written by `zoo export`, which rewrites this file; delete this line to keep "
    "your edits\n"
)
README_HEADER = (
    "<!-- written by `zoo export`, which rewrites this file; delete this line to keep "
    "your edits -->\n"
)
CONFIG_HEADER = (
    "# TF Serving's model list. `zoo export` adds its models' entries and keeps every "
    "other entry as it is.\n"
)
# Batching as an earlier zoo wrote it (no header line): still ours.
_BATCHING_BODY = (
    "max_batch_size { value: 32 }\n"
    "batch_timeout_micros { value: 5000 }\n"
    "max_enqueued_batches { value: 100 }\n"
    "num_batch_threads { value: 2 }\n"
)
_LEGACY_README = "# TF Serving models exported by `zoo export`\n"
VERSION_KINDS = ("saved_model", "tpu_saved_model")
MAX_CONFIG_BYTES = 1 << 20
MAX_DEPTH = 32
# How much of batching_parameters.txt / README.md is read to tell whether
# it is ours (by its first line, or equality with a few-line body).
_HEAD_BYTES = 1 << 16


class ServingBaseError(ValueError):
    """A TF Serving base that zoo export would have to overwrite to add a model."""


# --- protobuf text format --------------------------------------------------------


class TextProtoError(ValueError):
    """Text that is not protobuf text format; the message gives line and column."""


_TOKEN = re.compile(
    r"""
    (?P<space>\s+)
  | (?P<comment>\#[^\n]*)
  | (?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<number>-?(?:0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?[fFuUlL]*))
  | (?P<ident>[A-Za-z_][A-Za-z0-9_.]*)
  | (?P<punct>[{}<>\[\]:,;/-])
    """,
    re.VERBOSE,
)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "'": "'", "\\": "\\", "a": "\a",
            "b": "\b", "f": "\f", "v": "\v", "?": "?"}  # fmt: skip


@dataclasses.dataclass
class Field:
    """One field of a text proto: its name, its value (a decoded `str`, a
    `Scalar`'s text, a list of `Field`s for a message, or a tuple of values
    for `[...]`) and where it is in the text (`start` at its name, `end`
    after its value)."""

    name: str
    value: object
    start: int
    end: int

    def fields(self, name):
        return (
            [f for f in self.value if f.name == name]
            if isinstance(self.value, list)
            else []
        )

    def string(self, name):
        """The value of the string field `name`, or None."""
        found = [f.value for f in self.fields(name) if type(f.value) is str]
        return found[-1] if found else None


def _position(text, offset):
    line = text.count("\n", 0, offset) + 1
    return f"line {line}, column {offset - (text.rfind(chr(10), 0, offset) + 1) + 1}"


def _tokens(text):
    tokens, i = [], 0
    while i < len(text):
        m = _TOKEN.match(text, i)
        if m is None:
            what = "a string not closed on its line" if text[i] in "\"'" else repr(text[i])
            raise TextProtoError(f"{what} at {_position(text, i)}")
        if m.lastgroup not in ("space", "comment"):
            tokens.append((m.lastgroup, m.group(), m.start(), m.end()))
        i = m.end()
    return tokens


def _decode(literal, text, offset):
    body, out, i = literal[1:-1], [], 0
    while i < len(body):
        c = body[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        nxt = body[i + 1]
        if nxt in _ESCAPES:
            out.append(_ESCAPES[nxt])
            i += 2
        elif nxt in "01234567":
            digits = re.match(r"[0-7]{1,3}", body[i + 1 :]).group()
            out.append(chr(int(digits, 8)))
            i += 1 + len(digits)
        elif nxt in "xX" and re.match(r"[0-9a-fA-F]", body[i + 2 : i + 3]):
            digits = re.match(r"[0-9a-fA-F]{1,2}", body[i + 2 :]).group()
            out.append(chr(int(digits, 16)))
            i += 2 + len(digits)
        else:
            raise TextProtoError(
                f"unknown escape \\{nxt} in a string at {_position(text, offset)}"
            )
    return "".join(out)


class _Parser:
    def __init__(self, text, max_depth=MAX_DEPTH):
        self.text = text
        self.tokens = _tokens(text)
        self.i = 0
        self.depth = 0  # messages and lists open at this point
        self.max_depth = max_depth

    def enter(self, start):
        """One level deeper; refused past `max_depth`, long before Python's
        recursion limit (each level is three frames)."""
        self.depth += 1
        if self.depth > self.max_depth:
            raise TextProtoError(
                f"messages nested more than {self.max_depth} levels deep at "
                f"{_position(self.text, start)} (TF Serving's config nests 5)"
            )

    def peek(self):
        return (
            self.tokens[self.i]
            if self.i < len(self.tokens)
            else ("end", "", len(self.text), len(self.text))
        )

    def take(self, *expected):
        token = self.peek()
        if expected and token[1] not in expected:
            got = "the end of the file" if token[0] == "end" else repr(token[1])
            raise TextProtoError(
                f"expected {' or '.join(map(repr, expected))}, found {got} at "
                f"{_position(self.text, token[2])}"
            )
        self.i += 1
        return token

    def fields(self, closer=None):
        found = []
        while True:
            kind, value, start, _ = self.peek()
            if kind == "end":
                if closer is not None:
                    raise TextProtoError(
                        f"a message is not closed (no {closer!r}) at the end"
                    )
                return found
            if closer is not None and value == closer:
                return found
            found.append(self.field())

    def field(self):
        kind, name, start, end = self.take()
        if name == "[":  # an extension or Any: [type.name] or [domain/type.name]
            parts = []
            while self.peek()[1] != "]":
                if self.peek()[0] == "end":
                    raise TextProtoError(f"'[' not closed at {_position(self.text, start)}")
                parts.append(self.take()[1])
            self.take("]")
            name = "[" + "".join(parts) + "]"
        elif kind != "ident":
            raise TextProtoError(
                f"expected a field name, found {name!r} at {_position(self.text, start)}"
            )
        colon = self.peek()[1] == ":"
        if colon:
            self.take(":")
        nxt = self.peek()
        if nxt[1] in ("{", "<"):
            value, end = self.message()
        elif not colon:
            raise TextProtoError(
                f"expected ':' after {name!r} at {_position(self.text, nxt[2])}"
            )
        elif nxt[1] == "[":
            value, end = self.list()
        else:
            value, end = self.scalar()
        if self.peek()[1] in (",", ";"):
            self.take()
        return Field(name, value, start, end)

    def message(self):
        _, opener, start, _ = self.take("{", "<")
        self.enter(start)
        closer = "}" if opener == "{" else ">"
        value = self.fields(closer)
        self.depth -= 1
        return value, self.take(closer)[3]

    def list(self):
        self.enter(self.take("[")[2])
        values = []
        while self.peek()[1] != "]":
            if values:
                self.take(",")
            if self.peek()[1] in ("{", "<"):
                values.append(self.message()[0])
            else:
                values.append(self.scalar()[0])
        self.depth -= 1
        return tuple(values), self.take("]")[3]

    def scalar(self):
        kind, value, start, end = self.take()
        if kind == "string":
            parts = [_decode(value, self.text, start)]
            while self.peek()[0] == "string":  # adjacent strings concatenate
                _, more, at, end = self.take()
                parts.append(_decode(more, self.text, at))
            return "".join(parts), end
        if value == "-" and self.peek()[0] in ("ident", "number"):
            _, rest, _, end = self.take()
            return Scalar("-" + rest), end
        if kind in ("ident", "number"):
            return Scalar(value), end
        raise TextProtoError(
            f"expected a value, found {value!r} at {_position(self.text, start)}"
        )


class Scalar(str):
    """A non-string scalar's text (a number, an enum, true/false): not a string field."""


def parse_text_proto(text):
    """The top-level `Field`s of a protobuf text-format message."""
    return _Parser(text).fields()


# --- models.config ----------------------------------------------------------------


def _quote(value):
    return (
        '"'
        + str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        + '"'
    )


def config_entry(name, base_path, indent="  "):
    """models.config's entry for one model, as zoo export writes it."""
    inner = indent + "  "
    return (
        f"{indent}config {{\n"
        f"{inner}name: {_quote(name)}\n"
        f"{inner}base_path: {_quote(base_path)}\n"
        f'{inner}model_platform: "tensorflow"\n'
        f"{indent}}}\n"
    )


@dataclasses.dataclass
class ModelsConfig:
    """A parsed models.config: its text, the `config` entries of its
    model_config_list, and where that list closes (None: no list yet)."""

    path: pathlib.Path
    text: str
    entries: list
    close: int | None

    def named(self, name):
        return [e for e in self.entries if e.string("name") == name]

    def names(self):
        return [e.string("name") for e in self.entries if e.string("name")]


def read_models_config(base):
    """BASE/models.config, parsed (an empty one when there is none). Raises
    `ServingBaseError` for a file that cannot be read as TF Serving's
    ModelServerConfig with a model_config_list."""
    path = pathlib.Path(base) / CONFIG
    fix = (
        "zoo export adds its model to this file and never overwrites it: fix the file "
        "(TF Serving could not read it either), move it away, or give another --out."
    )
    if not path.exists() and not path.is_symlink():
        return ModelsConfig(path, "", [], None)
    if not path.is_file():
        raise ServingBaseError(f"{path} is not a file; {fix}")
    try:
        data = read_bounded(
            path,
            MAX_CONFIG_BYTES,
            "TF Serving's models.config lists each model in a few hundred bytes; zoo "
            "export adds to it and never overwrites it: fix the file, move it away, or "
            "give another --out",
        )
    except UnsafeFileError as e:
        raise ServingBaseError(str(e)) from None
    try:
        text = data.decode("utf-8")
        fields = parse_text_proto(text)
    except (OSError, UnicodeDecodeError, TextProtoError) as e:
        raise ServingBaseError(
            f"{path}: cannot read it as TF Serving's models.config ({e}); {fix}"
        ) from None
    lists = [f for f in fields if f.name == "model_config_list"]
    other = sorted({f.name for f in fields} - {"model_config_list"})
    if other or len(lists) > 1 or any(not isinstance(f.value, list) for f in lists):
        what = (
            f"top-level field(s) {', '.join(other)}"
            if other
            else "more than one model_config_list"
            if len(lists) > 1
            else "a model_config_list that is not a message"
        )
        raise ServingBaseError(
            f"{path}: {what} (zoo export adds to a single model_config_list). {fix}"
        )
    if not lists:
        return ModelsConfig(path, text, [], None)
    entries = lists[0].fields("config")
    if any(not isinstance(e.value, list) for e in entries):
        raise ServingBaseError(f"{path}: a `config` that is not a message. {fix}")
    return ModelsConfig(path, text, entries, lists[0].end - 1)


def _same_path(written, ours):
    if written is None:
        return False
    if written == str(ours):
        return True
    path = pathlib.Path(written)
    return path.is_absolute() and path.resolve() == ours


def _our_version(path):
    """A version directory zoo wrote: its marker, or (an older zoo's) a
    metadata.json saying it is a zoo SavedModel."""
    if written_by_zoo(path):
        return True
    try:
        meta = read_json_object(path / "metadata.json")
    except (OSError, ValueError):  # unreadable, too large, or nested too deep
        return False
    return isinstance(meta, dict) and meta.get("kind") in VERSION_KINDS


def _versions(model_dir):
    if not model_dir.is_dir():
        return []
    return sorted(
        (p for p in model_dir.iterdir() if p.is_dir() and p.name.isdigit()),
        key=lambda p: int(p.name),
    )


def conflicts(base, name):
    """Why adding BASE/NAME to BASE's TF Serving config would take something
    from the user (empty when nothing would): an entry NAME serving another
    path, or versions under BASE/NAME that zoo did not write."""
    base = pathlib.Path(base)
    ours = (base / name).resolve()
    config = read_models_config(base)
    found = []
    for entry in config.named(name):
        written = entry.string("base_path")
        if not _same_path(written, ours):
            found.append(
                f"{config.path} serves another model as {name!r} (base_path "
                f"{written!r}, not {str(ours)!r})"
            )
    theirs = [p.name for p in _versions(base / name) if not _our_version(p)]
    if theirs:
        found.append(
            f"{base / name} holds version(s) {', '.join(theirs)} that zoo did not write "
            "(TF Serving serves the highest version: a new one would replace them)"
        )
    return found


def check_serving_base(base, name, version=None, *, overwrite=False):
    """Everything that would refuse adding BASE/NAME/VERSION, checked before
    anything is written: BASE or BASE/NAME a file, models.config unreadable,
    a conflict (`conflicts`) without `overwrite`, an existing VERSION without
    `overwrite` or not written by zoo."""
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", str(name)):
        raise ServingBaseError(
            f"--name {name!r}: use letters, digits, '_', '.', '-' (it is a directory "
            "under the base and a URL path component)."
        )
    base = pathlib.Path(base)
    for path in (base, base / name):
        if path.exists() and not path.is_dir():
            raise ServingBaseError(
                f"{path} is a file; TF Serving's layout needs a directory there "
                "(BASE/NAME/VERSION). Give another --out or --name."
            )
    found = conflicts(base, name)
    if found and not overwrite:
        raise ServingBaseError(
            "; ".join(found)
            + f". Choose another --name, or pass --force to point {name!r} at {base / name} "
            "(the other model's files stay where they are)."
        )
    if version is not None:
        path = base / name / str(version)
        if path.exists() and (path.is_file() or any(path.iterdir())):
            if not overwrite:
                raise FileExistsError(
                    f"{path} already exists; choose another --version (default: the next "
                    "one), or pass --force to replace it (only a version zoo wrote)."
                )
            check_replaceable(path, "--force")


def _merged_config(base, name, overwrite):
    """models.config's new text with BASE/NAME's entry, or None when it
    already has that entry."""
    base = pathlib.Path(base)
    ours = (base / name).resolve()
    config = read_models_config(base)
    same = config.named(name)
    if same and all(_same_path(e.string("base_path"), ours) for e in same):
        return None
    if same and not overwrite:
        raise ServingBaseError("; ".join(conflicts(base, name)))
    text = config.text
    if same:
        # --force: the first entry of that name becomes ours; the rest go
        # (TF Serving refuses a name listed twice).
        first = same[0]
        indent = text[text.rfind("\n", 0, first.start) + 1 : first.start]
        indent = indent if indent and not indent.strip() else "  "
        pieces, at = [], 0
        for e in same:
            pieces.append(text[at : e.start])
            if e is first:  # the span runs from `config` to its `}`
                pieces.append(config_entry(name, ours, indent).strip())
            at = e.end
        pieces.append(text[at:])
        return "".join(pieces)
    entry = config_entry(name, ours)
    if config.close is None:  # no model_config_list yet
        header = "" if text.strip() else CONFIG_HEADER
        separator = "" if not text or text.endswith("\n") else "\n"
        return f"{header}{text}{separator}model_config_list {{\n{entry}}}\n"
    line_start = text.rfind("\n", 0, config.close) + 1
    if text[line_start : config.close].strip():  # `... }` on one line: a new line
        return text[: config.close] + "\n" + entry + text[config.close :]
    return text[:line_start] + entry + text[line_start:]


def _ours(path, header, legacy):
    """Whether a file of BASE is ours to rewrite: absent, or starting with
    our header line (or an older zoo's text)."""
    if not path.exists() and not path.is_symlink():
        return True
    if path.is_symlink() or not path.is_file():
        return False
    try:
        # Ours are a few kB: the head decides (a longer file is not equal to
        # our body, and only our first line counts).
        with open_regular(path, "rb") as f:
            text = f.read(_HEAD_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return False
    return text.startswith(header) or legacy(text)


def _target(base, name, own, header, legacy, kept):
    """Where to write BASE/NAME: there when it is ours (`_ours`), else at
    BASE/OWN (noting the user's file in `kept`), else nowhere (None)."""
    path = base / name
    if _ours(path, header, legacy):
        return path
    kept.append(path)
    if _ours(base / own, header, lambda text: False):
        return base / own
    kept.append(base / own)
    return None


def _write(path, text):
    with atomic_file(path, "w") as f:
        f.write(text)
    # Readable by the server's user (a temporary file is created 0600).
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(path, 0o666 & ~umask)


def write_serving_files(base_dir, name=None, *, overwrite=False):
    """Add BASE/NAME to BASE/models.config (every other entry kept verbatim)
    and write the batching parameters and the README with the server
    command where they are ours. `name=None` adds every BASE/NAME that holds
    a version zoo wrote. Returns what was written and kept:
    `{"command", "models_config", "batching", "readme", "kept"}`."""
    base = pathlib.Path(base_dir).resolve()
    if name is None:
        names = sorted(
            p.name
            for p in base.iterdir()
            if p.is_dir() and any(map(_our_version, _versions(p)))
        )
    else:
        names = [name]
    for n in names:
        text = _merged_config(base, n, overwrite)
        if text is not None:
            _write(base / CONFIG, text)
    served = read_models_config(base).names()
    kept = []
    batching = _target(
        base, BATCHING, OWN_BATCHING, BATCHING_HEADER, _BATCHING_BODY.__eq__, kept
    )
    # Requests carry a handful of texts; batch them server-side. Sizes match
    # what a 2-4 core CPU server sustains at sequence length 128; raise
    # max_batch_size on bigger machines.
    if batching is not None:
        _write(batching, BATCHING_HEADER + _BATCHING_BODY)
    else:  # both are the user's: the server command names theirs
        batching = base / BATCHING
    command = (
        "tensorflow_model_server --port=8500 --rest_api_port=8501 \\\n"
        f"  --model_config_file={base / CONFIG} \\\n"
        "  --enable_batching=true \\\n"
        f"  --batching_parameters_file={batching}"
    )
    readme = _target(
        base,
        README,
        OWN_README,
        README_HEADER,
        lambda t: t.startswith(_LEGACY_README),
        kept,
    )
    first = (names or served or ["NAME"])[0]
    if readme is not None:
        _write(
            readme, README_HEADER + _readme(base, served, first, command, batching, kept)
        )
    return {
        "command": command,
        "models_config": base / CONFIG,
        "batching": batching,
        "readme": readme,
        "kept": kept,
    }


def _readme(base, served, first, command, batching, kept):
    note = ""
    if kept:
        note = (
            "\nKept as they were (yours, not written by zoo export): "
            + ", ".join(f"`{p.name}`" for p in kept)
            + ".\n"
        )
    return f"""# TF Serving models exported by `zoo export`

Models in `models.config`: {", ".join(served) or "(none)"}. Each `NAME/VERSION/` that
zoo export wrote is a SavedModel; TF Serving serves the highest version and picks up
new ones as they appear (each version is published by an atomic rename, so the
server never sees a half-written one). zoo export adds its models' entries to
`models.config` and keeps every other entry as it is.
{note}
Serve them:

```
{command}
```

The binary must be a build that links tensorflow-text's ops (the stock
`tensorflow/serving` images do since 2.x; the text-in signatures need
`FastWordpieceTokenizer` and `tf.strings` ops). Docker:

```
docker run -p 8500:8500 -p 8501:8501 -v {base}:{base} tensorflow/serving:2.20.0 \\
  --model_config_file={base / CONFIG} --enable_batching=true \\
  --batching_parameters_file={batching}
```

Query (REST, raw text in):

```
curl -s -d '{{"signature_name": "serving_default", "inputs": {{"text": ["The striker scored twice."]}}}}' \\
  localhost:8501/v1/models/{first}:predict
```

Text-in models (metadata.json `kind: saved_model`) have the signatures
`serving_default` (text), `serve_text_pair` (text, text_b), `serve_ids` (token_ids,
segment_ids, padding_mask; int32 [B, T]) and `tokenize`; TPU models
(`kind: tpu_saved_model`) take ids at fixed bucket shapes (`serve_ids_L128`, ...),
tokenized on the host with the version's vocab.txt. Each version directory holds `metadata.json` (labels, sequence length, vocabulary sha256),
`manifest.json` (sha256 of every file) and `validation.json` (the comparison with the
Keras model in TF Serving's own loader path).
"""
