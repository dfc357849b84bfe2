"""GPT-2's byte level, the half of byte-level BPE that comes before the
merges: its pre-tokenizer (text -> words) and its byte alphabet (each of a
word's UTF-8 bytes -> one of 256 visible symbols), in core TensorFlow ops.

Pre-tokenization. GPT-2 splits text with
`'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+`.
RE2 has no lookahead. What it does here: a run of whitespace followed by a
non-space ends one character early, so that the last character, if a plain
space, starts the next token (" word"), and otherwise stands alone. Two
`regex_replace` passes write a separator byte at the token boundaries: the
first cuts such runs before their last character, the second is the
reference's pattern without the lookahead alternative (`_SPLIT_RUNS`,
`_SPLIT_TOKENS`); `tf.strings.split` then cuts at the separators. The
character classes are the reference's (`tokenizers`' ByteLevel): `\\s` is
Unicode White_Space (RE2's `\\s` is ASCII only), and `\\p{L}`, `\\p{N}` add
the letters and digits that Unicode 15.1 and 16.0 assigned, which the
reference knows and TensorFlow's RE2 (Unicode 15.0) does not;
tests/text/test_byte_pair_tokenizer.py compares every code point.

Where keras-hub's `BytePairTokenizer` (0.32) splits otherwise than the
reference (same vocabulary, pre-tokens compared):

- in `tf.data` and `tf.function` (its RE2 path): a whitespace run ending
  in a newline stays one piece (`"\\n\\n\\n"`, `" \\n"`, `"\\r\\n"`;
  the reference cuts off the last character); spaces that end the text
  are cut one by one (`"a  "` -> `" ", " "`; the reference keeps `"  "`);
  U+000B, U+0085, U+1680, U+2000-U+2008, U+200A, U+2028, U+2029 and U+205F
  are not whitespace to it; Unicode 15.1 and 16.0 letters and digits are
  punctuation to it.
- eagerly (its default Python path): it hands Llama 3's split pattern to
  `tokenizers.pre_tokenizers.Split` as a plain str, which `tokenizers`
  reads as a literal string, not a regex, so text is not pre-tokenized at
  all and BPE runs over whole texts (`"x   's"` gives `Ġ Ġ Ġ 's` where the
  reference gives `ĠĠ Ġ' s`, vocabulary permitting).

Bytes. Each word's UTF-8 bytes become the vocabulary's 256 byte symbols
(GPT-2's byte-to-unicode table, `byte_alphabet()`), so no input is ever
unknown.
"""

from __future__ import annotations

import tensorflow as tf

