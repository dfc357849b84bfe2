"""SentencePiece tokenizer and BERT-style packer for ALBERT checkpoints that
ship `spiece.model` instead of a WordPiece `vocab.txt`.

    >>> tok = SentencePieceTokenizer("path/to/albert/spiece.model")
    >>> tok(["Hello, Mr. Darcy."], sequence_length=16)["token_ids"]

Ids equal those of transformers' `AlbertTokenizer` built from the same
`spiece.model` (tests/text/test_sentencepiece_tokenizer.py, on real Austen
sentences and pairs): ALBERT's pre-normalisation (`` and '' -> ", NFKD and
combining marks dropped unless accents are kept, lowercase), then the
model's own SentencePiece normaliser and segmentation, run by
tensorflow-text's `SentencepieceTokenizer` (graph ops, so the layer works
eagerly, in `tf.data` and in a SavedModel), then `[CLS] A [SEP] (B [SEP])`
packing by `zoo.text.packing` (template "bert", as `WordPieceTokenizer`
packs; the same truncation rules).

What it is not (yet): the zoo's model directories, `zoo export`'s
artifacts and the Android app carry a WordPiece vocab.txt; this tokenizer
is for library use beside `zoo.checkpoints.load_hf_encoder` (BUILD_NOTES.md,
"Checkpoint formats"). tensorflow-text's SentencePiece op has no TFLite kernel.
"""

from __future__ import annotations

import base64
import binascii
import pathlib

import keras
import tensorflow as tf
import tensorflow_text as tft

from zoo.text import description as text_description
from zoo.text.tokenizer import WordPieceTokenizer, refuse_path_in_config
from zoo.text.vocabulary_file import MAX_TOKENIZER_FILE_BYTES, read_tokenizer_file

BASE64 = "base64:"


def _model_bytes(model) -> bytes:
    if isinstance(model, (bytes, bytearray)):
        if len(model) > MAX_TOKENIZER_FILE_BYTES:
            raise ValueError(
                f"SentencePieceTokenizer: {len(model):,} bytes of model, over the "
                f"{MAX_TOKENIZER_FILE_BYTES:,}-byte limit (ALBERT's spiece.model is 0.8 MB); "
                "pass the checkpoint's spiece.model."
            )
        return bytes(model)
    path = pathlib.Path(model)
    if path.is_dir():
        path = path / "spiece.model"
    if not path.is_file():
        raise FileNotFoundError(
            f"SentencePieceTokenizer: no SentencePiece model at {path}; pass the "
            "checkpoint's spiece.model (or the directory holding it), or its bytes."
        )
    # A regular file of at most 64 MB, read no further (read_tokenizer_file).
    return read_tokenizer_file(path, "SentencePiece model")


