"""A Regressor through both exporters: the `.tflite` ids signature and the
SavedModel's signatures (text-in, pairs, ids; read back through the TF1
session loader in a fresh process) give the Keras model's scores; metadata
records task regress; MediaPipe is skipped with a reason; the score gates
catch a wrong artifact."""

import json

import numpy as np
import pytest

from export import ServingVersion, Signatures, Validation
from export import manifest as mf
from export.runtime import load_signature
from export.saved_model import export_saved_model
from export.tflite import export_tflite
from export.validate import check_thresholds, compare, format_report
from tests.export.conftest import TINY, VOCABULARY, sentences
from zoo.predict import open_predictor


def tiny_regressor(seed=11):
    import keras

    import zoo

    keras.utils.set_random_seed(seed)
    encoder = zoo.BertEncoder(vocabulary_size=len(VOCABULARY), **TINY)
    return zoo.Regressor(encoder, pooling="mean")


@pytest.fixture(scope="module")
def regressor():
    return tiny_regressor()


@pytest.fixture(scope="module")
def pairs():
    a, b = sentences(200, seed=3), sentences(200, seed=4)
    return list(zip(a, b))


def _keras_scores(model, tokenizer, pairs, length):
    ids = tokenizer([a for a, _ in pairs], [b for _, b in pairs], sequence_length=length)
    return np.asarray(
        model.predict({k: np.asarray(v) for k, v in ids.items()}, verbose=0)["score"]
    ), ids


@pytest.mark.slow  # a validated export each
def test_tflite_float32_round_trip(regressor, tiny_tokenizer, pairs, tmp_path):
    out = export_tflite(
        regressor,
        tiny_tokenizer,
        tmp_path / "phone",
        signatures=Signatures((32,)),
        validation=Validation(pairs),
    )
    meta = mf.read_metadata(out)
    assert meta["task"] == "regress" and meta["labels"] is None
    assert meta["outputs"] == {"score": "float32 [1]"}
    assert (
        "mediapipe.tflite" not in meta["files"] and not (out / "mediapipe.tflite").exists()
    )
    assert "regress model" in meta["mediapipe"]
    report = json.loads((out / "validation.json").read_text())
    assert report["passed"] and report["task"] == "regress"
    assert report["thresholds"] == {"max_abs_diff": 1e-4}
    metrics = report["results"][0]["metrics"]
    assert metrics["max_abs_diff"] <= 1e-4 and metrics["score_pearson"] > 0.9999
    assert "mediapipe.tflite: not written" in format_report(report)
    # The phone's own path: the checked signature on host ids, one pair at a time.
    keras_scores, ids = _keras_scores(regressor, tiny_tokenizer, pairs[:5], 32)
    run = load_signature(out)
    for i in range(5):
        got = run(**{k: np.asarray(v)[i : i + 1] for k, v in ids.items()})["score"]
        assert got.shape == (1,) and got.dtype == np.float32
        np.testing.assert_allclose(got[0], keras_scores[i], atol=1e-5)
    # `zoo predict`'s library on the artifact: the same scores from text pairs.
    answers = open_predictor(out).predict([{"text": a, "text_b": b} for a, b in pairs[:5]])
    np.testing.assert_allclose([x["score"] for x in answers], keras_scores, atol=1e-5)


@pytest.mark.slow  # a validated export each
def test_saved_model_round_trip(regressor, tiny_tokenizer, pairs, tmp_path):
    version = export_saved_model(
        regressor,
        tiny_tokenizer,
        tmp_path / "serving",
        serving=ServingVersion("sts"),
        sequence_length=32,
        validation=Validation(pairs),
    )
    meta = mf.read_metadata(version)
    assert meta["task"] == "regress" and meta["labels"] is None
    for name in ("serving_default", "serve_text_pair", "serve_ids"):
        assert meta["signatures"][name]["outputs"] == ["score"], name
    report = json.loads((version / "validation.json").read_text())
    assert report["passed"], report["failures"]
    # Every compared signature ran in the TF1 session loader (fresh process).
    compared = {
        r["signature"]: r["metrics"]
        for r in report["results"]
        if "max_abs_diff" in r["metrics"]
    }
    assert {"serving_default", "serve_text_pair", "serve_ids"} <= set(compared)
    assert all(m["max_abs_diff"] <= 1e-4 for m in compared.values())
    assert report["runtime"].startswith("tf.compat.v1.saved_model.loader")


def test_score_gates_catch_a_wrong_artifact():
    rng = np.random.default_rng(0)
    reference = rng.uniform(0, 5, 300).astype(np.float32)
    ids = {
        "token_ids": np.ones((300, 4), np.int32),
        "segment_ids": np.zeros((300, 4), np.int32),
        "padding_mask": np.ones((300, 4), np.int32),
    }
    close = compare("regress", {"score": reference + 0.01}, {"score": reference}, ids)
    assert close["max_abs_diff"] == pytest.approx(0.01, abs=1e-5)
    assert close["score_pearson"] == pytest.approx(1.0)
    results = [{"file": "model.tflite", "signature": "serving_L32", "metrics": close}]
    assert check_thresholds("dynamic_int8", results, "regress") == []
    assert check_thresholds("float32", results, "regress")  # 0.01 > 1e-4
    shuffled = compare(
        "regress", {"score": rng.permutation(reference)}, {"score": reference}, ids
    )
    results = [{"file": "model.tflite", "signature": "serving_L32", "metrics": shuffled}]
    failures = check_thresholds("int8", results, "regress")
    assert any("score_pearson" in f for f in failures)
    assert any("max_abs_diff" in f for f in failures)
