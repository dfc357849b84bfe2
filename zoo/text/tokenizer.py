"""WordPiece tokenizer and BERT input packer, in TensorFlow graph ops.

    >>> tok = WordPieceTokenizer(minilm_checkpoint_dir() / "vocab.txt")
    >>> batch = tok(["A man is playing a guitar."], sequence_length=16)
    >>> batch["token_ids"][0, :10].numpy()
    array([  101,  1037,  2158,  2003,  2652,  1037,  2858,  1012,   102,     0], dtype=int32)
    >>> tok.tokenize("Héllo wörld").to_list()
    [[7592, 2088]]

The ids are those of Hugging Face's `BertTokenizerFast` with the same
vocabulary (the reference: `tests/text/test_tokenizer.py` checks every
token of thousands of real texts and random Unicode strings), computed with
TensorFlow ops only, so the same layer tokenizes eagerly, inside
`tf.data.Dataset.map` and inside an exported SavedModel.

How it is built, and why not on `FastBertTokenizer` alone: tensorflow-text's
`FastBertTokenizer` is a normalizer (`FastBertNormalizer`) followed by
`FastWordpieceTokenizer`. Its normalizer does not match the reference:

- it case-folds with NFKC (the reference only lowercases): `ﬁ`, `①`,
  full-width `Ｆ`, `ß`, `ᾳ` became other tokens;
- it turns control characters (e.g. Windows-1252 bytes read as Latin-1,
  `\\x00`) into spaces, where the reference deletes them and so joins the
  word around them; it keeps U+FFFD and private-use characters, which the
  reference deletes;
- its word-length limit counts UTF-8 bytes, the reference's counts
  characters (a 60-letter Cyrillic word became `[UNK]`);
- its Unicode tables differ from the reference's for ~1,600 code points.

So normalization and word splitting are done by `normalization.py` (exact
on every code point and on random mark-heavy text, all four
lowercase/strip-accents settings), and each word goes to
`FastWordpieceTokenizer` (the greedy longest-match WordPiece half of
`FastBertTokenizer`, which agrees with the reference).

The `flavor="keras_hub"` tokenizer gives keras-hub's `WordPieceTokenizer`
ids instead (accents kept unless asked, NFKC case folding per word, control
characters as separators, the word limit in bytes): it runs keras-hub's own
tensorflow-text ops (`keras_hub_split`) before the same
`FastWordpieceTokenizer`, for models trained in keras-hub.

Special tokens typed in text: a user's literal "[CLS]" is ordinary text
("[", "cl", "##s", "]"), never the special id, so text cannot inject
separators or masks. The reference maps it to the special id unless called
with `split_special_tokens=True`, which is how the tests compare.

Not in LiteRT: the TFLite converter (builtins only) rejects
`UnicodeDecode`, `UnicodeEncode` and `UpperBound` (`tf.searchsorted`), which
have no TFLite kernels. Phone artifacts take token ids; the app tokenizes.
"""

from __future__ import annotations

import os

import keras
import numpy as np
import tensorflow as tf
import tensorflow_text as tft

from zoo.text import description as text_description
from zoo.text import keras_hub_split, normalization
from zoo.text.packing import TRUNCATION_STRATEGIES, TemplatePacker  # noqa: F401  (re-exported)
from zoo.text.text_inputs import (  # as_strings, check_text: also imported from here
    as_strings,  # noqa: F401
    check_text,  # noqa: F401
    text_batch,
)
from zoo.text.text_inputs import describe as _describe
from zoo.text.vocabulary_file import (  # the vocab.txt helpers: also imported from here
    MAX_TOKEN_BYTES,  # noqa: F401
    MAX_TOKENIZER_FILE_BYTES,  # noqa: F401
    MAX_VOCABULARY_TOKENS,  # noqa: F401
    SUFFIX_INDICATOR,  # noqa: F401
    check_vocabulary_tokens,
    read_tokenizer_file,  # noqa: F401
    read_vocabulary,
    vocabulary_sha256,  # noqa: F401
    vocabulary_text,  # noqa: F401
)

# "bert": BERT's and HF's rule (BertTokenizerFast's ids); "keras_hub":
# keras-hub's WordPieceTokenizer's (zoo.text.keras_hub_split).
FLAVORS = ("bert", "keras_hub")

