import numpy as np

from zoo.distill import losses


def _kl(p_logits, q_logits, T):
    p = np.exp(p_logits / T) / np.exp(p_logits / T).sum(-1, keepdims=True)
    q = np.exp(q_logits / T) / np.exp(q_logits / T).sum(-1, keepdims=True)
    return (p * (np.log(p) - np.log(q))).sum(-1)


def test_soft_term_is_kl_times_t_squared():
    rng = np.random.default_rng(0)
    t, s = rng.normal(size=(4, 5)), rng.normal(size=(4, 5))
    for T in (1.0, 2.0, 4.0):
        got = np.asarray(
            losses.soft_target_loss(t.astype("float32"), s.astype("float32"), T)
        )
        np.testing.assert_allclose(got, T**2 * _kl(t, s, T), rtol=1e-4)


def test_soft_term_magnitude_does_not_shrink_with_t():
    # KL of T-softened distributions falls like 1/T²; times T² it tends to a
    # constant (half the variance of the logit difference), so the soft term
    # keeps its weight against the hard loss at any temperature.
    rng = np.random.default_rng(1)
    t, s = (
        rng.normal(size=(8, 6)).astype("float32"),
        rng.normal(size=(8, 6)).astype("float32"),
    )
    at = {T: float(np.mean(losses.soft_target_loss(t, s, T))) for T in (8.0, 16.0, 32.0)}
    raw = {T: at[T] / T**2 for T in at}
    assert raw[8.0] / raw[16.0] > 3.5  # without T², ~4x smaller per doubling
    np.testing.assert_allclose(at[16.0], at[32.0], rtol=0.02)
    np.testing.assert_allclose(at[8.0], at[16.0], rtol=0.08)


def test_padding_and_unmasked_positions_contribute_nothing():
    rng = np.random.default_rng(2)
    t = rng.normal(size=(2, 5, 7)).astype("float32")
    s = rng.normal(size=(2, 5, 7)).astype("float32")
    mask = np.array([[1, 1, 1, 0, 0], [1, 0, 1, 0, 1]], "int32")
    noisy_t, noisy_s = t.copy(), s.copy()
    noisy_t[mask == 0] += 50 * rng.normal(size=noisy_t[mask == 0].shape)
    noisy_s[mask == 0] -= 50
    for fn in (
        lambda a, b: losses.soft_target_loss(a, b, 2.0, mask),
        lambda a, b: losses.cosine_loss(a, b, mask),
        lambda a, b: losses.hidden_mse_loss(a, b, mask),
    ):
        np.testing.assert_allclose(fn(t, s), fn(noisy_t, noisy_s), rtol=1e-6)
    # Only the selected positions count: equal to the loss over them alone.
    per_token = _kl(t, s, 2.0) * 4.0
    expected = [(per_token[i] * mask[i]).sum() / mask[i].sum() for i in range(2)]
    np.testing.assert_allclose(
        losses.soft_target_loss(t, s, 2.0, mask), expected, rtol=1e-4
    )
    labels = rng.integers(0, 7, size=(2, 5))
    hard = losses.hard_loss(labels, s, mask)
    np.testing.assert_allclose(hard, losses.hard_loss(labels, noisy_s, mask), rtol=1e-6)


def test_cosine_attention_and_identical_inputs():
    rng = np.random.default_rng(3)
    h = rng.normal(size=(2, 4, 6)).astype("float32")
    mask = np.array([[1, 1, 0, 0], [1, 1, 1, 1]], "int32")
    np.testing.assert_allclose(losses.cosine_loss(h, h, mask), 0.0, atol=1e-6)
    np.testing.assert_allclose(losses.cosine_loss(h, -h, mask), 2.0, atol=1e-6)
    logits = rng.normal(size=(2, 3, 4, 4))
    probs = (np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)).astype("float32")
    np.testing.assert_allclose(losses.attention_kl_loss(probs, probs, mask), 0.0, atol=1e-5)
    other = probs[:, ::-1]
    assert np.all(np.asarray(losses.attention_kl_loss(probs, other, mask)) > 0)
    # Different head counts: compared head-averaged.
    assert losses.attention_kl_loss(probs, probs[:, :1], mask).shape == (2,)
    assert losses.transfer_layer_pairs([0, 2, 4]) == [(0, 0), (1, 1), (3, 2), (5, 3)]


def test_hard_loss_of_an_example_without_a_label_is_zero():
    """`zoo distill --unlabelled` marks a text without a label -1: its hard
    loss is 0 and its logits get no gradient from it; a labelled text's is
    the cross-entropy, as before."""
    import tensorflow as tf

    rng = np.random.default_rng(4)
    s = tf.constant(rng.normal(size=(3, 4)).astype("float32"))
    labels = np.array([2, -1, 0])
    with tf.GradientTape() as tape:
        tape.watch(s)
        hard = losses.hard_loss(labels, s)
        total = tf.reduce_sum(hard)
    log_p = s.numpy() - np.log(np.exp(s.numpy()).sum(-1, keepdims=True))
    np.testing.assert_allclose(hard, [-log_p[0, 2], 0.0, -log_p[2, 0]], rtol=1e-5)
    grad = tape.gradient(total, s).numpy()
    assert not grad[1].any() and grad[0].any() and grad[2].any()
