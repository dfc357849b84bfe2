"""keras-hub's WordPiece word splitting, in the TensorFlow and
tensorflow-text ops keras-hub itself runs, so that the zoo's
`WordPieceTokenizer(flavor="keras_hub")` gives keras-hub's ids exactly,
eagerly, inside `tf.data` and inside a SavedModel.

keras-hub's `WordPieceTokenizer` (and `BertTokenizer`, which is one) turns
a text into words in this order:

1. with `split_on_cjk`, a space on each side of every CJK ideograph
   (BERT's ranges);
2. with `strip_accents`, Unicode NFD and every nonspacing mark (Mn)
   removed; unlike BERT, keras-hub's BERT presets keep accents even when
   they lowercase;
3. `tensorflow_text.regex_split`: split at RE2's `\\s` (ASCII whitespace
   only: U+00A0 and U+3000 stay inside words) and at control and format
   characters (Cc, Cf; dropped, so they separate words where BERT deletes
   them and joins the word around them), and around ASCII non-alphanumerics,
   Unicode punctuation (P*) and, with `split_on_cjk`, CJK ideographs (kept
   as words of their own);
4. with `lowercase`, `tensorflow_text.case_fold_utf8` on each word
   (NFKC_Casefold: `ﬁ` -> `fi`, `Ｆ` -> `f`, `²` -> `2`, default-ignorable
   characters removed), after splitting, so a character NFKC expands to
   several (`⑴` -> `(1)`) stays one word.

Each word then goes to `FastWordpieceTokenizer`, whose word limit counts
UTF-8 bytes (keras-hub keeps tensorflow-text's default, 100).
"""

from __future__ import annotations

import tensorflow as tf
import tensorflow_text as tft

# RE2 patterns (tensorflow's regex ops use RE2). `\s` in RE2 is ASCII
# whitespace: tab, newline, form feed, carriage return and space.
_SEPARATOR = r"\s|\p{Cc}|\p{Cf}"
# ASCII characters that are neither letters nor digits, and Unicode P*.
_PUNCTUATION = r"[!-/]|[:-@]|[\[-`]|[{-~]|[\p{P}]"
# CJK ideographs, as BERT's `_is_chinese_char` lists them.
_CJK_RANGES = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B820, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)
_CJK = "|".join(rf"[\x{{{lo:X}}}-\x{{{hi:X}}}]" for lo, hi in _CJK_RANGES)


def split_patterns(cjk):
    """`(delimiters, kept delimiters)`: the RE2 patterns `regex_split` takes."""
    if cjk:
        return f"{_SEPARATOR}|{_PUNCTUATION}|{_CJK}", f"{_PUNCTUATION}|{_CJK}"
    return f"{_SEPARATOR}|{_PUNCTUATION}", _PUNCTUATION


def words(strings, lowercase, strip_accents, cjk):
    """keras-hub's words of a 1-D tf.string batch: `tf.RaggedTensor`
    `[batch, (words)]` of tf.string.

    Text that is not valid UTF-8 (only bytes can be) has each bad sequence
    replaced by U+FFFD first, as the BERT flavor decodes it; valid text is
    unchanged, so this never differs from keras-hub on text."""
    strings = tf.strings.unicode_transcode(
        strings, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD
    )
    if cjk:
        strings = tf.strings.regex_replace(strings, _CJK, r" \0 ")
    if strip_accents:
        strings = tft.normalize_utf8(strings, "NFD")
        strings = tf.strings.regex_replace(strings, r"\p{Mn}", "")
    delimiters, kept = split_patterns(cjk)
    split = tft.regex_split(
        strings, delim_regex_pattern=delimiters, keep_delim_regex_pattern=kept
    )
    if lowercase:
        split = tft.case_fold_utf8(split)
    return split
