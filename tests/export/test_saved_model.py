"""Text-in SavedModel in TF Serving's layout, checked by the TF1 session loader
in a fresh process; the TPU variant's XLA lowering."""

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from export import ServingVersion, TpuBuckets, Validation, runtime, saved_model, validate
from export import manifest as mf
from tests.export.conftest import make_tiny, sentences
from zoo.predict import PredictError, open_predictor


@pytest.fixture(scope="module")
def serving(tmp_path_factory, tiny_classifier, tiny_tokenizer, tiny_texts, tiny_labels):
    base = tmp_path_factory.mktemp("serving")
    path = saved_model.export_saved_model(
        tiny_classifier,
        tiny_tokenizer,
        base,
        serving=ServingVersion("tiny"),
        sequence_length=32,
        validation=Validation(tiny_texts, tiny_labels),
    )
    return base, path


def test_tf_serving_layout_and_files(serving):
    base, path = serving
    assert path == base / "tiny" / "1"
    assert sorted(p.name for p in base.iterdir()) == [
        "README.md",
        "batching_parameters.txt",
        "models.config",
        "tiny",
    ]
    assert [p.name for p in (base / "tiny").iterdir()] == ["1"]  # no temporary left behind
    assert {
        "saved_model.pb",
        "variables",
        "assets",
        "metadata.json",
        "manifest.json",
        "validation.json",
        "vocab.txt",
    } <= {p.name for p in path.iterdir()}
    assert sorted(p.name for p in (path / "assets").iterdir()) == [
        "labels.txt",
        "vocab.txt",
    ]
    assert (path / "assets" / "labels.txt").read_text() == "business\nsport\ntech\n"
    config = (base / "models.config").read_text()
    assert (
        'name: "tiny"' in config and f'base_path: "{(base / "tiny").resolve()}"' in config
    )
    assert "max_batch_size" in (base / "batching_parameters.txt").read_text()
    readme = (base / "README.md").read_text()
    assert f"--model_config_file={base.resolve() / 'models.config'}" in readme
    assert "tensorflow_model_server --port=8500 --rest_api_port=8501" in readme
    assert oct(path.stat().st_mode & 0o777) != oct(0o700)  # readable by a server user
    mf.verify_manifest(path)


def test_every_signature_ran_in_the_tf1_loader_and_matches_keras(serving):
    _, path = serving
    report = json.loads((path / "validation.json").read_text())
    print("\n" + validate.format_report(report))
    assert report["passed"] and "fresh process" in report["runtime"]
    defs = report["signature_defs"]
    assert {"serving_default", "serve_text_pair", "serve_ids", "tokenize"} <= set(defs)
    assert defs["serving_default"]["inputs"] == {"text": {"dtype": "string", "shape": [-1]}}
    assert set(defs["serving_default"]["outputs"]) == {"label", "logits", "probabilities"}
    assert defs["serving_default"]["outputs"]["logits"]["dtype"] == "float32"
    assert set(defs["serve_ids"]["inputs"]) == {"token_ids", "segment_ids", "padding_mask"}
    rows = {r["signature"]: r["metrics"] for r in report["results"]}
    assert rows["serving_default"]["num_texts"] == 200
    assert rows["serving_default"]["label_agreement"] == 1.0
    assert rows["serving_default"]["label_string_agreement"] == 1.0
    assert rows["serving_default"]["max_abs_diff"] <= 1e-4
    assert rows["serve_ids"]["max_abs_diff"] <= 1e-6
    assert rows["serve_text_pair"]["label_agreement"] == 1.0
    assert rows["tokenize"]["token_ids_match"] == 1.0


def test_in_process_load_after_manifest_check(serving, tiny_classifier, tiny_tokenizer):
    _, path = serving
    loaded, meta = runtime.load_saved_model(path)
    out = loaded.signatures["tokenize"](text=np.array(["Market shares."]))
    assert [t.decode() for t in out["tokens"].numpy()[0][:4]] == [
        "[CLS]",
        "market",
        "shares",
        ".",
    ]
    out = loaded.signatures["serving_default"](text=np.array(["The bank vote was hot."]))
    ids = tiny_tokenizer(["The bank vote was hot."], sequence_length=32)
    expected = int(np.argmax(tiny_classifier(ids)["logits"][0]))
    assert out["label"].numpy()[0].decode() == meta["labels"][expected]


