"""Exporters: SavedModel for TF Serving and TPU, `.tflite` for phones, each
validated in the runtime that will serve it.

    from export import export_saved_model, export_tflite, validate_artifact
    export_saved_model(model, tokenizer, "serving", name="bbc", validation_texts=texts)
    export_tflite(model, tokenizer, "exports/bbc_dyn", quantize="dynamic_int8",
                  validation_texts=texts, validation_labels=labels)
    validate_artifact("exports/bbc_dyn", texts, labels, reference_model=model)

Names resolve on first use (each submodule loads when one of its names is asked for).
"""

import importlib

_EXPORTS = {
    "export_saved_model": "export.saved_model",
    "export_tpu_saved_model": "export.saved_model",
    "load_saved_model": "export.saved_model",
    "XlaLoweringError": "export.saved_model",
    "export_tflite": "export.tflite",
    "load_interpreter": "export.tflite",
    "TFLiteConversionError": "export.tflite",
    "QUANTIZATION_MODES": "export.tflite",
    "validate_artifact": "export.validate",
    "format_report": "export.validate",
    "read_data": "export.validate",
    "ExportValidationError": "export.validate",
    "THRESHOLDS": "export.validate",
    "ManifestError": "export.manifest",
    "verify_manifest": "export.manifest",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'export' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)


def __dir__():
    return __all__