# The graph code has no Python control flow on tensors (tf.cond where
# needed). Left to AutoGraph, a tf.function or tf.data.map spent 10-30 s
# re-parsing it and tensorflow-text's code on every trace.
_no_autograph = tf.autograph.experimental.do_not_convert


def _load_vocabulary(vocabulary):
    if isinstance(vocabulary, (str, os.PathLike)):
        return read_vocabulary(vocabulary), f"file {os.fspath(vocabulary)!r}"
    if isinstance(vocabulary, (list, tuple)) and all(
        isinstance(t, str) for t in vocabulary
    ):
        source = f"list of {len(vocabulary)} tokens"
        check_vocabulary_tokens(vocabulary, f"`vocabulary` ({source})")
        return list(vocabulary), source
    raise TypeError(
        "`vocabulary` must be the path of a vocab.txt file (one token per line) or a list of "
        f"str tokens; received {_describe(vocabulary)}."
    )


def refuse_path_in_config(value, field, who, saved_form):
    """Raise ValueError unless `value`, the `field` of a saved config, is
    inline data. A config comes from a model file that may not be trusted:
    a path there is refused as it is, never opened (a FIFO would hang the
    load, /dev/zero exhaust memory, another file be read as this one's)."""
    if isinstance(value, str):
        received = f"the string {value[:200]!r}"
    else:
        received = _describe(value)
    raise ValueError(
        f"{who} config: `{field}` must be {saved_form}, as `get_config` saves it; "
        f"received {received}. A model file's config is not trusted to name files, so "
        f"a path there is not opened: re-save the model with zoo, or build the "
        f"{who} yourself from a file you trust."
    )


