"""`.tflite` export mechanics on a tiny randomly initialised classifier."""

import collections
import json

import numpy as np
import pytest

from export import Quantization, Signatures, Validation, runtime, tflite, validate
from export import manifest as mf
from tests.export.conftest import make_tiny
from tests.script_modules import load_script


@pytest.fixture(scope="module")
def artifact(tmp_path_factory, tiny_classifier, tiny_tokenizer, tiny_texts, tiny_labels):
    out = tmp_path_factory.mktemp("tflite") / "tiny_f32"
    tflite.export_tflite(
        tiny_classifier,
        tiny_tokenizer,
        out,
        quantization=Quantization("float32"),
        signatures=Signatures((16, 32), text_in=True),
        validation=Validation(tiny_texts, tiny_labels),
    )
    return out


def test_artifact_files_metadata_and_validation(artifact, tiny_tokenizer):
    assert sorted(p.name for p in artifact.iterdir()) == [
        ".zoo-output",
        "manifest.json",
        "mediapipe.tflite",
        "metadata.json",
        "model.tflite",
        "model_text.tflite",
        "validation.json",
        "vocab.txt",
    ]
    meta = mf.read_metadata(artifact)
    assert meta["kind"] == "tflite" and meta["task"] == "classify"
    assert meta["labels"] == ["business", "sport", "tech"]
    assert meta["sequence_lengths"] == [16, 32] and meta["quantization"] == "float32"
    assert meta["lowercase"] is True
    assert meta["vocabulary_sha256"] == mf.vocabulary_sha256(tiny_tokenizer.vocabulary)
    assert (artifact / "vocab.txt").read_text().split("\n")[
        :-1
    ] == tiny_tokenizer.vocabulary
    assert meta["source_model"]["class"] == "Classifier"
    phone = meta["files"]["model.tflite"]
    assert phone["signatures"] == ["serving_L16", "serving_L32"]
    assert phone["custom_ops"] == [] and "FULLY_CONNECTED" in phone["ops"]
    mf.verify_manifest(artifact)
    report = json.loads((artifact / "validation.json").read_text())
    assert report["passed"] and not report["degraded"] and report["num_texts"] == 200
    rows = {(r["file"], r["signature"]): r for r in report["results"]}
    assert set(rows) == {
        ("mediapipe.tflite", "serving_L16"),
        ("model.tflite", "serving_L16"),
        ("model.tflite", "serving_L32"),
        ("model_text.tflite", "serving_text_L16"),
    }
    primary = rows["model.tflite", "serving_L16"]["metrics"]
    assert primary["num_texts"] == 200 and primary["max_abs_diff"] <= 1e-4
    assert primary["label_agreement"] == 1.0 and primary["accuracy_delta"] == 0.0
    assert (
        rows["model.tflite", "serving_L32"]["metrics"]["num_texts"]
        == runtime.SECONDARY_TEXTS
    )
    assert (
        rows["model_text.tflite", "serving_text_L16"]["metrics"]["token_ids_match"] == 1.0
    )
    print("\n" + validate.format_report(report))


def test_signatures_take_named_fixed_inputs_and_match_keras(
    artifact, tiny_classifier, tiny_tokenizer
):
    interpreter = runtime.load_interpreter(artifact)
    signatures = interpreter.get_signature_list()
    assert signatures == {
        name: {
            "inputs": ["padding_mask", "segment_ids", "token_ids"],
            "outputs": ["logits", "probabilities"],
        }
        for name in ("serving_L16", "serving_L32")
    }
    runner = interpreter.get_signature_runner("serving_L32")
    assert {k: tuple(v["shape"]) for k, v in runner.get_input_details().items()} == {
        k: (1, 32) for k in ("padding_mask", "segment_ids", "token_ids")
    }
    ids = {
        k: np.asarray(v)
        for k, v in tiny_tokenizer(["The market goal was hot."], sequence_length=32).items()
    }
    out = runner(**ids)  # by name
    reference = np.asarray(tiny_classifier(ids)["logits"])
    np.testing.assert_allclose(out["logits"], reference, atol=1e-5)
    np.testing.assert_allclose(out["probabilities"].sum(), 1.0, atol=1e-5)


