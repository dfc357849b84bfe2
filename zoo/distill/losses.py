"""Distillation loss terms, each a small function of float32 tensors that
returns one value per example (`[batch]`), so the caller can divide by the
global batch with `tf.nn.compute_average_loss` (Keras 3 sums gradients over
replicas; a per-replica mean would be wrong by the replica count).

Token-level terms average over the positions `mask` selects in each example
(real tokens, or masked positions); a position outside the mask contributes
nothing, not even to the denominator.
"""

from __future__ import annotations

import keras
from keras import ops

_EPS = 1e-9


def _f32(x):
    # Under mixed precision the student computes in float16/bfloat16; every
    # softmax, log and reduction here is float32.
    return ops.cast(x, "float32")


def masked_mean(values, mask=None):
    """Per-example mean of `values` `[B, ...]` over the positions where
    `mask` (same leading shape) is non-zero; `[B]`. Without a mask, the mean
    over all non-batch axes."""
    values = _f32(values)
    axes = tuple(range(1, len(values.shape)))
    if mask is None:
        return ops.mean(values, axis=axes) if axes else values
    mask = _f32(mask)
    total = ops.sum(values * mask, axis=axes)
    return total / ops.maximum(ops.sum(mask, axis=axes), 1.0)


def soft_target_loss(teacher_logits, student_logits, temperature=2.0, mask=None):
    """KL(teacher || student) of the temperature-softened distributions over
    the last axis, times T².

    Softening by T scales the gradient of the KL with respect to the logits
    by 1/T² (Hinton et al. 2015); multiplying by T² keeps the soft term's
    weight relative to the hard loss independent of T.

    `teacher_logits`, `student_logits`: `[B, C]` (one distribution per
    example) or `[B, T, C]` (one per position, with `mask` `[B, T]`: real
    tokens, or masked positions for `restrict_to_mask`). Returns `[B]`.
    """
    t = _f32(teacher_logits) / temperature
    s = _f32(student_logits) / temperature
    p_teacher = ops.softmax(t, axis=-1)
    kl = ops.sum(
        p_teacher * (ops.log_softmax(t, axis=-1) - ops.log_softmax(s, axis=-1)), axis=-1
    )
    return masked_mean(kl, mask) * (temperature**2)


def hard_loss(labels, student_logits, mask=None):
    """Sparse cross-entropy of the student's logits against integer labels
    (task labels, or MLM labels); `[B]`, averaged over `mask` positions for
    token-level logits. A negative label is no label (an unlabelled text of
    `zoo distill --unlabelled`): its cross-entropy is 0."""
    labels = ops.cast(labels, "int32")
    ce = keras.losses.sparse_categorical_crossentropy(
        ops.maximum(labels, 0), _f32(student_logits), from_logits=True
    )
    return masked_mean(ce * ops.cast(labels >= 0, "float32"), mask)


def cosine_loss(teacher_hidden, student_hidden, padding_mask):
    """1 - cos(teacher, student) of last hidden states `[B, T, H]`, averaged
    over the real tokens of each example (DistilBERT's alignment term)."""
    t = _f32(teacher_hidden)
    s = _f32(student_hidden)
    cos = ops.sum(t * s, axis=-1) / (
        ops.maximum(ops.norm(t, axis=-1) * ops.norm(s, axis=-1), _EPS)
    )
    return masked_mean(1.0 - cos, padding_mask)


def hidden_mse_loss(teacher_hidden, projected_student_hidden, padding_mask):
    """Mean squared error between a teacher hidden state and the student's,
    projected to the teacher's width (TinyBERT), over real tokens; `[B]`."""
    err = ops.mean(
        ops.square(_f32(teacher_hidden) - _f32(projected_student_hidden)), axis=-1
    )
    return masked_mean(err, padding_mask)


def attention_kl_loss(teacher_probs, student_probs, padding_mask):
    """KL(teacher || student) between attention distributions `[B, heads, T,
    T]`, averaged over heads and over real query tokens; `[B]`. Padded keys
    already have probability ~0 in both. With different head counts, both
    sides are first averaged over heads."""
    t = _f32(teacher_probs)
    s = _f32(student_probs)
    if t.shape[1] != s.shape[1]:
        t = ops.mean(t, axis=1, keepdims=True)
        s = ops.mean(s, axis=1, keepdims=True)
    kl = ops.sum(t * (ops.log(t + _EPS) - ops.log(s + _EPS)), axis=-1)  # (B, h, T)
    kl = ops.mean(kl, axis=1)  # (B, T)
    return masked_mean(kl, padding_mask)


def transfer_layer_pairs(layer_map):
    """(teacher, student) index pairs into `hidden_states` for a
    teacher->student layer map (`layer_map[i]` is the teacher layer student
    layer i learns from): the embedding outputs pair up, then each student
    layer's output with its teacher layer's output."""
    return [(0, 0)] + [(int(t) + 1, i + 1) for i, t in enumerate(layer_map)]


def hidden_transfer_loss(
    teacher_hidden, student_hidden, layer_map, projections, padding_mask
):
    """TinyBERT/MobileBERT-style hidden-state transfer `[B]`, summed over the
    pairs of `transfer_layer_pairs(layer_map)` (`hidden_states` lists);
    `projections[j]` maps student width to teacher width for pair j."""
    hidden = 0.0
    for project, (t, s) in zip(projections, transfer_layer_pairs(layer_map)):
        hidden = hidden + hidden_mse_loss(
            teacher_hidden[t], project(student_hidden[s]), padding_mask
        )
    return hidden


def attention_transfer_loss(teacher_probs, student_probs, layer_map, padding_mask):
    """Attention-distribution transfer `[B]`, summed over mapped layers
    (`attention_probs` lists; student layer i learns from `layer_map[i]`)."""
    attention = 0.0
    for i, t in enumerate(layer_map):
        attention = attention + attention_kl_loss(
            teacher_probs[int(t)], student_probs[i], padding_mask
        )
    return attention
