"""The regression task (`--task regress`): correlation metrics against
scipy, the STS-style reader and its errors, the WordNet STS generator, the
Regressor head, and a tiny end-to-end run (finetune reduces MSE; evaluate
and predict report the same model's scores)."""

import json
import random

import numpy as np
import pytest
from scipy import stats

from tests.conftest import asset_or_fail
from tests.export.conftest import TINY, VOCABULARY, sentences
from zoo.cli import main
from zoo.datasets import wordnet_sts
from zoo.text.readers import ScoredText, read_regression, read_task_examples
from zoo.train import metrics

# --- metrics ----------------------------------------------------------------------------


def test_pearson_and_spearman_match_scipy_with_ties():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 6, 200).astype(float)  # many ties
    y = x + rng.normal(0, 2, 200)
    assert metrics.pearson(x, y) == pytest.approx(stats.pearsonr(x, y)[0], abs=1e-12)
    assert metrics.spearman(x, y) == pytest.approx(stats.spearmanr(x, y)[0], abs=1e-12)
    # Hand-checked: ranks of [1, 2, 2, 3] are [1, 2.5, 2.5, 4].
    np.testing.assert_allclose(metrics._ranks([1, 2, 2, 3]), [1, 2.5, 2.5, 4])
    assert metrics.spearman([1, 2, 3, 4], [10, 20, 30, 1000]) == pytest.approx(1.0)
    assert metrics.pearson([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    # A constant prediction has no correlation (not NaN).
    assert metrics.pearson([1, 2, 3], [2, 2, 2]) == 0.0
    scores = metrics.regression_scores([0, 1, 2], [0, 1, 4])
    assert scores["mse"] == pytest.approx(4 / 3)


# --- reader -----------------------------------------------------------------------------


def test_reader_csv_jsonl_and_clear_errors(tmp_path):
    (tmp_path / "d.csv").write_text(
        'text,text_b,score\n"A man, a guitar",Someone plays,4.2\nAlone,,0\n'
    )
    rows = read_regression(tmp_path / "d.csv")
    assert rows == [
        ScoredText("A man, a guitar", 4.2, "Someone plays"),
        ScoredText("Alone", 0.0, None),
    ]
    (tmp_path / "d.jsonl").write_text(
        json.dumps({"text": "a", "text_b": "b", "score": 3}) + "\n"
    )
    assert read_regression(tmp_path / "d.jsonl") == [ScoredText("a", 3.0, "b")]

    (tmp_path / "bad.jsonl").write_text(
        json.dumps({"text": "a", "score": 1})
        + "\n"
        + json.dumps({"text": "b", "score": "high"})
        + "\n"
    )
    with pytest.raises(ValueError, match=r"bad.jsonl:2: `score` is 'high', not a number"):
        read_regression(tmp_path / "bad.jsonl")
    (tmp_path / "missing.csv").write_text("text,score\nfine,1\nno score,\n")
    with pytest.raises(ValueError, match=r"missing.csv:3: missing `score`"):
        read_regression(tmp_path / "missing.csv")
    (tmp_path / "header.csv").write_text("text,label\na,b\n")
    with pytest.raises(ValueError, match=r"header must name `text` and `score`"):
        read_regression(tmp_path / "header.csv")
    with pytest.raises(ValueError, match=r"`score` is 'nan'; give a finite number"):
        (tmp_path / "nan.csv").write_text("text,score\na,nan\n")
        read_regression(tmp_path / "nan.csv")
    # 1e39 is finite in Python but inf in float32: it trained to a NaN loss
    # and wrote NaN into metrics.json with exit 0.
    (tmp_path / "huge.csv").write_text("text,score\na,1\nb,1e39\n")
    with pytest.raises(
        ValueError, match=r"huge.csv:3: `score` is '1e39'; targets train in"
    ):
        read_regression(tmp_path / "huge.csv")
    # Export and validation read the same files as texts (scores not needed).
    texts = read_task_examples(tmp_path / "d.csv", "regress", labelled=False).examples
    assert [(e.text, e.text_b) for e in texts] == [
        ("A man, a guitar", "Someone plays"),
        ("Alone", None),
    ]


# --- the WordNet STS set -------------------------------------------------------------------


def test_wordnet_sts_is_graded_seeded_and_split_by_synset(tmp_path):
    taxonomy = asset_or_fail(wordnet_sts.wordnet_noun_taxonomy, "WordNet (wordnet-base)")
    similarity = wordnet_sts.WuPalmer(taxonomy)
    dog, cat = 2084071, 2121620  # dog.n.01, cat.n.01
    assert taxonomy[dog].words[0] == "dog" and taxonomy[cat].words[0] == "cat"
    # Wu-Palmer by hand: both sit under carnivore (depth 12 via the shortest
    # root path), dog 2 steps below it, cat 2: 2*12 / (2+2+2*12) = 6/7.
    assert similarity(dog, cat) == pytest.approx(6 / 7)
    assert similarity(dog, dog) == 1.0
    sizes = {"train": 60, "validation": 20, "test": 20}
    splits = wordnet_sts.wordnet_sts_splits(sizes, seed=3)
    assert splits == wordnet_sts.wordnet_sts_splits(sizes, seed=3)
    assert splits != wordnet_sts.wordnet_sts_splits(sizes, seed=4)
    assert {k: len(v) for k, v in splits.items()} == sizes
    scores = [e["score"] for v in splits.values() for e in v]
    assert 0 < min(scores) and max(scores) <= 5 and np.std(scores) > 0.5
    for e in splits["test"][:5]:
        a, b = e["synsets"]
        assert e["score"] == round(5 * similarity(a, b), 3)
        assert e["text"] == taxonomy[a].definition
    synsets = {k: {s for e in v for s in e["synsets"]} for k, v in splits.items()}
    assert not synsets["test"] & (synsets["train"] | synsets["validation"])
    out = wordnet_sts.write_wordnet_sts(tmp_path / "sts", sizes, seed=3)
    read = read_task_examples(out, "regress")
    assert read.splits["test"][0] == ScoredText(
        splits["test"][0]["text"], splits["test"][0]["score"], splits["test"][0]["text_b"]
    )


# --- head and a tiny run ---------------------------------------------------------------------


def test_regressor_outputs_a_float_score_and_round_trips(tmp_path):
    import keras

    import zoo
    from zoo.checkpoints import load_model_dir, save_model_dir
    from zoo.text.tokenizer import WordPieceTokenizer

    encoder = zoo.BertEncoder(vocabulary_size=len(VOCABULARY), **TINY)
    model = zoo.Regressor(encoder, pooling="mean")
    tokenizer = WordPieceTokenizer(VOCABULARY)
    ids = tokenizer(["the market", "a goal"], ["the bank", "a match"], sequence_length=16)
    out = model(ids)
    assert list(out) == ["score"] and out["score"].shape == (2,)
    assert np.asarray(out["score"]).dtype == np.float32
    assert zoo.task_of(model) == "regress" and model.labels is None
    loaded, _, meta = load_model_dir(save_model_dir(model, tmp_path / "m", tokenizer))
    assert type(loaded) is zoo.Regressor and meta["model_class"] == "Regressor"
    np.testing.assert_allclose(loaded(ids)["score"], out["score"], atol=1e-6)
    with pytest.raises(ValueError, match="pooling='pooled' needs an encoder with a pooler"):
        zoo.Regressor(
            zoo.DistilBertEncoder(vocabulary_size=len(VOCABULARY), **TINY), pooling="pooled"
        )
    assert keras.saving.get_registered_name(zoo.Regressor) == "zoo>Regressor"


def _overlap_pairs(path, n, seed):
    """Pairs of tiny-vocabulary sentences scored 5 x word overlap (Jaccard)."""
    rng = random.Random(seed)
    texts = sentences(n, seed=seed)
    with open(path, "w") as f:
        for text in texts:
            words = text.rstrip(".").lower().split()
            other = [
                w if rng.random() < rng.random() else rng.choice(VOCABULARY[10:])
                for w in words
            ]
            score = 5 * len(set(words) & set(other)) / len(set(words) | set(other))
            f.write(
                json.dumps(
                    {
                        "text": text,
                        "text_b": " ".join(other) + ".",
                        "score": round(score, 3),
                    }
                )
                + "\n"
            )


@pytest.mark.slow  # a training run
def test_tiny_finetune_reduces_mse_and_evaluate_predict_agree(tmp_path, capsys):
    import zoo
    from zoo.checkpoints import load_model_dir, save_model_dir
    from zoo.text.tokenizer import WordPieceTokenizer

    tokenizer = WordPieceTokenizer(VOCABULARY)
    base = save_model_dir(
        zoo.BertEncoder(vocabulary_size=len(VOCABULARY), **TINY),
        tmp_path / "tiny",
        tokenizer,
    )
    data = tmp_path / "sts"
    data.mkdir()
    _overlap_pairs(data / "train.jsonl", 160, seed=1)
    _overlap_pairs(data / "validation.jsonl", 32, seed=2)
    _overlap_pairs(data / "test.jsonl", 48, seed=3)
    out = tmp_path / "run"
    assert (
        main(
            [
                "finetune",
                "--model",
                str(base),
                "--data",
                str(data),
                "--task",
                "regress",
                "--out",
                str(out),
                "--epochs",
                "1",
                "--batch-size",
                "16",
                "--sequence-length",
                "32",
                "--learning-rate",
                "5e-3",
                "--pooling",
                "mean",
                "--verbose",
                "0",
            ]
        )
        == 0
    )
    trained = json.loads((out / "metrics.json").read_text())
    history = json.loads((out / "history.json").read_text())["history"]
    assert {"val_pearson", "val_spearman", "val_loss"} <= set(history)
    assert len(history["val_pearson"]) == 1
    test = read_task_examples(data, "regress").splits["test"]
    gold = np.array([e.score for e in test])
    ids = tokenizer([e.text for e in test], [e.text_b for e in test], sequence_length=32)
    ids = {k: np.asarray(v) for k, v in ids.items()}
    model, _, _ = load_model_dir(out / "model")
    predicted = model.predict(ids, verbose=0)["score"]
    # The reported metrics are the definitions on the best model's own predictions.
    assert trained["mse"] == pytest.approx(np.mean((gold - predicted) ** 2), rel=1e-5)
    assert trained["pearson"] == pytest.approx(stats.pearsonr(gold, predicted)[0], abs=1e-5)
    assert trained["spearman"] == pytest.approx(
        stats.spearmanr(gold, predicted)[0], abs=1e-5
    )
    # Training reduces the test MSE of the same head before training.
    encoder, _ = zoo.load_checkpoint(base)
    before = zoo.Regressor(encoder, pooling="mean").predict(ids, verbose=0)["score"]
    untrained_mse = float(np.mean((gold - before) ** 2))
    print(f"\ntiny regress: test MSE {untrained_mse:.3f} -> {trained['mse']:.3f}")
    assert trained["mse"] < 0.7 * untrained_mse
    capsys.readouterr()
    assert (
        main(["evaluate", "--model", str(out / "model"), "--data", str(data), "--json"])
        == 0
    )
    evaluated = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert evaluated["pearson"] == pytest.approx(trained["pearson"], abs=1e-6)
    assert evaluated["split"] == "test" and evaluated["num_examples"] == len(test)
    assert (
        main(
            [
                "predict",
                "--model",
                str(out / "model"),
                "--text",
                test[0].text,
                "--text-b",
                test[0].text_b,
            ]
        )
        == 0
    )
    assert capsys.readouterr().out.strip() == f"{predicted[0]:.4f}"


def test_bad_regression_data_is_refused_before_out_is_touched(tmp_path, capsys):
    import zoo
    from zoo.checkpoints import save_model_dir
    from zoo.text.tokenizer import WordPieceTokenizer

    base = save_model_dir(
        zoo.BertEncoder(vocabulary_size=len(VOCABULARY), **TINY),
        tmp_path / "tiny",
        WordPieceTokenizer(VOCABULARY),
    )
    data = tmp_path / "d.csv"
    data.write_text(
        "text,text_b,score\n"
        + "".join(f"t{i},u,{i % 3}\n" for i in range(20))
        + "bad,row,three\n"
    )
    out = tmp_path / "run"
    assert (
        main(
            [
                "finetune",
                "--model",
                str(base),
                "--data",
                str(data),
                "--task",
                "regress",
                "--out",
                str(out),
                "--sequence-length",
                "32",
            ]
        )
        == 2
    )
    assert "d.csv:22: `score` is 'three', not a number" in capsys.readouterr().err
    assert not out.exists()
    assert (
        main(
            [
                "finetune",
                "--model",
                str(base),
                "--data",
                "wordnet-sts",
                "--task",
                "classify",
                "--out",
                str(out),
                "--sequence-length",
                "32",
            ]
        )
        == 2
    )
    assert "goes with --task regress" in capsys.readouterr().err
