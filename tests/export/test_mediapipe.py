"""The MediaPipe file (export/mediapipe.py) read back without MediaPipe: one
subgraph and one `probabilities` output, the TFLite Model Metadata MediaPipe
reads (names, tokenizer unit, label file), the uncompressed zip of vocab.txt
and labels.txt, and the same probabilities as model.tflite's primary
signature in LiteRT. (MediaPipe itself runs the demo's phone file in
tests/test_demo.py.)"""

import io
import json
import os
import pathlib
import shutil
import subprocess
import sys
import zipfile

import flatbuffers
import numpy as np
import pytest
from flatbuffers import encode, packer
from flatbuffers.table import Table

from export import Quantization, Signatures, Validation, mediapipe, runtime
from export import manifest as mf
from export.runtime import load_signature
from export.tflite import export_tflite
from export.validate import format_report, mediapipe_probes, mediapipe_probes_line
from tests.export.conftest import TINY_LABELS, VOCABULARY, sentences
from zoo.text import probes
from zoo.text.tokenizer import tokenize_texts

# Every test reads one validated two-length int8 export (over a minute on 2
# cores): `make test` runs them, `make test-quick` does not.
pytestmark = pytest.mark.slow

try:
    from ai_edge_litert import schema_py_generated as tfl
except ImportError:
    from tensorflow.lite.python import schema_py_generated as tfl


def _tables(table, slot):
    """The tables of vector field `slot` (metadata_schema.fbs order)."""
    offset = table.Offset(4 + 2 * slot)
    start = table.Vector(offset)
    return [
        Table(table.Bytes, table.Indirect(start + 4 * i))
        for i in range(table.VectorLen(offset))
    ]


def _string(table, slot):
    offset = table.Offset(4 + 2 * slot)
    return table.String(table.Pos + offset).decode() if offset else None


@pytest.fixture(scope="module")
def artifact(tmp_path_factory, tiny_classifier, tiny_tokenizer):
    return export_tflite(
        tiny_classifier,
        tiny_tokenizer,
        tmp_path_factory.mktemp("mp") / "a",
        quantization=Quantization("dynamic_int8"),
        signatures=Signatures((16, 32)),
        validation=Validation(
            sentences(200, seed=5), [TINY_LABELS[i % 3] for i in range(200)]
        ),
    )


def test_mediapipe_file_structure(artifact, tiny_tokenizer):
    data = (artifact / mediapipe.FILE).read_bytes()
    model = tfl.Model.GetRootAs(data, 0)
    assert data[4:8] == mediapipe.MODEL_IDENTIFIER
    assert model.SubgraphsLength() == 1 and model.SignatureDefsLength() == 1
    graph = model.Subgraphs(0)
    assert graph.OutputsLength() == 1
    signature = model.SignatureDefs(0)
    assert signature.SignatureKey().decode() == "serving_L16"
    assert [
        signature.Outputs(i).Name().decode() for i in range(signature.OutputsLength())
    ] == ["probabilities"]
    entries = {
        model.Metadata(i).Name().decode(): model.Metadata(i).Buffer()
        for i in range(model.MetadataLength())
    }
    meta = model.Buffers(entries[mediapipe.METADATA_NAME]).DataAsNumpy().tobytes()
    assert meta[4:8] == mediapipe.METADATA_IDENTIFIER
    # Input metadata names in the subgraph's input order: MediaPipe finds the
    # BERT inputs by these names and requires them at positions {0, 1, 2}.
    by_index = {
        signature.Inputs(i).TensorIndex(): signature.Inputs(i).Name().decode()
        for i in range(signature.InputsLength())
    }
    expected = [
        mediapipe.MEDIAPIPE_INPUTS[by_index[graph.Inputs(i)]]
        for i in range(graph.InputsLength())
    ]
    root = Table(bytearray(meta), encode.Get(packer.uoffset, meta, 0))
    assert _string(root, 7) == mediapipe.MIN_PARSER_VERSION
    (subgraph,) = _tables(root, 3)
    assert [_string(t, 0) for t in _tables(subgraph, 2)] == expected
    (output,) = _tables(subgraph, 3)
    assert _string(output, 0) == "probabilities"
    assert [_string(f, 0) for f in _tables(output, 6)] == ["labels.txt"]
    (unit,) = _tables(subgraph, 5)  # the BERT tokenizer, its vocabulary file
    assert unit.Get(flatbuffers.number_types.Uint8Flags, unit.Pos + unit.Offset(4)) == 4
    archive = zipfile.ZipFile(io.BytesIO(data))
    assert {i.filename: i.compress_type for i in archive.infolist()} == {
        "vocab.txt": zipfile.ZIP_STORED,
        "labels.txt": zipfile.ZIP_STORED,
    }
    assert archive.read("vocab.txt").decode().split("\n")[:-1] == VOCABULARY
    assert archive.read("labels.txt").decode().split("\n")[:-1] == TINY_LABELS
    # Same weights as model.tflite's primary signature: same probabilities.
    ids = tiny_tokenizer(sentences(8, seed=2), sequence_length=16)
    full, phone = load_signature(artifact), load_signature(artifact, file=mediapipe.FILE)
    for i in range(8):
        one = {k: np.asarray(v[i : i + 1]) for k, v in ids.items()}
        np.testing.assert_allclose(
            phone(**one)["probabilities"], full(**one)["probabilities"], atol=1e-6
        )


