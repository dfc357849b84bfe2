"""Encoder configurations and the preset table.

A config is data: a frozen dataclass validated on construction, with no
knowledge of the Keras classes (this module imports nothing of the zoo).
Models take its fields as flat keyword arguments (so `get_config()` stays
plain JSON); `zoo.models.build_encoder(config)` returns the right class.

Presets, with the exact parameter counts that `num_parameters()` computes and
the tests check against the built Keras models::

    bert_tiny          L2  H128  A2   vocab 30522        4,385,920  # tests, demos
    minilm_l6_h384     L6  H384  A12  vocab 30522       22,713,216  # all-MiniLM-L6-v2
    distil_bert_base   L6  H768  A12  no segments/pooler 66,362,880  # DistilBERT
    bert_base          L12 H768  A12                   109,482,240  # BERT-Base
    bert_large         L24 H1024 A16                   335,141,888  # BERT-Large
    albert_base        L12 H768  A12  E128 vocab 30000  11,683,584  # ALBERT-Base
    albert_large       L24 H1024 A16  E128 vocab 30000  17,683,968  # ALBERT-Large
    roberta_base       L12 H768  A12  vocab 50265      124,645,632  # RoBERTa-Base
    distilroberta_base L6  H768  A12  vocab 50265       82,118,400  # DistilRoBERTa

HF's `BertModel` reports 512 more parameters for MiniLM because it counts its
`position_ids` buffer; that buffer is not a weight and is not stored here.
The ALBERT counts equal `transformers.AlbertModel`'s (which stores its
buffers as non-persistent): one shared layer, embeddings of width E = 128
projected to H, the pooler included. The RoBERTa counts equal
`transformers.RobertaModel`'s (pooler included; its `position_ids` and
`token_type_ids` buffers are not parameters): RoBERTa's position table has
`max_sequence_length + 2` rows (HF's `max_position_embeddings` 514 for 512
tokens), since positions start after the padding id (1).
"""

from __future__ import annotations

import dataclasses
import json
import math
import numbers
from typing import Any

FAMILIES = ("bert", "distilbert", "albert", "roberta")
# The feed-forward activation. "gelu" is the exact erf form (BERT, MiniLM);
# "gelu_tanh" is the tanh approximation 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3)))
# that HF calls "gelu_new" and ALBERT v2's checkpoints were trained with.
# They differ by up to ~1e-3 per unit, so each is its own, exact, choice.
ACTIVATIONS = ("gelu", "gelu_tanh")

# The encoder's inputs, by name, everywhere: tokenizer, datasets, heads,
# exported signatures, metadata.json and the Android app.
INPUT_NAMES = ("token_ids", "segment_ids", "padding_mask")
# RoBERTa's padding id: `<pad>` is id 1, and position ids count from
# ROBERTA_PADDING_IDX + 1 (HF's `create_position_ids_from_input_ids`), so its
# position table has max_sequence_length + ROBERTA_PADDING_IDX + 1 rows.
ROBERTA_PADDING_IDX = 1
# The sequence length (tokens, with [CLS] and [SEP]) used when none is given.
DEFAULT_SEQUENCE_LENGTH = 128


# The ranges every config must fall in, wherever it comes from (a preset, a
# constructor, an HF config.json, a keras-hub preset, a model directory's
# model.keras): a file that claims more is refused before a layer exists
# (docs/reliability.md lists them). Each bound is far above every released
# BERT-family model -- BERT-Large is 24 layers of width 1,024; XLM-R XXL,
# among the largest encoders, 48 layers of 4,096 with a 250,002-token
# vocabulary -- and far below what would exhaust memory or time by itself.
# Sizes that are each in range can still describe a model too big for this
# machine: `zoo.utils.budget` checks the total before building.
INT_LIMITS = {
    "vocabulary_size": (1, 1 << 22),  # 4,194,304 tokens
    "num_layers": (1, 256),
    "num_heads": (1, 256),
    "hidden_dim": (1, 32768),
    "intermediate_dim": (1, 131072),
    "max_sequence_length": (1, 1 << 16),  # 65,536 tokens
    "num_segments": (0, 1024),
    "embedding_dim": (1, 32768),
    "num_groups": (1, 256),
}
# (low, high, low included, high included, why). The LayerNorm epsilon is
# added to a variance of order 1: BERT uses 1e-12, RoBERTa 1e-5, Keras's
# default is 1e-3; above 1e-2 it flattens the normalised activations (at 1e30
# every text gets the same output), so a larger value is refused, not run.
REAL_LIMITS = {
    "dropout": (0.0, 1.0, True, False, "a rate: 0 <= dropout < 1"),
    "layer_norm_epsilon": (
        0.0,
        1e-2,
        False,
        True,
        "0 < layer_norm_epsilon <= 0.01 (BERT 1e-12, RoBERTa 1e-5; a larger one "
        "flattens every LayerNorm's output)",
    ),
    "initializer_range": (0.0, 1.0, False, True, "0 < initializer_range <= 1"),
}


