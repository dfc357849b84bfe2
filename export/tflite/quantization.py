"""Quantization choices: the modes a `.tflite` can be written in, the ops
int8 keeps float, the calibration texts' feeds, and the int4 mode
(ai-edge-quantizer on the float32 file, its token tables rewritten as
EMBEDDING_LOOKUP so that they too take int4)."""

from __future__ import annotations

import numpy as np
from ai_edge_litert.tools import flatbuffer_utils
from ai_edge_quantizer import qtyping
from ai_edge_quantizer import quantizer as aeq
from ai_edge_quantizer.algorithm_manager import AlgorithmName

from export.tflite.flatbuffer import schema_py_generated as schema
from export.tflite.graphs import signature_name
from zoo.text.tokenizer import tokenize_texts

# Modes that take representative texts (Quantization asks for >= 100): int8
# calibrates its activation ranges on them. int4 stores no activation range
# (quantize_int4's activations are quantized on the fly), so it needs none.
CALIBRATED_MODES = ("int8",)
# The modes that can lose accuracy: the demo records a miss against their
# validation profile (and flags it) rather than refusing the file.
LOSSY_MODES = ("int8", "int4")
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


def quantize_int4(content):
    """int4 mode from a float32 `.tflite` (`content`); bytes of the new file.

    - Every token-table GATHER becomes an EMBEDDING_LOOKUP
      (`_gathers_as_embedding_lookups`): ai-edge-quantizer gives int4 only
      to EMBEDDING_LOOKUP tables, and LiteRT's EMBEDDING_LOOKUP reads an
      int4 table with one scale per row and returns float rows, so the
      table (most of a small student's bytes) takes half of int8's space.
    - ai-edge-quantizer: int4 weights (per output channel) in every dense
      layer with float activations quantized on the fly (XNNPACK's dynamic
      int4 kernels), and the int4 tables. Each row or channel's range is
      clipped where the rounding error is smallest (the quantizer's OCTAV
      algorithm), not at its largest weight: on the demo's MiniLM teacher,
      min/max int4 tables agreed with the float32 file on 96.7% of BBC's
      test articles (below the int4 profile's 97%), OCTAV on 98.8%.
    - Float32 constants left over of at least `FLOAT16_MIN_BYTES` (the
      position embeddings) are stored in float16 (`_float16_constants`).

    Every int4 tensor is a weight and no activation range is stored, so
    the mode reads no calibration texts.
    """
    ops = qtyping.TFLOperationName
    q = aeq.Quantizer(bytearray(_gathers_as_embedding_lookups(content)))
    for op in (ops.FULLY_CONNECTED, ops.EMBEDDING_LOOKUP):
        q.add_dynamic_config(".*", op, 4, algorithm_key=AlgorithmName.OCTAV)
    quantized = bytes(q.quantize(None, enable_progress_report=False).quantized_model)
    return _float16_constants(quantized)


# Smallest float32 constant the int4 file stores in float16: below it (the
# LayerNorm scales and the biases, 1.5 KB each at width 384) a DEQUANTIZE op
# costs more than the bytes it saves.
FLOAT16_MIN_BYTES = 16384


def _opcode(model, builtin, version=1):
    """Index of `builtin`'s operator code in `model`, added if missing, at
    `version` or above (the version a runtime checks for the inputs' types)."""
    for i, code in enumerate(model.operatorCodes):
        if max(code.builtinCode, code.deprecatedBuiltinCode) == builtin:
            code.version = max(code.version, version)
            return i
    code = schema.OperatorCodeT()
    code.builtinCode, code.deprecatedBuiltinCode = builtin, min(builtin, 127)
    code.version = version
    model.operatorCodes.append(code)
    return len(model.operatorCodes) - 1


def _new_tensor(model, graph, name, shape, dtype, data=None):
    """Index of a new tensor in `graph`; a constant when `data` (bytes) is given."""
    tensor = schema.TensorT()
    tensor.name, tensor.shape, tensor.type, tensor.hasRank = name, list(shape), dtype, True
    tensor.buffer = 0
    if data is not None:
        buffer = schema.BufferT()
        buffer.data = np.frombuffer(data, np.uint8)
        model.buffers.append(buffer)
        tensor.buffer = len(model.buffers) - 1
    graph.tensors.append(tensor)
    return len(graph.tensors) - 1


def _operator(opcode, inputs, outputs, options=None, options_type=0):
    op = schema.OperatorT()
    op.opcodeIndex, op.inputs, op.outputs = opcode, list(inputs), list(outputs)
    op.builtinOptions, op.builtinOptionsType = options, options_type
    return op


def _reshape(model, graph, source, target, shape):
    """RESHAPE `source` into tensor `target` of static `shape`."""
    options = schema.ReshapeOptionsT()
    options.newShape = list(shape)
    new_shape = _new_tensor(
        model,
        graph,
        graph.tensors[target].name + b"/shape",
        [len(shape)],
        schema.TensorType.INT32,
        np.asarray(shape, np.int32).tobytes(),
    )
    return _operator(
        _opcode(model, schema.BuiltinOperator.RESHAPE),
        [source, new_shape],
        [target],
        options,
        schema.BuiltinOptions.ReshapeOptions,
    )