def test_cased_models_and_blank_vocabulary_lines_are_refused(artifact):
    content = (artifact / "model.tflite").read_bytes()
    with pytest.raises(mediapipe.MediaPipeExportError, match="lower-cases"):
        mediapipe.mediapipe_classifier(
            content, "serving_L16", VOCABULARY, TINY_LABELS, lowercase=False
        )
    with pytest.raises(mediapipe.MediaPipeExportError, match="empty or blank"):
        mediapipe.mediapipe_classifier(
            content, "serving_L16", VOCABULARY + [" "], TINY_LABELS, lowercase=True
        )
    with pytest.raises(mediapipe.MediaPipeExportError, match="no signature"):
        mediapipe.mediapipe_classifier(
            content, "serving_L99", VOCABULARY, TINY_LABELS, lowercase=True
        )


def _with_zipped(artifact, copy, name, text):
    """A copy of `artifact` whose mediapipe.tflite carries `text` as its
    zipped `name` (the zip rebuilt, so its checksums hold), its manifest
    regenerated: only the consistency checks can tell."""
    shutil.copytree(artifact, copy)
    path = copy / mediapipe.FILE
    data = path.read_bytes()
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        start = min(info.header_offset for info in archive.infolist())
        files = {info.filename: archive.read(info) for info in archive.infolist()}
    files[name] = text.encode("utf-8")
    out = io.BytesIO(data[:start])
    out.seek(0, io.SEEK_END)
    with zipfile.ZipFile(out, mode="a", compression=zipfile.ZIP_STORED) as archive:
        for file, content in files.items():
            archive.writestr(
                zipfile.ZipInfo(file, date_time=(1980, 1, 1, 0, 0, 0)), content
            )
    path.write_bytes(out.getvalue())
    mf.write_manifest(copy)
    return copy


def test_a_forged_mediapipe_zip_is_refused_by_a_process_that_imports_only_runtime(
    artifact, tmp_path
):
    """The labels MediaPipe names its answers by, reordered inside
    mediapipe.tflite (same size, manifest regenerated), are refused by name
    by `open_artifact` in a fresh process that imported export.runtime and
    nothing else: export.mediapipe's registered check runs without a caller
    importing it."""
    forged = "\n".join(reversed(TINY_LABELS)) + "\n"
    copy = _with_zipped(artifact, tmp_path / "forged", mediapipe.LABELS_FILE, forged)
    assert (
        mediapipe.associated_files(copy / mediapipe.FILE)[mediapipe.LABELS_FILE] == forged
    )
    with pytest.raises(mf.MetadataError, match="labels.txt inside mediapipe.tflite"):
        runtime.open_artifact(copy)
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, export.runtime as r; r.open_artifact(sys.argv[1]); print('OPENED')",
            str(copy),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 1 and "OPENED" not in proc.stdout, proc.stdout + proc.stderr
    assert "`labels`: the labels.txt inside mediapipe.tflite" in proc.stderr, proc.stderr
    # The same zip with the artifact's own labels opens.
    same = "\n".join(TINY_LABELS) + "\n"
    runtime.open_artifact(
        _with_zipped(artifact, tmp_path / "same", mediapipe.LABELS_FILE, same)
    )