def field_problem(field, value) -> str | None:
    """Why `value` cannot be EncoderConfig's `field`, or None. Types are
    strict: a bool is not an int, a string is not a number, a float is not a
    size (even 12.0), and a real number must be finite."""
    if field in INT_LIMITS:
        low, high = INT_LIMITS[field]
        if not isinstance(value, int) or isinstance(value, bool):
            return f"expected an integer from {low:,} to {high:,}, not a {type(value).__name__}"
        if not low <= value <= high:
            return f"expected an integer from {low:,} to {high:,}"
        return None
    low, high, low_in, high_in, advice = REAL_LIMITS[field]
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        return f"expected a number ({advice}), not a {type(value).__name__}"
    if not math.isfinite(value):
        return f"expected a finite number ({advice})"
    above = value >= low if low_in else value > low
    below = value <= high if high_in else value < high
    if not (above and below):
        return f"expected {advice}"
    return None


@dataclasses.dataclass(frozen=True)
class EncoderConfig:
    """Hyperparameters of a BERT-family encoder (post-LayerNorm blocks).

    `family="bert"` has segment embeddings and a pooler (tanh dense on [CLS]);
    `family="distilbert"` has neither, as in DistilBERT. `family="albert"`
    (Lan et al. 2019) is BERT with embeddings of width `embedding_dim`
    projected to `hidden_dim`, and `num_layers` layers that share the weights
    of `num_groups` distinct blocks (1: every layer is the same block; layer
    i uses block i // (num_layers // num_groups)). `family="roberta"` (Liu
    et al. 2019) is BERT with byte-level BPE ids (`<pad>` = 1), one segment
    type and position ids that start after the padding id (see
    `position_table_size`); `max_sequence_length` is the longest input in
    tokens for every family. `embedding_dim` and
    `num_groups` belong to the albert family only (None and 1 elsewhere).
    `activation` is the feed-forward (and masked-LM transform) activation,
    one of `ACTIVATIONS`.
    """

    vocabulary_size: int
    num_layers: int
    num_heads: int
    hidden_dim: int
    intermediate_dim: int
    max_sequence_length: int = 512
    num_segments: int = 2
    dropout: float = 0.1
    layer_norm_epsilon: float = 1e-12
    initializer_range: float = 0.02
    family: str = "bert"
    activation: str = "gelu"
    embedding_dim: int | None = None
    num_groups: int = 1

    def __post_init__(self):
        def _need(condition, field, value, advice):
            if not condition:
                raise ValueError(f"EncoderConfig.{field}: received {value!r}; {advice}.")

        for field in (*INT_LIMITS, *REAL_LIMITS):
            value = getattr(self, field)
            if field == "embedding_dim" and value is None:
                continue
            problem = field_problem(field, value)
            if problem:
                raise ValueError(
                    f"EncoderConfig.{field}: received {value!r:.80}; {problem}."
                )
        _need(
            self.hidden_dim % self.num_heads == 0,
            "hidden_dim",
            self.hidden_dim,
            f"must be divisible by num_heads={self.num_heads} "
            "(each head gets hidden_dim // num_heads features)",
        )
        _need(
            isinstance(self.family, str) and self.family in FAMILIES,
            "family",
            self.family,
            f"expected one of {FAMILIES}",
        )
        if self.family == "distilbert":
            _need(
                self.num_segments == 0,
                "num_segments",
                self.num_segments,
                "a distilbert-family encoder has no segment embeddings; use 0",
            )
        else:
            _need(
                self.num_segments >= 1,
                "num_segments",
                self.num_segments,
                "a bert-family encoder needs at least 1 segment type",
            )
        _need(
            isinstance(self.activation, str) and self.activation in ACTIVATIONS,
            "activation",
            self.activation,
            f"expected one of {ACTIVATIONS} (exact erf GELU, or its tanh approximation)",
        )
        if self.family == "albert":
            _need(
                self.embedding_dim is not None,
                "embedding_dim",
                self.embedding_dim,
                "an albert-family encoder needs a positive embedding width (128 in ALBERT)",
            )
            _need(
                self.num_layers % self.num_groups == 0,
                "num_groups",
                self.num_groups,
                f"expected a positive divisor of num_layers={self.num_layers} "
                "(each group of layers shares one block's weights)",
            )
        else:
            _need(
                self.embedding_dim is None,
                "embedding_dim",
                self.embedding_dim,
                f"a {self.family}-family encoder embeds at hidden_dim; leave it None "
                "(a factorised embedding is family='albert')",
            )
            _need(
                self.num_groups == 1,
                "num_groups",
                self.num_groups,
                f"a {self.family}-family encoder has one block per layer; use 1 "
                "(shared layers are family='albert')",
            )

    @property
    def head_dim(self) -> int:
        return self.hidden_dim // self.num_heads

    @property
    def has_pooler(self) -> bool:
        return self.family in ("bert", "albert", "roberta")

    @property
    def position_table_size(self) -> int:
        """Rows of the position table: `max_sequence_length`, and for RoBERTa
        2 more (positions `padding_idx + 1 ..`; HF's `max_position_embeddings`)."""
        if self.family == "roberta":
            return self.max_sequence_length + ROBERTA_PADDING_IDX + 1
        return self.max_sequence_length

    @property
    def embedding_width(self) -> int:
        """Width of the token/position/segment tables: `embedding_dim` for
        ALBERT, `hidden_dim` otherwise."""
        return self.embedding_dim if self.family == "albert" else self.hidden_dim

    @property
    def num_blocks(self) -> int:
        """Distinct transformer blocks (with their own weights)."""
        return self.num_groups if self.family == "albert" else self.num_layers

    def num_parameters(self) -> int:
        """Exact trainable parameter count of the encoder built from this config."""
        h, i, e = self.hidden_dim, self.intermediate_dim, self.embedding_width
        embeddings = (
            self.vocabulary_size * e
            + self.position_table_size * e
            + self.num_segments * e
            + 2 * e  # LayerNorm gamma, beta
        )
        if self.family == "albert":
            embeddings += e * h + h  # the E -> H projection
        attention = 4 * (h * h + h)  # query, key, value, output dense
        feed_forward = (h * i + i) + (i * h + h)
        layer = attention + feed_forward + 2 * (2 * h)  # two LayerNorms
        pooler = (h * h + h) if self.has_pooler else 0
        return embeddings + self.num_blocks * layer + pooler

    def model_arguments(self) -> dict[str, Any]:
        """The encoder class's constructor arguments: every field but `family`
        and those the family fixes (`FAMILY_FIXED`)."""
        fields = self.to_dict()
        del fields["family"]
        for field in FAMILY_FIXED[self.family]:
            del fields[field]
        return fields

    @classmethod
    def for_family(cls, family, *sizes, **changes) -> EncoderConfig:
        """A `family` config: the sizes (`vocabulary_size`, `num_layers`,
        `num_heads`, `hidden_dim`, `intermediate_dim`, by position or by
        name), the family's defaults (`FAMILY_DEFAULTS`) for every other
        field, and `changes` over them."""
        if family not in FAMILY_DEFAULTS:
            raise ValueError(
                f"EncoderConfig.family: received {family!r}; expected one of {FAMILIES}."
            )
        return cls(*sizes, **{**FAMILY_DEFAULTS[family], **changes}, family=family)

    def replace(self, **changes) -> EncoderConfig:
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EncoderConfig:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(
                f"EncoderConfig: unknown field(s) {unknown}; expected only {sorted(known)}."
            )
        return cls(**data)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)


