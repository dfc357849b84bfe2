"""A linear baseline for text classification, scored beside a fine-tuned
model: TF-IDF over word 1- and 2-grams and a linear support-vector
classifier (scikit-learn), trained on the same training texts and scored on
the same test texts, so that a report can say whether BERT's accuracy is
worth its size and latency on a task.

Its hyperparameters are fixed, never tuned on a test split:

    TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=2)
        lowercased words of 2+ word characters (scikit-learn's token
        pattern), their pairs, each kept when it occurs in 2+ training
        texts; tf is 1 + log(count); rows L2-normalised
    LinearSVC(C=1.0, random_state=0)
        one-vs-rest, squared hinge loss; C is scikit-learn's default. 5-fold
        cross-validation on BBC News' training split gave 0.975-0.980 for C
        from 0.1 to 10, so C is left at its default.

Words are what scikit-learn's pattern finds, so text written without spaces
between words (Chinese, Japanese) gives a weak baseline.
"""

from __future__ import annotations

import collections
import math
import os
import pickle
import time

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.svm import LinearSVC

from zoo.train import metrics as task_metrics

DESCRIPTION = "TF-IDF word 1-2-grams + LinearSVC"
PARAMETERS = {
    "ngram_range": [1, 2],
    "sublinear_tf": True,
    "min_df": 2,
    "lowercase": True,
    "C": 1.0,
    "random_state": 0,
}
# A class needs this many training examples for the baseline to be fitted:
# with one, neither model can learn it and the comparison says nothing.
MIN_PER_CLASS = 2
# The latency is the median over up to this many test texts, each timed once.
LATENCY_TEXTS = 100


class BaselineNotApplicable(ValueError):
    """The data does not suit the baseline (its message says why): the
    caller records the reason instead of a score."""


def linear_baseline(
    train_texts, train_labels, test_texts, test_labels, *, predictions=False
):
    """Fit the baseline on the training texts and score it on the test texts.

    Returns a JSON-ready dict:

        description    "TF-IDF word 1-2-grams + LinearSVC"
        parameters     the fixed hyperparameters (PARAMETERS)
        accuracy       on the test texts, in [0, 1]
        macro_f1       unweighted mean of per-class F1 over the training classes
        size_bytes     the pickled size (protocol 5) of the fitted vectorizer and
                       classifier: vocabulary, idf weights and coefficients
        num_features   the vocabulary: words and word pairs kept
        latency_ms     median time to classify one test text (transform and
                       predict, one text a call), this thread pinned to one CPU
                       where the OS allows it (`latency_runtime` says which)
        train_seconds  wall time of the fit
        num_train, num_test

    and `predictions` (the test texts' predicted labels, in order) when asked.
    Raises ValueError naming the argument for malformed input, and
    `BaselineNotApplicable` when a class has fewer than 2 training examples
    or no word occurs in 2 training texts."""
    _check_pairs("train", train_texts, train_labels)
    _check_pairs("test", test_texts, test_labels)
    classes = sorted(set(train_labels))
    counts = collections.Counter(train_labels)
    rare = {c: n for c, n in counts.items() if n < MIN_PER_CLASS}
    if len(classes) < 2:
        raise BaselineNotApplicable(
            f"train_labels: one class ({classes}); a classifier needs 2 or more."
        )
    if rare:
        raise BaselineNotApplicable(
            f"train_labels: {rare} training example(s) per class; the baseline needs "
            f"{MIN_PER_CLASS} or more of each class."
        )
    unknown = sorted(set(test_labels) - set(classes), key=str)
    if unknown:
        raise ValueError(
            f"test_labels: {unknown[:5]} are not among the training labels {classes}; "
            "give test examples of the trained classes only."
        )
    vectorizer = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=2)
    model = LinearSVC(C=PARAMETERS["C"], random_state=PARAMETERS["random_state"])
    t0 = time.perf_counter()
    try:
        features = vectorizer.fit_transform(list(train_texts))
    except ValueError as e:  # scikit-learn: "empty vocabulary; perhaps ..."
        raise BaselineNotApplicable(
            "train_texts: no word or word pair occurs in 2 or more training texts "
            f"(scikit-learn: {e})."
        ) from e
    model.fit(features, list(train_labels))
    train_seconds = time.perf_counter() - t0
    predicted = model.predict(vectorizer.transform(list(test_texts)))
    index = {c: i for i, c in enumerate(classes)}
    gold = np.array([index[y] for y in test_labels])
    pred = np.array([index[y] for y in predicted])
    latency, runtime = _latency_ms(vectorizer, model, list(test_texts))
    result = {
        "description": DESCRIPTION,
        "parameters": dict(PARAMETERS),
        "accuracy": task_metrics.accuracy(gold, pred),
        "macro_f1": task_metrics.macro_f1(gold, pred, len(classes)),
        "size_bytes": len(pickle.dumps((vectorizer, model), protocol=5)),
        "num_features": int(features.shape[1]),
        "latency_ms": latency,
        "latency_runtime": runtime,
        "train_seconds": round(train_seconds, 2),
        "num_train": len(train_labels),
        "num_test": len(test_labels),
    }
    if predictions:
        result["predictions"] = [_plain(y) for y in predicted]
    return result


