"""What a `.tflite` says about itself, read from its flatbuffer without
running it (`tflite_facts`: signatures, the token embedding's rows,
operator counts, the embedded record), and the record written into one
(`embed_tflite_record`, whose buffers `AlignedBuffer` packs as the
converter does)."""

from __future__ import annotations

import collections
import json
import mmap
import struct

import flatbuffers
import numpy as np

from export.consistency.record import RECORD_NAME

try:
    from ai_edge_litert import schema_py_generated as tfl
except ImportError:  # the converter ships the same generated schema
    from tensorflow.lite.python import schema_py_generated as tfl


_MODEL_IDENTIFIER = b"TFL3"


_BUILTIN_NAMES = {
    v: k for k, v in vars(tfl.BuiltinOperator).items() if not k.startswith("_")
}


# --- .tflite --------------------------------------------------------------------------


class AlignedBuffer(tfl.BufferT):
    """A BufferT packed with its data 16-byte aligned, as the converter writes
    weights (`data:[ubyte] (force_align: 16)`; the generated Pack aligns to 1)."""

    @classmethod
    def of(cls, buffer):
        new = cls()
        new.data, new.offset, new.size = buffer.data, buffer.offset, buffer.size
        return new

    def Pack(self, builder):  # noqa: N802 - the generated API's name
        data = None
        if self.data is not None:
            payload = np.asarray(self.data, dtype=np.uint8).tobytes()
            builder.StartVector(1, len(payload), 16)
            builder.head -= len(payload)
            builder.Bytes[builder.head : builder.head + len(payload)] = payload
            data = builder.EndVector()
        tfl.BufferStart(builder)
        if data is not None:
            tfl.BufferAddData(builder, data)
        tfl.BufferAddOffset(builder, self.offset)
        tfl.BufferAddSize(builder, self.size)
        return tfl.BufferEnd(builder)


def embed_tflite_record(content, record) -> bytes:
    """`content` (a `.tflite`) with `record` as its `RECORD_NAME` metadata
    entry (replacing an earlier one)."""
    model = tfl.ModelT.InitFromPackedBuf(bytearray(content), 0)
    for buffer in model.buffers or []:
        if (buffer.offset or 0) > 1:
            # Weights stored after the flatbuffer (ai-edge-quantizer's layout):
            # inline again, where the re-packed file holds them.
            buffer.data = np.frombuffer(content, np.uint8, buffer.size, buffer.offset)
            buffer.offset, buffer.size = 0, 0
    buffer = tfl.BufferT()
    buffer.data = np.frombuffer(json.dumps(record, sort_keys=True).encode(), np.uint8)
    model.buffers.append(buffer)
    entry = tfl.MetadataT()
    entry.name = RECORD_NAME
    entry.buffer = len(model.buffers) - 1
    model.metadata = [m for m in model.metadata or [] if _text(m.name) != RECORD_NAME]
    model.metadata.append(entry)
    model.buffers = [AlignedBuffer.of(b) for b in model.buffers]
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=_MODEL_IDENTIFIER)
    return bytes(builder.Output())


def _text(value):
    return value.decode() if isinstance(value, bytes) else value


def _buffer_bytes(model, data, index):
    buffer = model.Buffers(index)
    if buffer.DataLength():
        return buffer.DataAsNumpy().tobytes()
    if buffer.Size() > 1:
        return bytes(data[buffer.Offset() : buffer.Offset() + buffer.Size()])
    return b""


def _depends_on(graph, producers, tensor, inputs):
    """The signature inputs (by tensor index) `tensor` is computed from."""
    seen, stack, found = set(), [tensor], set()
    while stack:
        t = stack.pop()
        if t in seen:
            continue
        seen.add(t)
        if t in inputs:
            found.add(inputs[t])
        op = producers.get(t)
        if op is not None:
            stack.extend(int(i) for i in op.InputsAsNumpy() if i >= 0)
    return found


def tflite_facts(path) -> dict:
    """What a `.tflite` says about itself: `{"signatures": {name: {"inputs":
    {name: (type, shape)}, "outputs": {...}, "token_rows": rows of the
    embedding the token_ids gather reads, or None}}, "op_counts", "record"}`.
    (The files a MediaPipe file carries are export.mediapipe's to read.)"""
    # Memory-mapped, read in place; numpy views into it may outlive this
    # call, so the map is closed by the garbage collector, not here.
    with open(path, "rb") as f:
        data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    if len(data) < 8 or data[4:8] != _MODEL_IDENTIFIER:
        raise ValueError("no TFL3 identifier")
    # The root table's offset (the first 4 bytes) must point inside the
    # file; the generated reader follows it without asking.
    root = struct.unpack_from("<I", data, 0)[0]
    if root + 4 > len(data):
        raise ValueError(
            f"its root table at byte {root:,} lies past its end ({len(data):,} bytes)"
        )
    try:
        return _facts(model=tfl.Model.GetRootAs(data, 0), data=data)
    except _FLATBUFFER_ERRORS as e:
        # The Python flatbuffers reader has no verifier: an offset past the
        # end (a truncated or edited file) surfaces as whichever of these
        # the read it reached raises.
        what = "a read past its end" if isinstance(e, struct.error) else type(e).__name__
        raise ValueError(f"{what}: {str(e)[:200]}") from None


