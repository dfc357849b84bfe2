"""Masked views of the training texts for task distillation.

A small labelled set gives the student few chances to see how the teacher
behaves. Each training batch is followed by `copies` views of itself with
`rate` of the real word pieces of every text replaced by `[MASK]`, drawn
afresh each epoch; the teacher reads the same masked view, so the student
learns the teacher's outputs on texts nobody labelled. This is the masking
augmentation of Tang et al. 2019 ("Distilling task-specific knowledge from
BERT into simple neural networks"), in the place TinyBERT's augmentation has
(Jiao et al. 2020): a larger transfer set for the task distillation.

The masks come from `zoo.text.masking.mask_tokens` (stateless, special
tokens never chosen), seeded by the run's seed, the epoch and the batch's
index, so a resumed epoch sees the same views.
"""

from __future__ import annotations

import tensorflow as tf

from zoo.text.masking import mask_tokens

# Index arithmetic for the per-batch seed: batches per epoch stay far below it.
_EPOCH_STRIDE = 1 << 24


def check_augmentation(copies, rate):
    """Refuse --augment-copies / --augment-rate values that are not numbers
    in range, naming the flag and the value."""
    if isinstance(copies, bool) or not isinstance(copies, int) or not 0 <= copies <= 16:
        raise ValueError(
            f"--augment-copies must be an integer from 0 to 16; received {copies!r}."
        )
    if (
        isinstance(rate, bool)
        or not isinstance(rate, (int, float))
        or not 0.0 < float(rate) < 1.0
    ):
        raise ValueError(
            f"--augment-rate must be a number between 0 and 1 (exclusive); received {rate!r}."
        )


def masked_views(train, tokenizer, *, copies, rate, seed, epoch_variable, sequence_length):
    """`train`'s batches, each followed by `copies` masked views of it (same
    labels and padding; `token_ids` masked). `copies` 0 returns `train`."""
    if not copies:
        return train
    mask_id = getattr(tokenizer, "mask_id", None)
    if mask_id is None:
        raise ValueError(
            "--augment-copies needs a tokenizer with a [MASK] token; this one has "
            "none. Use --augment-copies 0."
        )
    specials = [tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id, mask_id]

    def views(index, batch):
        x, y = batch
        epoch = tf.cast(epoch_variable.read_value(), tf.int64)
        base = tf.stack([tf.constant(seed, tf.int64), epoch * _EPOCH_STRIDE + index])
        seeds = tf.random.experimental.stateless_split(base, copies)
        out = [x]
        for k in range(copies):
            masked = mask_tokens(
                x["token_ids"],
                x["padding_mask"],
                seeds[k],
                vocabulary_size=tokenizer.vocabulary_size,
                mask_id=mask_id,
                special_ids=specials,
                max_predictions=sequence_length,
                selection_rate=rate,
                mask_token_rate=1.0,
                random_token_rate=0.0,
            )
            out.append({**x, "token_ids": masked["token_ids"]})
        xs = tf.data.Dataset.from_tensor_slices(
            tf.nest.map_structure(lambda *parts: tf.stack(parts), *out)
        )
        ys = tf.data.Dataset.from_tensor_slices(
            tf.nest.map_structure(lambda t: tf.stack([t] * (copies + 1)), y)
        )
        return tf.data.Dataset.zip((xs, ys))

    return train.enumerate().flat_map(views)
