"""Exporters: SavedModel for TF Serving and TPU, `.tflite` for phones, each
validated in the runtime that will serve it.

    from export import Quantization, ServingVersion, Validation, export_saved_model, ...
    export_saved_model(model, tokenizer, "serving", serving=ServingVersion("bbc"),
                       validation=Validation(texts))
    export_tflite(model, tokenizer, "exports/bbc_dyn",
                  quantization=Quantization("dynamic_int8"),
                  validation=Validation(texts, labels))
    validate_artifact("exports/bbc_dyn", texts, labels, reference_model=model)

Modules, bottom to top: `manifest` (files beside every artifact) and
`runtime` (LiteRT and the TF1 session loader) -> `validate` -> the formats
`saved_model` and `tflite`, which never import each other; `specs` (the
exporters' grouped arguments: `Validation`, `ServingVersion`, `TpuBuckets`,
`Signatures`; `Quantization` is export.tflite's) sits below both.
"""

# Imported for its registration: export.mediapipe registers its file checks
# and its derived-file comparison with export.consistency, which the generic
# loaders run without importing it.
from export import mediapipe  # noqa: F401
from export.manifest import ManifestError, verify_manifest
from export.runtime import load_interpreter, load_saved_model
from export.saved_model import XlaLoweringError, export_saved_model, export_tpu_saved_model
from export.specs import ServingVersion, Signatures, TpuBuckets, Validation
from export.tflite import (
    QUANTIZATION_MODES,
    Quantization,
    TFLiteConversionError,
    export_tflite,
)
from export.validate import (
    REGRESSION_THRESHOLDS,
    THRESHOLDS,
    ExportValidationError,
    format_report,
    validate_artifact,
)
from zoo.text.readers import read_data

__all__ = [
    "QUANTIZATION_MODES",
    "REGRESSION_THRESHOLDS",
    "THRESHOLDS",
    "ExportValidationError",
    "ManifestError",
    "Quantization",
    "ServingVersion",
    "Signatures",
    "TFLiteConversionError",
    "TpuBuckets",
    "Validation",
    "XlaLoweringError",
    "export_saved_model",
    "export_tflite",
    "export_tpu_saved_model",
    "format_report",
    "load_interpreter",
    "load_saved_model",
    "read_data",
    "validate_artifact",
    "verify_manifest",
]
