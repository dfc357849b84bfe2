"""`TextPreprocessor`: raw strings (or pairs) to the encoder's three id
tensors, as one Keras layer that saves its vocabulary with the model.

    pre = TextPreprocessor(tokenizer, sequence_length=128)
    pre(["first text", "second"])            # {token_ids, segment_ids, padding_mask}
    pre((questions, contexts))               # pairs: [CLS] A [SEP] B [SEP]
    train = train.map(lambda text, label: (pre(text), label))   # inside tf.data

    # bucketed: each batch padded to the smallest length that holds it
    pre = TextPreprocessor(tokenizer, sequence_length=(64, 128, 256))
"""

from __future__ import annotations

import os

import keras
import numpy as np
import tensorflow as tf

from zoo.configs import DEFAULT_SEQUENCE_LENGTH, INPUT_NAMES
from zoo.text.tokenizer import WordPieceTokenizer, as_strings, refuse_path_in_config


def _whole(value):
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def check_lengths(sequence_length):
    """`sequence_length` as a sorted tuple of ints >= 3, or a ValueError naming it."""
    lengths = (sequence_length,) if _whole(sequence_length) else sequence_length
    try:
        lengths = tuple(lengths)
    except TypeError:
        lengths = ()
    if not lengths or not all(_whole(n) and n >= 3 for n in lengths):
        raise ValueError(
            "`sequence_length` must be an int >= 3 or a list of them (bucket lengths); "
            f"received {sequence_length!r}."
        )
    return tuple(sorted({int(n) for n in lengths}))


def split_text_input(x, text_b=None):
    """`(texts, texts_b or None)` from what a text model or the preprocessor
    is given: a str, a list / numpy array / 1-D string tensor of texts, a
    list of `(text, text_b)` pairs, a `(texts, texts_b)` tuple of two
    sequences of the same length, or one `(text, text_b)` tuple of two str.
    (A list of two str is two texts; a tuple of two str is one pair.)"""
    if text_b is not None:
        return x, text_b
    if isinstance(x, tuple) and len(x) == 2:
        if all(isinstance(t, (str, bytes)) for t in x):
            return [x[0]], [x[1]]
        return x[0], x[1]
    if isinstance(x, list) and x and isinstance(x[0], (tuple, list)):
        for i, pair in enumerate(x):
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise ValueError(
                    f"text pairs: item {i} is {pair!r}; give every item as (text, text_b)."
                )
        return [p[0] for p in x], [p[1] for p in x]
    return x, None


@keras.saving.register_keras_serializable(package="zoo")
class TextPreprocessor(keras.layers.Layer):
    """The project tokenizer and packer as one layer: texts (or pairs) in,
    `{"token_ids", "segment_ids", "padding_mask"}` int32 `[batch, L]` out.

    Args:
        tokenizer: a `WordPieceTokenizer`, or the path of a `vocab.txt`
            (uncased; build the tokenizer yourself for a cased model).
        sequence_length: an int (every batch is padded or truncated to it),
            or a list of bucket lengths: a batch is padded to the smallest
            bucket that holds its longest example, truncated at the largest.

    A pair too long for the sequence is trimmed longest-first, as
    `zoo finetune`, `zoo predict` and the exported signatures do.

    The config holds the tokenizer's whole vocabulary, so a `.keras` file
    with this layer tokenizes on a machine without the original vocab.txt.
    """

    def __init__(self, tokenizer, sequence_length=DEFAULT_SEQUENCE_LENGTH, **kwargs):
        super().__init__(**kwargs)
        if keras.backend.backend() != "tensorflow":
            # On JAX and PyTorch this layer still runs TensorFlow ops (in
            # tf.data, which feeds `fit` on every backend; issue #39): its
            # string inputs reach `call` as they are, not as backend arrays.
            self._convert_input_args = False
            self._allow_non_tensor_positional_args = True
        if isinstance(tokenizer, dict):
            tokenizer = keras.saving.deserialize_keras_object(tokenizer)
        elif isinstance(tokenizer, (str, os.PathLike)):
            tokenizer = WordPieceTokenizer(str(tokenizer))
        if not isinstance(tokenizer, WordPieceTokenizer):
            raise TypeError(
                "TextPreprocessor: `tokenizer` must be a zoo WordPieceTokenizer or the path of "
                f"a vocab.txt; received {type(tokenizer).__name__}. `zoo.load_checkpoint(path)` "
                "returns the checkpoint's tokenizer."
            )
        self.lengths = check_lengths(sequence_length)
        self.tokenizer = tokenizer
        self.built = True

    @classmethod
    def from_config(cls, config):
        """The preprocessor a saved config describes: `tokenizer` must be the
        serialized tokenizer (its vocabulary inline), never a path."""
        if not isinstance(config.get("tokenizer"), dict):
            refuse_path_in_config(
                config.get("tokenizer"),
                "tokenizer",
                cls.__name__,
                "the serialized tokenizer (an object holding its vocabulary)",
            )
        # Deserialized here rather than in __init__, so the tokenizer's own
        # error reaches the caller as it is (Keras wraps __init__'s errors in
        # a TypeError that repeats the whole config, vocabulary included).
        config = dict(config)
        config["tokenizer"] = keras.saving.deserialize_keras_object(config["tokenizer"])
        return super().from_config(config)

    @property
    def sequence_length(self):
        """The longest length this preprocessor packs to."""
        return self.lengths[-1]

    def __call__(self, x, text_b=None, **kwargs):
        a, b = split_text_input(x, text_b)
        # Keras layers take tensors: strings become a tf.string batch here,
        # with the tokenizer's own error for anything that is not text.
        a = as_strings(a, "text")
        b = None if b is None else as_strings(b, "text_b")
        return super().__call__(a, text_b=b, **kwargs)

    def call(self, text, text_b=None):
        ids = self.tokenizer(text, text_b=text_b, sequence_length=self.lengths[-1])
        if len(self.lengths) == 1:
            return ids
        # Padding is trailing: the smallest bucket holding the batch's longest
        # example keeps every real token.
        longest = tf.reduce_max(tf.reduce_sum(ids["padding_mask"], axis=1))
        buckets = tf.constant(self.lengths, tf.int32)
        bucket = tf.reduce_min(tf.boolean_mask(buckets, buckets >= longest))
        return {k: v[:, :bucket] for k, v in ids.items()}

    def compute_output_spec(self, text, text_b=None):
        length = self.lengths[0] if len(self.lengths) == 1 else None
        return {
            k: keras.KerasTensor((text.shape[0], length), dtype="int32")
            for k in INPUT_NAMES
        }

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "tokenizer": keras.saving.serialize_keras_object(self.tokenizer),
                "sequence_length": self.lengths[0]
                if len(self.lengths) == 1
                else list(self.lengths),
            }
        )
        return config
