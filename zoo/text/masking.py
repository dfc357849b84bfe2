"""Masked-language-model masking as vectorised, stateless TensorFlow ops.

BERT's recipe: choose 15% of the non-special tokens of each sequence
(`round(0.15 * n)`, at least one, at most `max_predictions`); of the chosen,
80% become `[MASK]`, 10% a random token, 10% stay as they are. The model
predicts the original ids at `masked_positions`.

Why not `tensorflow_text.mask_language_model`: its `RandomItemSelector`
takes `ceil(rate * n)` items per row, which over-selects (about 16% on
sentence pairs of ~60 tokens instead of 15%), it shuffles row by row in a
`map_fn`, and it draws from stateful random ops, so the same seed does not
give the same masks in a fresh process. Here everything is a batched op on
dense `[batch, seq]` tensors with stateless randomness from an explicit seed:
the same seed gives the same masks, and a new seed per batch and epoch
(see `pretraining.py`) gives dynamic masking.

`mask_spans` is SpanBERT's variant (Joshi et al. 2020, section 3.1): whole-word
spans of Geometric(0.2) length clipped at 10 words, 15% budget, 80/10/10
decided per span, and the span boundaries the span-boundary objective reads.
"""

from __future__ import annotations

import typing

import tensorflow as tf


def _rank_within_rows(scores):
    """rank[b, t] = position of token t when row b is sorted by score (stable)."""
    order = tf.argsort(scores, axis=1, stable=True)
    return tf.argsort(order, axis=1, stable=True)


def mask_tokens(
    token_ids,
    padding_mask,
    seed,
    *,
    vocabulary_size,
    mask_id,
    special_ids,
    max_predictions,
    selection_rate=0.15,
    mask_token_rate=0.8,
    random_token_rate=0.1,
    continuation=None,
):
    """Mask a dense batch for MLM.

    Args:
        token_ids: int32 `[batch, seq]`, packed (`[CLS] A [SEP] ...`) and padded.
        padding_mask: int32 `[batch, seq]`, 1 for real tokens.
        seed: int32/int64 `[2]`, the stateless seed for this batch.
        vocabulary_size, mask_id: the vocabulary's size and `[MASK]` id.
        special_ids: ids that are never selected (`[CLS]`, `[SEP]`, `[PAD]`, ...).
        max_predictions: fixed width of the outputs (BERT: 20 for 128 tokens).
        continuation: optional bool `[vocabulary_size]` table, True for
            `##` pieces. When given, masking is whole-word: a word is selected
            with all of its pieces or not at all.

    Returns a dict: `token_ids` (masked input), `masked_positions`,
    `masked_ids` (the original ids there) int32 `[batch, max_predictions]` and
    `masked_weights` float32 (1 for a real prediction, 0 for padding).
    """
    token_ids = tf.convert_to_tensor(token_ids, tf.int32)
    padding_mask = tf.convert_to_tensor(padding_mask, tf.int32)
    seed = tf.cast(seed, tf.int64)
    batch, seq = tf.shape(token_ids)[0], tf.shape(token_ids)[1]
    select_seed, action_seed, random_seed = tf.unstack(
        tf.random.experimental.stateless_split(seed, 3)
    )

    selectable, num_to_select = _selectable_and_budget(
        token_ids, padding_mask, special_ids, selection_rate, max_predictions
    )

    scores = tf.random.stateless_uniform([batch, seq], select_seed)
    positions = tf.broadcast_to(tf.range(seq)[None, :], [batch, seq])
    if continuation is not None:
        # Every piece of a word takes the score of the word's first piece, so
        # a word's pieces sort together; a word is kept only if all of its
        # pieces fall inside the budget.
        is_piece = tf.gather(tf.convert_to_tensor(continuation, tf.bool), token_ids)
        starts = tf.logical_or(tf.logical_not(is_piece), tf.logical_not(selectable))
        word = tf.cumsum(tf.cast(starts, tf.int32), axis=1) - 1
        flat_word = word + seq * tf.range(batch)[:, None]
        first = tf.math.unsorted_segment_min(positions, flat_word, batch * seq)
        first_of_token = tf.reshape(tf.gather(first, flat_word), [batch, seq])
        scores = tf.gather(scores, first_of_token, batch_dims=1)
    scores = tf.where(selectable, scores, 2.0)  # unselectable sort last
    chosen = _rank_within_rows(scores) < num_to_select[:, None]
    if continuation is not None:
        whole = tf.math.unsorted_segment_min(
            tf.cast(chosen, tf.int32), flat_word, batch * seq
        )
        chosen = tf.reshape(tf.gather(whole, flat_word), [batch, seq]) > 0
    chosen = tf.logical_and(chosen, selectable)

    action = tf.random.stateless_uniform([batch, seq], action_seed)
    out = _replace_and_gather(
        token_ids,
        chosen,
        action,
        random_seed,
        vocabulary_size=vocabulary_size,
        mask_id=mask_id,
        special_ids=special_ids,
        max_predictions=max_predictions,
        mask_token_rate=mask_token_rate,
        random_token_rate=random_token_rate,
    )
    return {
        k: out[k] for k in ("token_ids", "masked_positions", "masked_ids", "masked_weights")
    }