def test_parallel_validation_gives_one_interpreters_outputs_in_order(artifact, tiny_texts):
    one = runtime.run_tflite(artifact, tiny_texts, workers=1)
    three = runtime.run_tflite(artifact, tiny_texts, workers=3)
    assert [(r["file"], r["signature"]) for r in one] == [
        (r["file"], r["signature"]) for r in three
    ]
    for a, b in zip(one, three):
        assert a["workers"] == 1 and b["workers"] == 3
        assert sorted(a["outputs"]) == sorted(b["outputs"])
        for name in a["outputs"]:
            assert np.array_equal(a["outputs"][name], b["outputs"][name]), (a["file"], name)
        assert a["latency"]["runs"] == b["latency"]["runs"] == runtime.LATENCY_RUNS
    # In text order: the last text (run by a worker) is what one call on it gives.
    primary = three[0]
    assert primary["file"] == "model.tflite" and len(primary["outputs"]["logits"]) == 200
    alone = runtime.load_signature(artifact)(
        **{k: v[-1:] for k, v in primary["ids"].items()}
    )
    assert np.array_equal(primary["outputs"]["logits"][-1:], alone["logits"])
    assert not np.array_equal(
        primary["outputs"]["logits"][-1], primary["outputs"]["logits"][-2]
    )
    # The export recorded how many interpreters it validated on.
    report = json.loads((artifact / "validation.json").read_text())
    assert report["validation_interpreters"] == runtime.validation_workers()
    assert f"validated on {runtime.validation_workers()} interpreters" in report["runtime"]
    with pytest.raises(ValueError, match="workers: .* received 0"):
        runtime.run_tflite(artifact, tiny_texts, workers=0)


def test_op_lists_read_from_the_flatbuffer(artifact):
    meta = mf.read_metadata(artifact)
    for file in ("model.tflite", "model_text.tflite"):
        ops = tflite.op_list((artifact / file).read_bytes())
        assert meta["files"][file]["ops"] == ops["builtin"] + ops["custom"]
        assert not any(op.startswith("Flex") for op in ops["custom"])
        print(f"\n{file}: builtin {ops['builtin']} custom {ops['custom']}")
    text = meta["files"]["model_text.tflite"]
    assert set(text["custom_ops"]) == {
        "FastBertNormalize",
        "FastWordpieceTokenizeWithOffsets",
    }
    assert (
        "InterpreterWithCustomOps" in text["runtime"]
        and "tensorflow-text" in text["runtime"]
    )
    assert meta["files"]["model.tflite"]["weights"]["duplicate_bytes"] == 0


def test_text_in_file_tokenizes_like_the_project_tokenizer_on_plain_text(
    artifact, tiny_tokenizer
):
    runner = runtime.load_interpreter(artifact, "model_text.tflite").get_signature_runner(
        "serving_text_L16"
    )
    text = "Who said the film was long?"
    out = runner(text=np.array([text], dtype=object))
    np.testing.assert_array_equal(
        out["token_ids"], tiny_tokenizer([text], sequence_length=16)["token_ids"]
    )


