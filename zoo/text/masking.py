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
"""

from __future__ import annotations

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

    special = tf.reduce_any(
        token_ids[:, :, None] == tf.constant(list(special_ids), tf.int32)[None, None, :],
        axis=-1,
    )
    selectable = tf.logical_and(padding_mask > 0, tf.logical_not(special))
    num_selectable = tf.reduce_sum(tf.cast(selectable, tf.float32), axis=1)
    num_to_select = tf.cast(tf.round(num_selectable * selection_rate), tf.int32)
    num_to_select = tf.minimum(
        tf.maximum(num_to_select, tf.cast(num_selectable > 0, tf.int32)), max_predictions
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
        whole = tf.math.unsorted_segment_min(tf.cast(chosen, tf.int32), flat_word, batch * seq)
        chosen = tf.reshape(tf.gather(whole, flat_word), [batch, seq]) > 0
    chosen = tf.logical_and(chosen, selectable)

    action = tf.random.stateless_uniform([batch, seq], action_seed)
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
    }


def continuation_table(vocabulary, suffix_indicator="##"):
    """bool per id: True for word pieces that continue a word (`##ing`)."""
    return tf.constant([t.startswith(suffix_indicator) for t in vocabulary], tf.bool)