def _selectable_and_budget(
    token_ids, padding_mask, special_ids, selection_rate, max_predictions
):
    """(selectable, budget): the real, non-special tokens (bool `[batch,
    seq]`) and how many of them each row masks: `round(selection_rate * n)`,
    at least one when there is one, at most `max_predictions`."""
    special = tf.reduce_any(
        token_ids[:, :, None] == tf.constant(list(special_ids), tf.int32)[None, None, :],
        axis=-1,
    )
    selectable = tf.logical_and(padding_mask > 0, tf.logical_not(special))
    num_selectable = tf.reduce_sum(tf.cast(selectable, tf.float32), axis=1)
    budget = tf.cast(tf.round(num_selectable * selection_rate), tf.int32)
    budget = tf.minimum(
        tf.maximum(budget, tf.cast(num_selectable > 0, tf.int32)), max_predictions
    )
    return selectable, budget


def _replace_and_gather(
    token_ids,
    chosen,
    action,
    random_seed,
    *,
    vocabulary_size,
    mask_id,
    special_ids,
    max_predictions,
    mask_token_rate,
    random_token_rate,
):
    """80/10/10 on the `chosen` tokens (`action` uniform per token: below
    `mask_token_rate` -> [MASK], then a random non-special id, else kept),
    and the chosen positions gathered into fixed-width outputs."""
    batch, seq = tf.shape(token_ids)[0], tf.shape(token_ids)[1]
    positions = tf.broadcast_to(tf.range(seq)[None, :], [batch, seq])
    random_ids = tf.random.stateless_uniform(
        [batch, seq], random_seed, minval=0, maxval=vocabulary_size, dtype=tf.int32
    )
    random_is_special = tf.reduce_any(
        random_ids[:, :, None] == tf.constant(list(special_ids), tf.int32)[None, None, :],
        axis=-1,
    )
    replacement = tf.where(
        action < mask_token_rate,
        tf.fill([batch, seq], tf.constant(mask_id, tf.int32)),
        tf.where(
            tf.logical_and(
                action < mask_token_rate + random_token_rate,
                tf.logical_not(random_is_special),
            ),
            random_ids,
            token_ids,
        ),
    )
    masked = tf.where(chosen, replacement, token_ids)

    # Chosen positions first, in order; then padding slots.
    order_key = tf.where(chosen, positions, positions + seq)
    picked = tf.argsort(order_key, axis=1, stable=True)[:, :max_predictions]
    width = tf.shape(picked)[1]
    count = tf.reduce_sum(tf.cast(chosen, tf.int32), axis=1)
    weights = tf.range(width)[None, :] < count[:, None]
    masked_positions = tf.where(weights, tf.cast(picked, tf.int32), 0)
    masked_ids = tf.where(weights, tf.gather(token_ids, masked_positions, batch_dims=1), 0)
    pad = max_predictions - width  # only when seq < max_predictions
    paddings = [[0, 0], [0, pad]]
    return {
        "token_ids": masked,
        "masked_positions": tf.pad(masked_positions, paddings),
        "masked_ids": tf.pad(masked_ids, paddings),
        "masked_weights": tf.pad(tf.cast(weights, tf.float32), paddings),
        "weights": weights,
        "paddings": paddings,
    }


def truncated_geometric_mean(p=0.2, max_length=10):
    """Mean of Geometric(p) on 1..max_length, renormalised (SpanBERT: 3.8)."""
    q = 1.0 - p
    return sum(k * p * q ** (k - 1) for k in range(1, max_length + 1)) / (1 - q**max_length)


def span_lengths(shape, seed, p=0.2, max_length=10):
    """int32 draws from Geometric(p) truncated to 1..max_length, by the
    inverse CDF P(L <= k) = (1 - q^k) / (1 - q^max_length), q = 1 - p."""
    q = 1.0 - p
    u = tf.random.stateless_uniform(shape, tf.cast(seed, tf.int64))
    lengths = tf.math.ceil(tf.math.log1p(-u * (1.0 - q**max_length)) / tf.math.log(q))
    return tf.clip_by_value(tf.cast(lengths, tf.int32), 1, max_length)


