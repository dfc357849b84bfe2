"""Byte-level BPE tokenizer (GPT-2's, as RoBERTa uses it) and RoBERTa packer, in
TensorFlow graph ops.

    >>> tok = BytePairTokenizer("vocab.json", "merges.txt")        # or a tokenizer.json:
    >>> tok = BytePairTokenizer.from_tokenizer_json("tokenizer.json")
    >>> batch = tok(["Hello world"], text_b=["second text"], sequence_length=16)
    >>> # token_ids: <s> Hello Ġworld </s> </s> second Ġtext </s> <pad> ...
    >>> sorted(batch)   # int32 [batch, 16] each; segment_ids all 0
    ['padding_mask', 'segment_ids', 'token_ids']

The ids are those of transformers' `RobertaTokenizerFast` (the `tokenizers`
Rust implementation) with the same vocab.json and merges.txt, called with
`split_special_tokens=True` (tests/text/test_byte_pair_tokenizer.py checks
real and adversarial text, both `add_prefix_space` settings). Only core
TensorFlow ops are used (regex_replace, string split, hash tables, a
`tf.while_loop`), so the layer runs eagerly, in `tf.data`, under
`tf.function`, and in a text-in SavedModel that loads without
tensorflow-text (stock TF Serving). Not in LiteRT: the converter has no
kernels for the string ops.

How it works, in four steps:

1. Pre-tokenization. GPT-2 splits text with
   `'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+`.
   RE2 has no lookahead. What it does here: a run of whitespace followed by
   a non-space ends one character early, so that the last character, if a
   plain space, starts the next token (" word"), and otherwise stands
   alone. Two `regex_replace` passes write a separator byte at the token
   boundaries: the first cuts such runs before their last character, the
   second is the reference's pattern without the lookahead alternative
   (`_SPLIT_RUNS`, `_SPLIT_TOKENS`); `tf.strings.split` then cuts at the
   separators. The character classes are the reference's: `\\s` is
   Unicode White_Space (RE2's `\\s` is ASCII only), and `\\p{L}`, `\\p{N}`
   add the letters and digits that Unicode 15.1 and 16.0 assigned, which
   the reference knows and TensorFlow's RE2 (Unicode 15.0) does not; the test
   compares every code point.
2. Bytes. Each pre-token's UTF-8 bytes become the vocabulary's 256 byte
   symbols (GPT-2's byte-to-unicode table, `byte_alphabet()`), so no input
   is ever unknown.
3. BPE. All distinct pre-tokens of a batch are merged together in a
   `tf.while_loop`: each round looks up the rank of every adjacent pair
   (int64 key `left_id * vocabulary_size + right_id` in a
   `tf.lookup.StaticHashTable`), and in every word merges the occurrences
   of its lowest-ranked pair, left to right without overlaps. A word with
   nothing left to merge leaves the loop, so long words do not make every
   word pay for their rounds. Merging every occurrence of the best pair in
   one round equals the reference's one-merge-at-a-time heap when no merge
   creates a pair ranked before itself; that holds for every trained merges
   list (a pair is only counted once both halves exist) and is checked at
   construction; a list where it fails is merged one pair per word per
   round, which is the reference's order exactly.
4. Packing, RoBERTa's: `<s> A </s>` and `<s> A </s> </s> B </s>`, truncated
   longest-first as the reference does, padded with `<pad>`.

Special tokens typed in text ("<s>", "<mask>") are ordinary text, never the
special ids, as `WordPieceTokenizer` treats "[CLS]" (the reference maps them
to the special ids unless called with `split_special_tokens=True`).

Where keras-hub's `BytePairTokenizer` (0.32) differs from the reference,
found while writing this one (same vocabulary, pre-tokens compared):

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
"""

from __future__ import annotations

import json
import os
import pathlib

import keras
import numpy as np
import tensorflow as tf

from zoo.configs import INPUT_NAMES
from zoo.text.tokenizer import (
    MAX_VOCABULARY_TOKENS,
    WordPieceTokenizer,
    as_strings,
    packing_arguments,
    read_tokenizer_file,
    refuse_path_in_config,
)

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

_NO_MERGE = np.iinfo(np.int32).max  # rank of a pair that no merge joins

# The graph code has no Python control flow on tensors (tf.while_loop and
# tf.where); AutoGraph would only re-parse it on every trace.
_no_autograph = tf.autograph.experimental.do_not_convert


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