@keras.saving.register_keras_serializable(package="zoo")
class WordPieceTokenizer(TemplatePacker, keras.layers.Layer):
    """BERT WordPiece tokenizer and packer, id-for-id equal to `BertTokenizerFast`
    (flavor "bert") or to keras-hub's `BertTokenizer` (flavor "keras_hub").

    Args:
        vocabulary: path of a `vocab.txt` (one token per line, id = line
            number) or a list of tokens.
        lowercase: lowercase text (uncased models). Flavor "bert" lowercases
            each character; "keras_hub" case-folds each word with NFKC
            (`ﬁ` -> `fi`), as keras-hub does.
        strip_accents: decompose (NFD) and drop combining marks. `None`
            means the same as `lowercase`, as BERT uncased does (flavor
            "bert" only; keras-hub sets it apart, and keeps accents by default).
        max_chars_per_word: the word limit: a word (after splitting at
            whitespace and punctuation) longer than this becomes `[UNK]`.
            It counts characters with flavor "bert" (BERT's and HF's rule)
            and UTF-8 bytes with "keras_hub" (tensorflow-text's, which
            keras-hub keeps at 100); `max_word_unit` says which.
        flavor: "bert" (BERT's and HF's rule) or "keras_hub" (keras-hub's
            `WordPieceTokenizer`: accents stripped only when asked, control
            and format characters split words instead of being deleted,
            only ASCII whitespace splits, words case-folded with NFKC after
            splitting; `zoo.text.keras_hub_split`).
        cjk: put each CJK ideograph in a word of its own (BERT's rule,
            keras-hub's `split_on_cjk`). Flavor "bert" implements only True.
        cls_token, sep_token, pad_token, unk_token, mask_token: spellings of
            the special tokens; each must be in the vocabulary.

    Calling the layer packs one text, or a pair, per example:

        >>> batch = tok(["first text", "second"], sequence_length=128)
        >>> sorted(batch)   # int32 [batch, 128] each; padding_mask 1 = real token
        ['padding_mask', 'segment_ids', 'token_ids']
        >>> batch = tok(["question?"], text_b=["context ..."], sequence_length=384)
        >>> # [CLS] A [SEP] B [SEP] [PAD]...; segment_ids 0 up to the first [SEP], then 1

    Text may be a str (a batch of one), a list of str, a numpy array of str
    or a 1-D `tf.string` tensor (e.g. a batch inside `tf.data`).

    `get_config()` stores the token list itself rather than the path: a
    saved `.keras` model must load on a machine where the original
    vocab.txt path does not exist (30k tokens add ~300 kB of JSON).
    """

    def __init__(
        self,
        vocabulary,
        lowercase=True,
        strip_accents=None,
        max_chars_per_word=100,
        cls_token="[CLS]",
        sep_token="[SEP]",
        pad_token="[PAD]",
        unk_token="[UNK]",
        mask_token="[MASK]",
        flavor="bert",
        cjk=True,
        **kwargs,
    ):
        super().__init__(**kwargs)
        _check_flavor_arguments(flavor, lowercase, strip_accents, cjk)
        if keras.backend.backend() != "tensorflow":
            # On JAX and PyTorch this layer still runs TensorFlow ops (in
            # tf.data, which feeds `fit` on every backend; issue #39): its
            # string inputs reach `call` as they are, not as backend arrays.
            self._convert_input_args = False
            self._allow_non_tensor_positional_args = True
        tokens, source = _load_vocabulary(vocabulary)
        if (
            not isinstance(max_chars_per_word, int)
            or isinstance(max_chars_per_word, bool)
            or max_chars_per_word < 1
        ):
            raise ValueError(
                f"`max_chars_per_word` must be a positive int; received {max_chars_per_word!r}."
            )
        self._vocabulary = tokens
        self._token_to_id = {}
        for i, t in enumerate(tokens):
            first = self._token_to_id.setdefault(t, i)
            if first != i:
                # tensorflow-text's WordPiece table refuses repeats; ids after
                # a repeat would also shift against the model's embedding.
                raise ValueError(
                    f"The vocabulary ({source}) lists {t!r} twice, as ids {first} and {i} "
                    f"(lines {first + 1} and {i + 1}); each token must appear once. It is "
                    "not the vocabulary the model was trained with: use the checkpoint's "
                    "own vocab.txt."
                )
        self.lowercase = bool(lowercase)
        self.strip_accents = None if strip_accents is None else bool(strip_accents)
        self.max_chars_per_word = max_chars_per_word
        self.flavor = flavor
        self.cjk = bool(cjk)
        self._set_special_tokens(
            dict(
                cls=cls_token, sep=sep_token, pad=pad_token, unk=unk_token, mask=mask_token
            ),
            f"in the vocabulary ({source})",
            "Use a BERT vocabulary that contains it, or pass `{argument}=` with the "
            "vocabulary's own spelling of that token.",
        )
        self._wordpiece = tft.FastWordpieceTokenizer(
            vocab=tokens,
            suffix_indicator="##",
            # Flavor "bert": the character limit is applied in `tokenize`;
            # this byte limit (4 bytes per character at most) must never be
            # the one that acts. Flavor "keras_hub": this is keras-hub's limit.
            max_bytes_per_word=max_chars_per_word
            if flavor == "keras_hub"
            else 4 * max_chars_per_word,
            token_out_type=tf.int32,
            unknown_token=unk_token,
            # Words arrive already split by normalization.split_words.
            no_pretokenization=True,
        )
        # Tokenization is ~400 small ops: traced once into a graph, an eager
        # call costs one function call instead of 400 op dispatches. Inside
        # tf.data or an outer tf.function it is called as a nested function.
        self._tokenize_graph = tf.function(
            self._tokenize,
            input_signature=[tf.TensorSpec([None], tf.string)],
            autograph=False,
        )
        self.built = True

    def _set_special_tokens(self, tokens, where, remedy):
        """Set `<name>_token` and `<name>_id` for each special token (`tokens`:
        name -> spelling, names cls, sep, pad, unk, mask), looked up in
        `self._token_to_id`. A spelling that is not a token is a ValueError
        naming it, its argument, where it was looked for (`where`) and what
        to do (`remedy`, in which `{argument}` is the argument's name). The
        packer writes these ids into every sequence, so each must be a token
        of this vocabulary. Both tokenizers check their specials here."""
        for name, token in tokens.items():
            argument = f"{name}_token"
            if token not in self._token_to_id:
                raise ValueError(
                    f"Cannot find special token {token!r} (`{argument}`) {where}. "
                    + remedy.format(argument=argument)
                )
            setattr(self, argument, token)
            setattr(self, f"{name}_id", self._token_to_id[token])

    # --- vocabulary ---------------------------------------------------------

    @property
    def vocabulary(self):
        """The tokens, index = id (a copy)."""
        return list(self._vocabulary)

    @property
    def vocabulary_size(self):
        return len(self._vocabulary)

    def id_to_token(self, token_id):
        """`1037 -> "a"`. Raises `IndexError` for an id outside the vocabulary."""
        token_id = int(token_id)
        if not 0 <= token_id < len(self._vocabulary):
            raise IndexError(
                f"Token id {token_id} is outside the vocabulary (0 to {len(self._vocabulary) - 1})."
            )
        return self._vocabulary[token_id]

    def token_to_id(self, token):
        """`"a" -> 1037`. Raises `KeyError` for a token not in the vocabulary."""
        if token not in self._token_to_id:
            raise KeyError(
                f"Token {token!r} is not in the vocabulary; tokenize text with `tokenize()` instead."
            )
        return self._token_to_id[token]

    # --- tokenization -------------------------------------------------------

    @property
    def _strip_accents(self):
        return self.lowercase if self.strip_accents is None else bool(self.strip_accents)

    @property
    def max_word_unit(self):
        """What `max_chars_per_word` counts: "characters" or "bytes" (UTF-8)."""
        return "bytes" if self.flavor == "keras_hub" else "characters"

    @property
    def description(self):
        """This tokenizer as a tokenization description (`zoo.text.description`)."""
        return text_description.wordpiece(
            lowercase=self.lowercase,
            strip_accents=self._strip_accents,
            flavor=self.flavor,
            cjk=self.cjk,
            unk_token=self.unk_token,
            max_word=self.max_chars_per_word,
            cls=self.cls_token,
            sep=self.sep_token,
            pad=self.pad_token,
            mask=self.mask_token,
        )

    @classmethod
    def from_description(cls, vocabulary, description, **kwargs):
        """The tokenizer that implements `description` (a tokenization
        description) on `vocabulary` (a vocab.txt path or a list of tokens);
        `DescriptionError` naming the step it does not implement."""
        args = text_description.wordpiece_arguments(description)
        return cls(
            vocabulary,
            lowercase=args["lowercase"],
            strip_accents=args["strip_accents"],
            max_chars_per_word=args["max_word"],
            cls_token=args["cls"],
            sep_token=args["sep"],
            pad_token=args["pad"],
            unk_token=args["unk_token"],
            mask_token=args["mask"],
            flavor=args["flavor"],
            cjk=args["cjk"],
            **kwargs,
        )

    @staticmethod
    def _as_strings(text, name):
        """Return `(1-D tf.string tensor, was_scalar)` or raise naming `name`."""
        return text_batch(text, name)

    def _tokenize(self, strings):
        if self.flavor == "keras_hub":
            words = keras_hub_split.words(
                strings, self.lowercase, bool(self.strip_accents), self.cjk
            )
            return self._wordpiece.tokenize(words).merge_dims(1, 2)
        code_points = tf.strings.unicode_decode(strings, "UTF-8", errors="replace")
        code_points = normalization.normalize_code_points(
            code_points, self.lowercase, self._strip_accents
        )
        words, words_per_text = normalization.split_words(code_points)
        word_strings = tf.strings.unicode_encode(words, "UTF-8")
        # The reference turns a word of more than max_chars_per_word
        # characters into one [UNK]; the unknown token's own spelling is a
        # word that the WordPiece model maps to exactly that id.
        too_long = words.row_lengths() > self.max_chars_per_word
        word_strings = tf.where(too_long, self.unk_token, word_strings)
        pieces = self._wordpiece.tokenize(word_strings)  # [num_words, (pieces)]
        return tf.RaggedTensor.from_row_lengths(
            pieces, words_per_text, validate=False
        ).merge_dims(1, 2)

    @_no_autograph
    def tokenize(self, text):
        """Word-piece ids without special tokens: int32 `tf.RaggedTensor` `[batch, (pieces)]`.

        No truncation. A single str gives a batch of one.

            >>> tok.tokenize(["Hello, world!"]).to_list()
            [[7592, 1010, 2088, 999]]
        """
        strings, _ = self._as_strings(text, "text")
        return self._tokenize_graph(strings)

    @classmethod
    def from_config(cls, config):
        """The tokenizer a saved config describes: `vocabulary` must be the
        list of tokens (a path is refused unopened, `refuse_path_in_config`)."""
        vocabulary = config.get("vocabulary")
        if not (
            isinstance(vocabulary, list) and all(isinstance(t, str) for t in vocabulary)
        ):
            refuse_path_in_config(
                vocabulary, "vocabulary", cls.__name__, "the list of tokens (str)"
            )
        return super().from_config(config)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocabulary": self.vocabulary,
                "lowercase": self.lowercase,
                "strip_accents": self.strip_accents,
                "max_chars_per_word": self.max_chars_per_word,
                "cls_token": self.cls_token,
                "sep_token": self.sep_token,
                "pad_token": self.pad_token,
                "unk_token": self.unk_token,
                "mask_token": self.mask_token,
                "flavor": self.flavor,
                "cjk": self.cjk,
            }
        )
        return config