# Every field but the five sizes and `family`, by family: what an encoder
# class and a config file fill in for a hyperparameter left out. BERT's are
# EncoderConfig's own defaults; each other family writes only what differs.
# DistilBERT has no segment embeddings; RoBERTa one segment type and HF's
# LayerNorm eps 1e-5; ALBERT v2 no dropout, the tanh-approximate GELU and
# embeddings of width E = 128.
SIZES = ("vocabulary_size", "num_layers", "num_heads", "hidden_dim", "intermediate_dim")
_BERT_DEFAULTS = {
    field.name: field.default
    for field in dataclasses.fields(EncoderConfig)
    if field.name not in (*SIZES, "family")
}
FAMILY_DEFAULTS = {
    "bert": _BERT_DEFAULTS,
    "distilbert": {**_BERT_DEFAULTS, "num_segments": 0},
    "albert": {
        **_BERT_DEFAULTS,
        "dropout": 0.0,
        "activation": "gelu_tanh",
        "embedding_dim": 128,
    },
    "roberta": {**_BERT_DEFAULTS, "num_segments": 1, "layer_norm_epsilon": 1e-5},
}
# The fields a family's encoder class takes no argument for, since the family
# fixes them: the albert-only fields elsewhere, DistilBERT's segments (0).
FAMILY_FIXED = {
    "bert": ("embedding_dim", "num_groups"),
    "distilbert": ("num_segments", "embedding_dim", "num_groups"),
    "albert": (),
    "roberta": ("embedding_dim", "num_groups"),
}

