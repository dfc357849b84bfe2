"""Re-load an exported artifact in the runtime that will serve it and compare it
with the Keras float32 model, text by text.

    report = validate_artifact("exports/bbc_int8", texts, labels, reference_model=model)
    print(format_report(report))

Runtimes: a `.tflite` runs in LiteRT's `Interpreter` (the text-in file in
`InterpreterWithCustomOps` with tensorflow-text's kernels); a SavedModel runs
in a FRESH Python process through the TF1 session loader
(`tf.compat.v1.saved_model.loader.load`), the restore path of TF Serving's C++
loader, which imports nothing but TensorFlow and tensorflow-text. Every
loader checks manifest.json first.

Measured per signature: max and mean |difference| of the outputs (logits, or
start/end logits; over real tokens for per-token outputs), cosine between
output vectors, label agreement (argmax, or best span for QA), accuracy of
both models and its delta when labels are given, file size, batch-1 latency.
`THRESHOLDS` holds the per-profile limits; a miss raises
`ExportValidationError` carrying the report, unless `allow_degraded=True`,
which records the miss in the report (`"degraded": true`) instead.

The first sequence length of a multi-length file is its primary one and gets
every validation text; the other lengths get the first `SECONDARY_TEXTS`.

The package: `limits` (the thresholds and the error a miss raises),
`reference` (the Keras reference and its outputs), `metrics` (outputs
compared), `claims` (the answers recorded at export, checked again),
`runs` (the artifact in its runtime, a report row per signature), `report`
(the report, its failures, its table and file) and `artifact` (the entry
points, `validate_artifact` and `validate_new_artifact`); this module
re-exports their names.
"""

from __future__ import annotations

from export.mediapipe_probes import mediapipe_probes, mediapipe_probes_line
from export.validate.artifact import (
    PROBE_TEXTS,
    check_validation_texts,
    validate_artifact,
    validate_new_artifact,
)
from export.validate.claims import answers, check_claims, texts_sha256
from export.validate.limits import (
    LATENCY_RUNS,
    LOWER_IS_BETTER,
    MIN_VALIDATION_TEXTS,
    REGRESSION_THRESHOLDS,
    REPORT,
    SECONDARY_TEXTS,
    THRESHOLDS,
    ExportValidationError,
    check_thresholds,
    thresholds,
)
from export.validate.metrics import artifact_only_metrics, best_spans, compare
from export.validate.reference import keras_outputs
from export.validate.report import format_report, write_report

# The names importable from export.validate, wherever in the package they
# live (`mediapipe_probes` and its line come from export.mediapipe_probes).
__all__ = [
    "LATENCY_RUNS",
    "LOWER_IS_BETTER",
    "MIN_VALIDATION_TEXTS",
    "PROBE_TEXTS",
    "check_validation_texts",
    "REGRESSION_THRESHOLDS",
    "REPORT",
    "SECONDARY_TEXTS",
    "THRESHOLDS",
    "ExportValidationError",
    "answers",
    "artifact_only_metrics",
    "best_spans",
    "check_claims",
    "check_thresholds",
    "compare",
    "format_report",
    "keras_outputs",
    "mediapipe_probes",
    "mediapipe_probes_line",
    "texts_sha256",
    "thresholds",
    "validate_artifact",
    "validate_new_artifact",
    "write_report",
]
