"""The entry point, `check_artifact`: the `kind` metadata.json gives
against the files present, then that kind's checks."""

from __future__ import annotations

import pathlib

from export.consistency.refuse import _refuse
from export.consistency.saved_model_checks import check_saved_model_artifact
from export.consistency.tflite_checks import check_tflite_artifact


def check_artifact(directory, meta):
    """`check_tflite_artifact` or `check_saved_model_artifact`, by `kind`;
    also that the kind matches the files (a `.tflite` directory, or one with
    saved_model.pb)."""
    directory = pathlib.Path(directory)
    has_graph = (directory / "saved_model.pb").is_file()
    if meta["kind"] == "tflite":
        if has_graph or not any(directory.glob("*.tflite")):
            _refuse(
                directory,
                "kind",
                "it says tflite but the directory holds a SavedModel or no .tflite file",
            )
        check_tflite_artifact(directory, meta)
    else:
        if not has_graph:
            _refuse(
                directory, "kind", f"it says {meta['kind']} but there is no saved_model.pb"
            )
        check_saved_model_artifact(directory, meta)
