"""The distiller's contract, on tiny models run eagerly (tracing a
functional BERT costs more than the steps on a loaded CPU)."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import zoo
from tests.helpers import TINY, tiny_batch
from zoo.distill import Distiller, make_student

Y = {"logits": np.array([0, 1, 2, 1], "int32")}


def _pair(seed=7, dropout=0.1):
    keras.utils.set_random_seed(seed)
    teacher = zoo.Classifier(
        zoo.BertEncoder(**dict(TINY, num_layers=4, dropout=dropout)), 3, dropout=dropout
    )
    return teacher, make_student(teacher, 2)


def _weights(model):
    return [np.array(w) for w in model.get_weights()]


def test_teacher_bit_identical_and_terms_reported():
    teacher, student = _pair()
    before, student_before = _weights(teacher), _weights(student)
    d = Distiller(teacher, student, hidden_weight=1.0, attention_weight=1.0)
    d.compile(optimizer=keras.optimizers.Adam(1e-2), run_eagerly=True)
    history = d.fit(tiny_batch(batch=4), Y, batch_size=2, epochs=1, verbose=0).history
    assert set(history) == {
        "loss",
        "soft_loss",
        "hard_loss",
        "cosine_loss",
        "hidden_loss",
        "attention_loss",
    }
    assert all(np.isfinite(v[0]) for v in history.values())
    for a, b in zip(before, _weights(teacher)):
        assert np.array_equal(a, b)
    assert any(not np.array_equal(a, b) for a, b in zip(student_before, _weights(student)))
    assert d.student is student
    assert "loss" in d.evaluate(tiny_batch(batch=4), Y, verbose=0, return_dict=True)


def test_soft_weight_zero_equals_plain_student_training():
    x = tiny_batch(batch=4)
    _, student = _pair()
    d = Distiller(_pair()[0], student, soft_weight=0.0, hard_weight=1.0, cosine_weight=0.0)
    d.compile(optimizer=keras.optimizers.SGD(0.1), run_eagerly=True)
    d.fit(x, Y, batch_size=2, epochs=1, shuffle=False, verbose=0)

    _, plain = _pair()
    plain.compile(
        optimizer=keras.optimizers.SGD(0.1),
        run_eagerly=True,
        loss={"logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True)},
    )
    plain.fit(x, Y, batch_size=2, epochs=1, shuffle=False, verbose=0)
    for a, b in zip(_weights(student), _weights(plain)):
        np.testing.assert_allclose(a, b, atol=1e-6)


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
def test_finite_under_mixed_precision(policy):
    keras.config.set_dtype_policy(policy)
    teacher, student = _pair()
    assert student.encoder.compute_dtype == policy.split("_")[1]
    d = Distiller(teacher, student, hidden_weight=1.0, attention_weight=1.0)
    d.compile(optimizer=keras.optimizers.Adam(1e-3), run_eagerly=True)
    history = d.fit(tiny_batch(batch=4), Y, batch_size=4, epochs=1, verbose=0).history
    assert all(np.isfinite(v[0]) for v in history.values()), history


def test_mirrored_strategy_matches_single_device():
    x = tiny_batch(batch=4)

    def run(strategy):
        with strategy.scope():
            teacher, student = _pair(dropout=0.0)
            d = Distiller(teacher, student)
            d.compile(optimizer=keras.optimizers.SGD(0.1), run_eagerly=True)
        history = d.fit(x, Y, batch_size=4, epochs=1, shuffle=False, verbose=0).history
        return history["loss"][0], _weights(student)

    loss, weights = run(tf.distribute.MirroredStrategy())
    ref_loss, ref_weights = run(tf.distribute.get_strategy())
    assert np.isfinite(loss)
    np.testing.assert_allclose(loss, ref_loss, rtol=1e-6)
    for a, b in zip(weights, ref_weights):
        np.testing.assert_allclose(a, b, atol=1e-6)


def test_general_mode_mlm_soft_term_only_at_masked_positions():
    keras.utils.set_random_seed(5)
    teacher = zoo.MaskedLM(zoo.BertEncoder(**dict(TINY, num_layers=2)))
    student = make_student(teacher, 1)
    d = Distiller(teacher, student, cosine_weight=0.0)
    x = tiny_batch(batch=2, masked=3)
    y = {"mlm_logits": np.array([[5, 6, 7], [8, 9, 10]], "int32")}
    weights = np.array([[1, 1, 0], [1, 0, 0]], "float32")
    t_out, s_out = teacher(x), student(x)

    def terms(positions):
        xx = dict(x, masked_positions=positions)
        return d._terms(xx, y, {"mlm_logits": weights}, teacher(xx), student(xx))

    base = terms(x["masked_positions"])
    moved = x["masked_positions"].copy()
    moved[weights == 0] = 0  # unweighted slots point elsewhere: no change
    for k, v in terms(moved).items():
        np.testing.assert_allclose(v, base[k], rtol=1e-6)
    assert t_out["mlm_logits"].shape == s_out["mlm_logits"].shape == (2, 3, 30)


def test_cached_teacher_outputs_give_the_same_run():
    x = tiny_batch(batch=4)
    ds = tf.data.Dataset.from_tensor_slices((x, Y)).batch(2)
    runs = []
    for cached in (False, True):
        teacher, student = _pair(dropout=0.0)
        d = Distiller(teacher, student, hidden_weight=1.0, attention_weight=1.0)
        d.compile(optimizer=keras.optimizers.SGD(0.1), run_eagerly=True)
        data = d.cache_teacher(ds) if cached else ds
        history = d.fit(data, epochs=2, verbose=0).history
        runs.append((history, _weights(student)))
    (h0, w0), (h1, w1) = runs
    for k in h0:
        np.testing.assert_allclose(h0[k], h1[k], rtol=1e-6, err_msg=k)
    for a, b in zip(w0, w1):
        np.testing.assert_allclose(a, b, atol=1e-6)
    # The cache holds what the weighted terms read, nothing else.
    keys = {k for k in d.cache_teacher(ds).element_spec[0] if k.startswith("teacher/")}
    assert keys == {
        "teacher/logits",
        "teacher/sequence_output",
        *(f"teacher/hidden_states/{i}" for i in range(5)),
        *(f"teacher/attention_probs/{i}" for i in range(4)),
    }
    plain = Distiller(*_pair(dropout=0.0), cosine_weight=0.0)
    assert {
        k for k in plain.cache_teacher(ds).element_spec[0] if k.startswith("teacher/")
    } == {"teacher/logits"}


def test_cache_runs_the_teacher_as_one_traced_graph_unless_eager():
    """Compiled without `run_eagerly`, `cache_teacher` runs the teacher in a
    `tf.function` (graph rewrites apply, as to the live teacher in `fit`):
    the same outputs as the eager pass to float rounding."""
    ds = tf.data.Dataset.from_tensor_slices((tiny_batch(batch=4), Y)).batch(3)  # 3, then 1
    caches = []
    for eager in (True, False):
        d = Distiller(*_pair(dropout=0.0), hidden_weight=1.0)
        d.compile(optimizer=keras.optimizers.SGD(0.1), run_eagerly=eager)
        caches.append(next(iter(d.cache_teacher(ds).unbatch().batch(4)))[0])
    for k, v in caches[0].items():
        np.testing.assert_allclose(caches[1][k], v, atol=1e-5, err_msg=k)


def test_shuffled_cache_is_a_permutation_each_epoch_with_outputs_aligned():
    """With `shuffle_seed` the cache reshuffles positions every epoch: each
    epoch holds every example once, each with its own teacher outputs, and
    the same seed gives the same order."""
    x = tiny_batch(batch=8, seq=6)
    labels = {"logits": np.arange(8, dtype="int32") % 3}
    ds = tf.data.Dataset.from_tensor_slices((x, labels)).batch(4)
    d = Distiller(*_pair(dropout=0.0), hidden_weight=1.0)
    d.compile(optimizer=keras.optimizers.SGD(0.1), run_eagerly=True)
    plain = next(iter(d.cache_teacher(ds).unbatch().batch(8)))[0]
    by_row = {tuple(plain["token_ids"][i].numpy()): i for i in range(8)}
    assert len(by_row) == 8  # distinct rows: an order is recoverable
    orders = []
    for _ in range(2):
        shuffled = d.cache_teacher(ds, shuffle_seed=5)
        assert shuffled.element_spec == d.cache_teacher(ds).element_spec
        for _epoch in range(2):
            order = []
            for bx, by in shuffled:
                assert bx["token_ids"].shape[0] == 4
                for i in range(4):
                    row = by_row[tuple(bx["token_ids"][i].numpy())]
                    order.append(row)
                    for k, v in bx.items():
                        np.testing.assert_array_equal(v[i], plain[k][row], err_msg=k)
                    assert by["logits"][i] == labels["logits"][row]
            assert sorted(order) == list(range(8))
            orders.append(order)
    assert orders[:2] == orders[2:]  # the same seed, the same epochs
    assert orders[0] != list(range(8))


def test_a_taggers_hard_term_counts_only_its_weighted_pieces():
    """As in fine-tuning, a tagger's labels count where the sample weight is
    non-zero (each word's first piece): a label under weight 0 ([CLS],
    [SEP], a word's later pieces, an unlabelled text) changes nothing, and
    a row with no weight at all adds 0 to the batch."""
    keras.utils.set_random_seed(5)
    teacher = zoo.TokenClassifier(zoo.BertEncoder(**dict(TINY, num_layers=4)), 4)
    student = make_student(teacher, 2)
    d = Distiller(teacher, student, soft_weight=0.0, hard_weight=1.0, cosine_weight=0.0)
    d.compile(optimizer=keras.optimizers.SGD(0.0), run_eagerly=True)
    x = tiny_batch(batch=4)
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 4, size=x["token_ids"].shape).astype("int32")
    weights = (rng.random(labels.shape) < 0.5) * x["padding_mask"]
    weights[3] = 0  # an unlabelled text
    weights = weights.astype("float32")

    def loss(y):
        return d.evaluate(x, {"logits": y}, sample_weight={"logits": weights},
                          batch_size=4, verbose=0, return_dict=True)["loss"]  # fmt: skip

    other = np.where(weights > 0, labels, (labels + 1) % 4)
    assert loss(other) == pytest.approx(loss(labels), abs=1e-6)
    logits = np.asarray(student(x, training=False)["logits"], "float64")
    logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    ce = -np.take_along_axis(logp, labels[..., None], -1)[..., 0]
    per_row = (ce * weights).sum(1) / np.maximum(weights.sum(1), 1)
    assert per_row[3] == 0.0
    assert loss(labels) == pytest.approx(per_row.mean(), rel=1e-5)