def test_validation_runs_the_derived_file_on_a_sample(artifact, monkeypatch, tmp_path):
    """mediapipe.tflite holds model.tflite's serving_L16 graph and weights,
    runs DERIVED_SAMPLE_TEXTS texts, must equal model.tflite bit for bit
    there, and takes model.tflite's outputs for the rest; when its graph is
    not its source's, or its outputs differ, it runs every text."""
    meta = mf.read_metadata(artifact)
    texts = sentences(200, seed=5)
    assert meta["files"][mediapipe.FILE]["derived_from"] == {
        "file": "model.tflite",
        "signature": "serving_L16",
    }
    assert mediapipe.same_graph_as_source(artifact, meta, mediapipe.FILE) == (
        "model.tflite",
        "serving_L16",
    )
    runs = {(r["file"], r["signature"]): r for r in runtime.run_tflite(artifact, texts)}
    source, phone = runs["model.tflite", "serving_L16"], runs[mediapipe.FILE, "serving_L16"]
    assert source["texts_run"] == 200 and source["same_as"] is None
    assert phone["texts_run"] == runtime.DERIVED_SAMPLE_TEXTS
    assert phone["same_as"] == "model.tflite:serving_L16" and phone["note"] is None
    assert np.array_equal(
        phone["outputs"]["probabilities"], source["outputs"]["probabilities"]
    )
    # Running a text it did not run gives exactly the output it took.
    alone = load_signature(artifact, file=mediapipe.FILE)
    last = {k: v[-1:] for k, v in phone["ids"].items()}
    assert np.array_equal(
        alone(**last)["probabilities"], phone["outputs"]["probabilities"][-1:]
    )
    # The export's report says so.
    report = json.loads((artifact / "validation.json").read_text())
    row = next(r for r in report["results"] if r["file"] == mediapipe.FILE)
    assert (
        row["texts_run"] == runtime.DERIVED_SAMPLE_TEXTS
        and row["metrics"]["label_agreement"]
    )
    assert "the graph of model.tflite:serving_L16" in format_report(report)

    # One weight byte changed: not the source's graph.
    copy = tmp_path / "copy"
    copy.mkdir()
    for name in ("model.tflite", mediapipe.FILE):
        (copy / name).write_bytes((artifact / name).read_bytes())
    assert mediapipe.same_graph_as_source(copy, meta, mediapipe.FILE) == (
        "model.tflite",
        "serving_L16",
    )
    data = bytearray((copy / mediapipe.FILE).read_bytes())
    model = tfl.Model.GetRootAs(data, 0)
    largest = max(range(model.BuffersLength()), key=lambda i: model.Buffers(i).DataLength())
    table = model.Buffers(largest)._tab
    data[table.Vector(table.Offset(4)) + 5] ^= 1
    (copy / mediapipe.FILE).write_bytes(bytes(data))
    assert mediapipe.same_graph_as_source(copy, meta, mediapipe.FILE) is None
    # Another source signature (another length): not its graph, every text runs.
    other = json.loads(json.dumps(meta))
    other["files"][mediapipe.FILE]["derived_from"]["signature"] = "serving_L32"
    assert mediapipe.same_graph_as_source(artifact, other, mediapipe.FILE) is None
    runs = {
        (r["file"], r["signature"]): r
        for r in runtime.run_tflite(runtime.OpenedArtifact(artifact, other), texts)
    }
    assert runs[mediapipe.FILE, "serving_L16"]["texts_run"] == 200
    assert "not the graph of its source" in runs[mediapipe.FILE, "serving_L16"]["note"]
    # Outputs that differ on the sample: every text runs.
    monkeypatch.setattr(runtime.litert_run, "_same_outputs", lambda *args: False)
    runs = {(r["file"], r["signature"]): r for r in runtime.run_tflite(artifact, texts)}
    phone = runs[mediapipe.FILE, "serving_L16"]
    assert phone["texts_run"] == 200 and phone["same_as"] is None
    assert "outputs differ from model.tflite:serving_L16" in phone["note"]
    assert np.array_equal(
        phone["outputs"]["probabilities"], source["outputs"]["probabilities"]
    )


def test_export_records_mediapipe_agreement_on_the_probe_set(artifact):
    """The export runs zoo.text.probes through MediaPipe Tasks' TextClassifier
    and through LiteRT fed the zoo tokenizer's ids, and validation.json holds
    the agreement per group and overall (recorded, never a failure)."""
    report = json.loads((artifact / "validation.json").read_text())
    assert "mediapipe_probes" in report, "the export did not record MediaPipe's agreement"
    record = report["mediapipe_probes"]
    if not record["ran"]:
        if os.environ.get("CI") or mediapipe.mediapipe_python() is not None:
            pytest.fail(f"MediaPipe's probe run did not run: {record['reason']}")
        pytest.skip(record["reason"])
    assert isinstance(record["mediapipe"], str) and record["sequence_length"] == 16
    rows = [record, *record["groups"].values()]
    for row in rows:
        for key in ("sentences", "same_label", "other_ids"):
            assert type(row[key]) is int and 0 <= row[key] <= row["sentences"], (key, row)
        for key in ("agreement", "max_probability_difference"):
            assert type(row[key]) is float and 0.0 <= row[key] <= 1.0, (key, row)
        assert row["agreement"] == row["same_label"] / row["sentences"]
        # A label differs only where the probabilities (so the ids) differ.
        assert row["sentences"] - row["same_label"] <= row["other_ids"]
    assert list(record["groups"]) == list(probes.GROUPS)
    assert record["sentences"] == len(probes.ALL)
    for key in ("sentences", "same_label", "other_ids"):
        assert record[key] == sum(g[key] for g in record["groups"].values())
    assert record["differing_groups"] == [
        n for n, g in record["groups"].items() if g["other_ids"]
    ]
    line = mediapipe_probes_line(record)
    assert line in format_report(report)
    assert f"{record['same_label']}/{len(probes.ALL)}" in line
    for name in record["differing_groups"]:
        assert name in line


