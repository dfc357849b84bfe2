"""RoBERTa from training to phone through the commands BERT goes through: a
tiny RobertaModel in HF's layout, with a byte-level BPE trained here on the
BBC training split (no RoBERTa vocabulary installs offline), fine-tuned by
`zoo finetune --task classify --data bbc`, distilled into a RoBERTa student,
pruned by `zoo prune` with its merges, exported by `zoo export` to a
text-in SavedModel (BPE in the graph, validated in the TF1 loader) and to
`.tflite` (ids in; `zoo predict` tokenizes on the host), each passing the
exporter's own validation gates. MediaPipe and the Android assets refuse a
BPE model with the reason."""

from __future__ import annotations

import json
import pathlib

import keras
import pytest

import zoo
from export import manifest as mf
from tests.bpe import train_bpe
from zoo.checkpoints import load_model_dir, save_hf
from zoo.cli import main
from zoo.datasets.corpora import bbc_news_split

pytestmark = [pytest.mark.assets, pytest.mark.slow]
LENGTH = "64"


@pytest.fixture(scope="module")
def finetuned(tmp_path_factory):
    root = tmp_path_factory.mktemp("roberta_pipeline")
    texts = [text for text, _ in bbc_news_split()["train"]]
    bpe = train_bpe(texts, root / "bpe", vocabulary_size=1000)
    tokenizer = zoo.BytePairTokenizer(bpe / "vocab.json", bpe / "merges.txt")
    keras.utils.set_random_seed(0)
    encoder = zoo.RobertaEncoder(
        tokenizer.vocabulary_size, 2, 2, 32, 64, max_sequence_length=64
    )
    save_hf(encoder, root / "hf", tokenizer=tokenizer)
    args = ["finetune", "--model", root / "hf", "--data", "bbc", "--task", "classify"]
    args += ["--out", root / "run", "--epochs", "1", "--steps-per-epoch", "12"]
    args += ["--sequence-length", LENGTH, "--batch-size", "32", "--learning-rate", "3e-3"]
    assert main([str(a) for a in args]) == 0
    return root


def _export(model, fmt, out, capsys):
    capsys.readouterr()
    args = ["export", "--model", model, "--format", fmt, "--data", "bbc"]
    args += ["--sequence-lengths", LENGTH, "--out", out]
    assert main([str(a) for a in args]) == 0
    printed = capsys.readouterr().out
    artifact = out if fmt == "tflite" else out / "model" / "1"
    report = json.loads((artifact / "validation.json").read_text())
    assert report["passed"] is True, report
    mf.verify_manifest(artifact)
    return artifact, report, printed


def test_finetuned_model_directory_is_roberta_with_bpe_files(finetuned):
    model, tokenizer, meta = load_model_dir(finetuned / "run" / "model")
    assert type(model.encoder) is zoo.RobertaEncoder
    assert isinstance(tokenizer, zoo.BytePairTokenizer)
    assert meta["tokenizer"] == "byte_pair"
    assert (finetuned / "run" / "model" / "merges.txt").is_file()
    result = json.loads((finetuned / "run" / "metrics.json").read_text())
    assert result["num_test"] == 426 and 0.0 <= result["accuracy"] <= 1.0


def test_distil_into_a_roberta_student(finetuned, capsys):
    args = ["distill", "--teacher", finetuned / "run" / "model", "--data", "bbc"]
    args += ["--student-layers", "1", "--out", finetuned / "student", "--epochs", "1"]
    args += ["--steps-per-epoch", "8", "--sequence-length", LENGTH, "--batch-size", "32"]
    assert main([str(a) for a in args]) == 0
    student, tokenizer, meta = load_model_dir(finetuned / "student" / "model")
    # DistilRoBERTa-style: RoBERTa's positions and tokenizer, fewer layers.
    assert type(student.encoder) is zoo.RobertaEncoder
    assert student.encoder.num_layers == 1
    assert (
        meta["merges_sha256"]
        == load_model_dir(finetuned / "run" / "model")[2]["merges_sha256"]
    )


def test_prune_keeps_the_merges_the_training_texts_need(finetuned, capsys):
    args = ["prune", "--model", finetuned / "run" / "model", "--data", "bbc"]
    args += ["--out", finetuned / "pruned", "--json"]
    capsys.readouterr()
    assert main([str(a) for a in args]) == 0
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert report["vocabulary_after"] <= report["vocabulary_before"] == 1000
    assert report["after"]["accuracy"] == report["before"]["accuracy"] or (
        report["test_texts_tokenized_differently"] > 0
    )
    pruned, tokenizer, meta = load_model_dir(finetuned / "pruned")
    assert isinstance(tokenizer, zoo.BytePairTokenizer)
    assert meta["vocabulary_pruning"]["vocabulary_after"] == tokenizer.vocabulary_size
    assert pruned.encoder.vocabulary_size == tokenizer.vocabulary_size