def mask_spans(
    token_ids,
    padding_mask,
    seed,
    *,
    vocabulary_size,
    mask_id,
    special_ids,
    max_predictions,
    continuation,
    selection_rate=0.15,
    mask_token_rate=0.8,
    random_token_rate=0.1,
    geometric_p=0.2,
    max_span_length=10,
    num_candidates=None,
):
    """SpanBERT's span masking on a dense batch.

    A span is a run of whole words: its length in words is drawn from
    Geometric(`geometric_p`) truncated to `max_span_length` (mean 3.8 for
    0.2 and 10, `truncated_geometric_mean`), its first word uniformly from
    the row's words. Spans never include a special or padding token and
    never cross one (a span reaching the end of its segment is cut there),
    never overlap an earlier span (such a draw is dropped), and stop at the
    budget, `round(selection_rate * n)` tokens as in `mask_tokens`: a span
    that would pass it keeps only the whole words that fit. Up to
    `num_candidates` (default 2 x `max_predictions`) spans are drawn per
    row, each a vectorised step over the batch. 80/10/10 is decided per
    span: all of a span's tokens become [MASK], or all random, or all stay.

    `continuation` is `continuation_table(vocabulary)` (word pieces).

    Returns `mask_tokens`'s dict plus, per masked position, the positions
    just outside its span: `span_left_positions` (x_{s-1}) and
    `span_right_positions` (x_{e+1}), int32 `[batch, max_predictions]`
    (0 in padding slots), which the span-boundary objective reads.
    """
    token_ids = tf.convert_to_tensor(token_ids, tf.int32)
    padding_mask = tf.convert_to_tensor(padding_mask, tf.int32)
    seed = tf.cast(seed, tf.int64)
    k_max = int(num_candidates or 2 * max_predictions)
    span_seed, action_seed, random_seed = tf.unstack(
        tf.random.experimental.stateless_split(seed, 3)
    )
    selectable, budget = _selectable_and_budget(
        token_ids, padding_mask, special_ids, selection_rate, max_predictions
    )
    words = _word_tables(token_ids, selectable, continuation)
    chosen, span_of, span_left, span_right = _draw_spans(
        words, budget, span_seed, k_max, geometric_p, max_span_length
    )

    # 80/10/10 per span: every token of a span takes its span's draw.
    batch = tf.shape(token_ids)[0]
    span_action = tf.random.stateless_uniform([batch, k_max], action_seed)
    action = tf.gather(span_action, tf.maximum(span_of, 0), batch_dims=1)
    out = _replace_and_gather(
        token_ids,
        chosen,
        action,
        random_seed,
        vocabulary_size=vocabulary_size,
        mask_id=mask_id,
        special_ids=special_ids,
        max_predictions=max_predictions,
        mask_token_rate=mask_token_rate,
        random_token_rate=random_token_rate,
    )
    return _with_span_boundaries(out, span_of, span_left, span_right)


class _Words(typing.NamedTuple):
    """Per-word tables of a batch, `[batch, seq]` (a row has at most `seq`
    words; entries past a row's `num_words` are unused)."""

    first_pos: tf.Tensor  # the word's first token position
    last_pos: tf.Tensor  # its last token position
    word_limit: tf.Tensor  # the last word of its segment: a span ends there
    num_words: tf.Tensor  # [batch]: words per row
    positions: tf.Tensor  # [batch, seq]: each token's position


def _word_tables(token_ids, selectable, continuation):
    """The words of each row: a selectable token that is not a `##` piece,
    or that follows a special token, starts one. Segments are the runs
    between special tokens."""
    batch, seq = tf.shape(token_ids)[0], tf.shape(token_ids)[1]
    positions = tf.broadcast_to(tf.range(seq)[None, :], [batch, seq])
    rows = tf.range(batch)[:, None]
    # Per-word tables are filled through flat segment ids; unselectable
    # tokens go to one extra, discarded segment.
    is_piece = tf.gather(tf.convert_to_tensor(continuation, tf.bool), token_ids)
    previous = tf.pad(selectable[:, :-1], [[0, 0], [1, 0]])
    starts = tf.logical_and(
        selectable, tf.logical_or(tf.logical_not(is_piece), tf.logical_not(previous))
    )
    word = tf.cumsum(tf.cast(starts, tf.int32), axis=1) - 1
    num_words = tf.reduce_sum(tf.cast(starts, tf.int32), axis=1)
    dump = batch * seq
    flat_word = tf.where(selectable, word + seq * rows, dump)
    first_pos = tf.reshape(
        tf.math.unsorted_segment_min(positions, flat_word, dump + 1)[:-1], [batch, seq]
    )
    last_pos = tf.reshape(
        tf.math.unsorted_segment_max(positions, flat_word, dump + 1)[:-1], [batch, seq]
    )
    # Segments: runs between special tokens; a span ends at its segment's
    # last word.
    segment = tf.cumsum(tf.cast(tf.logical_not(selectable), tf.int32), axis=1)
    word_segment = tf.reshape(
        tf.math.unsorted_segment_max(segment, flat_word, dump + 1)[:-1], [batch, seq]
    )
    seg_dump = batch * (seq + 1)
    flat_segment = tf.where(selectable, segment + (seq + 1) * rows, seg_dump)
    segment_last_word = tf.reshape(
        tf.math.unsorted_segment_max(word, flat_segment, seg_dump + 1)[:-1],
        [batch, seq + 1],
    )
    word_limit = tf.gather(
        segment_last_word, tf.clip_by_value(word_segment, 0, seq), batch_dims=1
    )
    return _Words(first_pos, last_pos, word_limit, num_words, positions)


