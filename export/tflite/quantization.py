"""Quantization choices: the modes a `.tflite` can be written in, the ops
int8 keeps float, the calibration texts' feeds, and the int4 mode
(ai-edge-quantizer on the float32 file)."""

from __future__ import annotations

import warnings

from ai_edge_quantizer import qtyping
from ai_edge_quantizer import quantizer as aeq

from export.tflite.graphs import signature_name
from zoo.text.tokenizer import tokenize_texts

QUANTIZATION_MODES = ("float32", "float16", "dynamic_int8", "int8", "int4")
# Modes calibrated on representative texts.
CALIBRATED_MODES = ("int8", "int4")
# Ops kept float in int8 mode (names as the converter's debugger takes them):
# XNNPACK has no int8 kernel for them, or they compute the LayerNorm/softmax
# statistics that int8 would round away.
INT8_FLOAT_OPS = (
    "SOFTMAX",
    "GELU",
    "BATCH_MATMUL",
    "SQUARED_DIFFERENCE",
    "RSQRT",
    "MEAN",
    "ADD",
    "MUL",
    "SUB",
    "DIV",
    "MAXIMUM",
    "SELECT_V2",
    "SUM",
)
MIN_REPRESENTATIVE_TEXTS = 100


def representative_dataset(tokenizer, texts, sequence_lengths):
    """Calibration generator for full-int8: `(signature, {input: int32 [1, L]})`,
    every text through the project tokenizer at every length."""

    texts = list(texts)

    def generate():
        for length in sequence_lengths:
            ids = tokenize_texts(tokenizer, texts, length)  # texts or (text, text_b) pairs
            for i in range(len(texts)):
                yield signature_name(length), {k: v[i : i + 1] for k, v in ids.items()}

    return generate


def quantize_int4(content, calibration):
    """int4 mode from a float32 `.tflite` (`content`), by ai-edge-quantizer:
    int4 weights (per channel) in every dense layer with float activations
    quantized on the fly (XNNPACK's dynamic int4 kernels), and the token
    embedding table in int8. `calibration`: `{signature: [feed dicts]}` of
    real texts (the embedding's output range). Bytes of the new file."""
    ops = qtyping.TFLOperationName
    q = aeq.Quantizer(bytearray(content))
    q.add_dynamic_config(".*", ops.FULLY_CONNECTED, 4)
    q.update_quantization_recipe(
        ".*",
        ops.GATHER,
        qtyping.OpQuantizationConfig(
            activation_tensor_config=qtyping.TensorQuantizationConfig(
                num_bits=8, symmetric=False, granularity=qtyping.QuantGranularity.TENSORWISE
            ),
            weight_tensor_config=qtyping.TensorQuantizationConfig(
                num_bits=8, symmetric=True, granularity=qtyping.QuantGranularity.CHANNELWISE
            ),
            compute_precision=qtyping.ComputePrecision.INTEGER,
            explicit_dequantize=False,
        ),
    )
    with warnings.catch_warnings():
        # The quantizer runs LiteRT with experimental_preserve_all_tensors to
        # read every intermediate range (calibrating, then checking the ranges
        # cover the model), and LiteRT warns its caller that the mode is for
        # debugging: the quantizer's choice, nothing a user can act on.
        warnings.filterwarnings(
            "ignore", message=".*experimental_preserve_all_tensors", category=UserWarning
        )
        ranges = q.calibrate(calibration, num_threads=2) if q.need_calibration else None
        return bytes(q.quantize(ranges, enable_progress_report=False).quantized_model)


def calibration_feeds(tokenizer, texts, sequence_lengths):
    """`{signature: [one-text feeds]}` for ai-edge-quantizer's calibration."""
    feeds = {}
    for length in sequence_lengths:
        ids = tokenize_texts(tokenizer, texts, length)
        feeds[signature_name(length)] = [
            {k: v[i : i + 1] for k, v in ids.items()} for i in range(len(texts))
        ]
    return feeds