# Unicode White_Space: what the reference's `\s` matches (RE2's `\s` is
# [\t\n\f\r ] only).
_SPACE = (
    r"\t\n\x{b}\f\r \x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}"
    r"\x{202f}\x{205f}\x{3000}"
)
# Letters and digits that Unicode 15.1 (CJK Extension I, U+2EBF0-U+2EE5D)
# and 16.0 (the rest) assigned: the reference (tokenizers 0.23) matches them
# with \p{L} / \p{N}, TensorFlow 2.20's RE2 (Unicode 15.0 tables) does not.
# Found by comparing every code point; harmless once RE2 knows them too.
_NEW_LETTERS = (
    r"\x{1c89}-\x{1c8a}\x{a7cb}-\x{a7cd}\x{a7da}-\x{a7dc}\x{105c0}-\x{105f3}"
    r"\x{10d4a}-\x{10d65}\x{10d6f}-\x{10d85}\x{10ec2}-\x{10ec4}\x{11380}-\x{11389}"
    r"\x{1138b}\x{1138e}\x{11390}-\x{113b5}\x{113b7}\x{113d1}\x{113d3}"
    r"\x{11bc0}-\x{11be0}\x{13460}-\x{143fa}\x{16100}-\x{1611d}\x{16d40}-\x{16d6c}"
    r"\x{18cff}\x{1e5d0}-\x{1e5ed}\x{1e5f0}\x{2ebf0}-\x{2ee5d}"
)
_NEW_DIGITS = (
    r"\x{10d40}-\x{10d49}\x{116d0}-\x{116e3}\x{11bf0}-\x{11bf9}\x{16130}-\x{16139}"
    r"\x{16d70}-\x{16d79}\x{1ccf0}-\x{1ccf9}\x{1e5f1}-\x{1e5fa}"
)
_S = f"[{_SPACE}]"
_L = rf"[\p{{L}}{_NEW_LETTERS}]"
_N = rf"[\p{{N}}{_NEW_DIGITS}]"
_O = rf"[^{_SPACE}\p{{L}}{_NEW_LETTERS}\p{{N}}{_NEW_DIGITS}]"
# GPT-2's pre-tokenization without the lookahead, in two regex_replace
# passes that write a 0xFF byte at each token boundary. Valid UTF-8 never
# holds that byte, no character class matches it (it ends every run), and
# splitting at it cannot cut a character. It is given as bytes: a str "\xff"
# would become the UTF-8 of U+00FF, a letter.
_SEPARATOR = b"\xff"
# Pass 1, the lookahead's work: a whitespace run of two or more followed by
# a non-space is cut before its last character, where the reference's
# `\s+(?!\S)` stops. (A run of one, or a run that ends the text, is
# whole in the reference too.) The non-space is matched only to anchor
# the run's end and is written back.
_SPLIT_RUNS = f"({_S}+)({_S}[^{_SPACE}])"
_SPLIT_RUNS_REWRITE = b"\\1" + _SEPARATOR + b"\\2"
# Pass 2, the reference's pattern less `\s+(?!\S)`, in its order (RE2 picks,
# at the leftmost position where anything matches, the first alternative that
# matches, as the reference's backtracking engine does). After pass 1 the
# last character of a cut run, if a plain space, goes with the next token
# (` ?\p{L}+`, ...), and otherwise stands alone (`\s+`), as in the
# reference; a run ending at the text's end or at a separator stays whole.
# Only the whole match (\0) is rewritten: with no capture groups RE2 skips
# its slow submatch search (30x faster on news text).
_SPLIT_TOKENS = f"'s|'t|'re|'ve|'m|'ll|'d| ?{_L}+| ?{_N}+| ?{_O}+|{_S}+"
_SPLIT_TOKENS_REWRITE = b"\\0" + _SEPARATOR


def byte_alphabet() -> list:
    """GPT-2's 256 byte symbols: `byte_alphabet()[b]` stands for byte `b`.

    Bytes that are printable Latin-1 characters other than the space (33-126,
    161-172, 174-255) are their own character; the other 68 (controls, space,
    DEL, NBSP, soft hyphen) are given U+0100, U+0101, ... in byte order, so
    every symbol is a visible, non-space character (the space is "Ġ").
    """
    printable = [*range(33, 127), *range(161, 173), *range(174, 256)]
    symbols = {b: chr(b) for b in printable}
    shifted = (b for b in range(256) if b not in symbols)
    for offset, b in enumerate(shifted):
        symbols[b] = chr(256 + offset)
    return [symbols[b] for b in range(256)]


def symbol_bytes(token: str, byte_of: dict) -> bytes:
    """The bytes a vocabulary token stands for: each byte symbol its byte
    (`byte_of`: symbol -> byte), any other character (a special token's) its
    own UTF-8."""
    out = bytearray()
    for ch in token:
        if ch in byte_of:
            out.append(byte_of[ch])
        else:
            out += ch.encode("utf-8")
    return bytes(out)


def pre_tokenize(strings, add_prefix_space=False):
    """Ragged `[batch, (words)]` tf.string: the reference's pre-tokens of
    `strings` (1-D tf.string), as UTF-8 text (`"Hello world!"` ->
    `["Hello", " world", "!"]`). `add_prefix_space` puts a space before a
    non-empty text whose first character is not a plain space, as the
    reference does."""
    # Invalid UTF-8 (possible in tf.string data, never in a Python str)
    # becomes U+FFFD; valid text is unchanged.
    text = tf.strings.unicode_transcode(
        strings, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD
    )
    if add_prefix_space:
        needs_space = (tf.strings.length(text) > 0) & (tf.strings.substr(text, 0, 1) != " ")
        text = tf.where(needs_space, tf.strings.join([" ", text]), text)
    text = tf.strings.regex_replace(text, _SPLIT_RUNS, _SPLIT_RUNS_REWRITE)
    text = tf.strings.regex_replace(text, _SPLIT_TOKENS, _SPLIT_TOKENS_REWRITE)
    pieces = tf.strings.split(text, sep=_SEPARATOR)
    return tf.ragged.boolean_mask(pieces, tf.strings.length(pieces) > 0)