def test_flipped_byte_refuses_to_load(artifact, tmp_path, tiny_texts):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(artifact, copy)
    data = bytearray((copy / "model.tflite").read_bytes())
    data[len(data) // 2] ^= 0x10
    (copy / "model.tflite").write_bytes(bytes(data))
    with pytest.raises(mf.ManifestError, match=r"model\.tflite: sha256"):
        runtime.load_interpreter(copy)
    with pytest.raises(mf.ManifestError, match="refusing to load it"):
        validate.validate_artifact(copy, tiny_texts)


def test_threshold_miss_raises_with_the_numbers_or_is_recorded(
    artifact, tiny_classifier, tiny_tokenizer, tiny_texts, monkeypatch
):
    monkeypatch.setitem(validate.THRESHOLDS, "float32", {"max_abs_diff": -1.0})
    with pytest.raises(validate.ExportValidationError) as e:
        validate.validate_artifact(
            artifact, tiny_texts, reference_model=tiny_classifier, tokenizer=tiny_tokenizer
        )
    assert "max_abs_diff = " in str(e.value) and "needs <= -1" in str(e.value)
    assert e.value.report["passed"] is False
    report = validate.validate_artifact(
        artifact,
        tiny_texts,
        reference_model=tiny_classifier,
        tokenizer=tiny_tokenizer,
        allow_degraded=True,
    )
    assert report["degraded"] and report["failures"]
    assert "DEGRADED" in validate.format_report(report)


def test_validation_without_reference_reports_artifact_figures(
    artifact, tiny_texts, tiny_labels
):
    report = validate.validate_artifact(artifact, tiny_texts, tiny_labels)
    assert report["reference"] is None and report["passed"]
    assert "accuracy_artifact" in report["results"][0]["metrics"]
    with pytest.raises(ValueError, match="at least 200 real texts"):
        validate.validate_artifact(artifact, tiny_texts[:20])


def test_failed_or_interrupted_export_publishes_nothing(
    artifact, tmp_path, tiny_classifier, tiny_tokenizer, tiny_texts, monkeypatch
):
    """Conversion is replaced by the bytes of the fixture's file (fast); the
    failure comes after the model file is written."""
    canned = (artifact / "model.tflite").read_bytes()
    # Patched where _ids_model looks them up.
    monkeypatch.setattr(tflite.files, "write_phone_saved_model", lambda *a, **k: None)
    monkeypatch.setattr(tflite.files, "convert", lambda *a, **k: canned)

    def failing_validation(*args, **kwargs):
        raise validate.ExportValidationError("simulated threshold miss", {})

    # Patched where validate_new_artifact looks it up.
    monkeypatch.setattr(validate.artifact, "validate_artifact", failing_validation)
    out = tmp_path / "exports" / "new"
    with pytest.raises(validate.ExportValidationError):
        tflite.export_tflite(
            tiny_classifier,
            tiny_tokenizer,
            out,
            signatures=Signatures((16, 32)),
            validation=Validation(tiny_texts),
        )
    assert not out.exists() and list(out.parent.iterdir()) == []

    # An interruption mid-write over an existing artifact leaves the old one whole.
    import shutil

    shutil.copytree(artifact, out)
    before = mf.verify_manifest(out)

    def interrupted(directory):
        raise KeyboardInterrupt("simulated kill while writing the manifest")

    monkeypatch.setattr(mf, "write_manifest", interrupted)
    with pytest.raises(KeyboardInterrupt):
        tflite.export_tflite(
            tiny_classifier,
            tiny_tokenizer,
            out,
            signatures=Signatures((16, 32)),
            validation=Validation(tiny_texts),
        )
    monkeypatch.undo()
    assert mf.verify_manifest(out) == before
    assert sorted(p.name for p in out.parent.iterdir()) == ["new"]


def test_flex_ops_fail_the_conversion_loudly(tmp_path):
    import tensorflow as tf

    class NeedsFlex(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([1, 4], tf.int32)])
        def serve(self, token_ids):
            # tf.strings has no TFLite builtin kernel: only Flex could run it.
            return {"length": tf.strings.length(tf.strings.as_string(token_ids))}

    module = NeedsFlex()
    tf.saved_model.save(module, str(tmp_path / "sm"), signatures={"serve": module.serve})
    with pytest.raises(tflite.TFLiteConversionError, match="Flex") as e:
        tflite.convert(tmp_path / "sm", ["serve"], "float32")
    assert "built-in ops only" in str(e.value)


def test_argument_errors(tiny_classifier, tiny_tokenizer, tmp_path):
    with pytest.raises(ValueError, match="at least 100 str"):
        tflite.export_tflite(
            tiny_classifier,
            tiny_tokenizer,
            tmp_path / "a",
            quantization=Quantization("int8", ["a"] * 10),
            signatures=Signatures((16,)),
        )
    with pytest.raises(
        ValueError, match="choose one of float32, float16, dynamic_int8, int8"
    ):
        tflite.export_tflite(
            tiny_classifier,
            tiny_tokenizer,
            tmp_path / "a",
            quantization=Quantization("int16x8"),
            signatures=Signatures((16,)),
        )
    with pytest.raises(ValueError, match="max_sequence_length"):
        tflite.export_tflite(
            tiny_classifier,
            tiny_tokenizer,
            tmp_path / "a",
            signatures=Signatures((16, 512)),
        )
    with pytest.raises(TypeError, match="not a fine-tuned task model"):
        tflite.export_tflite(
            tiny_classifier.encoder,
            tiny_tokenizer,
            tmp_path / "a",
            signatures=Signatures((16,)),
        )
    assert not (tmp_path / "a").exists()


def test_token_classifier_exports_per_token_logits(tmp_path, tiny_tokenizer, tiny_texts):
    tagger = make_tiny("tagger")
    out = tflite.export_tflite(
        tagger,
        tiny_tokenizer,
        tmp_path / "tagger",
        signatures=Signatures((16,)),
        validation=Validation(tiny_texts),
    )
    meta = mf.read_metadata(out)
    assert meta["task"] == "tag" and meta["labels"] == [
        "O",
        "B-ORG",
        "I-ORG",
        "B-PER",
    ]
    report = json.loads((out / "validation.json").read_text())
    metrics = report["results"][0]["metrics"]
    assert (
        report["passed"]
        and metrics["max_abs_diff"] <= 1e-4
        and metrics["label_agreement"] == 1.0
    )
    runner = runtime.load_interpreter(out).get_signature_runner("serving_L16")
    assert runner.get_output_details()["logits"]["shape"].tolist() == [1, 16, 4]


