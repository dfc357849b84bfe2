"""How the checks refuse an artifact: a metadata.json field that disagrees
with the model files beside it (`_refuse`, naming the field), or a model
file its runtime cannot parse (`ModelFileError`)."""

from __future__ import annotations

import pathlib

from export import manifest as mf


def _refuse(directory, field, problem):
    raise mf.MetadataError(
        f"{pathlib.Path(directory) / mf.METADATA}: `{field}`: {problem}. metadata.json does "
        "not describe the model files beside it (a file was replaced or edited, and the "
        "manifest regenerated); refusing the artifact. Restore it from the original export "
        "or re-export it with `zoo export`."
    )


class ModelFileError(ValueError):
    """A model file of an artifact (a `.tflite`, `saved_model.pb`) that its
    runtime cannot parse: truncated, or not that kind of file."""
