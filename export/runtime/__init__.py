"""The runtimes that serve an exported artifact, as the validator and every
loader use them: LiteRT's interpreter for `.tflite` files, and for
SavedModels the TF1 session loader (the restore path of TF Serving's C++
loader) in a fresh process running `export/tf1_worker.py`. An artifact is
opened once (`open_artifact`: manifest.json, metadata.json, the model files
against it); the `OpenedArtifact` it returns is what every loader and runner
takes (given a directory instead, they open it first).

    artifact = open_artifact("exports/bbc_dyn")
    interpreter = load_interpreter(artifact)
    runs = run_tflite(artifact, texts)      # tokenized with artifact.tokenizer

The package, one job a module, bottom to top: `opened` (`open_artifact`, the
checks every loader needs, run once, and the `OpenedArtifact` they give),
`loading` (LiteRT's interpreter and checked signatures, TensorFlow's
SavedModel loader), `budget` (how many texts each run takes, the latency
calls and the interpreters that share the rest), `litert_run` (`run_tflite`)
and `tf1_run` (`run_saved_model` in the TF1 worker process, and
`run_worker`, which never lets that process outlive the call). This module
re-exports their names.
"""

from __future__ import annotations

from export.runtime.budget import (
    DERIVED_SAMPLE_TEXTS,
    LATENCY_RUNS,
    MAX_VALIDATION_WORKERS,
    SECONDARY_TEXTS,
    validation_workers,
)
from export.runtime.litert_run import run_tflite
from export.runtime.loading import (
    MODEL_FILE,
    ArtifactLoadError,
    CheckedSignature,
    TextBatchRunner,
    invoke,
    load_interpreter,
    load_saved_model,
    load_signature,
)
from export.runtime.opened import OpenedArtifact, open_artifact
from export.runtime.tf1_run import TF1_WORKER, run_saved_model, run_tf1, run_worker

# The names importable from export.runtime, wherever in the package they live.
__all__ = [
    "DERIVED_SAMPLE_TEXTS",
    "LATENCY_RUNS",
    "MAX_VALIDATION_WORKERS",
    "MODEL_FILE",
    "SECONDARY_TEXTS",
    "TF1_WORKER",
    "ArtifactLoadError",
    "CheckedSignature",
    "OpenedArtifact",
    "TextBatchRunner",
    "invoke",
    "load_interpreter",
    "load_saved_model",
    "load_signature",
    "open_artifact",
    "run_saved_model",
    "run_tf1",
    "run_tflite",
    "run_worker",
    "validation_workers",
]
