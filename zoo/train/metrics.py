"""Task metrics computed on the host from predictions (evaluation, not the
training graph): accuracy and macro-F1, entity-level F1 over BIO tags,
SQuAD's exact match and token F1, and Pearson / Spearman correlation and
mean squared error of regression scores."""

from __future__ import annotations

import collections
import re
import string

import numpy as np

from zoo.text.tag_schemes import tag_entities, tag_scheme


def accuracy(labels, predictions):
    labels, predictions = np.asarray(labels), np.asarray(predictions)
    return float((labels == predictions).mean()) if len(labels) else 0.0


def macro_f1(labels, predictions, num_classes=None):
    """Unweighted mean over classes of per-class F1 (a class absent from both
    labels and predictions is left out, as scikit-learn does with `labels=` unset)."""
    labels, predictions = np.asarray(labels), np.asarray(predictions)
    classes = (
        np.union1d(labels, predictions) if num_classes is None else np.arange(num_classes)
    )
    scores = []
    for c in classes:
        tp = np.sum((predictions == c) & (labels == c))
        fp = np.sum((predictions == c) & (labels != c))
        fn = np.sum((predictions != c) & (labels == c))
        if tp + fp + fn == 0:
            continue
        scores.append(2 * tp / (2 * tp + fp + fn))
    return float(np.mean(scores)) if scores else 0.0


# --- entities -----------------------------------------------------------------


def entity_f1(gold_sequences, predicted_sequences):
    """Micro precision / recall / F1 over exact entity spans and types,
    read in the gold tags' scheme (BIO, BIOES or bare types:
    `zoo.text.tag_schemes`)."""
    gold_sequences, predicted_sequences = list(gold_sequences), list(predicted_sequences)
    scheme = tag_scheme(t for tags in gold_sequences for t in tags)
    tp = n_gold = n_pred = 0
    for gold, pred in zip(gold_sequences, predicted_sequences):
        g, p = tag_entities(gold, scheme), tag_entities(pred, scheme)
        tp += len(g & p)
        n_gold += len(g)
        n_pred += len(p)
    precision = tp / n_pred if n_pred else 0.0
    recall = tp / n_gold if n_gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1}


# --- SQuAD ----------------------------------------------------------------------------


def normalize_answer(text):
    """SQuAD's normalisation: lowercase, drop punctuation and articles, fold spaces."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def _token_f1(prediction, truth):
    pred, gold = normalize_answer(prediction).split(), normalize_answer(truth).split()
    if not pred or not gold:
        return float(pred == gold)
    common = collections.Counter(pred) & collections.Counter(gold)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(gold)
    return 2 * precision * recall / (precision + recall)


def squad_scores(examples, predictions):
    """EM and F1 (in [0, 1]) over `QAExample`s; `predictions` maps qid -> text
    ("" for "no answer"). An unanswerable question scores 1 only for ""."""
    em = f1 = 0.0
    for example in examples:
        predicted = predictions.get(example.qid, "")
        truths = [text for text, _ in example.answers] or [""]
        em += max(float(normalize_answer(predicted) == normalize_answer(t)) for t in truths)
        f1 += max(_token_f1(predicted, t) for t in truths)
    n = max(len(examples), 1)
    return {"exact_match": em / n, "f1": f1 / n}


# --- regression (sentence-pair similarity) ---------------------------------------------


def _ranks(values):
    """1-based ranks of `values`, ties sharing the mean of their ranks (what
    Spearman's coefficient needs; scipy.stats.rankdata's "average")."""
    values = np.asarray(values, np.float64)
    order = np.argsort(values, kind="stable")
    ranks = np.empty(len(values), np.float64)
    ranks[order] = np.arange(1, len(values) + 1)
    sorted_values = values[order]
    # Runs of equal values: give every member the mean rank of the run.
    starts = np.flatnonzero(np.r_[True, sorted_values[1:] != sorted_values[:-1]])
    ends = np.r_[starts[1:], len(values)]
    for start, end in zip(starts, ends):
        if end - start > 1:
            ranks[order[start:end]] = (start + 1 + end) / 2.0
    return ranks


def pearson(x, y):
    """Pearson's correlation of two equal-length sequences; 0.0 when either is
    constant (the coefficient is undefined there, and no prediction that
    ignores its input should score above chance)."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    if len(x) != len(y):
        raise ValueError(f"pearson: {len(x)} values against {len(y)}; pass equal lengths.")
    if len(x) < 2:
        return 0.0
    dx, dy = x - x.mean(), y - y.mean()
    denominator = np.sqrt((dx * dx).sum() * (dy * dy).sum())
    return float((dx * dy).sum() / denominator) if denominator > 0 else 0.0


def spearman(x, y):
    """Spearman's rank correlation: Pearson's on the ranks (ties averaged)."""
    if len(x) != len(y):
        raise ValueError(f"spearman: {len(x)} values against {len(y)}; pass equal lengths.")
    return pearson(_ranks(x), _ranks(y))


def regression_scores(targets, predictions):
    """Pearson, Spearman and mean squared error of predicted scores."""
    targets = np.asarray(targets, np.float64)
    predictions = np.asarray(predictions, np.float64)
    return {
        "pearson": pearson(targets, predictions),
        "spearman": spearman(targets, predictions),
        "mse": float(np.mean((targets - predictions) ** 2)) if len(targets) else 0.0,
    }
