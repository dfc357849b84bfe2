import numpy as np
import pytest

import zoo
from tests.helpers import TINY, tiny_batch
from zoo.distill import default_layer_map, make_student


def test_default_layer_map():
    assert default_layer_map(12, 6) == (0, 2, 4, 7, 9, 11)  # DistilBERT's
    assert default_layer_map(6, 3) == (0, 2, 4)
    assert default_layer_map(6, 2) == (0, 3)
    assert default_layer_map(4, 4) == (0, 1, 2, 3)
    with pytest.raises(ValueError, match="between 1"):
        default_layer_map(4, 5)


def _same(a, b):
    return len(a.weights) == len(b.weights) and all(
        np.array_equal(np.asarray(x.value), np.asarray(y.value))
        for x, y in zip(a.weights, b.weights)
    )


def test_bert_style_copies_bit_exact():
    teacher = zoo.Classifier(zoo.BertEncoder(**dict(TINY, num_layers=4)), 3)
    student = make_student(teacher, 2, layer_map=[1, 3], style="bert")
    assert type(student) is zoo.Classifier and type(student.encoder) is zoo.BertEncoder
    t, s = teacher.encoder, student.encoder
    for name in (
        "token_embedding",
        "position_embedding",
        "segment_embedding",
        "layer_norm",
    ):
        assert _same(getattr(t.embeddings, name), getattr(s.embeddings, name))
    assert _same(t.transformer_layers[1], s.transformer_layers[0])
    assert _same(t.transformer_layers[3], s.transformer_layers[1])
    assert _same(t.pooler_dense, s.pooler_dense)
    assert _same(teacher.output_dense, student.output_dense)
    # A 2-of-2 map is the teacher itself: outputs match exactly.
    same_depth = make_student(teacher.encoder, 4, style="bert")
    x = tiny_batch()
    np.testing.assert_array_equal(
        teacher.encoder(x)["pooled_output"], same_depth(x)["pooled_output"]
    )


def test_distilbert_style_drops_segments_and_pooler():
    teacher = zoo.Classifier(zoo.BertEncoder(**dict(TINY, num_layers=4)), 3)
    student = make_student(teacher, 2)
    s = student.encoder
    assert type(s) is zoo.DistilBertEncoder and s.num_layers == 2
    assert s.embeddings.segment_embedding is None and s.pooler_dense is None
    assert student.pooling == "cls"  # no pooler to read
    assert _same(teacher.encoder.transformer_layers[0], s.transformer_layers[0])
    assert _same(teacher.encoder.transformer_layers[2], s.transformer_layers[1])
    assert _same(teacher.output_dense, student.output_dense)
    out = student(tiny_batch())["logits"]
    assert out.shape == (3, 3)


def test_other_heads_and_errors():
    enc = zoo.BertEncoder(**dict(TINY, num_layers=2))
    for head in (zoo.TokenClassifier(enc, 4), zoo.QuestionAnswerer(enc), zoo.MaskedLM(enc)):
        student = make_student(head, 1)
        assert type(student) is type(head)
    mlm = make_student(zoo.MaskedLM(enc), 1)
    assert mlm(tiny_batch(masked=2))["mlm_logits"].shape == (3, 2, TINY["vocabulary_size"])
    with pytest.raises(ValueError, match="entries"):
        make_student(enc, 2, layer_map=[0])
    with pytest.raises(ValueError, match="do not exist"):
        make_student(enc, 1, layer_map=[5])