@keras.saving.register_keras_serializable(package="zoo")
class SentencePieceTokenizer(WordPieceTokenizer):
    """ALBERT's tokenizer: a SentencePiece model plus BERT packing.

    Args:
        model: path of `spiece.model` (or its directory), or the model bytes.
        lowercase: lowercase text (ALBERT's `do_lower_case`, True for the
            released models).
        strip_accents: NFKD and drop combining marks (ALBERT's
            `keep_accents=False`, the default). `None` means True.
        cls_token, sep_token, pad_token, unk_token, mask_token: ALBERT's
            spellings by default; each must be a piece of the model.

    The call contract is `WordPieceTokenizer`'s: `tok(text, text_b=None,
    sequence_length=None)` returns int32 `token_ids`, `segment_ids`,
    `padding_mask`; `tokenize(text)` the ragged piece ids. `vocabulary` is
    the model's pieces, id = index. `get_config()` stores the model bytes.
    """

    def __init__(
        self,
        model,
        lowercase=True,
        strip_accents=None,
        cls_token="[CLS]",
        sep_token="[SEP]",
        pad_token="<pad>",
        unk_token="<unk>",
        mask_token="[MASK]",
        **kwargs,
    ):
        # WordPieceTokenizer.__init__ builds a WordPiece table; only the
        # Layer's is wanted. Everything the inherited packer reads is set here.
        keras.layers.Layer.__init__(self, **kwargs)
        if isinstance(model, str) and model.startswith(BASE64):
            try:
                model = base64.b64decode(model[len(BASE64) :], validate=True)
            except binascii.Error as e:
                raise ValueError(
                    f"SentencePieceTokenizer: `model` starts with {BASE64!r} but the rest "
                    f"is not base64 ({e}); give the bytes of a spiece.model, or its path."
                ) from None
        self._model = _model_bytes(model)
        try:
            self._sentencepiece = tft.SentencepieceTokenizer(
                model=self._model, out_type=tf.int32
            )
            size = int(self._sentencepiece.vocab_size())
        except (tf.errors.OpError, ValueError):
            # The op's own message is a C++ source location and a protobuf call.
            raise ValueError(
                f"SentencePieceTokenizer: `model` ({len(self._model):,} bytes) is not a "
                "SentencePiece model (it does not parse as one); give the checkpoint's "
                "own spiece.model."
            ) from None
        pieces = self._sentencepiece.id_to_string(tf.range(size)).numpy()
        self._vocabulary = [p.decode("utf-8") for p in pieces]
        self._token_to_id = {}
        for i, piece in enumerate(self._vocabulary):
            self._token_to_id.setdefault(piece, i)
        self.lowercase = bool(lowercase)
        self.strip_accents = strip_accents
        self.max_chars_per_word = None
        self._set_special_tokens(
            dict(
                cls=cls_token, sep=sep_token, pad=pad_token, unk=unk_token, mask=mask_token
            ),
            f"among the SentencePiece model's {size} pieces",
            "Use the checkpoint's own spiece.model, or pass `{argument}=` with the model's "
            "spelling of it.",
        )
        self._tokenize_graph = tf.function(
            self._tokenize,
            input_signature=[tf.TensorSpec([None], tf.string)],
            autograph=False,
        )
        self.built = True

    @property
    def _strip_accents(self):
        return True if self.strip_accents is None else bool(self.strip_accents)

    @property
    def description(self):
        """This tokenizer as a tokenization description (`zoo.text.description`):
        ALBERT's pre-normalisation, then the model's own (metaspace, Unigram)."""
        return text_description.sentencepiece(
            lowercase=self.lowercase,
            keep_accents=not self._strip_accents,
            cls=self.cls_token,
            sep=self.sep_token,
            unk_token=self.unk_token,
            pad=self.pad_token,
            mask=self.mask_token,
        )

    def _tokenize(self, strings):
        # ALBERT's own pre-normalisation, before the model's normaliser.
        text = tf.strings.regex_replace(strings, "``|''", '"')
        if self._strip_accents:
            text = tft.normalize_utf8(text, "NFKD")
            text = tf.strings.regex_replace(text, r"\p{Mn}", "")
        if self.lowercase:
            text = tf.strings.lower(text, encoding="utf-8")
        return self._sentencepiece.tokenize(text)

    @classmethod
    def from_config(cls, config):
        """The tokenizer a saved config describes: `model` must be the model
        bytes as `get_config` saves them ("base64:..."); a path is refused
        unopened (`refuse_path_in_config`)."""
        model = config.get("model")
        if not (isinstance(model, str) and model.startswith(BASE64)):
            refuse_path_in_config(
                model, "model", cls.__name__, f'the model bytes as "{BASE64}..." text'
            )
        # Layer's own from_config: WordPieceTokenizer's checks a vocabulary.
        return super(WordPieceTokenizer, cls).from_config(config)

    def get_config(self):
        config = keras.layers.Layer.get_config(self)
        config.update(
            {
                "model": BASE64 + base64.b64encode(self._model).decode("ascii"),
                "lowercase": self.lowercase,
                "strip_accents": self.strip_accents,
                "cls_token": self.cls_token,
                "sep_token": self.sep_token,
                "pad_token": self.pad_token,
                "unk_token": self.unk_token,
                "mask_token": self.mask_token,
            }
        )
        return config