def _operand_types(content, op_name):
    """{(input 0 type, input 1 type)} of every `op_name` in the primary
    subgraph, as schema TensorType names (FULLY_CONNECTED: activation, weight)."""
    schema = tflite.schema_py_generated
    model = schema.Model.GetRootAs(content, 0)
    types = {v: k for k, v in vars(schema.TensorType).items() if not k.startswith("_")}
    codes = [
        max(
            model.OperatorCodes(i).BuiltinCode(),
            model.OperatorCodes(i).DeprecatedBuiltinCode(),
        )
        for i in range(model.OperatorCodesLength())
    ]
    graph = model.Subgraphs(0)
    wanted = getattr(schema.BuiltinOperator, op_name)
    found = set()
    for j in range(graph.OperatorsLength()):
        op = graph.Operators(j)
        if codes[op.OpcodeIndex()] == wanted:
            found.add(
                tuple(
                    types[graph.Tensors(op.Inputs(k)).Type()]
                    for k in range(min(2, op.InputsLength()))
                )
            )
    return found


@pytest.mark.parametrize("mode", ["int8", "int4"])
def test_calibrated_modes_quantize_what_they_claim(
    mode, tmp_path, tiny_classifier, tiny_tokenizer, tiny_texts, recwarn
):
    """int8: dense layers run int8 x int8 while LayerNorm/softmax/GELU stay
    float (INT8_FLOAT_OPS); int4: int4 dense weights with float activations
    (dynamic). Both stay within quantization noise of the Keras model. The
    quantizer's debugging-mode warning from LiteRT does not reach the user."""
    out = tflite.export_tflite(
        tiny_classifier,
        tiny_tokenizer,
        tmp_path / mode,
        quantization=Quantization(mode, tiny_texts),
        signatures=Signatures((16,)),
    )
    assert not [w for w in recwarn if "preserve_all_tensors" in str(w.message)]
    content = (out / "model.tflite").read_bytes()
    dense = _operand_types(content, "FULLY_CONNECTED")
    ops = tflite.op_list(content)["builtin"]
    if mode == "int8":
        assert dense == {("INT8", "INT8")}
        assert "SOFTMAX" in ops and "QUANTIZE" in ops and "DEQUANTIZE" in ops
        assert _operand_types(content, "SOFTMAX") == {("FLOAT32",)}
        assert _operand_types(content, "GELU") == {("FLOAT32",)}
    else:
        assert dense == {("FLOAT32", "INT4")}
    assert mf.read_metadata(out)["quantization"] == mode
    run = runtime.load_signature(out, "serving_L16")
    ids = tflite.tokenize_texts(tiny_tokenizer, tiny_texts[:20], 16)
    keras_logits = np.asarray(tiny_classifier(ids, training=False)["logits"])
    got = np.concatenate(
        [run(**{k: v[i : i + 1] for k, v in ids.items()})["logits"] for i in range(20)]
    )
    scale = float(np.abs(keras_logits).max())
    assert np.abs(got - keras_logits).max() <= 0.1 * scale, (got[:3], keras_logits[:3])


def test_metadata_carries_the_tokenization_and_its_runtimes(artifact, tiny_tokenizer):
    """metadata.json holds the tokenizer's description (typed on read), the
    runtimes that implement it, and the tokenizer rebuilt from it is built
    once per artifact and tokenizes as the model's own."""
    from zoo.text import description as td

    meta = mf.read_metadata(artifact)
    assert meta["tokenization"] == td.check(tiny_tokenizer.description)
    assert meta["tokenizer_runtimes"] == {"zoo": "exact", "android_app": "exact"}
    first = mf.artifact_tokenizer(artifact, meta)
    assert mf.artifact_tokenizer(artifact, mf.read_metadata(artifact)) is first
    text = "Héllo wörld, ﬁne"
    assert first.tokenize(text).to_list() == tiny_tokenizer.tokenize(text).to_list()
    other = td.wordpiece(lowercase=True, strip_accents=False)
    with pytest.raises(ValueError, match="tokenizes as"):
        mf.artifact_tokenizer(
            artifact, meta, given=type(first).from_description(first.vocabulary, other)
        )


