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

from zoo.configs import field_problem
from zoo.utils.budget import check_memory

REQUIRED = object()

# HF config.json keys, per model_type: (EncoderConfig field, HF key, default).
# RobertaConfig's and AlbertConfig's own defaults are not their released
# models' values, so their sizes must be given (REQUIRED) rather than guessed.
_BERT_SIZES = (
    ("vocabulary_size", "vocab_size", REQUIRED),
    ("num_layers", "num_hidden_layers", REQUIRED),
    ("num_heads", "num_attention_heads", REQUIRED),
    ("hidden_dim", "hidden_size", REQUIRED),
    ("intermediate_dim", "intermediate_size", REQUIRED),
)
HF_FIELDS = {
    "bert": _BERT_SIZES
    + (
        ("max_sequence_length", "max_position_embeddings", 512),
        ("num_segments", "type_vocab_size", 2),
        ("dropout", "hidden_dropout_prob", 0.1),
        ("dropout", "attention_probs_dropout_prob", 0.1),
        ("layer_norm_epsilon", "layer_norm_eps", 1e-12),
        ("initializer_range", "initializer_range", 0.02),
    ),
    # RoBERTa's position table has 2 more rows than its longest input
    # (`EncoderConfig.position_table_size`); the caller subtracts them.
    "roberta": _BERT_SIZES
    + (
        ("max_sequence_length", "max_position_embeddings", REQUIRED),
        ("num_segments", "type_vocab_size", 1),
        ("dropout", "hidden_dropout_prob", 0.1),
        ("dropout", "attention_probs_dropout_prob", 0.1),
        ("layer_norm_epsilon", "layer_norm_eps", 1e-5),
        ("initializer_range", "initializer_range", 0.02),
    ),
    "albert": _BERT_SIZES
    + (
        ("embedding_dim", "embedding_size", REQUIRED),
        ("num_groups", "num_hidden_groups", 1),
        ("max_sequence_length", "max_position_embeddings", 512),
        ("num_segments", "type_vocab_size", 2),
        ("dropout", "hidden_dropout_prob", 0.0),
        ("dropout", "attention_probs_dropout_prob", 0.0),
        ("layer_norm_epsilon", "layer_norm_eps", 1e-12),
        ("initializer_range", "initializer_range", 0.02),
    ),
    # DistilBERT's `hidden_dim` is the feed-forward width (our
    # intermediate_dim) and `dim` the model width (our hidden_dim).
    "distilbert": (
        ("vocabulary_size", "vocab_size", REQUIRED),
        ("num_layers", "n_layers", REQUIRED),
        ("num_heads", "n_heads", REQUIRED),
        ("hidden_dim", "dim", REQUIRED),
        ("intermediate_dim", "hidden_dim", REQUIRED),
        ("max_sequence_length", "max_position_embeddings", 512),
        ("dropout", "dropout", 0.1),
        ("dropout", "attention_dropout", 0.1),
        ("initializer_range", "initializer_range", 0.02),
    ),
}

# keras-hub backbones' serialized config (config.json's "config"), keyed by
# the backbone class. keras-hub already uses the zoo's names.
_KERAS_HUB_SIZES = (
    ("vocabulary_size", "vocabulary_size", REQUIRED),
    ("num_layers", "num_layers", REQUIRED),
    ("num_heads", "num_heads", REQUIRED),
    ("hidden_dim", "hidden_dim", REQUIRED),
    ("intermediate_dim", "intermediate_dim", REQUIRED),
    ("max_sequence_length", "max_sequence_length", 512),
)
KERAS_HUB_FIELDS = {
    "BertBackbone": _KERAS_HUB_SIZES
    + (("dropout", "dropout", 0.1), ("num_segments", "num_segments", 2)),
    "DistilBertBackbone": _KERAS_HUB_SIZES + (("dropout", "dropout", 0.1),),
    "AlbertBackbone": _KERAS_HUB_SIZES
    + (
        ("dropout", "dropout", 0.0),
        ("num_segments", "num_segments", 2),
        ("embedding_dim", "embedding_dim", REQUIRED),
        ("num_groups", "num_groups", 1),
    ),
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