_BERT_VOCAB = 30522
_ALBERT_VOCAB = 30000
_ROBERTA_VOCAB = 50265

PRESETS: dict[str, EncoderConfig] = {
    # Tiny width for tests and CPU demos (Turc et al.'s BERT-Tiny shape).
    "bert_tiny": EncoderConfig(_BERT_VOCAB, 2, 2, 128, 512),
    # sentence-transformers/all-MiniLM-L6-v2: the real checkpoint `make setup`
    # installs (docs/data.md).
    "minilm_l6_h384": EncoderConfig(_BERT_VOCAB, 6, 12, 384, 1536),
    # DistilBERT (Sanh et al. 2019): 6 of BERT-Base's layers, no segments/pooler.
    "distil_bert_base": EncoderConfig.for_family(
        "distilbert", _BERT_VOCAB, 6, 12, 768, 3072
    ),
    "bert_base": EncoderConfig(_BERT_VOCAB, 12, 12, 768, 3072),
    "bert_large": EncoderConfig(_BERT_VOCAB, 24, 16, 1024, 4096),
    # ALBERT (Lan et al. 2019) as released in v2 (HF albert-base-v2,
    # albert-large-v2): SentencePiece vocabulary of 30,000, E = 128, one
    # shared block, tanh-approximate GELU, no dropout.
    "albert_base": EncoderConfig.for_family("albert", _ALBERT_VOCAB, 12, 12, 768, 3072),
    "albert_large": EncoderConfig.for_family("albert", _ALBERT_VOCAB, 24, 16, 1024, 4096),
    # RoBERTa (Liu et al. 2019), HF roberta-base and distilroberta-base:
    # byte-level BPE vocabulary of 50,265, one segment type, LayerNorm eps
    # 1e-5, 512 tokens (514 position rows).
    "roberta_base": EncoderConfig.for_family("roberta", _ROBERTA_VOCAB, 12, 12, 768, 3072),
    "distilroberta_base": EncoderConfig.for_family(
        "roberta", _ROBERTA_VOCAB, 6, 12, 768, 3072
    ),
}


def get_preset(name: str) -> EncoderConfig:
    if name not in PRESETS:
        raise ValueError(
            f"Unknown preset {name!r}; available presets: {', '.join(sorted(PRESETS))}."
        )
    return PRESETS[name]