def _serialized(model):
    """Bytes of `model` without the operator codes no operator uses (a
    rewritten GATHER's): metadata.json lists a file's operators from them."""
    used = sorted({op.opcodeIndex for graph in model.subgraphs for op in graph.operators})
    renumber = {old: new for new, old in enumerate(used)}
    model.operatorCodes = [model.operatorCodes[i] for i in used]
    for graph in model.subgraphs:
        for op in graph.operators:
            op.opcodeIndex = renumber[op.opcodeIndex]
    return bytes(flatbuffer_utils.convert_object_to_bytearray(model))


def _is_table_gather(model, graph, op):
    """A GATHER along axis 0 of a constant float32 [rows, width] table by
    int32 ids of static shape: what an embedding layer converts to."""
    code = model.operatorCodes[op.opcodeIndex]
    if max(code.builtinCode, code.deprecatedBuiltinCode) != schema.BuiltinOperator.GATHER:
        return False
    table, ids = (graph.tensors[i] for i in op.inputs)
    options = op.builtinOptions
    return (
        table.type == schema.TensorType.FLOAT32
        and len(table.shape) == 2
        and table.buffer > 0
        and model.buffers[table.buffer].data is not None
        and ids.type == schema.TensorType.INT32
        and all(d > 0 for d in (ids.shapeSignature or ids.shape))
        and options.axis == 0
        and options.batchDims == 0
    )


def _gathers_as_embedding_lookups(content):
    """`content` with every table GATHER (`_is_table_gather`) rewritten as
    RESHAPE(ids to 1-D) -> EMBEDDING_LOOKUP -> RESHAPE(back): the same rows,
    through the op ai-edge-quantizer and LiteRT take int4 tables for
    (EMBEDDING_LOOKUP takes 1-D ids only). Other ops are left as they are."""
    model = flatbuffer_utils.read_model_from_bytearray(bytearray(content))
    for graph in model.subgraphs:
        operators = []
        for op in graph.operators:
            if not _is_table_gather(model, graph, op):
                operators.append(op)
                continue
            table, ids = op.inputs
            output = op.outputs[0]
            count = int(np.prod(graph.tensors[ids].shape))
            width = graph.tensors[table].shape[1]
            name = graph.tensors[output].name
            flat_ids = _new_tensor(
                model, graph, name + b"/ids", [count], schema.TensorType.INT32
            )
            rows = _new_tensor(
                model, graph, name + b"/rows", [count, width], schema.TensorType.FLOAT32
            )
            operators += [
                _reshape(model, graph, ids, flat_ids, [count]),
                _operator(
                    _opcode(model, schema.BuiltinOperator.EMBEDDING_LOOKUP),
                    [flat_ids, table],
                    [rows],
                ),
                _reshape(model, graph, rows, output, graph.tensors[output].shape),
            ]
        graph.operators = operators
    return _serialized(model)


def _float16_constants(content):
    """`content` with every float32 constant of >= FLOAT16_MIN_BYTES that an
    op reads stored in float16 and turned back into float32 by a DEQUANTIZE
    op (the converter's float16 mode does the same; LiteRT's DEQUANTIZE
    converts a constant input once and keeps the float32 copy)."""
    model = flatbuffer_utils.read_model_from_bytearray(bytearray(content))
    halves = {}  # float32 buffer -> its float16 copy, once for all subgraphs
    for graph in model.subgraphs:
        read = {i for op in graph.operators for i in op.inputs}
        dequantize = []
        for index in sorted(read):
            tensor = graph.tensors[index] if index >= 0 else None
            data = model.buffers[tensor.buffer].data if tensor and tensor.buffer else None
            if (
                data is None
                or tensor.type != schema.TensorType.FLOAT32
                or len(data) < FLOAT16_MIN_BYTES
            ):
                continue
            if tensor.buffer not in halves:
                half = schema.BufferT()
                half.data = np.frombuffer(
                    np.frombuffer(bytes(data), np.float32).astype(np.float16).tobytes(),
                    np.uint8,
                )
                model.buffers.append(half)
                halves[tensor.buffer] = len(model.buffers) - 1
            source = _new_tensor(
                model,
                graph,
                tensor.name + b"/float16",
                tensor.shape,
                schema.TensorType.FLOAT16,
            )
            graph.tensors[source].buffer = halves[tensor.buffer]
            tensor.buffer = 0  # now DEQUANTIZE's output, computed from the float16 copy
            # DEQUANTIZE reads float16 from version 3 on.
            dequantize.append(
                _operator(
                    _opcode(model, schema.BuiltinOperator.DEQUANTIZE, 3), [source], [index]
                )
            )
        graph.operators = dequantize + graph.operators
    # A float32 buffer no tensor reads any more is left empty (not written).
    used = {t.buffer for g in model.subgraphs for t in g.tensors}
    used |= {m.buffer for m in model.metadata or []}
    for old in halves:
        if old not in used:
            model.buffers[old].data = None
    return _serialized(model)


def calibration_feeds(tokenizer, texts, sequence_lengths):
    """`{signature: [one-text feeds]}` for ai-edge-quantizer's calibration."""
    feeds = {}
    for length in sequence_lengths:
        ids = tokenize_texts(tokenizer, texts, length)
        feeds[signature_name(length)] = [
            {k: v[i : i + 1] for k, v in ids.items()} for i in range(len(texts))
        ]
    return feeds