# What reading a damaged flatbuffer raises (struct's unpack past the end,
# numpy's frombuffer, an index into a list built from the file, a name that
# is not UTF-8).
_FLATBUFFER_ERRORS = (struct.error, IndexError, ValueError, TypeError, OverflowError)


def _facts(model, data):
    codes = _operator_names(model)
    signatures = {}
    for i in range(model.SignatureDefsLength()):
        sig = model.SignatureDefs(i)
        signatures[_text(sig.SignatureKey())] = _signature_facts(model, sig, codes)
    return {
        "signatures": signatures,
        "op_counts": _op_counts(model, codes),
        "record": _embedded_record(model, data),
        **_number_types(model),
    }


_TYPE_NAMES = {v: k for k, v in vars(tfl.TensorType).items() if not k.startswith("_")}


def _number_types(model):
    """`weight_types`: the type names of the tensors stored in the file
    (weights, constants); `int8_activations`: how many computed tensors are
    int8 (a fully integer file's activations; a dynamically quantized one
    computes in float)."""
    weights, int8_activations = set(), 0
    for g in range(model.SubgraphsLength()):
        graph = model.Subgraphs(g)
        for t in range(graph.TensorsLength()):
            tensor = graph.Tensors(t)
            name = _TYPE_NAMES.get(tensor.Type(), f"TYPE_{tensor.Type()}")
            index = tensor.Buffer()
            buffer = model.Buffers(index) if 0 < index < model.BuffersLength() else None
            if buffer is not None and (buffer.DataLength() > 0 or buffer.Size() > 0):
                weights.add(name)
            elif name == "INT8":
                int8_activations += 1
    return {"weight_types": sorted(weights), "int8_activations": int8_activations}


def _operator_names(model):
    """The name of each operator code (builtin name, or the custom name)."""
    names = []
    for i in range(model.OperatorCodesLength()):
        code = model.OperatorCodes(i)
        if code.CustomCode() is not None:
            names.append(code.CustomCode().decode())
        else:
            # Codes above 127 live in builtin_code; older files use the
            # deprecated byte-sized field.
            number = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
            names.append(_BUILTIN_NAMES.get(number, f"BUILTIN_{number}"))
    return names


def _op_counts(model, codes):
    counts = collections.Counter()
    for s in range(model.SubgraphsLength()):
        graph = model.Subgraphs(s)
        for j in range(graph.OperatorsLength()):
            counts[codes[graph.Operators(j).OpcodeIndex()]] += 1
    return dict(sorted(counts.items()))


def _signature_facts(model, sig, codes):
    """Inputs and outputs (type, shape) of one signature, and the rows of
    the embedding table its token_ids are gathered from."""
    graph = model.Subgraphs(sig.SubgraphIndex())

    def describe(index):
        tensor = graph.Tensors(index)
        shape = [int(x) for x in tensor.ShapeAsNumpy()] if tensor.ShapeLength() else []
        return tensor.Type(), shape

    inputs = {
        sig.Inputs(j).TensorIndex(): _text(sig.Inputs(j).Name())
        for j in range(sig.InputsLength())
    }
    return {
        "inputs": {name: describe(index) for index, name in inputs.items()},
        "outputs": {
            _text(sig.Outputs(j).Name()): describe(sig.Outputs(j).TensorIndex())
            for j in range(sig.OutputsLength())
        },
        "token_rows": _token_rows(graph, codes, inputs),
    }


def _token_rows(graph, codes, inputs):
    """Rows of the table a GATHER (inputs: table, ids) or an EMBEDDING_LOOKUP
    (inputs: ids, table; the int4 mode's) reads with indices computed from
    the `token_ids` input: the token embedding (None if there is none)."""
    producers, gathers = {}, []
    for j in range(graph.OperatorsLength()):
        op = graph.Operators(j)
        for out in op.OutputsAsNumpy():
            producers[int(out)] = op
        if codes[op.OpcodeIndex()] in ("GATHER", "EMBEDDING_LOOKUP"):
            gathers.append(op)
    rows = None
    for op in gathers:
        params, indices = (int(x) for x in op.InputsAsNumpy()[:2])
        if codes[op.OpcodeIndex()] == "EMBEDDING_LOOKUP":
            params, indices = indices, params
        if "token_ids" in _depends_on(graph, producers, indices, inputs):
            shape = graph.Tensors(params).ShapeAsNumpy()
            rows = int(shape[0]) if len(shape) == 2 else rows
    return rows


def _embedded_record(model, data):
    """The artifact record the exporter stored in the file, None if it has
    none, "unreadable" if it does not parse."""
    for i in range(model.MetadataLength()):
        entry = model.Metadata(i)
        if _text(entry.Name()) == RECORD_NAME:
            try:
                return json.loads(_buffer_bytes(model, data, entry.Buffer()))
            except (ValueError, RecursionError):  # not JSON, or nested too deep
                return "unreadable"
    return None