def _check_flavor_arguments(flavor, lowercase, strip_accents, cjk):
    """Raise naming the argument unless the flavor arguments are of the
    right type and the flavor implements them ("false" is not False)."""
    if not isinstance(flavor, str) or flavor not in FLAVORS:
        raise ValueError(
            f"`flavor` must be one of {', '.join(map(repr, FLAVORS))}; received {flavor!r}. "
            "'bert' is BERT's and Hugging Face's rule, 'keras_hub' keras-hub's."
        )
    for name, value, allowed in (
        ("lowercase", lowercase, "True or False"),
        ("strip_accents", strip_accents, "True, False or None (the same as `lowercase`)"),
        ("cjk", cjk, "True or False"),
    ):
        if not isinstance(value, (bool, np.bool_)) and not (
            name == "strip_accents" and value is None
        ):
            raise TypeError(f"`{name}` must be {allowed}; received {value!r}.")
    if flavor == "keras_hub" and strip_accents is None:
        raise ValueError(
            "`strip_accents` must be True or False with flavor='keras_hub' (keras-hub sets it "
            "apart from `lowercase`, and keeps accents by default); received None."
        )
    if flavor == "bert" and not cjk:
        raise ValueError(
            "`cjk` must be True with flavor='bert': this tokenizer implements BERT's rule "
            "with CJK ideographs split one by one only; received cjk=False. Use "
            "flavor='keras_hub' for keras-hub's split_on_cjk=False."
        )