def test_narrower_student_keeps_the_strongest_ffn_units_exactly():
    from zoo.distill.student_init import ffn_units_to_keep

    teacher = zoo.Classifier(zoo.BertEncoder(**dict(TINY, num_layers=2)), 3)
    # Spread the units' sizes so that the kept set is not an accident of init.
    rng = np.random.default_rng(0)
    for layer in teacher.encoder.transformer_layers:
        scale = rng.uniform(0.1, 3.0, TINY["intermediate_dim"]).astype("float32")
        layer.output_dense.kernel.assign(
            np.asarray(layer.output_dense.kernel) * scale[:, None]
        )
    student = make_student(teacher, 2, style="bert", intermediate_dim=6)
    s, t = student.encoder, teacher.encoder
    assert s.config.intermediate_dim == 6 and s.config.hidden_dim == t.config.hidden_dim
    for i in range(2):
        tl, sl = t.transformer_layers[i], s.transformer_layers[i]
        keep = ffn_units_to_keep(tl, 6)
        w_in, w_out = (
            np.asarray(tl.intermediate_dense.kernel),
            np.asarray(tl.output_dense.kernel),
        )
        score = np.linalg.norm(w_in, axis=0) * np.linalg.norm(w_out, axis=1)
        assert list(keep) == sorted(np.argsort(-score)[:6])
        assert score[keep].min() >= np.delete(score, keep).max()
        # The student layer is the teacher layer with the other units switched
        # off: zero their output rows in a copy of the teacher and compare.
        masked = np.zeros_like(w_out)
        masked[keep] = w_out[keep]
        x = (
            np.random.default_rng(i)
            .normal(size=(3, 5, TINY["hidden_dim"]))
            .astype("float32")
        )
        reference = zoo.BertEncoder(**dict(TINY, num_layers=2)).transformer_layers[i]
        reference(x)
        for a, b in zip(tl.weights, reference.weights):
            b.assign(a.value)
        reference.output_dense.kernel.assign(masked)
        np.testing.assert_allclose(sl(x)[0], reference(x)[0], atol=1e-5)
    assert student(tiny_batch())["logits"].shape == (3, 3)
    with pytest.raises(ValueError, match="intermediate_dim=17"):
        make_student(teacher, 1, intermediate_dim=17)


WIDE = dict(TINY, num_heads=4, hidden_dim=16, intermediate_dim=24)


def _spread(encoder, seed=0):
    """Scale LayerNorms, value columns and output rows unevenly, so the kept
    features and heads are not an accident of initialisation."""
    rng = np.random.default_rng(seed)
    norms = [encoder.embeddings.layer_norm] + [
        n
        for layer in encoder.transformer_layers
        for n in (layer.attention_layer_norm, layer.output_layer_norm)
    ]
    for n in norms:
        n.gamma.assign(rng.uniform(0.1, 3.0, n.gamma.shape).astype("float32"))
        n.beta.assign(rng.normal(size=n.beta.shape).astype("float32"))
    for layer in encoder.transformer_layers:
        kernel = layer.attention.value_dense.kernel
        scale = np.repeat(rng.uniform(0.1, 3.0, 4), 4).astype("float32")
        kernel.assign(np.asarray(kernel) * scale[None, :])


def test_narrower_hidden_student_keeps_the_strongest_features_and_heads():
    from zoo.distill.student_init import heads_to_keep, hidden_features_to_keep

    teacher = zoo.Classifier(zoo.BertEncoder(**dict(WIDE, num_layers=3)), 3)
    t = teacher.encoder
    _spread(t)
    student = make_student(teacher, 2, layer_map=[0, 2], style="bert", hidden_dim=8)
    s = student.encoder
    assert (s.config.hidden_dim, s.config.num_heads, s.config.head_dim) == (8, 2, 4)
    assert s.config.intermediate_dim == 24

    features = hidden_features_to_keep(t, 8, [0, 2])
    norms = [t.embeddings.layer_norm] + [
        n
        for i in (0, 2)
        for n in (
            t.transformer_layers[i].attention_layer_norm,
            t.transformer_layers[i].output_layer_norm,
        )
    ]
    score = sum(np.asarray(n.gamma) ** 2 + np.asarray(n.beta) ** 2 for n in norms)
    assert list(features) == sorted(np.argsort(-score)[:8])
    assert score[features].min() >= np.delete(score, features).max()

    def arr(w):
        return np.asarray(w.value)

    np.testing.assert_array_equal(
        arr(s.embeddings.token_embedding.embeddings),
        arr(t.embeddings.token_embedding.embeddings)[:, features],
    )
    np.testing.assert_array_equal(
        arr(s.embeddings.layer_norm.gamma), arr(t.embeddings.layer_norm.gamma)[features]
    )
    for i, ti in enumerate((0, 2)):
        tl, sl = t.transformer_layers[ti], s.transformer_layers[i]
        heads = heads_to_keep(tl, 2)
        w_v = arr(tl.attention.value_dense.kernel).reshape(16, 4, 4)
        w_o = arr(tl.attention.output_dense.kernel).reshape(4, 4, 16)
        head_score = np.linalg.norm(w_v, axis=(0, 2)) * np.linalg.norm(w_o, axis=(1, 2))
        assert list(heads) == sorted(np.argsort(-head_score)[:2])
        columns = (heads[:, None] * 4 + np.arange(4)).reshape(-1)
        for name in ("query_dense", "key_dense", "value_dense"):
            tw, sw = getattr(tl.attention, name), getattr(sl.attention, name)
            np.testing.assert_array_equal(
                arr(sw.kernel), arr(tw.kernel)[np.ix_(features, columns)]
            )
            np.testing.assert_array_equal(arr(sw.bias), arr(tw.bias)[columns])
        np.testing.assert_array_equal(
            arr(sl.attention.output_dense.kernel),
            arr(tl.attention.output_dense.kernel)[np.ix_(columns, features)],
        )
        np.testing.assert_array_equal(
            arr(sl.intermediate_dense.kernel), arr(tl.intermediate_dense.kernel)[features]
        )
        np.testing.assert_array_equal(
            arr(sl.output_dense.kernel), arr(tl.output_dense.kernel)[:, features]
        )
        np.testing.assert_array_equal(
            arr(sl.output_layer_norm.beta), arr(tl.output_layer_norm.beta)[features]
        )
    np.testing.assert_array_equal(
        arr(s.pooler_dense.kernel), arr(t.pooler_dense.kernel)[np.ix_(features, features)]
    )
    np.testing.assert_array_equal(
        arr(student.output_dense.kernel), arr(teacher.output_dense.kernel)[features]
    )
    np.testing.assert_array_equal(
        arr(student.output_dense.bias), arr(teacher.output_dense.bias)
    )
    assert student(tiny_batch())["logits"].shape == (3, 3)


