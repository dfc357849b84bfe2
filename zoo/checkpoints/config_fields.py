"""Typed reading of the config files other tools write, before anything is built.

A config file is untrusted input: a string where a bool belongs
(`"do_lower_case": "false"` is truthy), a list where a name belongs, a size
of 10**9, an epsilon of 1e30. Each reader here takes one format's fields by
table -- the file's key, the `EncoderConfig` field it fills, its default --
and checks each value's type and range (`zoo.configs.field_problem`, the
same ranges every config obeys) under the file's own key name, so the error
says what to fix in the file that holds it:

    config.json: num_hidden_layers=1000000000; expected an integer
    from 1 to 256.

Then the config's memory is checked against the limit
(`zoo.utils.budget.check_memory`) before any caller builds a layer.
"""

from __future__ import annotations

import dataclasses

from zoo.configs import (
    FAMILY_DEFAULTS,
    ROBERTA_PADDING_IDX,
    SIZES,
    EncoderConfig,
    field_problem,
)
from zoo.utils.budget import check_memory

REQUIRED = object()
# The family's own default (`zoo.configs.FAMILY_DEFAULTS`), for a key the
# file leaves out.
FAMILY = object()

# HF config.json per model_type, in the order `zoo.checkpoints.hf` writes it:
# (HF key, EncoderConfig field, default). Both directions read this table:
# `config_to_hf` writes each field under its key, `config_from_hf` reads each
# key back into its field (`HF_FIELDS`). A row with no field is a constant,
# written as given (the few that must hold on reading, such as RoBERTa's
# pad_token_id, are checked by `config_from_hf`). RobertaConfig's and
# AlbertConfig's own defaults are not their released models' values, so
# their sizes must be given (REQUIRED) rather than guessed. A field with no
# key here is one the HF class fixes: only its family default can be written.
_WIDTH_DEPTH = (
    ("hidden_size", "hidden_dim", REQUIRED),
    ("num_hidden_layers", "num_layers", REQUIRED),
)
_BERT_BODY = (
    ("num_attention_heads", "num_heads", REQUIRED),
    ("intermediate_size", "intermediate_dim", REQUIRED),
    ("hidden_act", "activation", FAMILY),
    ("hidden_dropout_prob", "dropout", FAMILY),
    ("attention_probs_dropout_prob", "dropout", FAMILY),
    ("max_position_embeddings", "max_sequence_length", FAMILY),
    ("type_vocab_size", "num_segments", FAMILY),
    ("initializer_range", "initializer_range", FAMILY),
    ("layer_norm_eps", "layer_norm_epsilon", FAMILY),
)


def _model(architecture, model_type):
    return (
        ("architectures", None, [architecture]),
        ("model_type", None, model_type),
        ("vocab_size", "vocabulary_size", REQUIRED),
    )


HF_CONFIG = {
    "bert": _model("BertModel", "bert")
    + _WIDTH_DEPTH
    + _BERT_BODY
    + (("pad_token_id", None, 0), ("position_embedding_type", None, "absolute")),
    # RoBERTa's position table has 2 more rows than its longest input
    # (`EncoderConfig.position_table_size`): written as the table's rows,
    # `config_from_hf` subtracts them.
    "roberta": _model("RobertaModel", "roberta")
    + _WIDTH_DEPTH
    + tuple(
        (key, field, REQUIRED if key == "max_position_embeddings" else default)
        for key, field, default in _BERT_BODY
    )
    + (
        ("bos_token_id", None, 0),
        ("pad_token_id", None, ROBERTA_PADDING_IDX),
        ("eos_token_id", None, 2),
        ("position_embedding_type", None, "absolute"),
    ),
    "albert": _model("AlbertModel", "albert")
    + (
        ("embedding_size", "embedding_dim", REQUIRED),
        *_WIDTH_DEPTH,
        ("num_hidden_groups", "num_groups", FAMILY),
        ("inner_group_num", None, 1),
    )
    + _BERT_BODY
    + (("pad_token_id", None, 0),),
    # DistilBERT's `hidden_dim` is the feed-forward width (our
    # intermediate_dim) and `dim` the model width (our hidden_dim). It has no
    # segments and no LayerNorm epsilon key (HF builds every LayerNorm with
    # eps=1e-12, the family default).
    "distilbert": _model("DistilBertModel", "distilbert")
    + (
        ("dim", "hidden_dim", REQUIRED),
        ("n_layers", "num_layers", REQUIRED),
        ("n_heads", "num_heads", REQUIRED),
        ("hidden_dim", "intermediate_dim", REQUIRED),
        ("activation", "activation", FAMILY),
        ("dropout", "dropout", FAMILY),
        ("attention_dropout", "dropout", FAMILY),
        ("max_position_embeddings", "max_sequence_length", FAMILY),
        ("sinusoidal_pos_embds", None, False),
        ("initializer_range", "initializer_range", FAMILY),
        ("pad_token_id", None, 0),
    ),
}
# Fields read by name through a mapping rather than `read_fields`: HF's
# activation names (`zoo.checkpoints.hf`).
CODED_FIELDS = ("activation",)
# The order keys are read in: the sizes, ALBERT's two, then EncoderConfig's.
_FIELD_ORDER = list(
    dict.fromkeys(
        (
            *SIZES,
            "embedding_dim",
            "num_groups",
            *(f.name for f in dataclasses.fields(EncoderConfig)),
        )
    )
)


