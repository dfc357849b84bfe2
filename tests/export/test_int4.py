"""The int4 mode's rewrites of a `.tflite` (token tables read through
EMBEDDING_LOOKUP, large float32 constants stored in float16) and the int4
file they make, on the tiny classifier."""

import json

import numpy as np
import pytest
import tensorflow as tf
from ai_edge_litert.interpreter import Interpreter
from ai_edge_litert.tools import flatbuffer_utils

from export import Quantization, Signatures, Validation, tflite
from export import manifest as mf
from export.consistency import flatbuffer as consistency_flatbuffer
from export.tflite import quantization
from export.tflite.flatbuffer import schema_py_generated as schema

LENGTHS = (16, 32)
TYPES = {v: k for k, v in vars(schema.TensorType).items() if not k.startswith("_")}
OPS = {v: k for k, v in vars(schema.BuiltinOperator).items() if not k.startswith("_")}


@pytest.fixture(scope="module")
def float_file(tmp_path_factory, tiny_classifier):
    work = tmp_path_factory.mktemp("int4_float")
    tflite.write_phone_saved_model(tiny_classifier, LENGTHS, work)
    return tflite.convert(work, [tflite.signature_name(n) for n in LENGTHS], "float32")


@pytest.fixture(scope="module")
def feeds(tiny_tokenizer, tiny_texts):
    """{signature: [one-text feeds]} for 20 texts at each length."""
    out = {}
    for n in LENGTHS:
        ids = tflite.tokenize_texts(tiny_tokenizer, tiny_texts[:20], n)
        out[tflite.signature_name(n)] = [
            {k: v[i : i + 1] for k, v in ids.items()} for i in range(20)
        ]
    return out


def _logits(content, feeds):
    interpreter = Interpreter(model_content=content)
    return {
        name: np.concatenate(
            [interpreter.get_signature_runner(name)(**f)["logits"] for f in fs]
        )
        for name, fs in feeds.items()
    }


def _operators(content):
    """[(op name, [(input type, input shape, constant bytes or None)], opcode
    version)] of every subgraph, in order."""
    model = flatbuffer_utils.read_model_from_bytearray(bytearray(content))
    found = []
    for graph in model.subgraphs:
        for op in graph.operators:
            code = model.operatorCodes[op.opcodeIndex]
            inputs = []
            for i in op.inputs:
                if i < 0:  # an optional input left out (a FULLY_CONNECTED without bias)
                    continue
                tensor = graph.tensors[i]
                data = model.buffers[tensor.buffer].data if tensor.buffer else None
                inputs.append(
                    (
                        TYPES[tensor.type],
                        list(tensor.shape),
                        None if data is None else len(data),
                    )
                )
            found.append(
                (
                    OPS[max(code.builtinCode, code.deprecatedBuiltinCode)],
                    inputs,
                    code.version,
                )
            )
    return found


def _count(operators, name):
    return sum(op == name for op, _, _ in operators)


def test_table_gathers_become_embedding_lookups_with_the_same_outputs(float_file, feeds):
    """Every GATHER of a constant table (token and segment embeddings, in
    each signature) becomes RESHAPE -> EMBEDDING_LOOKUP -> RESHAPE, and
    the logits do not change by a bit."""
    before = _operators(float_file)
    gathers = _count(before, "GATHER")
    assert gathers == 2 * len(LENGTHS), [op for op in before if op[0] == "GATHER"]
    after = _operators(quantization._gathers_as_embedding_lookups(float_file))
    assert _count(after, "GATHER") == 0
    assert _count(after, "EMBEDDING_LOOKUP") == gathers
    for op, inputs, _ in after:
        if op == "EMBEDDING_LOOKUP":
            (ids_type, ids_shape, _), (table_type, table_shape, table_bytes) = inputs
            assert ids_type == "INT32" and len(ids_shape) == 1
            assert table_type == "FLOAT32" and table_bytes == 4 * int(np.prod(table_shape))
    want = _logits(float_file, feeds)
    got = _logits(quantization._gathers_as_embedding_lookups(float_file), feeds)
    for name in want:
        assert np.array_equal(got[name], want[name]), name


def test_only_table_gathers_are_rewritten(tmp_path):
    """A GATHER of a computed tensor or along another axis is left as it is."""
    module = tf.Module()
    module.table = tf.constant(np.arange(24, dtype=np.float32).reshape(4, 6))

    @tf.function(
        input_signature=[tf.TensorSpec([3], tf.int32), tf.TensorSpec([4, 6], tf.float32)]
    )
    def lookups(ids, x):
        return {
            "rows": tf.gather(module.table, ids),
            "columns": tf.gather(module.table, ids, axis=1),
            "computed": tf.gather(x * 2.0, ids),
        }

    module.lookups = lookups
    tf.saved_model.save(module, str(tmp_path), signatures={"lookups": lookups})
    content = tflite.convert(tmp_path, ["lookups"], "float32")
    rewritten = quantization._gathers_as_embedding_lookups(content)
    assert _count(_operators(content), "GATHER") == 3
    assert _count(_operators(rewritten), "GATHER") == 2
    assert _count(_operators(rewritten), "EMBEDDING_LOOKUP") == 1
    ids, x = np.array([3, 0, 2], np.int32), np.ones([4, 6], np.float32)
    results = [
        Interpreter(model_content=c).get_signature_runner("lookups")(ids=ids, x=x)
        for c in (content, rewritten)
    ]
    for name in ("rows", "columns", "computed"):
        assert np.array_equal(results[0][name], results[1][name]), name


