"""The layers of zoo/layers, each on its own: config round trip, `.keras`
save and reload, and the behaviour the encoders rely on (padding keys get no
attention, segments and positions change the embedding, post-LN blocks)."""

import functools

import keras
import numpy as np
import pytest

from zoo.layers import BertEmbeddings, MultiHeadSelfAttention, TransformerEncoderBlock

B, T, H = 2, 5, 8
MASK = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], "int32")


def _x(seed=0):
    return np.random.default_rng(seed).normal(size=(B, T, H)).astype("float32")


def _round_trip(layer, *args):
    """The layer rebuilt from its config, with its weights, gives identical outputs."""
    clone = type(layer).from_config(layer.get_config())
    clone(*args)
    clone.set_weights(layer.get_weights())
    a, b = layer(*args), clone(*args)
    a = a if isinstance(a, tuple) else (a,)
    b = b if isinstance(b, tuple) else (b,)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def _save_reload(layer, inputs, tmp_path):
    """A one-layer functional model saves and reloads in safe mode to 1e-6."""
    outputs = layer(*inputs.values())
    model = keras.Model(inputs, outputs)
    model.save(tmp_path / "m.keras")
    restored = keras.saving.load_model(tmp_path / "m.keras", safe_mode=True)
    feed = (
        {"x": _x(), "mask": MASK}
        if "x" in inputs
        else {
            "token_ids": np.array([[2, 5, 7, 1, 0], [3, 3, 9, 0, 0]], "int32"),
            "segment_ids": MASK * 0,
        }
    )
    got, want = restored(feed), model(feed)
    got = got if isinstance(got, (list, tuple)) else [got]
    want = want if isinstance(want, (list, tuple)) else [want]
    for x, y in zip(got, want):
        assert np.abs(np.asarray(x) - np.asarray(y)).max() <= 1e-6


def test_attention_ignores_padding_keys_and_round_trips(tmp_path):
    layer = MultiHeadSelfAttention(num_heads=2, hidden_dim=H, dropout=0.0)
    out, probs = layer(_x(), padding_mask=MASK)
    assert out.shape == (B, T, H) and probs.shape == (B, 2, T, T)
    probs = np.asarray(probs)
    np.testing.assert_allclose(probs.sum(-1), 1.0, atol=1e-6)
    assert probs[1, :, :, 3:].max() < 1e-6  # padded keys get no weight
    # Changing a padded position's input does not change real positions' outputs.
    x2 = _x()
    x2[1, 3:] += 10.0
    out2, _ = layer(x2, padding_mask=MASK)
    np.testing.assert_allclose(np.asarray(out)[1, :3], np.asarray(out2)[1, :3], atol=1e-5)
    _round_trip(layer, _x(), MASK)
    x = keras.Input((None, H), name="x")
    mask = keras.Input((None,), dtype="int32", name="mask")
    _save_reload(
        MultiHeadSelfAttention(num_heads=2, hidden_dim=H), {"x": x, "mask": mask}, tmp_path
    )


def test_attention_rejects_indivisible_width():
    with pytest.raises(ValueError, match="not divisible by num_heads=3"):
        MultiHeadSelfAttention(num_heads=3, hidden_dim=H)


def test_embeddings_sum_token_position_and_segment(tmp_path):
    layer = BertEmbeddings(
        vocabulary_size=12, hidden_dim=H, max_sequence_length=T, num_segments=2, dropout=0.0
    )
    ids = np.array([[2, 5, 7, 1, 0], [2, 5, 7, 1, 0]], "int32")
    segments = np.array([[0, 0, 0, 0, 0], [0, 0, 1, 1, 1]], "int32")
    out = np.asarray(layer(ids, segments))
    assert out.shape == (B, T, H)
    # Same tokens, same segments up to position 2: same vectors there.
    np.testing.assert_allclose(out[0, :2], out[1, :2], atol=1e-6)
    assert np.abs(out[0, 2:] - out[1, 2:]).max() > 1e-3  # segment 1 differs
    # Positions matter: one token at two positions gives two vectors.
    same = np.asarray(layer(np.full((1, T), 5, "int32"), np.zeros((1, T), "int32")))
    assert np.abs(same[0, 0] - same[0, 1]).max() > 1e-3
    _round_trip(layer, ids, segments)
    t = keras.Input((None,), dtype="int32", name="token_ids")
    s = keras.Input((None,), dtype="int32", name="segment_ids")
    _save_reload(
        BertEmbeddings(12, H, max_sequence_length=T),
        {"token_ids": t, "segment_ids": s},
        tmp_path,
    )


def test_embeddings_without_segments_ignore_them():
    layer = BertEmbeddings(
        vocabulary_size=12, hidden_dim=H, max_sequence_length=T, num_segments=0, dropout=0.0
    )
    ids = np.array([[2, 5, 7, 1, 0]], "int32")
    a = np.asarray(layer(ids, np.zeros_like(ids)))
    b = np.asarray(layer(ids, np.ones_like(ids)))
    np.testing.assert_array_equal(a, b)
    assert not any("segment" in w.path for w in layer.weights)