def split_pairs(texts):
    """`(first texts, second texts or None)` of a list of str or of pairs."""
    if texts and isinstance(texts[0], (tuple, list)):
        return [t[0] for t in texts], [t[1] for t in texts]
    return list(texts), None


def tokenize_texts(tokenizer, texts, sequence_length):
    """Numpy ids `{name: int32 [N, L]}` for a list of texts (or of
    `(text, text_b)` pairs), tokenized 256 at a time."""
    a, b = split_pairs(texts)
    out = {}
    for start in range(0, len(a), 256):
        chunk = tokenizer(
            a[start : start + 256],
            text_b=None if b is None else b[start : start + 256],
            sequence_length=sequence_length,
        )
        for k, v in chunk.items():
            out.setdefault(k, []).append(np.asarray(v))
    return {k: np.concatenate(v) for k, v in out.items()}


def vocabulary_casing_problem(tokens, lowercase):
    """Why `lowercase` cannot go with this vocabulary, or None. An uncased
    vocabulary has no token that lowercasing changes (brackets aside); a
    cased one has many."""
    cased = sum(
        1 for t in tokens if t != t.lower() and not (t[:1] == "[" and t[-1:] == "]")
    )
    if not lowercase and cased == 0:
        return (
            "lowercase is false but the vocabulary is uncased (no token has a capital "
            "letter): capitalised words would tokenize into other pieces than in training"
        )
    if lowercase and cased > 0.01 * len(tokens):
        return (
            f"lowercase is true but the vocabulary is cased ({cased:,} tokens with "
            "capitals): those pieces could never be produced"
        )
    return None