def test_narrower_hidden_student_with_narrower_ffn_and_every_head():
    enc = zoo.BertEncoder(**dict(WIDE, num_layers=2))
    _spread(enc, seed=1)
    # Both narrowings at once: the FFN units are chosen on the teacher's
    # whole width, then cut to the kept features.
    from zoo.distill.student_init import ffn_units_to_keep, hidden_features_to_keep

    student = make_student(enc, 1, hidden_dim=12, intermediate_dim=10)
    features = hidden_features_to_keep(enc, 12, [0])
    units = ffn_units_to_keep(enc.transformer_layers[0], 10)
    np.testing.assert_array_equal(
        np.asarray(student.transformer_layers[0].intermediate_dense.kernel),
        np.asarray(enc.transformer_layers[0].intermediate_dense.kernel)[
            np.ix_(features, units)
        ],
    )
    assert (student.config.num_heads, student.config.intermediate_dim) == (3, 10)
    for head in (
        zoo.TokenClassifier(enc, 4),
        zoo.QuestionAnswerer(enc),
        zoo.MaskedLM(enc),
        zoo.Classifier(enc, 3, hidden_dim=5),
    ):
        narrow = make_student(head, 1, hidden_dim=8)
        assert type(narrow) is type(head) and narrow.encoder.config.hidden_dim == 8
    mlm = make_student(zoo.MaskedLM(enc), 1, hidden_dim=8)
    assert mlm(tiny_batch(masked=2))["mlm_logits"].shape == (3, 2, WIDE["vocabulary_size"])
    np.testing.assert_array_equal(
        np.asarray(mlm.mlm_head.output_bias),
        np.asarray(zoo.MaskedLM(enc).mlm_head.output_bias),
    )
    # The full width is the plain copy.
    assert _same(
        make_student(enc, 1, hidden_dim=16).transformer_layers[0],
        make_student(enc, 1).transformer_layers[0],
    )


def test_narrower_hidden_refusals():
    enc = zoo.BertEncoder(**dict(WIDE, num_layers=2))
    for bad in (6, 0, 20):
        with pytest.raises(ValueError, match=f"hidden_dim={bad}: .*multiple of 4 up to 16"):
            make_student(enc, 1, hidden_dim=bad)
    for bad in (8.0, "8", True):
        with pytest.raises(TypeError, match=f"hidden_dim={bad!r}: expected a whole number"):
            make_student(enc, 1, hidden_dim=bad)
    with pytest.raises(TypeError, match="intermediate_dim=12.5"):
        make_student(enc, 1, intermediate_dim=12.5)
    assert make_student(enc, 1, hidden_dim=np.int64(8)).config.hidden_dim == 8
    albert = zoo.AlbertEncoder(**dict(WIDE, num_layers=2, embedding_dim=8))
    with pytest.raises(ValueError, match="ALBERT"):
        make_student(albert, 1, hidden_dim=8)
