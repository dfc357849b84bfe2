"""Student initialisation: a shallower copy of a teacher (HF's
`extract_distilbert.py` as a function).

    student = make_student(teacher, num_layers=3)          # layers 0, 2, 4 of 6
    student = make_student(teacher, 6, style="bert")       # keeps segments + pooler

The student has the teacher's width, heads and vocabulary; its embeddings,
the mapped transformer layers, the pooler (bert style) and the task head are
copied bit-exactly, so distillation starts from the teacher's function
restricted to fewer layers instead of from noise.

An ALBERT teacher gives a BERT-family student (style "bert": family bert;
"distilbert" as for BERT): student layer i copies the shared block teacher
layer `layer_map[i]` runs, and the E-wide tables are folded through the
E -> H projection W, b (word @ W, segment @ W, position @ W + b: every token
has exactly one position, so b is added once). What cannot be exact is the
embedding LayerNorm: ALBERT normalises the E-wide sum before projecting,
BERT the H-wide sum; the student's gamma and beta are fitted (least squares
over the vocabulary) to the teacher's embedding output, and
`fold_albert_embeddings` returns how far apart the two still are. Given the
teacher's embedding output, the copied layers reproduce the teacher's
layers exactly.

A narrower student (`intermediate_dim` below the teacher's) keeps, in each
copied layer, the feed-forward units with the largest
|W_in[:, j]| * |W_out[j, :]| (the norms of the unit's input column and
output row: how much the unit can contribute, data-free), in their original
order; everything else is copied whole. The student then starts from a
pruned teacher, not an exact one, and distillation recovers what the
dropped units carried (BUILD_NOTES.md, "Phone and MediaPipe").
"""

from __future__ import annotations

import numpy as np

from zoo.models import Classifier, MaskedLM, QuestionAnswerer, TokenClassifier
from zoo.models.bert_encoder import BertEncoder, build_encoder

STYLES = ("distilbert", "bert")

# DistilBERT (Sanh et al. 2019, `extract_distilbert.py`) took these teacher
# layers for 12 -> 6: every other layer, but keeping the top one. Other
# shapes use the plain stride rule of `default_layer_map`.
DISTILBERT_LAYER_MAP = {(12, 6): (0, 2, 4, 7, 9, 11)}