def test_flipped_weight_byte_refuses_to_load(serving, tmp_path, tiny_texts):
    import shutil

    _, path = serving
    copy = tmp_path / "1"
    shutil.copytree(path, copy)
    weights = next((copy / "variables").glob("variables.data-*"))
    data = bytearray(weights.read_bytes())
    data[len(data) // 3] ^= 0x04
    weights.write_bytes(bytes(data))
    with pytest.raises(
        mf.ManifestError, match=r"variables/variables\.data-00000-of-00001: sha256"
    ):
        runtime.load_saved_model(copy)
    with pytest.raises(mf.ManifestError, match="refusing to load it"):
        validate.validate_artifact(copy, tiny_texts)


def test_second_export_is_the_next_version(serving, tiny_classifier, tiny_tokenizer):
    base, _ = serving
    assert saved_model.next_version(base / "tiny") == 2
    with pytest.raises(FileExistsError, match="already exists"):
        saved_model.export_saved_model(
            tiny_classifier,
            tiny_tokenizer,
            base,
            serving=ServingVersion("tiny", 1),
            sequence_length=32,
        )
    with pytest.raises(ValueError, match="name="):
        saved_model.export_saved_model(
            tiny_classifier,
            tiny_tokenizer,
            base,
            serving=ServingVersion("../x"),
            sequence_length=32,
        )


_KILL_SCRIPT = r"""
import sys
from tests.export.conftest import make_tiny, VOCABULARY
from zoo.text.tokenizer import WordPieceTokenizer
from export import ServingVersion, saved_model
saved_model.export_saved_model(
    make_tiny(), WordPieceTokenizer(VOCABULARY), sys.argv[1], serving=ServingVersion("tiny"),
    sequence_length=32,
)
"""


@pytest.mark.slow
def test_killed_export_leaves_no_version_directory(tmp_path):
    """SIGKILL (no cleanup handler runs) while the version is being assembled:
    the server's directory holds no version, only a hidden temporary."""
    base = tmp_path / "serving"
    proc = subprocess.Popen(
        [sys.executable, "-c", _KILL_SCRIPT, str(base)],
        cwd=os.getcwd(),
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.time() + 240
        while time.time() < deadline:
            temporaries = (
                list((base / "tiny").glob(".1.tmp-*")) if (base / "tiny").is_dir() else []
            )
            # Kill once the SavedModel's weights are being written.
            if any((t / "variables").is_dir() for t in temporaries):
                break
            if proc.poll() is not None:
                pytest.fail(
                    f"the export ended before it could be killed: {proc.stderr.read()[-2000:]}"
                )
            time.sleep(0.05)
        else:
            pytest.fail("the export never started writing")
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert (
        saved_model.next_version(base / "tiny") == 1
    )  # no numeric version: nothing served
    assert not (base / "models.config").exists()
    print(f"\nkilled mid-export; left only {[p.name for p in (base / 'tiny').iterdir()]}")


def test_question_answerer_decodes_the_best_span_in_graph(tmp_path, tiny_tokenizer):
    qa = make_tiny("qa")
    questions = sentences(200, seed=1)
    contexts = sentences(200, seed=2)
    pairs = [(q[:40], c) for q, c in zip(questions, contexts)]
    path = saved_model.export_saved_model(
        qa,
        tiny_tokenizer,
        tmp_path,
        serving=ServingVersion("qa"),
        sequence_length=48,
        validation=Validation(pairs),
    )
    report = json.loads((path / "validation.json").read_text())
    rows = {r["signature"]: r["metrics"] for r in report["results"]}
    assert (
        report["passed"] and rows["serving_default"]["label_agreement"] == 1.0
    )  # same spans
    loaded, _ = runtime.load_saved_model(path)
    q, c = pairs[0]
    out = loaded.signatures["serving_default"](text=np.array([q]), text_b=np.array([c]))
    ids = {
        k: np.asarray(v)
        for k, v in tiny_tokenizer([q], text_b=[c], sequence_length=48).items()
    }
    ref = {k: np.asarray(v) for k, v in qa(ids).items()}
    start, end = validate.best_spans(
        ref["start_logits"], ref["end_logits"], ids, tiny_tokenizer.sep_id
    )[0]
    assert (out["answer_start"].numpy()[0], out["answer_end"].numpy()[0]) == (start, end)
    words = [tiny_tokenizer.id_to_token(i) for i in ids["token_ids"][0][start : end + 1]]
    assert out["answer"].numpy()[0].decode() == " ".join(words).replace(" ##", "")
    assert ids["segment_ids"][0][start] == 1 and end - start < saved_model.MAX_ANSWER_LENGTH


@pytest.mark.slow  # XLA lowering of every bucket
def test_tpu_endpoints_lower_to_xla_with_aliases(
    tmp_path, tiny_classifier, tiny_tokenizer, tiny_texts
):
    from tensorflow.core.protobuf import saved_model_pb2

    path = saved_model.export_tpu_saved_model(
        tiny_classifier,
        tiny_tokenizer,
        tmp_path,
        serving=ServingVersion("tiny_tpu"),
        buckets=TpuBuckets((32, 64), batch_size=4),
        validation=Validation(tiny_texts),
    )
    meta = mf.read_metadata(path)
    for name in ("serve_ids_L32", "serve_ids_L64"):
        evidence = meta["xla"][name]
        assert evidence["lowered_to_hlo"] and evidence["hlo_instructions"] > 100
        assert evidence["string_ops"] == [] and evidence["host_ops"] == []
        assert "dot" in evidence["hlo_opcodes"]
    print(
        f"\nTPU serve_ids_L32: {meta['xla']['serve_ids_L32']['hlo_instructions']} HLO instructions, "
        f"opcodes {meta['xla']['serve_ids_L32']['hlo_opcodes']}"
    )
    proto = saved_model_pb2.SavedModel()
    proto.ParseFromString((path / "saved_model.pb").read_bytes())
    aliases = set(proto.meta_graphs[0].meta_info_def.function_aliases.values())
    assert aliases == {"tpu_serve_L32", "tpu_serve_L64"}
    report = json.loads((path / "validation.json").read_text())
    print(validate.format_report(report))
    assert report["passed"]
    defs = report["signature_defs"]
    assert defs["serve_ids_L64"]["inputs"]["token_ids"] == {
        "dtype": "int32",
        "shape": [4, 64],
    }
    rows = {r["signature"]: r for r in report["results"]}
    assert rows["serve_ids_L32"]["metrics"]["max_abs_diff"] <= 1e-4
    assert rows["serve_ids_L32"]["latency"]["batch"] == 4
    # Ids in: `zoo predict` sends the user to the text-in formats.
    with pytest.raises(PredictError, match="ids in, for TPU serving"):
        open_predictor(path)


def test_tpu_bfloat16_clone_and_string_ops_refused(tiny_classifier, tiny_tokenizer):
    import tensorflow as tf

    clone = saved_model._bfloat16_clone(tiny_classifier)
    assert clone.encoder.transformer_layers[0].dtype_policy.name == "mixed_bfloat16"
    ids = {
        k: np.asarray(v)
        for k, v in tiny_tokenizer(sentences(8), sequence_length=32).items()
    }
    logits = clone(ids)["logits"]
    assert logits.dtype == "float32"
    np.testing.assert_allclose(
        np.asarray(logits), np.asarray(tiny_classifier(ids)["logits"]), atol=0.05
    )

    spec = {"text": tf.TensorSpec([4], tf.string)}
    fn = tf.function(
        lambda x: {"n": tf.strings.length(x["text"])},
        input_signature=[spec],
        jit_compile=True,
    )
    with pytest.raises(saved_model.XlaLoweringError, match="string ops|does not lower"):
        saved_model.xla_lowering(fn, spec)