@pytest.fixture
def counted(monkeypatch):
    """Counts of the artifact tokenizers built and of the consistency checks
    run on a `.tflite` artifact. export.manifest's tokenizer cache is made to
    forget, so a second build counts instead of hiding in it: only the
    opened artifact may keep its tokenizer."""
    from export.consistency import artifact as consistency
    from export.manifest import tokenizer as manifest_tokenizer

    class Forgetful(dict):
        def get(self, key, default=None):
            return default

    counts = {"tokenizers": 0, "checks": 0}
    build, check = manifest_tokenizer.build_tokenizer, consistency.check_tflite_artifact

    def counting_build(*args, **kwargs):
        counts["tokenizers"] += 1
        return build(*args, **kwargs)

    def counting_check(*args, **kwargs):
        counts["checks"] += 1
        return check(*args, **kwargs)

    monkeypatch.setattr(manifest_tokenizer, "_TOKENIZERS", Forgetful())
    monkeypatch.setattr(manifest_tokenizer, "build_tokenizer", counting_build)
    monkeypatch.setattr(consistency, "check_tflite_artifact", counting_check)
    return counts


def test_an_opened_artifact_is_checked_and_tokenized_once(artifact, tiny_texts, counted):
    """validate_artifact and open_predictor(...).predict open the artifact
    once: one consistency check, one tokenizer, however many files,
    signatures and interpreters run."""
    from zoo.predict import open_predictor

    validate.validate_artifact(artifact, tiny_texts, workers=2)
    assert counted == {"tokenizers": 1, "checks": 1}
    counted.update(tokenizers=0, checks=0)
    answers = open_predictor(artifact).predict(tiny_texts[:3])
    assert len(answers) == 3 and answers[0]["label"] in ("business", "sport", "tech")
    assert counted == {"tokenizers": 1, "checks": 1}
    # The object itself: opened once, passed on without a second check.
    counted.update(tokenizers=0, checks=0)
    opened = runtime.open_artifact(artifact)
    assert runtime.open_artifact(opened) is opened and opened.format == "tflite"
    assert opened.manifest["files"].keys() >= {"model.tflite", "metadata.json"}
    runtime.load_signature(opened)
    runtime.load_interpreter(opened, "mediapipe.tflite")
    assert opened.tokenizer is opened.tokenizer
    assert counted == {"tokenizers": 1, "checks": 1}


def test_an_opened_artifact_refuses_another_tokenizer(artifact, tiny_tokenizer):
    from zoo.text import description as td

    opened = runtime.open_artifact(artifact)
    assert opened.with_tokenizer(tiny_tokenizer).tokenizer is tiny_tokenizer
    assert opened.with_tokenizer(None) is opened
    cased = type(tiny_tokenizer).from_description(
        tiny_tokenizer.vocabulary, td.wordpiece(lowercase=False, strip_accents=False)
    )
    with pytest.raises(ValueError, match="tokenizes as"):
        opened.with_tokenizer(cased)


@pytest.mark.parametrize(
    "edit, field",
    [
        (lambda t: t["model"].update(max_word=10**9), "tokenization.model.max_word"),
        (
            lambda t: t["normalizer"].append({"type": "rot13"}),
            "tokenization.normalizer[4].type",
        ),
        (lambda t: t["model"].update(type="BPE"), "`tokenizer`"),
        (lambda t: t["normalizer"].remove({"type": "lowercase"}), "`lowercase`"),
        (lambda t: t.update(version="1"), "tokenization.version"),
    ],
)
def test_an_edited_tokenization_is_refused_by_name(artifact, edit, field):
    meta = json.loads((artifact / mf.METADATA).read_text())
    edit(meta["tokenization"])
    with pytest.raises(mf.MetadataError) as e:
        mf.check_metadata_fields(meta, artifact / mf.METADATA)
    assert field in str(e.value)


def test_text_in_refuses_a_tokenization_fast_bert_does_not_implement(tiny_tokenizer):
    keras_hub = type(tiny_tokenizer)(
        tiny_tokenizer.vocabulary, lowercase=True, strip_accents=False, flavor="keras_hub"
    )
    with pytest.raises(ValueError, match="keras_hub_bert"):
        tflite.fast_bert_tokenizer(keras_hub)
    tflite.fast_bert_tokenizer(tiny_tokenizer)  # BERT's rule: built


def test_the_predict_path_reads_the_metadata_once(artifact):
    """scripts/predict_path.py traces `open_predictor(...).predict(...)`:
    metadata.json is read and checked once (detect_format used to read it
    too), the manifest verified once, and the path starts in zoo.predict."""
    found = load_script("scripts/predict_path.py").trace(artifact)
    functions = collections.Counter(f"{m}.{f}" for m, f in found["calls"])
    assert functions["export.manifest.metadata.read_metadata"] == 1
    assert functions["export.manifest.files.verify_manifest"] == 1
    assert functions["export.consistency.artifact.check_artifact"] == 1
    assert found["stops"][0][0] == "zoo.predict"
    assert 0 < found["climbs"] < len(found["stops"])
    assert set(found["rooms"]) >= {"zoo.predict", "export.runtime", "export.manifest"}
