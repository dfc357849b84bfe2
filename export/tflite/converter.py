"""Conversion: a SavedModel's signatures to `.tflite` bytes with built-in
ops only, in one of the converter's quantization modes; a Flex or
unregistered custom op fails the export, not the phone."""

from __future__ import annotations

import tensorflow as tf

from export.manifest.metadata import QUANTIZATION_MODES
from export.tflite.flatbuffer import op_list
from export.tflite.quantization import INT8_FLOAT_OPS
from zoo.utils.native_log import filtered_stderr


class TFLiteConversionError(RuntimeError):
    """The model cannot become a built-in-ops-only `.tflite`."""


def convert(
    saved_model_dir, signature_keys, quantize, representative=None, allow_custom_ops=False
):
    """Convert with built-in ops only; bytes of the `.tflite`.

    `allow_custom_ops` admits tensorflow-text's registered TFLite kernels (the
    text-in file); a Flex op is refused either way.
    """
    if quantize not in QUANTIZATION_MODES or quantize == "int4":
        raise ValueError(
            f"quantize={quantize!r}: the converter takes one of "
            f"{', '.join(m for m in QUANTIZATION_MODES if m != 'int4')} (int4 is applied to "
            "the float32 file by `quantize_int4`)."
        )
    converter = tf.lite.TFLiteConverter.from_saved_model(
        str(saved_model_dir), signature_keys=list(signature_keys)
    )
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
    converter.allow_custom_ops = allow_custom_ops
    if quantize == "float16":
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
        converter.target_spec.supported_types = [tf.float16]
    elif quantize == "dynamic_int8":
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
    elif quantize == "int8":
        if representative is None:
            raise ValueError("quantize='int8' needs representative texts for calibration.")
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
        converter.representative_dataset = representative
    try:
        # The converter's absl log lines ignore TF_CPP_MIN_LOG_LEVEL; the
        # known-harmless ones are dropped, anything else still shows.
        with filtered_stderr():
            if quantize == "int8":
                # Dense layers and the embedding in int8 (weights and
                # activations), INT8_FLOAT_OPS in float (module docstring);
                # inputs stay int32 ids and outputs float32, so the app's
                # contract does not change.
                debugger = tf.lite.experimental.QuantizationDebugger(
                    converter=converter,
                    debug_options=tf.lite.experimental.QuantizationDebugOptions(
                        denylisted_ops=list(INT8_FLOAT_OPS)
                    ),
                )
                content = debugger.get_nondebug_quantized_model()
            else:
                content = converter.convert()
    except Exception as e:  # ConverterError: its text lists the offending ops
        message = str(e)
        hint = ""
        if (
            "Flex" in message
            or "not supported" in message
            or "custom op" in message.lower()
        ):
            hint = (
                " Some ops have no TFLite built-in kernel and would need Flex (SELECT_TF_OPS), "
                "which neither the LiteRT Python interpreter nor the stock Android runtime can "
                "run; the export refuses them. Rewrite those ops with built-in equivalents (e.g. "
                "tf.where instead of casting a bool that feeds an embedding; dense packing "
                "instead of ragged ops)."
            )
        raise TFLiteConversionError(
            f"TFLite conversion ({quantize}, built-in ops only) of {saved_model_dir} "
            f"failed.{hint}\nConverter said: {message[-3000:]}"
        ) from e
    ops = op_list(content)
    flex = [op for op in ops["custom"] if op.startswith("Flex")]
    if flex:
        raise TFLiteConversionError(
            f"The converted model holds Flex ops {flex}; refusing it."
        )
    if ops["custom"] and not allow_custom_ops:
        raise TFLiteConversionError(
            f"The converted model holds custom ops {ops['custom']} with no built-in kernel."
        )
    return content
