"""BERT's text normalization and pre-tokenization as TensorFlow graph ops.

The reference is Hugging Face's `BertTokenizerFast` (`tokenizers`' Rust
`BertNormalizer` + `BertPreTokenizer`), which does, in this order:

1. clean: drop U+0000, U+FFFD and control/format/private-use characters
   (keeping tab, newline, carriage return), map whitespace to a space;
2. put spaces around CJK ideographs, so each becomes a word;
3. if stripping accents: NFD (decompose, then sort each run of combining
   marks by canonical combining class), then drop the marks;
4. if lowercasing: lowercase each character;
5. split into words at whitespace and around each punctuation character.

Everything here runs on Unicode code points (`tf.strings.unicode_decode`),
with range tables measured on the reference (`normalization_tables.py`,
see `make_normalization_tables.py` for why). No `py_function`: it runs
eagerly, in `tf.data` and in a SavedModel. It does not run in LiteRT
(TFLite has no kernels for `UnicodeDecode`, `UnicodeEncode`, `UpperBound`).
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from zoo.text import normalization_tables as tables
from zoo.text.make_normalization_tables import (
    DROP,
    HANGUL,
    OFFSET,
    OTHER,
    PAD,
    PUNCTUATION,
    SEQUENCE,
    WHITESPACE,
)

_SPACE = 32


class _CharMap:
    """A per-code-point map `cp -> 0..width code points`, from a range table."""

    def __init__(self, table):
        starts, kinds, args, sequences = table
        self.starts = np.asarray(starts, np.int32)
        self.kinds = np.asarray(kinds, np.int32)
        self.args = np.asarray(args, np.int32)
        present = set(kinds)
        self.present = present
        widths = [1]
        if PAD in present or HANGUL in present:
            widths.append(3)
        if sequences:
            widths.append(max(len(s) for s in sequences))
        self.width = max(widths)
        # One extra all-zero row: the gather target for non-SEQUENCE entries.
        seq = np.zeros((len(sequences) + 1, self.width), np.int32)
        seq_len = np.zeros((len(sequences) + 1,), np.int32)
        for i, s in enumerate(sequences):
            seq[i, : len(s)] = s
            seq_len[i] = len(s)
        self.sequences, self.sequence_lengths = seq, seq_len

    @tf.autograph.experimental.do_not_convert
    def __call__(self, code_points):
        """Map a ragged `[batch, (chars)]` int32 tensor; returns the same layout."""
        values = code_points.flat_values
        i = tf.searchsorted(self.starts, values, side="right") - 1
        kind = tf.gather(self.kinds, i)
        shifted = values + tf.gather(self.args, i)
        if self.present == {OFFSET}:
            return code_points.with_flat_values(shifted)
        one_to_one = tf.reduce_all(kind == OFFSET)
        # Most batches only need the one-to-one case (ASCII, lowercase
        # letters, ...): skip the dense expansion when nothing else occurs.
        values, row_splits = tf.cond(
            one_to_one,
            lambda: (shifted, code_points.row_splits),
            lambda: self._expand(values, kind, shifted, i, code_points),
        )
        return tf.RaggedTensor.from_row_splits(values, row_splits, validate=False)

    def _expand(self, values, kind, shifted, i, code_points):
        """General case: each character becomes 0 to `width` characters."""
        width = self.width
        arg = tf.gather(self.args, i)

        def columns(*cols):
            cols = list(cols) + [tf.zeros_like(values)] * (width - len(cols))
            return tf.stack(cols, axis=1)  # (N, width)

        out = columns(shifted)
        count = tf.ones_like(values)
        if DROP in self.present:
            count = tf.where(kind == DROP, 0, count)
        if PAD in self.present:
            is_pad = kind == PAD
            space = tf.fill(tf.shape(values), _SPACE)
            out = tf.where(is_pad[:, None], columns(space, shifted, space), out)
            count = tf.where(is_pad, 3, count)
        if HANGUL in self.present:
            # Unicode's algorithmic decomposition of a Hangul syllable:
            # leading consonant, vowel, and a trailing consonant if any.
            is_hangul = kind == HANGUL
            s = values - 0xAC00
            trail = s % 28
            hangul = columns(0x1100 + s // 588, 0x1161 + (s % 588) // 28, 0x11A7 + trail)
            out = tf.where(is_hangul[:, None], hangul, out)
            count = tf.where(is_hangul, tf.where(trail > 0, 3, 2), count)
        if SEQUENCE in self.present:
            is_seq = kind == SEQUENCE
            row = tf.where(is_seq, arg, len(self.sequence_lengths) - 1)
            out = tf.where(is_seq[:, None], tf.gather(self.sequences, row), out)
            count = tf.where(is_seq, tf.gather(self.sequence_lengths, row), count)
        keep = tf.range(width)[None, :] < count[:, None]
        new_values = tf.boolean_mask(out, keep)
        return new_values, _count_splits(count, code_points.row_splits)


def _lookup(table, values):
    starts, found = table
    i = tf.searchsorted(np.asarray(starts, np.int32), values, side="right") - 1
    return tf.gather(np.asarray(found, np.int32), i)


def _count_splits(count, row_splits):
    """Row splits after each value `i` became `count[i]` values.

    A text's values are contiguous, so its new end is the running total of
    `count` at its old end (cheaper than segment sums over row ids).
    """
    total = tf.concat(
        [tf.zeros([1], row_splits.dtype), tf.cumsum(tf.cast(count, row_splits.dtype))],
        axis=0,
    )
    return tf.gather(total, row_splits)


def _row_starts(code_points):
    """Bool `[N]`: the value is the first of its text."""
    splits = code_points.row_splits
    n = splits[-1]
    # Empty texts repeat a split; scatter_nd adds, so duplicates are harmless.
    marks = tf.scatter_nd(splits[:-1, None], tf.ones_like(splits[:-1]), shape=[n + 1])
    return marks[:n] > 0


def _canonical_order(code_points):
    """NFD's canonical ordering: stable-sort each run of non-zero-class marks.

    Needed for parity: the reference strips accents after ordering, and some
    marks it keeps (e.g. U+1D16D, class 226) move past others.
    """
    values = code_points.flat_values
    ccc = _lookup(tables.COMBINING_CLASS, values)
    # A run starts at every class-0 character and at the start of each text.
    starts = (ccc == 0) | _row_starts(code_points)
    previous = tf.concat([tf.zeros([1], tf.int32), ccc[:-1]], axis=0)[: tf.size(ccc)]
    out_of_order = tf.reduce_any(~starts & (previous > ccc))

    def reorder():
        # Sorting by (run, class) keeps runs in place and, being stable,
        # keeps equal classes in text order.
        run = tf.cumsum(tf.cast(starts, tf.int64))
        key = run * 256 + tf.cast(ccc, tf.int64)
        return tf.gather(values, tf.argsort(key, stable=True))

    # Reordering is rare in real text: skip the sort when nothing is out of order.
    values = tf.cond(out_of_order, reorder, lambda: values)
    return code_points.with_flat_values(values)


_CLEAN = _CharMap(tables.CLEAN)
_CLEAN_NFD = _CharMap(tables.CLEAN_NFD)
_STRIP_ACCENTS = _CharMap(tables.STRIP_ACCENTS)
_LOWERCASE = _CharMap(tables.LOWERCASE)
_STRIP_ACCENTS_LOWERCASE = _CharMap(tables.STRIP_ACCENTS_LOWERCASE)


@tf.autograph.experimental.do_not_convert
def normalize_code_points(code_points, lowercase=True, strip_accents=True):
    """Steps 1-4 of the module docstring on a ragged `[batch, (chars)]` int32 tensor."""
    if not strip_accents:
        code_points = _CLEAN(code_points)
        return _LOWERCASE(code_points) if lowercase else code_points
    # Steps 1-3 up to decomposition are per character, as are stripping and
    # lowercasing after the ordering: each pair is one measured table.
    code_points = _canonical_order(_CLEAN_NFD(code_points))
    return (_STRIP_ACCENTS_LOWERCASE if lowercase else _STRIP_ACCENTS)(code_points)


@tf.autograph.experimental.do_not_convert
def normalize(text, lowercase=True, strip_accents=True):
    """Normalize a 1-D string tensor as the reference `BertNormalizer` does.

    >>> normalize(tf.constant(["Héllo\\x00 Wörld 中文"])).numpy()
    array([b'hello world  \\xe4\\xb8\\xad  \\xe6\\x96\\x87 '], dtype=object)
    """
    code_points = tf.strings.unicode_decode(text, "UTF-8", errors="replace")
    code_points = normalize_code_points(code_points, lowercase, strip_accents)
    return tf.strings.unicode_encode(code_points, "UTF-8")


@tf.autograph.experimental.do_not_convert
def split_words(code_points):
    """Step 5: split normalized code points into words.

    Returns `(words, words_per_text)`: a ragged `[num_words, (chars)]` int32
    tensor of every word of the batch in order, and an int64 `[batch]`
    count of words per text. A word is a maximal run of characters that are
    neither whitespace nor punctuation, or a single punctuation character.
    """
    values = code_points.flat_values
    cls = _lookup(tables.PRE_TOKENIZER_CLASS, values)
    keep = cls != WHITESPACE
    previous = tf.concat([tf.fill([1], WHITESPACE), cls[:-1]], axis=0)[: tf.size(cls)]
    starts_word = keep & (
        (cls == PUNCTUATION) | (previous != OTHER) | _row_starts(code_points)
    )
    splits = _count_splits(tf.cast(starts_word, tf.int32), code_points.row_splits)
    words_per_text = splits[1:] - splits[:-1]
    values = tf.boolean_mask(values, keep)
    word_starts = tf.where(tf.boolean_mask(starts_word, keep))[:, 0]
    words = tf.RaggedTensor.from_row_starts(values, word_starts, validate=False)
    return words, words_per_text