def default_layer_map(teacher_layers: int, student_layers: int) -> tuple[int, ...]:
    """Teacher layer index for each student layer, evenly spread from the
    bottom: student layer i takes teacher layer floor(i * n / k) (6 -> 3 is
    0, 2, 4), except 12 -> 6, which is DistilBERT's published 0, 2, 4, 7, 9, 11."""
    n, k = int(teacher_layers), int(student_layers)
    if not 1 <= k <= n:
        raise ValueError(
            f"student num_layers={k}: must be between 1 and the teacher's {n} layers."
        )
    if (n, k) in DISTILBERT_LAYER_MAP:
        return DISTILBERT_LAYER_MAP[(n, k)]
    return tuple(i * n // k for i in range(k))


def _check_layer_map(layer_map, teacher_layers, student_layers):
    layer_map = tuple(int(i) for i in layer_map)
    if len(layer_map) != student_layers:
        raise ValueError(
            f"layer_map {list(layer_map)} has {len(layer_map)} entries for a "
            f"{student_layers}-layer student; give one teacher layer per student layer."
        )
    bad = [i for i in layer_map if not 0 <= i < teacher_layers]
    if bad:
        raise ValueError(
            f"layer_map {list(layer_map)}: teacher layers {bad} do not exist "
            f"(the teacher has layers 0..{teacher_layers - 1})."
        )
    return layer_map


def _copy(source_layer, target_layer, select=None):
    """Copy every weight of `source_layer` into `target_layer`; `select` maps
    `id(source weight)` to a function of its numpy value (the part to copy)."""
    select = select or {}
    source, target = source_layer.weights, target_layer.weights
    if len(source) != len(target):
        raise ValueError(
            f"cannot copy {source_layer.name} into {target_layer.name}: "
            f"{len(source)} vs {len(target)} weights."
        )
    for s, t in zip(source, target):
        value = select[id(s)](np.asarray(s.value)) if id(s) in select else s.value
        if tuple(value.shape) != tuple(t.shape):
            raise ValueError(f"cannot copy {s.path} {value.shape} into {t.path} {t.shape}.")
        t.assign(value)


def ffn_units_to_keep(layer, intermediate_dim):
    """Indices (ascending) of the `intermediate_dim` feed-forward units of a
    transformer layer with the largest |W_in[:, j]| * |W_out[j, :]|."""
    w_in = np.asarray(layer.intermediate_dense.kernel)  # (H, I)
    w_out = np.asarray(layer.output_dense.kernel)  # (I, H)
    score = np.linalg.norm(w_in, axis=0) * np.linalg.norm(w_out, axis=1)
    # Stable: ties keep the lower index, so the choice is deterministic.
    return np.sort(np.argsort(-score, kind="stable")[:intermediate_dim])


def _copy_pruned(source_layer, target_layer):
    """Copy a transformer layer into a narrower-FFN one (`ffn_units_to_keep`)."""
    keep = ffn_units_to_keep(source_layer, target_layer.intermediate_dim)
    _copy(
        source_layer,
        target_layer,
        {
            id(source_layer.intermediate_dense.kernel): lambda w: w[:, keep],
            id(source_layer.intermediate_dense.bias): lambda w: w[keep],
            id(source_layer.output_dense.kernel): lambda w: w[keep, :],
        },
    )


def _split(teacher):
    if isinstance(teacher, BertEncoder):
        return teacher, None
    encoder = getattr(teacher, "encoder", None)
    if not isinstance(encoder, BertEncoder):
        raise TypeError(
            f"make_student: teacher must be a zoo encoder or a zoo head model "
            f"(Classifier, TokenClassifier, QuestionAnswerer, MaskedLM); received "
            f"{type(teacher).__name__}."
        )
    return encoder, teacher


def _student_head(head, encoder):
    """The teacher's head class on the student encoder, head weights copied."""

    if isinstance(head, Classifier):
        pooling = head.pooling
        if encoder.pooler_dense is None and pooling in ("auto", "pooled"):
            # No pooler in a distilbert-style student: the head reads [CLS]
            # directly (DistilBERT's own classifier does the same).
            pooling = "cls"
        student = Classifier(
            encoder,
            head.num_classes,
            pooling=pooling,
            dropout=head.dropout,
            labels=head.labels,
            hidden_dim=head.hidden_dim,
        )
        if head.hidden_dense is not None:
            # The student has the teacher's width: the hidden layer copies whole.
            _copy(head.hidden_dense, student.hidden_dense)
        _copy(head.output_dense, student.output_dense)
    elif isinstance(head, TokenClassifier):
        student = TokenClassifier(
            encoder, head.num_classes, dropout=head.dropout, labels=head.labels
        )
        _copy(head.output_dense, student.output_dense)
    elif isinstance(head, QuestionAnswerer):
        student = QuestionAnswerer(encoder)
        _copy(head.span_dense, student.span_dense)
    elif isinstance(head, MaskedLM):
        if head.encoder.config.family == "albert":
            raise ValueError(
                "make_student: an ALBERT MaskedLM's head maps H -> E and decodes with "
                "the E-wide table, a BERT student's maps H -> H: there is no copy. "
                "Distil the ALBERT encoder (make_student(teacher.encoder, ...)) and "
                "put a fresh zoo.MaskedLM on the student."
            )
        student = MaskedLM(encoder)
        _copy(head.mlm_head, student.mlm_head)
    else:
        raise TypeError(
            f"make_student: no student head for {type(head).__name__}; supported are "
            "Classifier, TokenClassifier, QuestionAnswerer and MaskedLM."
        )
    return student


def _layer_norm(x, gamma, beta, epsilon):
    mean = x.mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(x.var(-1, keepdims=True) + epsilon) * gamma + beta


def fold_albert_embeddings(teacher, student, max_rows=8192):
    """H-wide embedding tables for `student` (a BERT-family encoder) from an
    ALBERT `teacher`'s E-wide tables and its E -> H projection W, b:
    word @ W, position @ W + b, segment @ W. The student's pre-LayerNorm sum
    is then exactly the teacher's projected sum.

    The LayerNorm cannot be carried over (ALBERT normalises the E-wide sum
    before projecting, BERT the H-wide sum after): its gamma and beta are
    fitted, per dimension by least squares, so that the student's embedding
    output is closest to the teacher's over (up to `max_rows`) vocabulary
    rows, each at a position cycling through the table, segment 0. Returns
    the max and mean |difference| of the two embedding outputs on those rows.
    """
    t_emb, s_emb = teacher.embeddings, student.embeddings
    kernel = teacher.embedding_projection.kernel.numpy().astype("float64")  # (E, H)
    bias = teacher.embedding_projection.bias.numpy().astype("float64")
    word = t_emb.token_embedding.embeddings.numpy().astype("float64")
    position = t_emb.position_embedding.embeddings.numpy().astype("float64")
    segment = t_emb.segment_embedding.embeddings.numpy().astype("float64")
    s_emb.token_embedding.embeddings.assign((word @ kernel).astype("float32"))
    s_emb.position_embedding.embeddings.assign((position @ kernel + bias).astype("float32"))
    if s_emb.segment_embedding is not None:
        s_emb.segment_embedding.embeddings.assign((segment @ kernel).astype("float32"))

    rows = np.unique(np.linspace(0, len(word) - 1, min(max_rows, len(word))).astype(int))
    summed = word[rows] + position[rows % len(position)] + segment[0]  # (N, E)
    t_ln = t_emb.layer_norm
    target = _layer_norm(summed, t_ln.gamma.numpy(), t_ln.beta.numpy(), t_ln.epsilon)
    target = target @ kernel + bias  # the teacher's embedding output (N, H)
    normalised = _layer_norm(summed @ kernel + bias, 1.0, 0.0, s_emb.layer_norm.epsilon)
    centred = normalised - normalised.mean(0)
    variance = (centred**2).mean(0)
    gamma = np.where(
        variance > 0,
        (centred * (target - target.mean(0))).mean(0) / np.maximum(variance, 1e-12),
        1.0,
    )
    beta = target.mean(0) - gamma * normalised.mean(0)
    s_emb.layer_norm.gamma.assign(gamma.astype("float32"))
    s_emb.layer_norm.beta.assign(beta.astype("float32"))
    gap = np.abs(normalised * gamma + beta - target)
    return float(gap.max()), float(gap.mean())


def make_student(
    teacher, num_layers, layer_map=None, style="distilbert", intermediate_dim=None
):
    """A `num_layers`-deep student initialised from `teacher`.

    Args:
        teacher: a zoo encoder, or a head model on one (`Classifier`,
            `TokenClassifier`, `QuestionAnswerer`, `MaskedLM`).
        num_layers: the student's depth.
        layer_map: teacher layer index for each student layer; default
            `default_layer_map(teacher_layers, num_layers)`.
        style: `"distilbert"` (no segment embeddings, no pooler: a
            `DistilBertEncoder`) or `"bert"` (same family as the teacher;
            a `BertEncoder` for an ALBERT teacher). A RoBERTa teacher gives a
            `RobertaEncoder` student in either style, as DistilRoBERTa is:
            its positions count past the padding id, which a DistilBERT
            embedding does not do.
        intermediate_dim: the student's feed-forward width; default the
            teacher's. Narrower keeps each copied layer's strongest units
            (`ffn_units_to_keep`).

    Returns the same kind of model as `teacher` (encoder or head model), built
    under the current dtype policy.
    """
    if style not in STYLES:
        raise ValueError(f"style={style!r}: expected one of {STYLES}.")
    encoder, head = _split(teacher)
    n = encoder.num_layers
    layer_map = (
        default_layer_map(n, num_layers)
        if layer_map is None
        else _check_layer_map(layer_map, n, num_layers)
    )

    config = encoder.config.replace(num_layers=int(num_layers))
    if intermediate_dim is not None:
        if not 1 <= int(intermediate_dim) <= encoder.config.intermediate_dim:
            raise ValueError(
                f"intermediate_dim={intermediate_dim}: a student keeps some of the "
                f"teacher's {encoder.config.intermediate_dim} feed-forward units; give "
                f"1..{encoder.config.intermediate_dim} (or none to keep them all)."
            )
        config = config.replace(intermediate_dim=int(intermediate_dim))
    if config.family == "albert":
        # A BERT-style student: H-wide embeddings, one block per layer.
        config = config.replace(family="bert", embedding_dim=None, num_groups=1)
    if style == "distilbert" and config.family != "roberta":
        config = config.replace(family="distilbert", num_segments=0)
    elif config.family == "distilbert":
        raise ValueError(
            "style='bert' needs a teacher with segment embeddings and a pooler; this "
            "teacher is distilbert-family. Use style='distilbert'."
        )
    student = build_encoder(config)

    t_emb, s_emb = encoder.embeddings, student.embeddings
    if encoder.config.family == "albert":
        fold_albert_embeddings(encoder, student)
    else:
        for name in ("token_embedding", "position_embedding", "layer_norm"):
            _copy(getattr(t_emb, name), getattr(s_emb, name))
        if s_emb.segment_embedding is not None:
            _copy(t_emb.segment_embedding, s_emb.segment_embedding)
    narrower = config.intermediate_dim < encoder.config.intermediate_dim
    for i, t in enumerate(layer_map):
        (_copy_pruned if narrower else _copy)(
            encoder.transformer_layers[t], student.transformer_layers[i]
        )
    if student.pooler_dense is not None:
        _copy(encoder.pooler_dense, student.pooler_dense)
    return student if head is None else _student_head(head, student)