def test_encoder_block_is_post_layer_norm_and_round_trips(tmp_path):
    layer = TransformerEncoderBlock(
        num_heads=2, hidden_dim=H, intermediate_dim=16, dropout=0.0
    )
    out, probs = layer(_x(), padding_mask=MASK)
    out = np.asarray(out)
    assert out.shape == (B, T, H) and probs.shape == (B, 2, T, T)
    # Post-LN: every output vector is normalised (mean 0, variance 1 before gamma/beta).
    np.testing.assert_allclose(out.mean(-1), 0.0, atol=1e-5)
    np.testing.assert_allclose(out.var(-1), 1.0, atol=1e-3)
    _round_trip(layer, _x(), MASK)
    x = keras.Input((None, H), name="x")
    mask = keras.Input((None,), dtype="int32", name="mask")
    _save_reload(
        TransformerEncoderBlock(num_heads=2, hidden_dim=H, intermediate_dim=16),
        {"x": x, "mask": mask},
        tmp_path,
    )


@pytest.mark.parametrize("form", [None, "gelu", "gelu_tanh"])
def test_projection_equals_keras_dense_then_gelu(form, tmp_path):
    """`Projection` is Dense (+ GELU) as one 2-D product: the same outputs on
    2-D and 3-D inputs, the same weights, a config and `.keras` round trip."""
    from zoo.layers.projection import Projection, gelu

    layer, dense = Projection(6, gelu=form), keras.layers.Dense(6)
    x = _x()
    layer(x), dense(x)
    dense.set_weights(layer.get_weights())
    assert [w.path.split("/")[-1] for w in layer.weights] == ["kernel", "bias"]
    for inp in (x, x[0]):  # (B, T, H) and (T, H)
        want = np.asarray(dense(inp) if form is None else gelu(dense(inp), form))
        got = np.asarray(layer(inp))
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, atol=1e-6)
    _round_trip(layer, x)
    inputs = keras.Input((T, H), name="x")
    outputs = layer(inputs)
    assert tuple(outputs.shape) == (None, T, 6)
    model = keras.Model(inputs, outputs)
    model.save(tmp_path / "p.keras")
    restored = keras.saving.load_model(tmp_path / "p.keras", safe_mode=True)
    np.testing.assert_array_equal(np.asarray(restored(x)), np.asarray(model(x)))


def test_projection_under_mixed_precision_and_bad_arguments():
    from zoo.layers.projection import Projection

    layer = Projection(4, gelu="gelu", dtype="mixed_bfloat16")
    y = layer(_x())
    assert keras.backend.standardize_dtype(y.dtype) == "bfloat16"
    assert layer.kernel.dtype == "float32"
    with pytest.raises(ValueError, match="gelu='relu'"):
        Projection(4, gelu="relu")
    with pytest.raises(ValueError, match="activation='relu'"):
        Projection(4, activation="relu")
    with pytest.raises(ValueError, match="activation='swish'"):
        TransformerEncoderBlock(2, H, 16, activation="swish")


def _products_feeding_a_bias(fn, *specs):
    """The MatMul/BatchMatMul ops of `fn`'s traced graph whose output goes
    straight into a BiasAdd or Add: the pattern TensorFlow's oneDNN rewrite
    fuses, in float16 into a reference kernel (`Projection.call`)."""
    import tensorflow as tf

    graph = tf.function(fn).get_concrete_function(*specs).graph
    fused = []
    for op in graph.get_operations():
        if op.type in ("MatMul", "BatchMatMulV2"):
            readers = {c.type for out in op.outputs for c in out.consumers()}
            if readers & {"BiasAdd", "Add", "AddV2"}:
                fused.append(op.name)
    return fused


