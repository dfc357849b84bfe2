"""zoo.train.baseline: the linear baseline (TF-IDF word 1-2-grams + LinearSVC)
on the tiny topic data the distillation tests use, its refusals and skips,
and its figure on BBC News' fixed split (the demo's)."""

import numpy as np
import pytest
from scipy.stats import binomtest

from tests.distill.tiny import topic_data
from zoo.text.readers import TextExample
from zoo.train import baseline
from zoo.train.baseline import (
    DESCRIPTION,
    BaselineNotApplicable,
    baseline_for_examples,
    linear_baseline,
)
from zoo.train.data import load_task_data

# What changes between two fits of the same data: wall-clock figures.
TIMINGS = ("train_seconds", "latency_ms", "latency_runtime")


@pytest.fixture
def topics(tmp_path):
    data = load_task_data(topic_data(tmp_path), "classify")
    return data.splits["train"], data.splits["test"]


def test_on_topic_data_typed_in_range_and_deterministic(topics):
    train, test = topics
    first = baseline_for_examples(train, test, predictions=True)
    assert "skipped" not in first, first
    assert first["description"] == DESCRIPTION
    assert isinstance(first["accuracy"], float) and 0.0 <= first["accuracy"] <= 1.0
    assert isinstance(first["macro_f1"], float) and 0.0 <= first["macro_f1"] <= 1.0
    for key in ("size_bytes", "num_features", "num_train", "num_test"):
        assert isinstance(first[key], int) and first[key] > 0, key
    assert isinstance(first["latency_ms"], float) and first["latency_ms"] > 0
    assert isinstance(first["train_seconds"], float) and first["train_seconds"] >= 0
    assert (first["num_train"], first["num_test"]) == (len(train), len(test))
    assert first["parameters"]["ngram_range"] == [1, 2] and first["parameters"]["C"] == 1.0
    # The predictions are the scored ones, in the test texts' order.
    hits = [p == e.label for p, e in zip(first["predictions"], test)]
    assert len(hits) == len(test) and first["accuracy"] == sum(hits) / len(hits)
    # Each topic has its own words: the baseline learns them (chance is 1/3).
    assert first["accuracy"] >= 0.75
    again = baseline_for_examples(train, test, predictions=True)
    assert {k: v for k, v in again.items() if k not in TIMINGS} == {
        k: v for k, v in first.items() if k not in TIMINGS
    }


def test_labels_that_are_not_words_score_at_chance(topics):
    """The score comes from the texts: with the labels of another example
    the same fit is no better than guessing."""
    train, test = topics
    labels = [e.label for e in train]
    rotated = labels[7:] + labels[:7]
    real = linear_baseline(
        [e.text for e in train], labels, [e.text for e in test], [e.label for e in test]
    )
    noise = linear_baseline(
        [e.text for e in train], rotated, [e.text for e in test], [e.label for e in test]
    )
    assert noise["accuracy"] < real["accuracy"]


def test_skips_say_why():
    pairs = [TextExample(f"goal match {i}", "sport", "cup win") for i in range(4)]
    skipped = baseline_for_examples(pairs, pairs)
    assert skipped["description"] == DESCRIPTION and "text pairs" in skipped["skipped"]
    lonely = [TextExample("goal match cup", "sport")] * 3 + [
        TextExample("rain storm cloud", "weather")
    ]
    skipped = baseline_for_examples(lonely, lonely)
    assert "'weather': 1" in skipped["skipped"] and "2 or more" in skipped["skipped"]
    unique = [TextExample(w, label) for w, label in (("alpha", "a"), ("beta", "a"))] + [
        TextExample(w, label) for w, label in (("gamma", "b"), ("delta", "b"))
    ]
    skipped = baseline_for_examples(unique, unique)
    assert "2 or more training texts" in skipped["skipped"]
    with pytest.raises(BaselineNotApplicable, match="one class"):
        linear_baseline(["goal", "cup"], ["sport", "sport"], ["goal"], ["sport"])


def test_bad_input_names_the_argument():
    texts, labels = ["goal match", "rain storm"] * 2, ["sport", "weather"] * 2
    with pytest.raises(ValueError, match="train_texts / train_labels: 4 texts and 3"):
        linear_baseline(texts, labels[:3], texts, labels)
    with pytest.raises(ValueError, match=r"test_labels: \['politics'\] are not among"):
        linear_baseline(texts, labels, texts[:1], ["politics"])
    with pytest.raises(ValueError, match="test_texts: a int"):
        linear_baseline(texts, labels, [3], ["sport"])
    with pytest.raises(ValueError, match="test_texts: empty"):
        linear_baseline(texts, labels, [], [])


@pytest.mark.assets
def test_bbc_figure(bbc_split):
    """The demo's figure: fitted on BBC News' 1,488 training articles, scored
    on the fixed 426-article test split (above the fine-tuned teacher's 0.9648)."""
    data = load_task_data("bbc", "classify")
    result = baseline_for_examples(data.splits["train"], data.splits["test"])
    assert (result["num_train"], result["num_test"]) == (1488, 426)
    assert result["accuracy"] == pytest.approx(414 / 426)  # 0.9718
    assert result["num_features"] == 75022


def test_paired_comparison_is_the_exact_mcnemar_test():
    rng = np.random.default_rng(0)
    gold = rng.integers(0, 5, 426)
    for model_wrong, baseline_wrong in ((10, 7), (0, 0), (3, 25), (40, 40)):
        model, base = gold.copy(), gold.copy()
        wrong = rng.permutation(426)
        model[wrong[:model_wrong]] += 1  # disjoint texts: every error is discordant
        base[wrong[model_wrong : model_wrong + baseline_wrong]] += 1
        got = baseline.paired_comparison(gold, model, base)
        assert (got["model_only"], got["baseline_only"]) == (baseline_wrong, model_wrong)
        n = model_wrong + baseline_wrong
        expected = binomtest(baseline_wrong, n, 0.5).pvalue if n else 1.0
        assert got["p_value"] == pytest.approx(expected, rel=1e-12)
    # Texts both get wrong are not evidence either way.
    both = gold.copy()
    both[:30] += 1
    assert baseline.paired_comparison(gold, both, both) == {
        "model_only": 0,
        "baseline_only": 0,
        "p_value": 1.0,
    }
    with pytest.raises(ValueError, match="one length"):
        baseline.paired_comparison(gold, gold[:-1], gold)