def _symbol_bytes(token: str, byte_of: dict) -> bytes:
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


# --- reading vocab.json, merges.txt, tokenizer.json -------------------------


def _read_text(path, what):
    # A regular file of at most 64 MB (RoBERTa's vocab.json is 0.9 MB, its
    # tokenizer.json 1.4 MB): read_tokenizer_file says why.
    data = read_tokenizer_file(path, what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(
            f"{path}: not UTF-8 text (byte {e.start}); a {what} is UTF-8. Use the "
            "checkpoint's own file."
        ) from None


def read_vocab_json(path) -> dict:
    """`{token: id}` of a vocab.json."""
    try:
        vocab = json.loads(_read_text(path, "vocab.json"))
    except json.JSONDecodeError as e:
        raise ValueError(
            f"{path}: not JSON ({e.msg} at line {e.lineno}); a vocab.json is one JSON "
            'object of token -> id, e.g. {"<s>": 0, ...}. Use the checkpoint\'s own file.'
        ) from None
    except RecursionError:
        raise ValueError(
            f"{path}: JSON nested too deep for Python's parser; a vocab.json is one flat "
            "object of token -> id. Use the checkpoint's own file."
        ) from None
    if not isinstance(vocab, dict):
        raise ValueError(
            f"{path}: holds a JSON {type(vocab).__name__}, not an object of token -> id; "
            "pass the checkpoint's vocab.json."
        )
    if len(vocab) > MAX_VOCABULARY_TOKENS:
        raise ValueError(
            f"{path}: {len(vocab):,} tokens, over the limit of {MAX_VOCABULARY_TOKENS:,}; "
            "pass the checkpoint's vocab.json."
        )
    return vocab


def read_merges_txt(path) -> list:
    """The merges of a merges.txt as `(left, right)` pairs, best first.

    As the reference reads it: lines starting with "#version" are skipped,
    every other line is two tokens separated by one space.
    """
    lines = _read_text(path, "merges.txt").split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the final newline
    if len(lines) > MAX_VOCABULARY_TOKENS:
        # Each merge makes one token: no more merges than a vocabulary may hold.
        raise ValueError(
            f"{path}: {len(lines):,} lines, over the limit of {MAX_VOCABULARY_TOKENS:,} "
            "merges. Use the checkpoint's own merges.txt."
        )
    merges = []
    for number, line in enumerate(lines, 1):
        line = line.removesuffix("\r")
        if line.startswith("#version"):
            continue
        parts = line.split(" ")
        if len(parts) != 2 or not all(parts):
            raise ValueError(
                f"{path}, line {number}: {line[:80]!r} is not a merge; each line of a "
                'merges.txt is two tokens separated by one space ("Ġ t"). Use the '
                "checkpoint's own merges.txt."
            )
        merges.append((parts[0], parts[1]))
    return merges


def _vocabulary_list(vocabulary):
    """`(tokens by id, description)` of a vocab.json path, a token -> id
    dict or a list of tokens (id = index)."""
    if isinstance(vocabulary, (str, os.PathLike)):
        source = f"file {os.fspath(vocabulary)!r}"
        vocabulary = read_vocab_json(vocabulary)
    elif isinstance(vocabulary, dict):
        source = f"dict of {len(vocabulary)} tokens"
    elif isinstance(vocabulary, (list, tuple)) and all(
        isinstance(t, str) for t in vocabulary
    ):
        tokens = list(vocabulary)
        first = {}
        for i, token in enumerate(tokens):
            if first.setdefault(token, i) != i:
                raise ValueError(
                    f"`vocabulary` lists {token!r} twice, as ids {first[token]} and {i}; "
                    "each token must appear once (id = position). Use the checkpoint's "
                    "own vocabulary."
                )
        return tokens, f"list of {len(tokens)} tokens"
    else:
        raise TypeError(
            "`vocabulary` must be the path of a vocab.json, a dict of token -> id, or a "
            f"list of str tokens (id = position); received a {type(vocabulary).__name__}."
        )
    bad = [(t, i) for t, i in vocabulary.items() if not isinstance(t, str)]
    bad += [
        (t, i)
        for t, i in vocabulary.items()
        if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < len(vocabulary)
    ]
    if bad:
        raise ValueError(
            f"`vocabulary` ({source}): token {bad[0][0]!r} has id {bad[0][1]!r}; ids must "
            f"be the ints 0 to {len(vocabulary) - 1}, each used once. Use the checkpoint's "
            "own vocab.json."
        )
    tokens = [None] * len(vocabulary)
    for token, i in vocabulary.items():
        if tokens[i] is not None:
            raise ValueError(
                f"`vocabulary` ({source}): tokens {tokens[i]!r} and {token!r} both have id "
                f"{i}; each id must be used once. Use the checkpoint's own vocab.json."
            )
        tokens[i] = token
    return tokens, source


def _merge_list(merges):
    """`[(left, right)]` of a merges.txt path or a list of "left right"
    strings or of pairs."""
    if isinstance(merges, (str, os.PathLike)):
        return read_merges_txt(merges), f"file {os.fspath(merges)!r}"
    if not isinstance(merges, (list, tuple)):
        raise TypeError(
            "`merges` must be the path of a merges.txt, or a list of merges, each a "
            '"left right" string or a (left, right) pair, best first; received a '
            f"{type(merges).__name__}."
        )
    pairs = []
    for i, merge in enumerate(merges):
        if isinstance(merge, str):
            parts = merge.split(" ")
        elif isinstance(merge, (list, tuple)):
            parts = list(merge)
        else:
            parts = None
        if not (parts and len(parts) == 2 and all(isinstance(p, str) and p for p in parts)):
            raise ValueError(
                f'`merges[{i}]` is {merge!r:.80}; each merge is a "left right" string '
                "(two tokens, one space) or a (left, right) pair. Use the checkpoint's "
                "own merges.txt."
            )
        pairs.append((parts[0], parts[1]))
    return pairs, f"list of {len(pairs)} merges"


def _merges_are_ordered(ranks, merged):
    """True when no merge creates a pair that a better-ranked merge joins
    (`ranks`: (left id, right id) -> rank; `merged`: rank -> merged id).
    Then merging every occurrence of a word's best pair in one round gives
    the reference's result (see the module docstring). Trained merges lists
    are ordered: a merge can only be learned once both its halves exist."""
    last_made = {}  # token id -> the worst rank of a merge producing it
    first_used = {}  # token id -> the best rank of a merge using it
    for (a, b), rank in ranks.items():
        token = merged[rank]
        last_made[token] = max(rank, last_made.get(token, -1))
        for part in (a, b):
            first_used[part] = min(rank, first_used.get(part, _NO_MERGE))
    return all(first_used.get(t, _NO_MERGE) > r for t, r in last_made.items())


@keras.saving.register_keras_serializable(package="zoo")
class BytePairTokenizer(keras.layers.Layer):
    """Byte-level BPE tokenizer and RoBERTa packer, id-for-id equal to
    `RobertaTokenizerFast`.

    Args:
        vocabulary: path of a `vocab.json`, a dict of token -> id, or a list
            of tokens (id = position). Ids must be 0 to n-1; the 256 byte
            symbols (`byte_alphabet()`) and the special tokens must be in it.
        merges: path of a `merges.txt`, or a list of merges, best first,
            each a `"left right"` string or a `(left, right)` pair; both
            halves and their concatenation must be tokens.
        add_prefix_space: put a space before a text that does not start with
            one (and is not empty), as the reference's `add_prefix_space`
            does, so its first word tokenizes like any other. RoBERTa was
            trained without (the default).
        cls_token, sep_token, pad_token, unk_token, mask_token: spellings
            of the special tokens (RoBERTa's bos `<s>` opens a sequence, eos
            `</s>` closes and separates); each must be in the vocabulary.
            Byte-level BPE never produces `unk_token`; it is kept for the
            model's vocabulary contract.

    Calling the layer packs one text, or a pair, per example (the calling
    convention of `WordPieceTokenizer`):

        >>> batch = tok(["first text", "second"], sequence_length=128)
        >>> # <s> A </s> <pad>...; int32 [batch, 128] token_ids, segment_ids
        >>> # (all 0: RoBERTa has one segment) and padding_mask (1 = token)
        >>> batch = tok(["question?"], text_b=["context ..."], sequence_length=384)
        >>> # <s> A </s> </s> B </s> <pad>...

    Text may be a str (a batch of one), a list of str, a numpy array of str
    or a 1-D `tf.string` tensor (e.g. a batch inside `tf.data`); bytes that
    are not UTF-8 become U+FFFD. `sequence_length=None` pads to the longest
    example without truncating.

    `get_config()` stores the tokens and merges themselves, never a path: a
    saved `.keras` model loads where the files do not exist, and a config
    (untrusted input) is never allowed to open files (`from_config`).
    """

    def __init__(
        self,
        vocabulary,
        merges,
        add_prefix_space=False,
        cls_token="<s>",
        sep_token="</s>",
        pad_token="<pad>",
        unk_token="<unk>",
        mask_token="<mask>",
        **kwargs,
    ):
        super().__init__(**kwargs)
        tokens, source = _vocabulary_list(vocabulary)
        pairs, merges_source = _merge_list(merges)
        if not isinstance(add_prefix_space, bool):
            raise TypeError(
                f"`add_prefix_space` must be True or False; received {add_prefix_space!r}."
            )
        self._vocabulary = tokens
        self._token_to_id = {t: i for i, t in enumerate(tokens)}
        self.add_prefix_space = add_prefix_space
        specials = dict(
            cls=cls_token, sep=sep_token, pad=pad_token, unk=unk_token, mask=mask_token
        )
        for name, token in specials.items():
            argument = f"{name}_token"
            if not isinstance(token, str) or token not in self._token_to_id:
                raise ValueError(
                    f"Cannot find special token {token!r} (`{argument}`) in the vocabulary "
                    f"({source}). Use a RoBERTa-style vocabulary that contains it, or pass "
                    f"`{argument}=` with the vocabulary's own spelling of that token."
                )
            setattr(self, argument, token)
            setattr(self, f"{name}_id", self._token_to_id[token])

        alphabet = byte_alphabet()
        missing = [b for b, s in enumerate(alphabet) if s not in self._token_to_id]
        if missing:
            raise ValueError(
                f"The vocabulary ({source}) lacks {len(missing)} of the 256 byte symbols, "
                f"e.g. {alphabet[missing[0]]!r} for byte 0x{missing[0]:02X}: it is not a "
                "byte-level BPE vocabulary (GPT-2, RoBERTa). Use the checkpoint's own "
                "vocab.json."
            )
        self._merges = pairs
        ranks = {}
        for rank, (a, b) in enumerate(pairs):
            for token in (a, b, a + b):
                if token not in self._token_to_id:
                    raise ValueError(
                        f"`merges` ({merges_source}), merge {rank} ({a} {b}): {token!r} is "
                        f"not in the vocabulary ({source}); every merge's halves and their "
                        "concatenation must be tokens. The vocab.json and merges.txt must "
                        "come from the same checkpoint."
                    )
            # A pair listed twice keeps its last rank, as the reference's
            # pair -> rank map does.
            ranks[(self._token_to_id[a], self._token_to_id[b])] = rank
        merged = [self._token_to_id[a + b] for a, b in pairs]
        self._merge_all = _merges_are_ordered(ranks, merged)
        self._build_tables(ranks)
        # Tokenization is a few dozen ops and a loop: traced once into a
        # graph, an eager call is one function call. Inside tf.data or an
        # outer tf.function it is called as a nested function.
        self._tokenize_graph = tf.function(
            self._tokenize,
            input_signature=[tf.TensorSpec([None], tf.string)],
            autograph=False,
        )
        self.built = True

    @property
    def lowercase(self):
        """False: byte-level BPE keeps text as written (WordPieceTokenizer's
        casing flag, for code that records it)."""
        return False

    @property
    def lookup_tables(self):
        """The TF resources the graph reads (the merge ranks), for a SavedModel
        exporter that must track them."""
        return (self._merge_ranks,)

    def write_files(self, directory):
        """Write `vocab.json` (token -> id) and `merges.txt` (GPT-2's
        "#version: 0.2" header, then one merge a line) into `directory`, the
        files `BytePairTokenizer(vocab.json, merges.txt)` and HF's
        RobertaTokenizer read back. Callers write into an atomic directory."""
        directory = pathlib.Path(directory)
        vocab = {token: i for i, token in enumerate(self._vocabulary)}
        (directory / "vocab.json").write_text(
            json.dumps(vocab, ensure_ascii=False), encoding="utf-8"
        )
        lines = ["#version: 0.2"] + [f"{a} {b}" for a, b in self._merges]
        (directory / "merges.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")

    def _build_tables(self, ranks):
        size = len(self._vocabulary)
        alphabet = byte_alphabet()
        # byte value -> id of its byte symbol
        self._byte_ids = tf.constant(
            [self._token_to_id[s] for s in alphabet], dtype=tf.int32
        )
        keys = np.array([a * size + b for a, b in ranks], dtype=np.int64)
        values = np.array(list(ranks.values()), dtype=np.int32)
        # pair key -> rank. Set as an attribute of the layer, so that it is
        # tracked: a SavedModel holding the layer saves and initializes it
        # (keras-hub #2015: tables left untracked break serving exports).
        self._merge_ranks = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(
                tf.constant(keys, tf.int64), tf.constant(values, tf.int32)
            ),
            default_value=_NO_MERGE,
        )
        # rank -> id of the merged token
        self._merged_ids = tf.constant(
            [self._token_to_id[a + b] for a, b in self._merges] or [0], dtype=tf.int32
        )
        # id -> the bytes the token stands for (detokenize)
        byte_of = {s: b for b, s in enumerate(alphabet)}
        self._token_bytes = tf.constant(
            [_symbol_bytes(t, byte_of) for t in self._vocabulary], tf.string
        )

    # --- vocabulary ---------------------------------------------------------

    @property
    def vocabulary(self):
        """The tokens, index = id (a copy)."""
        return list(self._vocabulary)

    @property
    def vocabulary_size(self):
        return len(self._vocabulary)

    @property
    def merges(self):
        """The merges, best first, as `"left right"` strings (a copy)."""
        return [f"{a} {b}" for a, b in self._merges]

    def id_to_token(self, token_id):
        """`31414 -> "Hello"`. Raises `IndexError` for an id outside the vocabulary."""
        token_id = int(token_id)
        if not 0 <= token_id < len(self._vocabulary):
            raise IndexError(
                f"Token id {token_id} is outside the vocabulary (0 to {len(self._vocabulary) - 1})."
            )
        return self._vocabulary[token_id]

    def token_to_id(self, token):
        """`"Ġworld" -> 232`. Raises `KeyError` for a token not in the vocabulary."""
        if token not in self._token_to_id:
            raise KeyError(
                f"Token {token!r} is not in the vocabulary; tokenize text with `tokenize()` "
                "instead (byte-level tokens spell a space as 'Ġ')."
            )
        return self._token_to_id[token]

    # --- tokenization -------------------------------------------------------

    def _pre_tokenize(self, strings):
        """Ragged `[batch, (pieces)]` tf.string: the reference's pre-tokens."""
        # Invalid UTF-8 (possible in tf.string data, never in a Python str)
        # becomes U+FFFD; valid text is unchanged.
        text = tf.strings.unicode_transcode(
            strings, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD
        )
        if self.add_prefix_space:
            # The reference adds the space to a non-empty text whose first
            # character is not a plain space.
            needs_space = (tf.strings.length(text) > 0) & (
                tf.strings.substr(text, 0, 1) != " "
            )
            text = tf.where(needs_space, tf.strings.join([" ", text]), text)
        text = tf.strings.regex_replace(text, _SPLIT_RUNS, _SPLIT_RUNS_REWRITE)
        text = tf.strings.regex_replace(text, _SPLIT_TOKENS, _SPLIT_TOKENS_REWRITE)
        pieces = tf.strings.split(text, sep=_SEPARATOR)
        return tf.ragged.boolean_mask(pieces, tf.strings.length(pieces) > 0)

    def _bpe(self, words):
        """Ragged `[words, (ids)]` int32: the BPE of each word (tf.string [words]).

        The loop state is the words not yet finished, flat: `ids` (their
        symbols), `rows` (each symbol's word, 0..active-1, sorted) and
        `origin` (each active word's index in `words`). Finished words go to
        TensorArrays and are put back in order at the end.
        """
        size = tf.constant(len(self._vocabulary), tf.int64)
        byte_strings = tf.strings.bytes_split(words)
        byte_values = tf.reshape(tf.io.decode_raw(byte_strings.flat_values, tf.uint8), [-1])
        ids = tf.gather(self._byte_ids, tf.cast(byte_values, tf.int32))
        rows = tf.cast(byte_strings.value_rowids(), tf.int32)
        origin = tf.range(tf.size(words, out_type=tf.int32))

        def array():
            return tf.TensorArray(
                tf.int32, size=0, dynamic_size=True, infer_shape=False, element_shape=[None]
            )

        # One empty entry first: concat() of an array written zero times fails.
        empty = tf.zeros([0], tf.int32)
        done_ids, done_lengths, done_origin = (array().write(0, empty) for _ in range(3))

        def body(step, ids, rows, origin, done_ids, done_lengths, done_origin):
            n = tf.size(ids)
            active = tf.size(origin)
            position = tf.range(n)
            following = tf.roll(ids, -1, 0)
            # The pair (i, i + 1) exists when i + 1 is in the same word.
            paired = (tf.roll(rows, -1, 0) == rows) & (position < n - 1)
            keys = tf.cast(ids, tf.int64) * size + tf.cast(following, tf.int64)
            rank = tf.where(paired, self._merge_ranks.lookup(keys), _NO_MERGE)
            best = tf.math.unsorted_segment_min(rank, rows, active)
            finished = best == _NO_MERGE  # [active]
            symbol_finished = tf.gather(finished, rows)
            lengths = tf.math.bincount(rows, minlength=active, maxlength=active)
            done_ids = done_ids.write(step, tf.boolean_mask(ids, symbol_finished))
            done_lengths = done_lengths.write(step, tf.boolean_mask(lengths, finished))
            done_origin = done_origin.write(step, tf.boolean_mask(origin, finished))

            best_here = (rank == tf.gather(best, rows)) & ~symbol_finished
            if self._merge_all:
                # Consecutive positions of the best pair (a run of one
                # repeated symbol, "a a a") overlap: left to right, every
                # other one merges. A run is the positions of best_here that
                # share the count of non-best positions before them.
                run = tf.where(best_here, tf.cumsum(tf.cast(~best_here, tf.int32)), n)
                run_start = tf.math.unsorted_segment_min(position, run, n + 1)
                offset = position - tf.gather(run_start, run)
                merge = best_here & (offset % 2 == 0)
            else:
                # The leftmost occurrence only: the reference's heap order.
                first = tf.math.unsorted_segment_min(
                    tf.where(best_here, position, n), rows, active
                )
                merge = best_here & (position == tf.gather(first, rows))
            merged_id = tf.gather(self._merged_ids, tf.where(merge, rank, 0))
            ids = tf.where(merge, merged_id, ids)
            # The right half of each merged pair goes, and so do finished words.
            absorbed = tf.concat([[False], merge[:-1]], 0)
            keep = ~absorbed & ~symbol_finished
            still_active = ~finished
            new_row = tf.cumsum(tf.cast(still_active, tf.int32), exclusive=True)
            return (
                step + 1,
                tf.boolean_mask(ids, keep),
                tf.gather(new_row, tf.boolean_mask(rows, keep)),
                tf.boolean_mask(origin, still_active),
                done_ids,
                done_lengths,
                done_origin,
            )

        def more(step, ids, rows, origin, *arrays):
            return tf.size(origin) > 0

        loop = tf.while_loop(
            more,
            body,
            (1, ids, rows, origin, done_ids, done_lengths, done_origin),
            shape_invariants=(
                tf.TensorShape([]),
                tf.TensorShape([None]),
                tf.TensorShape([None]),
                tf.TensorShape([None]),
                None,
                None,
                None,
            ),
        )
        done_ids, done_lengths, done_origin = (a.concat() for a in loop[4:])
        finished = tf.RaggedTensor.from_row_lengths(
            done_ids, tf.cast(done_lengths, tf.int64), validate=False
        )
        # Words finish in any order; put them back in the order of `words`.
        return tf.gather(finished, tf.argsort(done_origin))

    def _tokenize(self, strings):
        pieces = self._pre_tokenize(strings)  # [batch, (pieces)]
        # Text repeats its words: each distinct word is merged once.
        words, index = tf.unique(pieces.flat_values)
        ids = tf.gather(self._bpe(words), index)  # [pieces, (ids)]
        return tf.RaggedTensor.from_row_splits(
            ids, pieces.row_splits, validate=False
        ).merge_dims(1, 2)

    @_no_autograph
    def pre_tokenize(self, text):
        """The words BPE runs on, before bytes and merges: tf.string
        `tf.RaggedTensor` `[batch, (words)]`, the reference's pre-tokens as
        UTF-8 text (`"Hello world!"` -> `["Hello", " world", "!"]`)."""
        return self._pre_tokenize(as_strings(text, "text"))

    @_no_autograph
    def tokenize(self, text):
        """Token ids without special tokens: int32 `tf.RaggedTensor` `[batch, (ids)]`.

        No truncation. A single str gives a batch of one.
        """
        return self._tokenize_graph(as_strings(text, "text"))

    @_no_autograph
    def detokenize(self, ids):
        """The text of token ids (`[batch, (ids)]`, ragged or dense, or one
        list): tf.string `[batch]`. Every id is spelled, special ones too;
        bytes that do not form UTF-8 become U+FFFD, as the reference's
        `decode` does."""
        if not isinstance(ids, (tf.Tensor, tf.RaggedTensor)):
            ids = tf.ragged.constant(ids, dtype=tf.int32)
        if ids.shape.rank == 1:
            ids = ids[None]
        pieces = tf.gather(self._token_bytes, ids)
        joined = tf.strings.reduce_join(pieces, axis=-1)
        return tf.strings.unicode_transcode(
            joined, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD
        )

    # --- packing ------------------------------------------------------------

    @_no_autograph
    def __call__(
        self, text, text_b=None, sequence_length=None, truncation="longest_first", **kwargs
    ):
        # Validate and convert here, before Keras sees the arguments, so a
        # wrong input gets this layer's error rather than a conversion error.
        if truncation != "longest_first":
            # WordPieceTokenizer's "round_robin" is not the reference's, and
            # its trimmer is a tensorflow-text op, which would make a SavedModel
            # need tensorflow-text.
            raise ValueError(
                f"`truncation` must be 'longest_first' (the reference's rule for pairs); "
                f"received {truncation!r}."
            )
        strings, strings_b, sequence_length = packing_arguments(
            text, text_b, sequence_length, ("<s> A </s>", "<s> A </s> </s> B </s>")
        )
        return super().__call__(
            strings,
            text_b=strings_b,
            sequence_length=sequence_length,
            truncation=truncation,
            **kwargs,
        )

    @_no_autograph
    def call(self, text, text_b=None, sequence_length=None, truncation="longest_first"):
        a = self._tokenize_graph(text)
        n1 = tf.cast(a.row_lengths(), tf.int32)
        if text_b is None:
            b = None
            l1 = n1 if sequence_length is None else tf.minimum(n1, sequence_length - 2)
            l2 = None
        else:
            b = self._tokenize_graph(text_b)
            n2 = tf.cast(b.row_lengths(), tf.int32)
            tf.debugging.assert_equal(
                tf.size(n1),
                tf.size(n2),
                message="`text` and `text_b` must hold the same number of examples",
            )
            l1, l2 = n1, n2
            if sequence_length is not None:
                # The reference's rule, shared with WordPieceTokenizer
                # (tokenizers' truncate_encodings; the budget is the length
                # less RoBERTa's four specials).
                l1, l2 = WordPieceTokenizer._trimmed_lengths(
                    a, b, n1, n2, sequence_length - 4, truncation
                )
        return self._pack(a, b, l1, l2, sequence_length)

    def _pack(self, a, b, l1, l2, sequence_length):
        """Dense `<s> A </s> (</s> B </s>) <pad>...` of segments and kept lengths."""

        def head(segment, keep):  # the first `keep` ids of each row
            return tf.ragged.boolean_mask(
                segment,
                tf.ragged.range(segment.row_lengths()) < tf.cast(keep, tf.int64)[:, None],
            )

        batch = tf.shape(l1)[0]

        def special(token_id, count=1):
            return tf.RaggedTensor.from_tensor(tf.fill([batch, count], token_id))

        parts = [special(self.cls_id), head(a, l1), special(self.sep_id)]
        if b is not None:
            parts += [special(self.sep_id), head(b, l2), special(self.sep_id)]
        ids = tf.concat(parts, axis=1)
        shape = None if sequence_length is None else [None, sequence_length]
        token_ids = ids.to_tensor(default_value=self.pad_id, shape=shape)
        padding_mask = tf.ones_like(ids).to_tensor(default_value=0, shape=shape)
        return {
            "token_ids": tf.cast(token_ids, tf.int32),
            # RoBERTa has one segment type: the reference's token_type_ids
            # are all 0, pairs included.
            "segment_ids": tf.zeros_like(token_ids, tf.int32),
            "padding_mask": tf.cast(padding_mask, tf.int32),
        }

    def compute_output_spec(
        self, text, text_b=None, sequence_length=None, truncation="longest_first"
    ):
        shape = (text.shape[0], sequence_length)
        return {k: keras.KerasTensor(shape, dtype="int32") for k in INPUT_NAMES}

    # --- construction from files and configs ---------------------------------

    @classmethod
    def from_tokenizer_json(cls, tokenizer_json, **kwargs):
        """The tokenizer a `tokenizers` tokenizer.json describes (a path, or
        the parsed dict): its BPE vocabulary and merges, its ByteLevel
        pre-tokenizer's `add_prefix_space` and its RobertaProcessing's
        `<s>`/`</s>` spellings. `kwargs` override (e.g. `pad_token=`).

        Anything this layer would compute differently is refused, naming the
        field: a normalizer, another pre-tokenizer or post-processor, BPE
        dropout, subword prefixes or suffixes, byte fallback, ignore_merges.
        """
        if isinstance(tokenizer_json, (str, os.PathLike)):
            where = os.fspath(tokenizer_json)
            try:
                spec = json.loads(_read_text(tokenizer_json, "tokenizer.json"))
            except json.JSONDecodeError as e:
                raise ValueError(
                    f"{where}: not JSON ({e.msg} at line {e.lineno}); pass the checkpoint's "
                    "tokenizer.json."
                ) from None
        elif isinstance(tokenizer_json, dict):
            where, spec = "the tokenizer.json dict", tokenizer_json
        else:
            raise TypeError(
                "`tokenizer_json` must be the path of a tokenizer.json or its parsed dict; "
                f"received a {type(tokenizer_json).__name__}."
            )

        def refuse(field, value, why):
            raise ValueError(
                f"{where}: {field} is {json.dumps(value)[:120]}; {why}, which "
                f"{cls.__name__} does not do (it is GPT-2/RoBERTa's byte-level BPE). Use "
                "transformers for this tokenizer."
            )

        model = spec.get("model") or {}
        if model.get("type") != "BPE":
            refuse("model.type", model.get("type"), "the model is not BPE")
        for field, allowed in (
            ("dropout", (None,)),
            ("continuing_subword_prefix", (None, "")),
            ("end_of_word_suffix", (None, "")),
            ("byte_fallback", (None, False)),
            ("ignore_merges", (None, False)),
        ):
            if model.get(field) not in allowed:
                refuse(f"model.{field}", model.get(field), f"it sets BPE's {field}")
        if spec.get("normalizer") is not None:
            refuse("normalizer", spec["normalizer"], "it normalizes text before splitting")
        pre = spec.get("pre_tokenizer") or {}
        if pre.get("type") != "ByteLevel" or not pre.get("use_regex", True):
            refuse("pre_tokenizer", pre, "it does not split as GPT-2's ByteLevel does")
        post = spec.get("post_processor")
        if post is not None and post.get("type") != "RobertaProcessing":
            refuse("post_processor", post, "it packs sequences otherwise than RoBERTa")
        vocab = dict(model.get("vocab") or {})
        # Special tokens may be listed only among the added tokens.
        for added in spec.get("added_tokens") or []:
            vocab.setdefault(added.get("content"), added.get("id"))
        options = {"add_prefix_space": bool(pre.get("add_prefix_space", False))}
        if post is not None:
            options.update(sep_token=post["sep"][0], cls_token=post["cls"][0])
        options.update(kwargs)
        return cls(vocab, model.get("merges") or [], **options)

    @classmethod
    def from_config(cls, config):
        """The tokenizer a saved config describes: `vocabulary` and `merges`
        must be lists of str, as `get_config` saves them (a path is refused
        unopened, `refuse_path_in_config`)."""
        vocabulary = config.get("vocabulary")
        if not (
            isinstance(vocabulary, list) and all(isinstance(t, str) for t in vocabulary)
        ):
            refuse_path_in_config(
                vocabulary, "vocabulary", cls.__name__, "the list of tokens (str)"
            )
        merges = config.get("merges")
        if not (isinstance(merges, list) and all(isinstance(m, str) for m in merges)):
            refuse_path_in_config(
                merges, "merges", cls.__name__, 'the list of merges ("left right" str)'
            )
        return super().from_config(config)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocabulary": self.vocabulary,
                "merges": self.merges,
                "add_prefix_space": self.add_prefix_space,
                "cls_token": self.cls_token,
                "sep_token": self.sep_token,
                "pad_token": self.pad_token,
                "unk_token": self.unk_token,
                "mask_token": self.mask_token,
            }
        )
        return config