@pytest.mark.parametrize("gelu_form", [None, "gelu"])
def test_float16_products_stay_out_of_the_fused_bias_kernel(gelu_form):
    """In float16, `Projection` (2-D and 3-D inputs, training or not) and
    `dense_on_rows` (the pooler, the classifier's hidden layer) leave no
    product feeding a bias directly, and give the float32 layer's values to
    float16 rounding; in float32 the fused pattern stays (oneDNN runs it
    fast there)."""
    import tensorflow as tf

    from zoo.layers.projection import Projection, dense_on_rows

    x3 = _x()
    for shape in (x3.shape, x3[0].shape):
        spec = tf.TensorSpec(shape, "float16")
        layer = Projection(6, gelu=gelu_form, dtype="mixed_float16")
        for training in (False, True):
            step = functools.partial(layer, training=training)
            assert _products_feeding_a_bias(step, spec) == []
        reference = Projection(6, gelu=gelu_form)
        reference.build(shape)
        layer.set_weights(reference.get_weights())
        inp = x3 if len(shape) == 3 else x3[0]
        got = np.asarray(tf.cast(layer(tf.cast(inp, "float16")), "float32"))
        np.testing.assert_allclose(got, np.asarray(reference(inp)), atol=2e-2, rtol=1e-2)
        assert got.shape == tuple(shape[:-1]) + (6,)
        assert _products_feeding_a_bias(reference, tf.TensorSpec(shape, "float32"))
    rows = tf.TensorSpec((3, H), "float16")
    dense = keras.layers.Dense(5, activation="tanh", dtype="mixed_float16")
    assert _products_feeding_a_bias(lambda t: dense_on_rows(dense, t), rows) == []
    plain = keras.layers.Dense(5, activation="tanh")
    plain.build((3, H))
    dense.set_weights(plain.get_weights())
    np.testing.assert_allclose(
        np.asarray(tf.cast(dense_on_rows(dense, tf.cast(x3[0][:3], "float16")), "float32")),
        np.asarray(dense_on_rows(plain, x3[0][:3])),
        atol=2e-2,
    )


def test_training_gelu_matches_tensorflows_values_and_gradients():
    """`Projection` trains with `gelu_for_training` (erf form, hand-written
    gradient): its values and gradients equal `tf.nn.gelu`'s, in float32
    and bfloat16, and the training graph has `Erf`, not `Erfc`."""
    import tensorflow as tf

    from zoo.layers.projection import Projection, gelu_for_training

    x = tf.constant(np.linspace(-9.0, 9.0, 4001, dtype="float32"))
    upstream = tf.constant(np.random.default_rng(0).normal(size=x.shape).astype("float32"))
    for dtype, atol, rtol in (
        ("float32", 2e-6, 0),
        ("bfloat16", 1e-2, 1 / 64),
    ):  # 1 bf16 ulp
        xd, ud = tf.cast(x, dtype), tf.cast(upstream, dtype)
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(xd)
            got, want = gelu_for_training(xd), tf.nn.gelu(xd, approximate=False)
        assert got.dtype == want.dtype
        np.testing.assert_allclose(
            tf.cast(got, "float32"), tf.cast(want, "float32"), atol=atol, rtol=rtol
        )
        np.testing.assert_allclose(
            tf.cast(tape.gradient(got, xd, ud), "float32"),
            tf.cast(tape.gradient(want, xd, ud), "float32"),
            atol=atol,
            rtol=rtol,
        )
    layer, h = Projection(6, gelu="gelu"), _x()
    layer(h)
    np.testing.assert_allclose(layer(h, training=True), layer(h, training=False), atol=1e-6)
    ops = {
        op.type
        for op in tf.function(lambda t: layer(t, training=True))
        .get_concrete_function(tf.TensorSpec(h.shape))
        .graph.get_operations()
    }
    assert "Erf" in ops and "Erfc" not in ops


def test_dropout_draws_16_bits_keeps_the_expectation_and_its_seed():
    """`zoo.layers.dropout.Dropout`: drops `rate` of the elements (to 1e-3
    over 1.6M), scales kept ones so the mean is kept, is the identity at
    inference, reproduces from its seed, draws from the 32-bit Philox ints
    (not floats), and falls back to Keras's dropout for `noise_shape` and odd
    widths."""
    import tensorflow as tf

    from zoo.layers.dropout import Dropout

    x = tf.ones((16, 4, 128, 196))
    layer = Dropout(0.1, seed=7)
    y = np.asarray(layer(x, training=True))
    kept = y != 0
    assert abs(1 - kept.mean() - 0.1) < 1e-3
    np.testing.assert_allclose(y[kept], 65536 / (65536 - 6554), rtol=1e-6)
    assert abs(y.mean() - 1) < 3e-3
    assert not np.array_equal(
        y, np.asarray(layer(x, training=True))
    )  # a new mask each call
    np.testing.assert_array_equal(y, np.asarray(Dropout(0.1, seed=7)(x, training=True)))
    np.testing.assert_array_equal(np.asarray(layer(x)), np.asarray(x))
    graph = (
        tf.function(lambda t: layer(t, training=True))
        .get_concrete_function(tf.TensorSpec(x.shape))
        .graph
    )
    types = {op.type for op in graph.get_operations()}
    assert (
        "StatelessRandomUniformFullIntV2" in types
        and "StatelessRandomUniformV2" not in types
    )
    odd = Dropout(0.5, seed=1)(tf.ones((64, 33)), training=True)
    assert set(np.unique(np.asarray(odd))) == {0.0, 2.0}
    shared = np.asarray(
        Dropout(0.5, noise_shape=(64, 1), seed=1)(tf.ones((64, 8)), training=True)
    )
    assert (shared == shared[:, :1]).all()
    assert (
        keras.saving.deserialize_keras_object(
            keras.saving.serialize_keras_object(layer)
        ).rate
        == 0.1
    )