def test_mediapipe_probes_say_why_they_did_not_run(artifact, monkeypatch):
    monkeypatch.setenv(mediapipe.PYTHON_ENV, str(artifact / "no-such-python"))
    monkeypatch.setattr(mediapipe, "DEFAULT_PYTHON", artifact / "no-such-python")
    record = mediapipe_probes(artifact)
    assert record == {"ran": False, "reason": record["reason"]}
    assert mediapipe.PYTHON_ENV in record["reason"]
    assert "not run" in mediapipe_probes_line(record)
    # A MediaPipe that fails: its exit status and last lines, not an exception.
    record = mediapipe_probes(artifact, python=pathlib.Path("/bin/false"))
    assert not record["ran"] and "exited 1" in record["reason"]
    # One that answers with the wrong number of scores: said, not compared.
    fake = artifact.parent / "fake-python"
    fake.write_text('#!/bin/sh\necho \'{"mediapipe": "x", "scores": [[0.5]]}\' > "$5"\n')
    fake.chmod(0o755)
    record = mediapipe_probes(artifact, python=fake)
    expected = f"expected {len(probes.ALL)} of {len(TINY_LABELS)}"
    assert not record["ran"] and expected in record["reason"], record


def _echo_classifier(length, path, vocabulary=VOCABULARY):
    """A MediaPipe file whose `probabilities` are its own inputs (token ids,
    segment ids, mask; floats, exact below 2**24): MediaPipe's scores on it
    are the ids its tokenizer produced."""
    import tensorflow as tf  # the converter, for this one test only

    class Echo(tf.Module):
        @tf.function(
            input_signature=[
                tf.TensorSpec([1, length], tf.int32, name=n)
                for n in ("token_ids", "segment_ids", "padding_mask")
            ]
        )
        def serve(self, token_ids, segment_ids, padding_mask):
            ids = tf.concat([token_ids, segment_ids, padding_mask], axis=1)
            return {"probabilities": tf.cast(ids, tf.float32)}

    module = Echo()
    key = f"serving_L{length}"
    tf.saved_model.save(module, str(path / "echo"), signatures={key: module.serve})
    converter = tf.lite.TFLiteConverter.from_saved_model(
        str(path / "echo"), signature_keys=[key]
    )
    labels = [f"{kind}{i}" for kind in ("id", "seg", "mask") for i in range(length)]
    data = mediapipe.mediapipe_classifier(
        converter.convert(), key, vocabulary, labels, lowercase=True
    )
    (path / "echo.tflite").write_bytes(data)
    return path / "echo.tflite"


def test_other_ids_count_the_sentences_mediapipe_tokenizes_differently(
    artifact, tiny_tokenizer, tmp_path
):
    """`other_ids` (probabilities apart by more than float rounding) is, per
    group, the number of probe sentences whose ids MediaPipe's tokenizer
    makes differently from the zoo tokenizer, read back through an echo
    model with the same metadata."""
    python = mediapipe.mediapipe_python()
    if python is None:
        if os.environ.get("CI"):
            pytest.fail("MediaPipe's venv is missing in CI; run `make mediapipe-venv`")
        pytest.skip("no MediaPipe venv: `make mediapipe-venv`")
    record = json.loads((artifact / "validation.json").read_text())["mediapipe_probes"]
    length = record["sequence_length"]
    echo = _echo_classifier(length, tmp_path)
    (tmp_path / "texts.json").write_text(json.dumps(list(probes.ALL)))
    out = tmp_path / "out.json"
    subprocess.run(
        [
            str(python),
            "-c",
            mediapipe.CLASSIFY,
            str(echo),
            str(tmp_path / "texts.json"),
            str(out),
        ],
        check=True,
        capture_output=True,
        timeout=600,
    )
    scores = np.asarray(json.loads(out.read_text())["scores"])
    theirs = np.rint(scores).astype(np.int64).reshape(len(probes.ALL), 3, length)
    ids = tokenize_texts(tiny_tokenizer, list(probes.ALL), length)
    ours = np.stack([ids[k] for k in ("token_ids", "segment_ids", "padding_mask")], axis=1)
    differ = (theirs != ours).any(axis=(1, 2))
    start = 0
    for name, group in probes.GROUPS.items():
        counted = int(differ[start : start + len(group)].sum())
        assert record["groups"][name]["other_ids"] == counted, (name, counted)
        start += len(group)
    assert record["other_ids"] == int(differ.sum())
