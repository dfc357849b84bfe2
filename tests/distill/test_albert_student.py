"""A BERT-style student from an ALBERT teacher: what is exact (the layers,
the linear part of the embeddings, pooler and head), what is not (the
embedding LayerNorm, measured), and the Distiller training with it."""

import keras
import numpy as np
import pytest

import zoo
from tests.helpers import tiny_batch
from zoo.distill import Distiller, make_student
from zoo.distill.student_init import fold_albert_embeddings

Y = {"logits": np.array([0, 1, 2, 1], "int32")}


def _teacher(seed=7, dropout=0.1):
    keras.utils.set_random_seed(seed)
    # 4 layers over 2 shared blocks, E 6 -> H 8, tanh GELU.
    encoder = zoo.AlbertEncoder(
        30,
        4,
        2,
        8,
        16,
        embedding_dim=6,
        num_groups=2,
        max_sequence_length=12,
        dropout=dropout,
    )
    return zoo.Classifier(encoder, 3)


def test_student_from_albert_copies_what_is_exact():
    teacher = _teacher()
    t_enc = teacher.encoder
    student = make_student(teacher, 4, style="bert")
    s_enc = student.encoder
    assert type(s_enc) is zoo.BertEncoder
    assert s_enc.config == t_enc.config.replace(
        family="bert", embedding_dim=None, num_groups=1
    )
    assert s_enc.activation == "gelu_tanh"
    # Linear part of the embeddings: the student's sum is the teacher's sum
    # projected, for every token, position and segment.
    x = tiny_batch(batch=4)
    t_emb, s_emb = t_enc.embeddings, s_enc.embeddings
    ids, seg = x["token_ids"], x["segment_ids"]
    T = ids.shape[1]

    def table(layer):
        return layer.embeddings.numpy()

    t_sum = (
        table(t_emb.token_embedding)[ids]
        + table(t_emb.position_embedding)[:T]
        + table(t_emb.segment_embedding)[seg]
    )
    s_sum = (
        table(s_emb.token_embedding)[ids]
        + table(s_emb.position_embedding)[:T]
        + table(s_emb.segment_embedding)[seg]
    )
    projection = t_enc.embedding_projection
    np.testing.assert_allclose(
        s_sum, t_sum @ projection.kernel.numpy() + projection.bias.numpy(), atol=1e-6
    )
    # Layers: fed the teacher's embedding output, the student's layers give
    # the teacher's layer outputs (layer i copied the block teacher layer i runs).
    t_out = t_enc.with_internals()(x)
    hidden = t_out["hidden_states"][0]
    for i, layer in enumerate(s_enc.transformer_layers):
        hidden, _ = layer(hidden, padding_mask=x["padding_mask"])
        np.testing.assert_allclose(
            np.asarray(hidden), np.asarray(t_out["hidden_states"][i + 1]), atol=1e-5
        )
    np.testing.assert_array_equal(
        s_enc.pooler_dense.kernel.numpy(), t_enc.pooler_dense.kernel.numpy()
    )
    np.testing.assert_array_equal(
        student.output_dense.kernel.numpy(), teacher.output_dense.kernel.numpy()
    )
    # Not exact: the embedding LayerNorm (E-wide before the projection in
    # ALBERT, H-wide after it in BERT; fitted). The end-to-end gap, for the record:
    gap = float(
        np.max(np.abs(np.asarray(student(x)["logits"]) - np.asarray(teacher(x)["logits"])))
    )
    print(f"\nALBERT teacher vs 4-layer BERT student at init: max |logit diff| {gap:.3e}")
    assert gap > 0


def test_fitted_layernorm_brings_the_embedding_output_close():
    """The E-wide LayerNorm has no H-wide counterpart: the student's gamma and
    beta are fitted to the teacher's embedding output, which must beat the
    plain LayerNorm (gamma 1, beta 0) by far. (At this random tiny init the
    fitted gap is still about the size of the output itself: the H-wide
    normalisation is not a per-dimension affine map of the E-wide one.)"""
    teacher = _teacher()
    student = make_student(teacher.encoder, 2, style="distilbert")
    assert type(student) is zoo.DistilBertEncoder
    x = tiny_batch(batch=4)
    real = x["padding_mask"].astype(bool)
    t_out = np.asarray(teacher.encoder.with_internals()(x)["hidden_states"][0])[real]
    s_out = np.asarray(student.with_internals()(x)["hidden_states"][0])[real]
    fitted = float(np.abs(s_out - t_out).mean())
    ln = student.embeddings.layer_norm
    ln.gamma.assign(np.ones(8, "float32"))
    ln.beta.assign(np.zeros(8, "float32"))
    plain = float(
        np.abs(
            np.asarray(student.with_internals()(x)["hidden_states"][0])[real] - t_out
        ).mean()
    )
    print(
        f"\nembedding output mean |diff|: fitted LayerNorm {fitted:.3e}, "
        f"plain {plain:.3e}, teacher mean |value| {np.abs(t_out).mean():.3e}"
    )
    assert fitted < 0.5 * plain
    bert = zoo.BertEncoder(30, 2, 2, 8, 16, max_sequence_length=12)
    with pytest.raises(AttributeError):
        fold_albert_embeddings(bert, student)  # only an ALBERT teacher has a projection


def test_albert_mlm_teacher_is_refused_with_what_to_do():
    with pytest.raises(ValueError, match="put a fresh zoo.MaskedLM on the student"):
        make_student(zoo.MaskedLM(_teacher().encoder), 2, style="bert")


def test_distiller_trains_a_bert_student_from_an_albert_teacher():
    # No dropout and no hard (label) term, so the distillation loss can only
    # fall if the student learns from the teacher.
    teacher = _teacher(dropout=0.0)
    student = make_student(teacher, 2, style="bert")
    before, student_before = teacher.get_weights(), student.get_weights()
    d = Distiller(
        teacher, student, hard_weight=0.0, hidden_weight=1.0, attention_weight=1.0
    )
    d.compile(optimizer=keras.optimizers.Adam(1e-3), run_eagerly=True)
    history = d.fit(tiny_batch(batch=4), Y, batch_size=4, epochs=3, verbose=0).history
    assert all(np.isfinite(v).all() for v in history.values()), history
    # One step per epoch. The first update overshoots on this 8-wide model (as
    # with a BERT teacher of the same size); from there the loss falls.
    assert history["loss"][2] < history["loss"][1]
    for a, b in zip(before, teacher.get_weights()):
        assert np.array_equal(a, b)
    assert any(
        not np.array_equal(a, b) for a, b in zip(student_before, student.get_weights())
    )