def _float32_constants(content, min_bytes):
    """{buffer: bytes} of the float32 constants of >= `min_bytes` an op reads."""
    model = flatbuffer_utils.read_model_from_bytearray(bytearray(content))
    found = {}
    for graph in model.subgraphs:
        for op in graph.operators:
            for i in op.inputs:
                tensor = graph.tensors[i] if i >= 0 else None
                data = (
                    model.buffers[tensor.buffer].data if tensor and tensor.buffer else None
                )
                if tensor and tensor.type == schema.TensorType.FLOAT32 and data is not None:
                    if len(data) >= min_bytes:
                        found[tensor.buffer] = len(data)
    return found


def test_large_float_constants_are_stored_in_float16(float_file, feeds, monkeypatch):
    """Constants of >= FLOAT16_MIN_BYTES become float16 read by a DEQUANTIZE
    (version 3: float16 input) and their float32 bytes leave the file;
    smaller ones stay float32; the file's metadata is kept and the logits
    move by float16 rounding only."""
    monkeypatch.setattr(quantization, "FLOAT16_MIN_BYTES", 2048)
    half = quantization._float16_constants(float_file)
    large = _float32_constants(float_file, 2048)
    assert large, "the tiny model has no float32 constant of >= 2 KB to test with"
    assert not _float32_constants(half, 2048)
    small_before = sorted(n for n in _float32_constants(float_file, 1).values() if n < 2048)
    assert sorted(_float32_constants(half, 1).values()) == small_before
    readers = [
        (op, version)
        for op, inputs, version in _operators(half)
        if any(t == "FLOAT16" for t, _, _ in inputs)
    ]
    assert readers and {op for op, _ in readers} == {"DEQUANTIZE"}
    assert min(version for _, version in readers) >= 3
    stored = tflite.weight_buffers(float_file)["constant_bytes"]
    assert (
        tflite.weight_buffers(half)["constant_bytes"] == stored - sum(large.values()) // 2
    )

    def names(c):
        model = flatbuffer_utils.read_model_from_bytearray(bytearray(c))
        return [m.name for m in model.metadata]

    assert names(half) == names(float_file)
    want, got = _logits(float_file, feeds), _logits(half, feeds)
    for name in want:
        scale = float(np.abs(want[name]).max())
        assert np.abs(got[name] - want[name]).max() <= 1e-2 * scale, name


@pytest.fixture(scope="module")
def int4_artifact(
    tmp_path_factory, tiny_classifier, tiny_tokenizer, tiny_texts, tiny_labels
):
    out = tmp_path_factory.mktemp("int4") / "tiny_int4"
    tflite.export_tflite(
        tiny_classifier,
        tiny_tokenizer,
        out,
        quantization=Quantization("int4", tiny_texts),
        signatures=Signatures(LENGTHS),
        validation=Validation(tiny_texts, tiny_labels),
    )
    return out


def test_int4_file_holds_its_tables_in_int4_once(int4_artifact, tiny_tokenizer):
    """The token table is an int4 EMBEDDING_LOOKUP operand with one scale
    per row, stored once for both signatures (half a byte per weight), and
    the export validated against Keras."""
    content = (int4_artifact / "model.tflite").read_bytes()
    operators = _operators(content)
    assert "GATHER" not in tflite.op_list(content)["builtin"]
    lookups = [inputs for op, inputs, _ in operators if op == "EMBEDDING_LOOKUP"]
    assert len(lookups) == 2 * len(LENGTHS)
    assert {(ids[0], table[0]) for ids, table in lookups} == {("INT32", "INT4")}
    rows = len(tiny_tokenizer.vocabulary)
    width = next(table[1][1] for _, table in lookups if table[1][0] == rows)
    assert {table[2] for _, table in lookups if table[1][0] == rows} == {rows * width // 2}
    model = flatbuffer_utils.read_model_from_bytearray(bytearray(content))
    for graph in model.subgraphs:
        for op in graph.operators:
            code = model.operatorCodes[op.opcodeIndex]
            if code.builtinCode == schema.BuiltinOperator.EMBEDDING_LOOKUP:
                table = graph.tensors[op.inputs[1]]
                assert len(table.quantization.scale) == table.shape[0]
                assert table.quantization.quantizedDimension == 0
    meta = mf.read_metadata(int4_artifact)
    assert meta["files"]["model.tflite"]["weights"]["duplicate_bytes"] == 0
    assert meta["quantization"] == "int4"
    report = json.loads((int4_artifact / "validation.json").read_text())
    assert report["passed"] and not report["degraded"]


def test_consistency_finds_the_int4_token_table(int4_artifact, tiny_tokenizer):
    facts = consistency_flatbuffer.tflite_facts(int4_artifact / "model.tflite")
    rows = {name: s["token_rows"] for name, s in facts["signatures"].items()}
    assert set(rows.values()) == {len(tiny_tokenizer.vocabulary)}, rows
