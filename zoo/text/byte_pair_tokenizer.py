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

1. Pre-tokenization: GPT-2's regex split, written for RE2, which has no
   lookahead (`zoo.text.byte_level`, which also lists where keras-hub's
   `BytePairTokenizer` splits otherwise).
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
4. Packing, RoBERTa's (`zoo.text.packing`, template "roberta"): `<s> A </s>`
   and `<s> A </s> </s> B </s>`, truncated longest-first as the reference
   does, padded with `<pad>`.

Special tokens typed in text ("<s>", "<mask>") are ordinary text, never the
special ids, as `WordPieceTokenizer` treats "[CLS]" (the reference maps them
to the special ids unless called with `split_special_tokens=True`).

The files (vocab.json, merges.txt, tokenizer.json) are read and checked by
`zoo.text.byte_pair_files`.
"""

from __future__ import annotations

import json
import os
import pathlib

import keras
import numpy as np
import tensorflow as tf

from zoo.text import byte_level
from zoo.text import description as text_description
from zoo.text.byte_level import byte_alphabet, symbol_bytes
from zoo.text.byte_pair_files import (  # read_*: also imported from here
    merge_list,
    read_merges_txt,  # noqa: F401
    read_text,
    read_vocab_json,  # noqa: F401
    vocabulary_list,
)
from zoo.text.packing import TemplatePacker
from zoo.text.text_inputs import as_strings
from zoo.text.tokenizer import refuse_path_in_config

_NO_MERGE = np.iinfo(np.int32).max  # rank of a pair that no merge joins

# The graph code has no Python control flow on tensors (tf.while_loop and
# tf.where); AutoGraph would only re-parse it on every trace.
_no_autograph = tf.autograph.experimental.do_not_convert


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
class BytePairTokenizer(TemplatePacker, keras.layers.Layer):
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
    example without truncating. `pack_ids(a, b)` packs ids that are
    already tokenized. Pairs are truncated longest-first only: the reference
    has no other rule, and tensorflow-text's round robin trimmer would make
    a SavedModel need tensorflow-text.

    `get_config()` stores the tokens and merges themselves, never a path: a
    saved `.keras` model loads where the files do not exist, and a config
    (untrusted input) is never allowed to open files (`from_config`).
    """

    packing_template = "roberta"
    truncation_strategies = ("longest_first",)
    truncation_refusal = "the reference's rule for pairs"

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
        tokens, source = vocabulary_list(vocabulary)
        pairs, merges_source = merge_list(merges)
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
    def description(self):
        """This tokenizer as a tokenization description (`zoo.text.description`)."""
        return text_description.byte_pair(
            add_prefix_space=self.add_prefix_space,
            unk_token=self.unk_token,
            cls=self.cls_token,
            sep=self.sep_token,
            pad=self.pad_token,
            mask=self.mask_token,
        )

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
        if not ranks:
            # No merges (bytes only): a hash table cannot be empty, and key
            # -1 is no pair's (keys are >= 0).
            keys, values = np.array([-1], np.int64), np.array([_NO_MERGE], np.int32)
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
            [symbol_bytes(t, byte_of) for t in self._vocabulary], tf.string
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
        return byte_level.pre_tokenize(strings, self.add_prefix_space)

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
                spec = json.loads(read_text(tokenizer_json, "tokenizer.json"))
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