def _default(family, field, default):
    """`default`, or the family's own when it is FAMILY."""
    return FAMILY_DEFAULTS[family][field] if default is FAMILY else default


def _read_table(family, rows):
    """(EncoderConfig field, key, default) rows for `read_fields`, the
    family's defaults filled in, in `_FIELD_ORDER` (so a missing size is
    named before anything else)."""
    table = [
        (field, key, _default(family, field, default))
        for key, field, default in rows
        if field is not None and field not in CODED_FIELDS
    ]
    return tuple(sorted(table, key=lambda row: _FIELD_ORDER.index(row[0])))


# HF config.json keys, per model_type: (EncoderConfig field, HF key, default).
HF_FIELDS = {family: _read_table(family, rows) for family, rows in HF_CONFIG.items()}


def hf_key(family, field):
    """config.json's key for EncoderConfig's `field` in `family`, or None
    when the HF class has none (it fixes the value)."""
    for key, ours, _ in HF_CONFIG[family]:
        if ours == field:
            return key
    return None


# keras-hub backbones' serialized config (config.json's "config"), keyed by
# the backbone class, with the family whose defaults keras-hub shares.
# keras-hub already uses the zoo's names.
_KERAS_HUB_SIZES = (
    ("vocabulary_size", "vocabulary_size", REQUIRED),
    ("num_layers", "num_layers", REQUIRED),
    ("num_heads", "num_heads", REQUIRED),
    ("hidden_dim", "hidden_dim", REQUIRED),
    ("intermediate_dim", "intermediate_dim", REQUIRED),
    ("max_sequence_length", "max_sequence_length", FAMILY),
)
_KERAS_HUB_ROWS = {
    "BertBackbone": (
        "bert",
        _KERAS_HUB_SIZES
        + (("dropout", "dropout", FAMILY), ("num_segments", "num_segments", FAMILY)),
    ),
    "DistilBertBackbone": (
        "distilbert",
        _KERAS_HUB_SIZES + (("dropout", "dropout", FAMILY),),
    ),
    "AlbertBackbone": (
        "albert",
        _KERAS_HUB_SIZES
        + (
            ("dropout", "dropout", FAMILY),
            ("num_segments", "num_segments", FAMILY),
            ("embedding_dim", "embedding_dim", REQUIRED),
            ("num_groups", "num_groups", FAMILY),
        ),
    ),
}
KERAS_HUB_FIELDS = {
    name: tuple(
        (field, key, _default(family, field, default)) for field, key, default in rows
    )
    for name, (family, rows) in _KERAS_HUB_ROWS.items()
}


def read_fields(data, table, origin, what) -> dict:
    """`{EncoderConfig field: value}` from `data` by `table`, each value
    type- and range-checked under the file's key; ValueError naming `origin`
    and the key. `what` names the format for a missing key ("BERT")."""
    if not isinstance(data, dict):
        raise ValueError(f"{origin}: expected a JSON object, not {type(data).__name__}.")
    missing = [key for _, key, default in table if default is REQUIRED and key not in data]
    if missing:
        raise ValueError(f"{origin}: missing key(s) {missing}; is this a {what} config?")
    fields = {}
    for field, key, default in table:
        value = data.get(key, default)
        if value is None and default is not REQUIRED:
            # HF writes null for "the default" in a few optional keys.
            value = default
        problem = field_problem(field, value)
        if problem:
            raise ValueError(f"{origin}: {key}={value!r:.80}; {problem}.")
        fields.setdefault(field, value)  # the first key of a field is the one used
    return fields


def read_bool(data, key, origin, default):
    """A JSON boolean (`true`/`false`), or `default` when absent or null. A
    string such as "false" is refused: Python reads it as true."""
    value = data.get(key)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ValueError(
            f"{origin}: {key}={value!r:.80} ({type(value).__name__}); expected "
            "true or false (a JSON boolean, not a string or a number)."
        )
    return value


def read_int(data, key, origin, default, low, high):
    """A JSON integer in `[low, high]`, or `default` when absent."""
    value = data.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise ValueError(
            f"{origin}: {key}={value!r:.80}; expected an integer from {low:,} to {high:,}."
        )
    return value


def read_choice(data, key, origin, default, choices, advice=""):
    """A JSON string among `choices` (a dict maps it), or `default`."""
    value = data.get(key, default)
    if not isinstance(value, str) or value not in choices:
        raise ValueError(
            f"{origin}: {key}={value!r:.80}; expected one of {sorted(choices)}{advice}."
        )
    return choices[value] if isinstance(choices, dict) else value


def checked(config, origin):
    """`config`, once its memory fits the limit (`check_memory`)."""
    check_memory(config, origin)
    return config