def test_tflite_export_tokenizes_on_the_host(finetuned, tmp_path, capsys):
    model_dir = finetuned / "run" / "model"
    artifact, report, printed = _export(model_dir, "tflite", tmp_path / "tflite", capsys)
    names = {p.name for p in artifact.iterdir()}
    assert {"model.tflite", "vocab.json", "merges.txt"} <= names
    assert not names & {"vocab.txt", "mediapipe.tflite"}
    meta = mf.read_metadata(artifact)
    assert meta["tokenizer"] == "byte_pair"
    assert "union ProcessUnitOptions" in meta["mediapipe"]
    assert "byte-level BPE" in printed
    (result,) = report["results"]
    assert result["metrics"]["max_abs_diff"] < 1e-4
    assert result["metrics"]["label_agreement"] == 1.0
    # zoo predict: the artifact and the model directory give the same answer.
    text = "The striker scored twice as the home side won the cup final."
    answers = []
    for source in (artifact, model_dir):
        capsys.readouterr()
        assert main(["predict", "--model", str(source), "--text", text, "--json"]) == 0
        answers.append(json.loads(capsys.readouterr().out.strip().splitlines()[-1]))
    assert answers[0]["label"] == answers[1]["label"]
    for label, score in answers[1]["scores"].items():
        assert abs(answers[0]["scores"][label] - score) < 1e-4
    # The text-in .tflite needs WordPiece (FastBertTokenizer): refused, saying why.
    args = ["export", "--model", model_dir, "--format", "tflite", "--text-in"]
    args += ["--data", "bbc", "--out", tmp_path / "text_in"]
    assert main([str(a) for a in args]) == 2
    assert "FastBertTokenizer" in capsys.readouterr().err


def test_saved_model_export_has_the_bpe_in_its_graph(finetuned, tmp_path, capsys):
    artifact, report, _ = _export(
        finetuned / "run" / "model", "saved_model", tmp_path / "sm", capsys
    )
    assert {"vocab.json", "merges.txt"} <= {p.name for p in artifact.iterdir()}
    results = {r["signature"]: r["metrics"] for r in report["results"]}
    for signature in ("serving_default", "serve_text_pair", "serve_ids"):
        assert results[signature]["max_abs_diff"] < 1e-4, signature
        assert results[signature]["label_agreement"] == 1.0, signature
    # The graph's BPE gives the host tokenizer's ids on every validation text.
    assert results["tokenize"]["token_ids_match"] == 1.0


def test_android_assets_refuse_a_bpe_phone_model(finetuned, tmp_path, capsys):
    from zoo.demo import DemoConfig, DemoError, _android_assets

    config = DemoConfig()
    source = tmp_path / "demo" / "exports" / f"student{config.students[0]}_dynamic_int8"
    _export(finetuned / "run" / "model", "tflite", source, capsys)
    with pytest.raises(DemoError, match="model is BPE"):
        _android_assets(tmp_path / "demo", config, tmp_path / "assets")
    assert not (tmp_path / "assets").exists()


def test_an_opened_bpe_artifact_builds_its_tokenizer_once(
    finetuned, tmp_path, capsys, monkeypatch
):
    """Opening, predicting with and validating one artifact build its
    tokenizer once (export.manifest.artifact_tokenizer)."""
    from export.validate import validate_artifact
    from zoo.predict import open_predictor

    artifact = tmp_path / "phone"
    _export(finetuned / "run" / "model", "tflite", artifact, capsys)
    built = []
    original = zoo.BytePairTokenizer.__init__

    def counting(self, vocabulary, *args, **kwargs):
        built.append(pathlib.Path(vocabulary).parent)
        original(self, vocabulary, *args, **kwargs)

    monkeypatch.setattr(zoo.BytePairTokenizer, "__init__", counting)
    mf._TOKENIZERS.clear()
    predictor = open_predictor(artifact)
    predictor.predict(["A test sentence about markets."])
    texts = [text for text, _ in bbc_news_split()["test"]][:200]
    validate_artifact(artifact, texts)
    # The artifact's own tokenizer once (validation also loads the source
    # model directory, which has its own files).
    assert built.count(artifact) == 1, built
