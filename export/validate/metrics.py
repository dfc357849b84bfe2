"""The figures of an artifact's outputs against the reference's (or, with
no reference, its own): differences, cosine, label agreement, best QA
spans, Pearson r of regression scores, accuracy."""

from __future__ import annotations

import numpy as np

from zoo.utils.numeric import softmax


def best_spans(start, end, ids, sep_id, max_answer_length=30):
    """Best (start, end) per example over context tokens, the rule the
    SavedModel's QA signature uses: segment 1, real, not [SEP], end >= start,
    at most `max_answer_length` tokens."""
    valid = (
        (ids["segment_ids"] == 1)
        & (ids["padding_mask"] == 1)
        & (ids["token_ids"] != sep_id)
    )
    n, length = start.shape
    i = np.arange(length)
    allowed = (i[None, :, None] <= i[None, None, :]) & (
        i[None, None, :] - i[None, :, None] < max_answer_length
    )
    scores = start[:, :, None] + end[:, None, :]
    allowed = allowed & valid[:, :, None] & valid[:, None, :]
    scores = np.where(allowed, scores, -np.inf).reshape(n, -1)
    best = scores.argmax(axis=1)
    return np.stack([best // length, best % length], axis=1)


# --- comparison ---------------------------------------------------------------


def _cosine(a, b):
    a = a.reshape(len(a), -1).astype(np.float64)
    b = b.reshape(len(b), -1).astype(np.float64)
    num = (a * b).sum(1)
    den = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    return np.where(den > 0, num / np.maximum(den, 1e-30), 1.0)


def _class_scores(artifact, reference=None):
    """A classifier's scores to compare: logits, or, for a file that keeps
    only `probabilities` (the MediaPipe file), probabilities against the
    reference's softmax."""
    if "logits" in artifact:
        return artifact["logits"], None if reference is None else reference["logits"]
    return artifact["probabilities"], None if reference is None else softmax(
        np.asarray(reference["logits"], np.float64)
    ).astype(np.float32)


def _score_pearson(a, b):
    """Pearson's r of two score vectors; 1.0 when both are constant and equal
    (nothing to correlate, nothing differs)."""
    da, db = a - a.mean(), b - b.mean()
    denominator = np.sqrt((da * da).sum() * (db * db).sum())
    if denominator > 0:
        return float((da * db).sum() / denominator)
    return 1.0 if np.allclose(a, b) else 0.0


def compare(task, artifact, reference, ids, *, labels=None, label_names=None, sep_id=None):
    """Metrics of `artifact` outputs against `reference` outputs (both `[N, ...]`)."""
    metrics = {"num_texts": int(len(ids["token_ids"]))}
    mask = ids["padding_mask"].astype(bool)
    if task == "regress":
        a = np.asarray(artifact["score"], np.float64).reshape(-1)
        r = np.asarray(reference["score"], np.float64).reshape(-1)
        diff = np.abs(a - r)
        metrics.update(
            max_abs_diff=float(diff.max()) if diff.size else 0.0,
            mean_abs_diff=float(diff.mean()) if diff.size else 0.0,
            score_pearson=_score_pearson(a, r),
        )
        return metrics
    if task == "classify":
        a, r = _class_scores(artifact, reference)
        diff = np.abs(a - r)
        agree = a.argmax(-1) == r.argmax(-1)
        cos = _cosine(a, r)
    elif task == "tag":
        a, r = artifact["logits"], reference["logits"]
        diff = np.abs(a - r)[mask]
        agree = (a.argmax(-1) == r.argmax(-1))[mask]
        cos = _cosine(np.where(mask[..., None], a, 0), np.where(mask[..., None], r, 0))
    else:
        a = np.stack([artifact["start_logits"], artifact["end_logits"]], -1)
        r = np.stack([reference["start_logits"], reference["end_logits"]], -1)
        diff = np.abs(a - r)[mask]
        agree = (
            best_spans(artifact["start_logits"], artifact["end_logits"], ids, sep_id)
            == best_spans(reference["start_logits"], reference["end_logits"], ids, sep_id)
        ).all(1)
        cos = _cosine(np.where(mask[..., None], a, 0), np.where(mask[..., None], r, 0))
    metrics.update(
        max_abs_diff=float(diff.max()) if diff.size else 0.0,
        mean_abs_diff=float(diff.mean()) if diff.size else 0.0,
        cosine_min=float(cos.min()),
        cosine_mean=float(cos.mean()),
        label_agreement=float(agree.mean()),
    )
    if labels is not None and task == "classify" and label_names:
        index = {name: i for i, name in enumerate(label_names)}
        known = np.array([label in index for label in labels])
        if known.any():
            target = np.array([index.get(label, -1) for label in labels])
            acc_a = float((_class_scores(artifact)[0].argmax(-1) == target)[known].mean())
            acc_r = float((reference["logits"].argmax(-1) == target)[known].mean())
            metrics.update(
                accuracy_keras=acc_r, accuracy_artifact=acc_a, accuracy_delta=acc_a - acc_r
            )
    return metrics


def artifact_only_metrics(task, artifact, labels, label_names):
    metrics = {"num_texts": int(len(next(iter(artifact.values()))))}
    if labels is not None and task == "classify" and label_names:
        index = {name: i for i, name in enumerate(label_names)}
        target = np.array([index.get(label, -1) for label in labels])
        known = target >= 0
        if known.any():
            metrics["accuracy_artifact"] = float(
                (_class_scores(artifact)[0].argmax(-1) == target)[known].mean()
            )
    return metrics
