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

A student narrower in hidden width (`hidden_dim` below the teacher's, a
multiple of its head width) keeps the same `hidden_dim` features of the
residual stream everywhere, as CoFi's hidden-dimension pruning does: those
with the largest sum, over the LayerNorms that write the stream (the
embeddings' and each copied layer's two), of gamma^2 + beta^2 (the scale a
feature leaves those norms with, data-free). Every copied weight keeps the
rows and columns of those features; each layer keeps its
`hidden_dim // head_dim` heads with the largest |W_v[:, h]| * |W_o[h, :]|.
The LayerNorms then normalise over fewer features than the teacher's did,
so the start is approximate, and the distiller's hidden-state loss learns a
projection back to the teacher's width (`Distiller`, hidden_weight).
"""

from __future__ import annotations

import keras
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
        value = select[id(s)](_numpy(s.value)) if id(s) in select else s.value
        if tuple(value.shape) != tuple(t.shape):
            raise ValueError(f"cannot copy {s.path} {value.shape} into {t.path} {t.shape}.")
        t.assign(value)


def _numpy(value):
    """A weight's value as numpy on any backend (a PyTorch parameter that
    requires grad refuses `np.asarray`)."""
    return keras.ops.convert_to_numpy(value)


def ffn_units_to_keep(layer, intermediate_dim):
    """Indices (ascending) of the `intermediate_dim` feed-forward units of a
    transformer layer with the largest |W_in[:, j]| * |W_out[j, :]|."""
    w_in = _numpy(layer.intermediate_dense.kernel)  # (H, I)
    w_out = _numpy(layer.output_dense.kernel)  # (I, H)
    score = np.linalg.norm(w_in, axis=0) * np.linalg.norm(w_out, axis=1)
    # Stable: ties keep the lower index, so the choice is deterministic.
    return np.sort(np.argsort(-score, kind="stable")[:intermediate_dim])


def hidden_features_to_keep(encoder, hidden_dim, layer_map=None):
    """Indices (ascending) of the `hidden_dim` residual-stream features with
    the largest sum of gamma^2 + beta^2 over the LayerNorms that write the
    stream: the embeddings' and the two of each layer in `layer_map`
    (default every layer)."""
    layers = encoder.transformer_layers
    chosen = range(len(layers)) if layer_map is None else layer_map
    norms = [encoder.embeddings.layer_norm] + [
        norm
        for i in chosen
        for norm in (layers[i].attention_layer_norm, layers[i].output_layer_norm)
    ]
    score = sum(_numpy(n.gamma) ** 2 + _numpy(n.beta) ** 2 for n in norms)
    return np.sort(np.argsort(-score, kind="stable")[:hidden_dim])


def heads_to_keep(layer, num_heads):
    """Indices (ascending) of the `num_heads` attention heads of a
    transformer layer with the largest |W_v[:, h]| * |W_o[h, :]|."""
    attention = layer.attention
    heads, width = attention.num_heads, attention.head_dim
    w_v = _numpy(attention.value_dense.kernel).reshape(-1, heads, width)
    w_o = _numpy(attention.output_dense.kernel).reshape(heads, width, -1)
    score = np.linalg.norm(w_v, axis=(0, 2)) * np.linalg.norm(w_o, axis=(1, 2))
    return np.sort(np.argsort(-score, kind="stable")[:num_heads])


def _copy_layer(source_layer, target_layer, features):
    """Copy a transformer layer into one that may be narrower: in its
    feed-forward units (`ffn_units_to_keep`), its heads (`heads_to_keep`)
    and, where `features` is given, its hidden width (those features)."""
    fewer_units = target_layer.intermediate_dim < source_layer.intermediate_dim
    fewer_heads = target_layer.num_heads < source_layer.num_heads
    if features is None and not fewer_units and not fewer_heads:
        _copy(source_layer, target_layer)  # the same shape: a plain copy
        return
    if fewer_units:
        units = ffn_units_to_keep(source_layer, target_layer.intermediate_dim)
    else:
        units = slice(None)
    if fewer_heads:
        width = source_layer.attention.head_dim
        heads = heads_to_keep(source_layer, target_layer.num_heads)
        columns = (heads[:, None] * width + np.arange(width)).reshape(-1)
    else:
        columns = slice(None)
    rows = slice(None) if features is None else features
    attention = source_layer.attention
    select = {id(w): lambda w: w[rows] for w in _norm_weights(source_layer)}
    for dense in (attention.query_dense, attention.key_dense, attention.value_dense):
        select[id(dense.kernel)] = lambda w: w[rows][:, columns]
        select[id(dense.bias)] = lambda w: w[columns]
    select[id(attention.output_dense.kernel)] = lambda w: w[columns][:, rows]
    select[id(attention.output_dense.bias)] = lambda w: w[rows]
    select[id(source_layer.intermediate_dense.kernel)] = lambda w: w[rows][:, units]
    select[id(source_layer.intermediate_dense.bias)] = lambda w: w[units]
    select[id(source_layer.output_dense.kernel)] = lambda w: w[units][:, rows]
    select[id(source_layer.output_dense.bias)] = lambda w: w[rows]
    _copy(source_layer, target_layer, select)


def _norm_weights(layer):
    return [
        w
        for norm in (layer.attention_layer_norm, layer.output_layer_norm)
        for w in (norm.gamma, norm.beta)
    ]


def _rows(layer, features, columns_too=False):
    """`_copy`'s selection for a layer whose kernel reads (and, with
    `columns_too`, writes) the hidden width: those `features` only."""
    if features is None:
        return {}
    select = {}
    for w in layer.weights:
        if len(w.shape) == 2:
            select[id(w)] = (
                (lambda v: v[features][:, features])
                if columns_too
                else (lambda v: v[features])
            )
        elif columns_too:
            select[id(w)] = lambda v: v[features]
    return select


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


def _student_head(head, encoder, features=None):
    """The teacher's head class on the student encoder, head weights copied
    (only the kept hidden `features` of what reads the encoder's output)."""

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
            _copy(
                head.hidden_dense, student.hidden_dense, _rows(head.hidden_dense, features)
            )
            _copy(head.output_dense, student.output_dense)
        else:
            _copy(
                head.output_dense, student.output_dense, _rows(head.output_dense, features)
            )
    elif isinstance(head, TokenClassifier):
        student = TokenClassifier(
            encoder, head.num_classes, dropout=head.dropout, labels=head.labels
        )
        _copy(head.output_dense, student.output_dense, _rows(head.output_dense, features))
    elif isinstance(head, QuestionAnswerer):
        student = QuestionAnswerer(encoder)
        _copy(head.span_dense, student.span_dense, _rows(head.span_dense, features))
    elif isinstance(head, MaskedLM):
        if head.encoder.config.family == "albert":
            raise ValueError(
                "make_student: an ALBERT MaskedLM's head maps H -> E and decodes with "
                "the E-wide table, a BERT student's maps H -> H: there is no copy. "
                "Distil the ALBERT encoder (make_student(teacher.encoder, ...)) and "
                "put a fresh zoo.MaskedLM on the student."
            )
        student = MaskedLM(encoder)
        mlm = head.mlm_head
        select = {}
        if features is not None:
            select = _rows(mlm.transform_dense, features, columns_too=True)
            select.update(_rows(mlm.transform_layer_norm, features, columns_too=True))
            # The decoder is tied to the token table (already narrowed).
            select.update(
                {id(w): lambda v: v[:, features] for w in mlm.token_embedding.weights}
            )
        _copy(mlm, student.mlm_head, select)
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
    teacher,
    num_layers,
    layer_map=None,
    style="distilbert",
    intermediate_dim=None,
    hidden_dim=None,
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
        hidden_dim: the student's hidden width, a multiple of the teacher's
            head width; default the teacher's. Narrower keeps the same
            features everywhere (`hidden_features_to_keep`) and each copied
            layer's strongest `hidden_dim // head_dim` heads (`heads_to_keep`).

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
    intermediate_dim = _whole("intermediate_dim", intermediate_dim)
    hidden_dim = _whole("hidden_dim", hidden_dim)
    if intermediate_dim is not None:
        if not 1 <= intermediate_dim <= encoder.config.intermediate_dim:
            raise ValueError(
                f"intermediate_dim={intermediate_dim}: a student keeps some of the "
                f"teacher's {encoder.config.intermediate_dim} feed-forward units; give "
                f"1..{encoder.config.intermediate_dim} (or none to keep them all)."
            )
        config = config.replace(intermediate_dim=intermediate_dim)
    features = None
    if hidden_dim is not None and hidden_dim != encoder.config.hidden_dim:
        features = _narrow_features(encoder, hidden_dim, layer_map)
        config = config.replace(
            hidden_dim=hidden_dim,
            num_heads=hidden_dim // encoder.config.head_dim,
        )
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
        names = ["token_embedding", "position_embedding", "layer_norm"]
        if s_emb.segment_embedding is not None:
            names.append("segment_embedding")
        for name in names:
            source = getattr(t_emb, name)
            select = {}
            if features is not None:
                # Tables are (rows, hidden): keep the features' columns.
                select = {
                    id(w): (lambda v: v[:, features])
                    if len(w.shape) == 2
                    else (lambda v: v[features])
                    for w in source.weights
                }
            _copy(source, getattr(s_emb, name), select)
    for i, t in enumerate(layer_map):
        _copy_layer(encoder.transformer_layers[t], student.transformer_layers[i], features)
    if student.pooler_dense is not None:
        pooler = encoder.pooler_dense
        _copy(pooler, student.pooler_dense, _rows(pooler, features, columns_too=True))
    return student if head is None else _student_head(head, student, features)


def _whole(name, value):
    """`value` as an int, or None; a bool, float or string is refused, not
    rounded (256.9 features is a mistake, not 256)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(
            f"{name}={value!r}: expected a whole number of features (an int), "
            f"received {type(value).__name__}."
        )
    return int(value)


def _narrow_features(encoder, hidden_dim, layer_map):
    """Check a narrower `hidden_dim` against `encoder`; the features to keep."""
    config = encoder.config
    if config.family == "albert":
        raise ValueError(
            f"hidden_dim={hidden_dim}: an ALBERT teacher's student is folded to the "
            "teacher's width; distil it at that width first, then narrow that student."
        )
    if not (1 <= hidden_dim <= config.hidden_dim and hidden_dim % config.head_dim == 0):
        raise ValueError(
            f"hidden_dim={hidden_dim}: a student keeps whole heads of the teacher's "
            f"{config.head_dim} features each; give a multiple of {config.head_dim} "
            f"up to {config.hidden_dim} (or none to keep the teacher's width)."
        )
    return hidden_features_to_keep(encoder, hidden_dim, layer_map)