def baseline_for_examples(train, test, *, predictions=False):
    """`linear_baseline` on classification examples (objects with `text`,
    `text_b` and `label`, as `zoo.train.data.load_task_data` gives them),
    or `{"description", "skipped": reason}` when the data does not suit it:
    sentence pairs (`text_b`), or what `BaselineNotApplicable` names."""
    if any(getattr(e, "text_b", None) for e in list(train) + list(test)):
        return {
            "description": DESCRIPTION,
            "skipped": "the examples are text pairs (text_b): a bag of words over "
            "one text cannot weigh one text against the other",
        }
    try:
        return linear_baseline(
            [e.text for e in train],
            [e.label for e in train],
            [e.text for e in test],
            [e.label for e in test],
            predictions=predictions,
        )
    except BaselineNotApplicable as e:
        return {"description": DESCRIPTION, "skipped": str(e)}


def _check_pairs(split, texts, labels):
    texts, labels = list(texts), list(labels)
    if len(texts) != len(labels):
        raise ValueError(
            f"{split}_texts / {split}_labels: {len(texts)} texts and {len(labels)} "
            "labels; give one label per text."
        )
    if not texts:
        raise ValueError(f"{split}_texts: empty; give at least one text.")
    bad = next((t for t in texts if not isinstance(t, str)), None)
    if bad is not None:
        raise ValueError(
            f"{split}_texts: a {type(bad).__name__} ({bad!r:.60}) among the texts; "
            "give strings."
        )


def _plain(label):
    """A label as JSON takes it (numpy scalars become Python ones)."""
    return label.item() if isinstance(label, np.generic) else label


def _latency_ms(vectorizer, model, texts):
    """(median ms, how it ran): each of up to LATENCY_TEXTS texts classified
    alone once, after 3 warm-up calls; the calling thread is pinned to one
    CPU meanwhile where the OS allows it (scikit-learn's sparse transform
    and predict on one row run in this thread)."""
    texts = texts[:LATENCY_TEXTS]
    while len(texts) < 20:  # a tiny test split: time its texts again
        texts = texts * 2
    pinned = hasattr(os, "sched_getaffinity") and hasattr(os, "sched_setaffinity")
    before = os.sched_getaffinity(0) if pinned else None
    try:
        if pinned:
            os.sched_setaffinity(0, {min(before)})
        for text in texts[:3]:
            model.predict(vectorizer.transform([text]))
        times = []
        for text in texts:
            t0 = time.perf_counter()
            model.predict(vectorizer.transform([text]))
            times.append(time.perf_counter() - t0)
    finally:
        if pinned:
            os.sched_setaffinity(0, before)
    runtime = "scikit-learn, one text a call, " + (
        "pinned to one CPU" if pinned else "one thread (this OS cannot pin a CPU)"
    )
    return round(1000 * float(np.median(times)), 3), runtime


def paired_comparison(gold, model_predictions, baseline_predictions) -> dict:
    """The model against the baseline on the same test texts, text by text:
    `model_only` (texts the model gets right and the baseline wrong),
    `baseline_only` (the reverse) and `p_value`, the exact two-sided McNemar
    test (a binomial test on those discordant texts): how likely a split at
    least this uneven is when neither is better. A few texts' difference on
    a few hundred is usually noise, and this says how much."""
    gold, a, b = (np.asarray(x) for x in (gold, model_predictions, baseline_predictions))
    if not gold.shape == a.shape == b.shape or gold.ndim != 1:
        raise ValueError(
            "paired_comparison: gold, model and baseline predictions must be 1-D and of "
            f"one length; received shapes {gold.shape}, {a.shape}, {b.shape}."
        )
    model_only = int(np.sum((a == gold) & (b != gold)))
    baseline_only = int(np.sum((b == gold) & (a != gold)))
    n = model_only + baseline_only
    tail = sum(math.comb(n, k) for k in range(min(model_only, baseline_only) + 1))
    p_value = min(1.0, 2 * tail / 2**n) if n else 1.0
    return {"model_only": model_only, "baseline_only": baseline_only, "p_value": p_value}
