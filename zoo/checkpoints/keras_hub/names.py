"""The names keras-hub uses, in one place: its classes, the files a zoo
export adds to a preset, the LayerNorm epsilon its backbones hard-code, and
the table from canonical (google-research) weight names to keras-hub
variable paths that both directions walk, and a variable's value as the
float32 array both directions copy."""

from __future__ import annotations

import re

import numpy as np

INSTALL = "pip install 'bert-zoo[keras-hub]'"
# keras-hub preset names: `keras_hub:NAME` (a built-in preset, or anything
# keras-hub's `from_preset` takes after the colon) and Kaggle handles.
NAME_PREFIXES = ("keras_hub:", "kaggle://")
BACKBONES = ("BertBackbone", "DistilBertBackbone", "AlbertBackbone")
CLASSIFIERS = ("BertTextClassifier", "DistilBertTextClassifier", "AlbertTextClassifier")
# What a zoo export leaves beside keras-hub's files: label names and provenance.
ZOO_PRESET_FILE = "zoo_preset.json"
# keras-hub hard-codes this LayerNorm epsilon in the three backbones.
LAYER_NORM_EPSILON = 1e-12

# Canonical (google-research) names -> keras-hub variable paths. Inside a
# block the BERT and ALBERT names differ (ALBERT's TF1 layout), keras-hub's
# do not (one TransformerEncoder class).
_EMBEDDINGS = {
    "bert/embeddings/word_embeddings": "token_embedding/embeddings",
    "bert/embeddings/position_embeddings": "position_embedding/embeddings",
    "bert/embeddings/token_type_embeddings": "segment_embedding/embeddings",
    "bert/embeddings/LayerNorm/gamma": "embeddings_layer_norm/gamma",
    "bert/embeddings/LayerNorm/beta": "embeddings_layer_norm/beta",
    "bert/pooler/dense/kernel": "pooled_dense/kernel",
    "bert/pooler/dense/bias": "pooled_dense/bias",
    "bert/encoder/embedding_hidden_mapping_in/kernel": "embedding_projection/kernel",
    "bert/encoder/embedding_hidden_mapping_in/bias": "embedding_projection/bias",
}
# DistilBertBackbone keeps its token and position tables in one
# TokenAndPositionEmbedding layer.
_DISTILBERT_EMBEDDINGS = {
    "bert/embeddings/word_embeddings": "token_and_position_embedding/token_embedding/embeddings",
    "bert/embeddings/position_embeddings": (
        "token_and_position_embedding/position_embedding/embeddings"
    ),
}
_BLOCK = {
    "attention/self/query": "self_attention_layer/query",
    "attention/self/key": "self_attention_layer/key",
    "attention/self/value": "self_attention_layer/value",
    "attention/output/dense": "self_attention_layer/attention_output",
    "attention/output/LayerNorm": "self_attention_layer_norm",
    "intermediate/dense": "feedforward_intermediate_dense",
    "output/dense": "feedforward_output_dense",
    "output/LayerNorm": "feedforward_layer_norm",
}
_ALBERT_BLOCK = {
    "attention_1/self/query": "self_attention_layer/query",
    "attention_1/self/key": "self_attention_layer/key",
    "attention_1/self/value": "self_attention_layer/value",
    "attention_1/output/dense": "self_attention_layer/attention_output",
    "LayerNorm": "self_attention_layer_norm",
    "ffn_1/intermediate/dense": "feedforward_intermediate_dense",
    "ffn_1/intermediate/output/dense": "feedforward_output_dense",
    "LayerNorm_1": "feedforward_layer_norm",
}
_BERT_LAYER = re.compile(r"bert/encoder/layer_(\d+)/(.+)/(\w+)$")
_ALBERT_LAYER = re.compile(
    r"bert/encoder/transformer/group_(\d+)/inner_group_0/(.+)/(\w+)$"
)


def keras_hub_path(name: str, family: str = "bert") -> str:
    """The keras-hub backbone variable path of canonical weight `name`.

    keras-hub's attention keeps per-head EinsumDense kernels (query, key,
    value `[hidden, heads, head_dim]`, biases `[heads, head_dim]`, output
    `[heads, head_dim, hidden]`): C-order reshapes of the zoo's `[in, out]`
    Dense kernels, heads in the same order, so values move by `reshape`."""
    if family == "distilbert" and name in _DISTILBERT_EMBEDDINGS:
        return _DISTILBERT_EMBEDDINGS[name]
    if name in _EMBEDDINGS:
        return _EMBEDDINGS[name]
    if family == "albert":
        group, sub, leaf = _ALBERT_LAYER.match(name).groups()
        return f"group_{group}_inner_layer_0/{_ALBERT_BLOCK[sub]}/{leaf}"
    index, sub, leaf = _BERT_LAYER.match(name).groups()
    return f"transformer_layer_{index}/{_BLOCK[sub]}/{leaf}"


def _numpy(variable):
    return np.asarray(variable.numpy(), dtype="float32")
