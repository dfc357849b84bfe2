"""ALBERT through the commands BERT goes through, each artifact passing the
exporter's own validation gates (no --allow-degraded): an ALBERT classifier
model directory exported by `zoo export` to `.tflite` (in CI); an HF
AlbertModel directory fine-tuned by `zoo finetune` and exported to `.tflite`
and SavedModel (`full`: ~2.5 min on a loaded 2-core machine, the SavedModel's
validation in a fresh TF1-loader process alone ~50 s)."""

import json

import keras
import numpy as np
import pytest

import zoo
from export import manifest as mf
from tests.export.conftest import TINY_LABELS, VOCABULARY, sentences
from zoo.checkpoints import load_model_dir, save_hf, save_model_dir
from zoo.cli import main
from zoo.text.tokenizer import WordPieceTokenizer


def _encoder(**changes):
    keras.utils.set_random_seed(7)
    return zoo.AlbertEncoder(
        len(VOCABULARY),
        4,
        2,
        16,
        32,
        embedding_dim=8,
        num_groups=2,
        max_sequence_length=64,
        **changes,
    )


def _data(tmp_path):
    rows = [{"text": t, "label": TINY_LABELS[i % 3]} for i, t in enumerate(sentences(230))]
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return data


def _export(model_dir, data, fmt, out, capsys):
    capsys.readouterr()
    assert (
        main(
            [
                "export",
                "--model",
                str(model_dir),
                "--format",
                fmt,
                "--sequence-lengths",
                "24",
                "--data",
                str(data),
                "--out",
                str(out),
            ]
        )
        == 0
    )
    print(capsys.readouterr().out)
    artifact = (
        out if fmt == "tflite" else next(p for p in out.rglob("metadata.json")).parent
    )
    report = json.loads((artifact / "validation.json").read_text())
    assert report["num_texts"] == 230
    assert report["passed"] is True, report
    mf.verify_manifest(artifact)
    return report


@pytest.mark.slow  # a validated export
def test_albert_classifier_exports_to_tflite(tmp_path, capsys):
    # Weights of std 0.5, so the tanh and erf GELU forms differ visibly
    # (~1e-3 in the logits): the artifact must match the tanh one.
    model = zoo.Classifier(
        _encoder(initializer_range=0.5), 3, pooling="mean", labels=TINY_LABELS
    )
    exact = zoo.Classifier(
        _encoder(initializer_range=0.5, activation="gelu"), 3, pooling="mean"
    )
    exact.set_weights(model.get_weights())
    tokenizer = WordPieceTokenizer(VOCABULARY)
    batch = tokenizer(sentences(40), sequence_length=24)
    forms = float(
        np.abs(
            np.asarray(model(batch)["logits"]) - np.asarray(exact(batch)["logits"])
        ).max()
    )
    save_model_dir(model, tmp_path / "model", tokenizer)
    report = _export(
        tmp_path / "model", _data(tmp_path), "tflite", tmp_path / "tflite", capsys
    )
    for result in report["results"]:
        # Label agreement means something only if the model's answers vary.
        assert len(set(result["predictions"])) > 1, result["file"]
        assert result["metrics"]["max_abs_diff"] < forms / 10, (result, forms)


@pytest.mark.full
def test_albert_finetunes_and_exports_like_bert(tmp_path, capsys):
    encoder = _encoder()
    save_hf(encoder, tmp_path / "hf", vocabulary=VOCABULARY, lowercase=True)
    data = _data(tmp_path)
    assert (
        main(
            [
                "finetune",
                "--model",
                str(tmp_path / "hf"),
                "--data",
                str(data),
                "--task",
                "classify",
                "--out",
                str(tmp_path / "run"),
                "--epochs",
                "1",
                "--sequence-length",
                "24",
                "--batch-size",
                "32",
                "--learning-rate",
                "1e-3",
            ]
        )
        == 0
    )
    model, _, meta = load_model_dir(tmp_path / "run" / "model")
    assert type(model.encoder) is zoo.AlbertEncoder
    assert meta["encoder_config"]["family"] == "albert"
    assert meta["encoder_config"]["num_groups"] == 2
    trained = model.encoder.embedding_projection.kernel.numpy()
    assert not np.array_equal(trained, encoder.embedding_projection.kernel.numpy())
    for fmt in ("tflite", "saved_model"):
        _export(tmp_path / "run" / "model", data, fmt, tmp_path / fmt, capsys)
