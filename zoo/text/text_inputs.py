"""The text a tokenizer takes, checked before any TensorFlow op sees it:
a str (a batch of one), a list of str, a numpy array of str or a 1-D
`tf.string` tensor; anything else is an error naming the argument, what
it received and what to pass instead. Shared by every zoo tokenizer."""

from __future__ import annotations

import numpy as np
import tensorflow as tf


def describe(value):
    """`value` for an error message: type, dtype and shape, or a short repr."""
    if isinstance(value, tf.Tensor):
        return f"a tf.Tensor of dtype {value.dtype.name} and shape {tuple(value.shape)}"
    if isinstance(value, np.ndarray):
        return f"a numpy array of dtype {value.dtype} and shape {value.shape}"
    if isinstance(value, (list, tuple)) and value:
        return f"a {type(value).__name__} of {type(value[0]).__name__} (first item {value[0]!r:.50})"
    return f"a {type(value).__name__} ({value!r:.50})"


def check_text(text, name="text"):
    """Raise ValueError unless `text` can be encoded as UTF-8: a Python str
    may hold a lone surrogate (e.g. from `bytes.decode(errors="surrogateescape")`),
    which is not Unicode text and which TensorFlow refuses with a generic error."""
    if isinstance(text, str):
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as e:
            raise ValueError(
                f"`{name}` holds {text[e.start]!r} (U+{ord(text[e.start]):04X}) at character "
                f"{e.start}, a lone surrogate that is not valid Unicode text. Fix the input's "
                "encoding (in Python: decode with errors='replace') before tokenizing."
            ) from None


def text_batch(text, name="text"):
    """`(1-D tf.string tensor, was_scalar)` of `text`, or the error naming `name`."""
    if isinstance(text, (str, bytes)):
        check_text(text, name)
        return tf.constant([text]), True
    if isinstance(text, (list, tuple)):
        if not all(isinstance(t, (str, bytes)) for t in text):
            raise TypeError(
                f"`{name}` must hold text (str); received {describe(text)}. "
                "Pass the strings themselves; token ids go to the encoder, not the tokenizer."
            )
        for i, t in enumerate(text):
            check_text(t, f"{name}[{i}]")
        return tf.constant(list(text), dtype=tf.string), False
    if isinstance(text, np.ndarray) and text.dtype.kind in "USO":
        if text.dtype.kind == "O" and not all(
            isinstance(t, (str, bytes)) for t in text.flat
        ):
            raise TypeError(
                f"`{name}` must hold text (str); received a numpy object array with non-str items."
            )
        for i, t in enumerate(text.flat):
            check_text(t, f"{name}[{i}]")
        text = tf.constant(
            text.astype(str) if text.dtype.kind == "U" else text, dtype=tf.string
        )
    if isinstance(text, tf.Tensor) and text.dtype == tf.string:
        rank = text.shape.rank
        if rank == 0:
            return tf.reshape(text, [1]), True
        if rank == 1:
            return text, False
        if rank == 2 and text.shape[1] == 1:
            return tf.squeeze(text, axis=1), False
        raise ValueError(
            f"`{name}` must be a scalar or a 1-D batch of strings; received a tf.string tensor of "
            f"shape {tuple(text.shape)}. Flatten it, or map the tokenizer over the extra dimension."
        )
    raise TypeError(
        f"`{name}` must be text: a str, a list of str, a numpy array of str or a tf.string tensor; "
        f"received {describe(text)}. Pass the strings themselves; token ids go to the encoder, "
        "not the tokenizer."
    )


def as_strings(text, name="text"):
    """`text` (a str, list, numpy array or tf.string tensor) as a 1-D
    tf.string batch, or the tokenizer's error naming `name`."""
    return text_batch(text, name)[0]


def packing_arguments(text, text_b, sequence_length, layouts):
    """A tokenizer call's `(strings, strings_b or None, sequence_length as
    int or None)`, or the error naming the argument: `sequence_length` must
    leave room for the special tokens of `layouts` (the single and the pair
    layout, e.g. `("[CLS] A [SEP]", "[CLS] A [SEP] B [SEP]")`), and `text`
    and `text_b` must hold as many examples."""
    strings = as_strings(text, "text")
    strings_b = None if text_b is None else as_strings(text_b, "text_b")
    layout = layouts[0] if text_b is None else layouts[1]
    minimum = len(layout.split()) - layout.split().count("A") - layout.split().count("B")
    if sequence_length is not None and (
        not isinstance(sequence_length, (int, np.integer))
        or isinstance(sequence_length, bool)
        or sequence_length < minimum
    ):
        raise ValueError(
            f"`sequence_length` must be an int >= {minimum} (room for {layout}) or None "
            f"(pad to the longest example, no truncation); received {sequence_length!r}."
        )
    if strings_b is not None and None not in (strings.shape[0], strings_b.shape[0]):
        if strings.shape[0] != strings_b.shape[0]:
            raise ValueError(
                f"`text` and `text_b` must hold the same number of examples; received "
                f"{strings.shape[0]} and {strings_b.shape[0]}."
            )
    return strings, strings_b, None if sequence_length is None else int(sequence_length)