def _draw_spans(words, budget, span_seed, k_max, geometric_p, max_span_length):
    """Draw `k_max` candidate spans per row, one vectorised step over the
    batch each, keeping those that fit (`mask_spans`'s rules). Returns
    `chosen` (bool per token), `span_of` (the span index per token, -1
    outside spans) and each candidate's `span_left` / `span_right`
    positions `[batch, k_max]`."""
    positions = words.positions
    batch, seq = tf.shape(positions)[0], tf.shape(positions)[1]
    start_seed, length_seed = tf.unstack(
        tf.random.experimental.stateless_split(span_seed, 2)
    )
    lengths = span_lengths([k_max, batch], length_seed, geometric_p, max_span_length)
    draws = tf.random.stateless_uniform([k_max, batch], start_seed)
    first_words = tf.minimum(
        tf.cast(draws * tf.cast(words.num_words, tf.float32), tf.int32),
        tf.maximum(words.num_words - 1, 0),
    )
    word_index = tf.range(seq)[None, :]
    chosen = tf.zeros([batch, seq], tf.bool)
    span_of = tf.fill([batch, seq], -1)
    count = tf.zeros([batch], tf.int32)
    lefts, rights = [], []
    for k in range(k_max):
        w = first_words[k]  # [B]
        last = tf.minimum(
            w + lengths[k] - 1, tf.gather(words.word_limit, w[:, None], batch_dims=1)[:, 0]
        )
        begin = tf.gather(words.first_pos, w[:, None], batch_dims=1)[:, 0]
        room = budget - count
        # The longest run of whole words from w, up to `last`, within the room.
        fits = (
            (word_index >= w[:, None])
            & (word_index <= last[:, None])
            & (words.last_pos - begin[:, None] + 1 <= room[:, None])
        )
        end_word = tf.reduce_max(tf.where(fits, word_index, -1), axis=1)
        end = tf.gather(words.last_pos, tf.maximum(end_word, 0)[:, None], batch_dims=1)[
            :, 0
        ]
        inside = (positions >= begin[:, None]) & (positions <= end[:, None])
        ok = (
            (end_word >= 0)
            & (words.num_words > 0)
            & tf.logical_not(tf.reduce_any(inside & chosen, axis=1))
        )
        take = inside & ok[:, None]
        chosen = chosen | take
        span_of = tf.where(take, k, span_of)
        count = count + tf.reduce_sum(tf.cast(take, tf.int32), axis=1)
        lefts.append(begin - 1)
        rights.append(end + 1)
    return chosen, span_of, tf.stack(lefts, axis=1), tf.stack(rights, axis=1)


def _with_span_boundaries(out, span_of, span_left, span_right):
    """`_replace_and_gather`'s outputs plus, per masked position, the
    positions just outside its span (0 in padding slots)."""
    weights = out["weights"]
    width = tf.shape(weights)[1]
    masked_span = tf.gather(
        tf.maximum(span_of, 0), out["masked_positions"][:, :width], batch_dims=1
    )
    left = tf.where(weights, tf.gather(span_left, masked_span, batch_dims=1), 0)
    right = tf.where(weights, tf.gather(span_right, masked_span, batch_dims=1), 0)
    result = {
        k: out[k] for k in ("token_ids", "masked_positions", "masked_ids", "masked_weights")
    }
    result["span_left_positions"] = tf.pad(left, out["paddings"])
    result["span_right_positions"] = tf.pad(right, out["paddings"])
    return result


def continuation_table(vocabulary, suffix_indicator="##"):
    """bool per id: True for word pieces that continue a word (`##ing`)."""
    return tf.constant([t.startswith(suffix_indicator) for t in vocabulary], tf.bool)
