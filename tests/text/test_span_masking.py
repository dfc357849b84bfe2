"""SpanBERT span masking (`zoo.text.masking.mask_spans`) on synthetic ids:
the length sampler against the truncated geometric distribution, whole
words, no special token, spans inside their segment, boundaries, 80/10/10
per span, determinism. The 10,000-real-example measurement is in
tests/train/test_pretraining_data.py."""

import numpy as np
import pytest
import tensorflow as tf

from zoo.text.masking import mask_spans, span_lengths, truncated_geometric_mean

PAD, CLS, SEP, MASK = 0, 1, 2, 3
VOCAB = 60  # ids 4..39 start a word, 40..59 continue one ("##")
CONTINUATION = tf.constant([i >= 40 for i in range(VOCAB)])


def _batch(rows=256, seq=64, seed=0):
    """[CLS] A [SEP] B [SEP] [PAD]...: words of 1-3 pieces, two segments."""
    rng = np.random.default_rng(seed)
    ids = np.zeros((rows, seq), np.int32)
    for r in range(rows):
        length = rng.integers(seq // 2, seq + 1)
        ids[r, :length] = np.where(
            rng.random(length) < 0.3,
            rng.integers(40, 60, length),
            rng.integers(4, 40, length),
        )
        ids[r, 0] = CLS
        ids[r, length // 2] = SEP
        ids[r, length - 1] = SEP
    return ids, (ids != PAD).astype(np.int32)


def _mask(ids, mask, seed=(3, 4), max_predictions=12):
    return {
        k: v.numpy()
        for k, v in mask_spans(
            ids,
            mask,
            tf.constant(seed),
            vocabulary_size=VOCAB,
            mask_id=MASK,
            special_ids=[PAD, CLS, SEP, MASK],
            max_predictions=max_predictions,
            continuation=CONTINUATION,
        ).items()
    }


def test_span_lengths_are_truncated_geometric():
    p, top = 0.2, 10
    assert truncated_geometric_mean(p, top) == pytest.approx(3.797, abs=5e-4)
    draws = span_lengths([200_000], tf.constant([1, 2]), p, top).numpy()
    expected = np.array([p * (1 - p) ** (k - 1) for k in range(1, top + 1)])
    expected /= expected.sum()
    observed = np.bincount(draws, minlength=top + 1)[1:] / len(draws)
    assert draws.min() == 1 and draws.max() == top
    np.testing.assert_allclose(observed, expected, atol=0.004)
    assert abs(draws.mean() - 3.797) < 0.02


def test_spans_are_whole_words_inside_a_segment_with_their_boundaries():
    ids, mask = _batch()
    out = _mask(ids, mask)
    real = out["masked_weights"] > 0
    special = np.isin(ids, [PAD, CLS, SEP, MASK])
    budget = np.minimum(np.maximum(np.round((~special).sum(1) * 0.15), 1), 12)
    np.testing.assert_array_equal(real.sum(1), budget)  # whole words still fill it here
    for r in range(len(ids)):
        pos = out["masked_positions"][r][real[r]]
        left = out["span_left_positions"][r][real[r]]
        right = out["span_right_positions"][r][real[r]]
        assert not special[r, pos].any()
        chosen = set(pos.tolist())
        for lo, hi in set(zip(left.tolist(), right.tolist())):
            inside = list(range(lo + 1, hi))
            # Every token strictly between the boundaries is masked, no special.
            assert set(inside) <= chosen and not special[r, inside].any(), (r, lo, hi)
            # Whole words: the span starts at a word and the next token starts one.
            assert ids[r, lo + 1] < 40 or special[r, lo], (r, lo)
            assert ids[r, hi] < 40 or special[r, hi], (r, hi)
            # (a piece right after a special token starts a word)
            words = int((ids[r, inside] < 40).sum()) + int(ids[r, lo + 1] >= 40)
            assert 1 <= words <= 10
        # masked_ids are the originals; outside the chosen positions nothing changed.
        np.testing.assert_array_equal(out["masked_ids"][r][real[r]], ids[r, pos])
        keep = np.ones(ids.shape[1], bool)
        keep[pos] = False
        np.testing.assert_array_equal(out["token_ids"][r][keep], ids[r][keep])


def test_80_10_10_is_decided_per_span_and_the_seed_fixes_the_masks():
    ids, mask = _batch(rows=512, seed=1)
    out = _mask(ids, mask, seed=(7, 7))
    again = _mask(ids, mask, seed=(7, 7))
    other = _mask(ids, mask, seed=(7, 8))
    for key in out:
        np.testing.assert_array_equal(out[key], again[key])
    assert not np.array_equal(out["masked_positions"], other["masked_positions"])
    real = out["masked_weights"] > 0
    rows = np.broadcast_to(np.arange(len(ids))[:, None], real.shape)[real]
    was = out["masked_ids"][real]
    now = out["token_ids"][rows, out["masked_positions"][real]]
    action = np.where(now == MASK, 0, np.where(now != was, 1, 2))
    spans = {}
    for r, lo, a in zip(rows, out["span_left_positions"][real], action):
        spans.setdefault((r, lo), set()).add(a)
    # Random ids may hit the original or a special (then kept): a few mixed spans.
    mixed = sum(len(a) > 1 for a in spans.values())
    assert mixed <= 0.05 * len(spans)
    first = np.array([min(a) for a in spans.values()])
    assert abs(np.mean(first == 0) - 0.8) < 0.04
