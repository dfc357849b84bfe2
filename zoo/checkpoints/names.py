"""One table from our Keras variables to BERT's canonical weight names.

The canonical names are google-research BERT's TF1 names
(`bert/encoder/layer_3/attention/self/query/kernel`); every other format
(HF, Model Garden) is a rename of these. Keeping one table means a new
format is a naming function, not a new walk over the model.
"""

from __future__ import annotations

import dataclasses

from zoo.models.bert_encoder import BertEncoder


@dataclasses.dataclass(frozen=True)
class Entry:
    variable: object  # keras.Variable
    name: str  # canonical TF1 name
    # True when the TF1 tensor is the transpose of the Keras variable
    # (only `cls/seq_relationship/output_weights`, stored [2, hidden]).
    transposed: bool = False


def _dense(prefix, layer):
    return [Entry(layer.kernel, f"{prefix}/kernel"), Entry(layer.bias, f"{prefix}/bias")]


def _layer_norm(prefix, layer):
    return [Entry(layer.gamma, f"{prefix}/gamma"), Entry(layer.beta, f"{prefix}/beta")]


def encoder_entries(encoder: BertEncoder) -> list[Entry]:
    if encoder.config.family == "albert":
        return albert_encoder_entries(encoder)
    emb = encoder.embeddings
    entries = [
        Entry(emb.token_embedding.embeddings, "bert/embeddings/word_embeddings"),
        Entry(emb.position_embedding.embeddings, "bert/embeddings/position_embeddings"),
    ]
    if emb.segment_embedding is not None:
        entries.append(
            Entry(emb.segment_embedding.embeddings, "bert/embeddings/token_type_embeddings")
        )
    entries += _layer_norm("bert/embeddings/LayerNorm", emb.layer_norm)
    for i, block in enumerate(encoder.transformer_layers):
        p = f"bert/encoder/layer_{i}"
        att = block.attention
        entries += _dense(f"{p}/attention/self/query", att.query_dense)
        entries += _dense(f"{p}/attention/self/key", att.key_dense)
        entries += _dense(f"{p}/attention/self/value", att.value_dense)
        entries += _dense(f"{p}/attention/output/dense", att.output_dense)
        entries += _layer_norm(
            f"{p}/attention/output/LayerNorm", block.attention_layer_norm
        )
        entries += _dense(f"{p}/intermediate/dense", block.intermediate_dense)
        entries += _dense(f"{p}/output/dense", block.output_dense)
        entries += _layer_norm(f"{p}/output/LayerNorm", block.output_layer_norm)
    if encoder.pooler_dense is not None:
        entries += _dense("bert/pooler/dense", encoder.pooler_dense)
    return entries


# ALBERT's canonical names are google-research ALBERT's TF1 names: one
# `group_g/inner_group_0` per shared block (ALBERT's `inner_group_num` is 1
# in every released model, and the only value the zoo builds).
_ALBERT_BLOCK = "bert/encoder/transformer/group_{}/inner_group_0"


def albert_encoder_entries(encoder) -> list[Entry]:
    emb = encoder.embeddings
    entries = [
        Entry(emb.token_embedding.embeddings, "bert/embeddings/word_embeddings"),
        Entry(emb.position_embedding.embeddings, "bert/embeddings/position_embeddings"),
        Entry(emb.segment_embedding.embeddings, "bert/embeddings/token_type_embeddings"),
    ]
    entries += _layer_norm("bert/embeddings/LayerNorm", emb.layer_norm)
    entries += _dense(
        "bert/encoder/embedding_hidden_mapping_in", encoder.embedding_projection
    )
    for g, block in enumerate(encoder.blocks):
        p = _ALBERT_BLOCK.format(g)
        att = block.attention
        entries += _dense(f"{p}/attention_1/self/query", att.query_dense)
        entries += _dense(f"{p}/attention_1/self/key", att.key_dense)
        entries += _dense(f"{p}/attention_1/self/value", att.value_dense)
        entries += _dense(f"{p}/attention_1/output/dense", att.output_dense)
        entries += _layer_norm(f"{p}/LayerNorm", block.attention_layer_norm)
        entries += _dense(f"{p}/ffn_1/intermediate/dense", block.intermediate_dense)
        entries += _dense(f"{p}/ffn_1/intermediate/output/dense", block.output_dense)
        entries += _layer_norm(f"{p}/LayerNorm_1", block.output_layer_norm)
    entries += _dense("bert/pooler/dense", encoder.pooler_dense)
    return entries


def mlm_head_entries(head) -> list[Entry]:
    return (
        _dense("cls/predictions/transform/dense", head.transform_dense)
        + _layer_norm("cls/predictions/transform/LayerNorm", head.transform_layer_norm)
        + [Entry(head.output_bias, "cls/predictions/output_bias")]
    )


def nsp_head_entries(dense) -> list[Entry]:
    return [
        Entry(dense.kernel, "cls/seq_relationship/output_weights", transposed=True),
        Entry(dense.bias, "cls/seq_relationship/output_bias"),
    ]


def model_entries(model) -> list[Entry]:
    """Entries for an encoder, or for a MaskedLM / NextSentencePredictor /
    Pretrainer (encoder plus BERT's `cls/...` heads)."""
    if isinstance(model, BertEncoder):
        return encoder_entries(model)
    entries = encoder_entries(model.encoder)
    if getattr(model, "mlm_head", None) is not None:
        entries += mlm_head_entries(model.mlm_head)
    if getattr(model, "nsp_dense", None) is not None:
        entries += nsp_head_entries(model.nsp_dense)
    elif (
        getattr(model, "sop_classifier", None) is not None
        and model.encoder.config.family == "albert"
    ):
        # ALBERT's checkpoints carry a sentence-order head under the same
        # canonical name (`sop_classifier.classifier` in HF's layout); a BERT
        # checkpoint's `cls/seq_relationship` is NSP, so a BERT model's SOP
        # head is not mapped and starts from random.
        entries += nsp_head_entries(model.sop_classifier)
    return entries


# --- HF transformers names -------------------------------------------------


def hf_name(name: str, prefix: str = "") -> tuple[str, bool]:
    """Canonical name -> (HF state-dict key, transpose_from_canonical).

    HF's torch Linear stores `weight` as [out, in]: the transpose of a TF1 /
    Keras kernel. `prefix` is "bert." for BertForPreTraining-style files and
    "" for BertModel / sentence-transformers files.
    """
    if name == "cls/predictions/output_bias":
        return "cls.predictions.bias", False
    if name == "cls/seq_relationship/output_weights":
        return "cls.seq_relationship.weight", False
    if name == "cls/seq_relationship/output_bias":
        return "cls.seq_relationship.bias", False
    transpose = False
    parts = name.split("/")
    if parts[0] == "bert":
        parts = parts[1:]
        head = prefix
    else:
        head = ""
    out = []
    for part in parts:
        if part.startswith("layer_") and part[6:].isdigit():
            out += ["layer", part[6:]]
        elif part == "kernel":
            out.append("weight")
            transpose = True
        elif part == "gamma":
            out.append("weight")
        elif part == "beta":
            out.append("bias")
        else:
            out.append(part)
    if out[-1].endswith("_embeddings"):
        out.append("weight")
    return head + ".".join(out), transpose


# --- HF transformers DistilBERT names --------------------------------------

# Inside one layer: BertModel's module path -> DistilBertModel's. The maths of
# each module is the same (post-LN block, exact GELU); only the names differ.
_DISTILBERT_LAYER_MODULES = {
    "attention.self.query": "attention.q_lin",
    "attention.self.key": "attention.k_lin",
    "attention.self.value": "attention.v_lin",
    "attention.output.dense": "attention.out_lin",
    "attention.output.LayerNorm": "sa_layer_norm",
    "intermediate.dense": "ffn.lin1",
    "output.dense": "ffn.lin2",
    "output.LayerNorm": "output_layer_norm",
}
_DISTILBERT_EMBEDDINGS = (
    "embeddings.word_embeddings.",
    "embeddings.position_embeddings.",
    "embeddings.LayerNorm.",
)


def hf_distilbert_name(name: str, prefix: str = "") -> tuple[str, bool]:
    """Canonical name -> (HF DistilBERT state-dict key, transpose_from_canonical).

    A rename of `hf_name`'s BertModel key: embeddings keep their names,
    `encoder.layer.3.attention.self.query` becomes
    `transformer.layer.3.attention.q_lin`, and so on. `prefix` is
    "distilbert." for DistilBertFor* files and "" for DistilBertModel files.
    DistilBERT has no segment embeddings, pooler or `cls/` heads: those
    names raise ValueError.
    """
    key, transpose = hf_name(name)
    if key.startswith("encoder.layer."):
        _, _, index, rest = key.split(".", 3)
        module, parameter = rest.rsplit(".", 1)
        key = f"transformer.layer.{index}.{_DISTILBERT_LAYER_MODULES[module]}.{parameter}"
    elif not key.startswith(_DISTILBERT_EMBEDDINGS):
        raise ValueError(
            f"{name}: HF DistilBERT has no tensor for it (DistilBertModel holds "
            "token and position embeddings, their LayerNorm and the transformer "
            "layers; no segment embeddings, pooler or pre-training heads)."
        )
    return prefix + key, transpose


# --- HF transformers ALBERT names ------------------------------------------

# Inside one shared block: ALBERT's TF1 module path -> AlbertLayer's.
_ALBERT_LAYER_MODULES = {
    "attention_1/self/query": "attention.query",
    "attention_1/self/key": "attention.key",
    "attention_1/self/value": "attention.value",
    "attention_1/output/dense": "attention.dense",
    "LayerNorm": "attention.LayerNorm",
    "ffn_1/intermediate/dense": "ffn",
    "ffn_1/intermediate/output/dense": "ffn_output",
    "LayerNorm_1": "full_layer_layer_norm",
}
# The pre-training heads: BERT's `cls/...` names -> AlbertForPreTraining's.
_ALBERT_HEADS = {
    "cls/predictions/transform/dense": "predictions.dense",
    "cls/predictions/transform/LayerNorm": "predictions.LayerNorm",
    "cls/seq_relationship": "sop_classifier.classifier",
}
_PARAMETER = {
    "kernel": ("weight", True),
    "bias": ("bias", False),
    "gamma": ("weight", False),
    "beta": ("bias", False),
}


def hf_albert_name(name: str, prefix: str = "") -> tuple[str, bool]:
    """Canonical ALBERT name -> (HF AlbertModel / AlbertForPreTraining key,
    transpose_from_canonical).

    Shared block g is `encoder.albert_layer_groups.g.albert_layers.0`; the MLM
    head is `predictions.*` (its decoder is tied to the word embeddings in HF
    too), the SOP head `sop_classifier.classifier` (stored [2, hidden], like
    BERT's `cls/seq_relationship/output_weights`). `prefix` is "albert." for
    AlbertFor* files and "" for AlbertModel files.
    """
    if name == "cls/predictions/output_bias":
        return "predictions.bias", False
    if name == "cls/seq_relationship/output_weights":
        return "sop_classifier.classifier.weight", False
    if name == "cls/seq_relationship/output_bias":
        return "sop_classifier.classifier.bias", False
    module, parameter = name.rsplit("/", 1)
    for canonical, hf in _ALBERT_HEADS.items():
        if module == canonical:
            key, transpose = _PARAMETER[parameter]
            return f"{hf}.{key}", transpose
    block = _ALBERT_BLOCK.split("{}")[0]
    if module.startswith(block):
        group, _, inner = module[len(block) :].split("/", 2)
        key, transpose = _PARAMETER[parameter]
        layer = _ALBERT_LAYER_MODULES[inner]
        return (
            f"{prefix}encoder.albert_layer_groups.{group}.albert_layers.0.{layer}.{key}",
            transpose,
        )
    if module == "bert/encoder/embedding_hidden_mapping_in":
        key, transpose = _PARAMETER[parameter]
        return f"{prefix}encoder.embedding_hidden_mapping_in.{key}", transpose
    if module == "bert/pooler/dense":  # AlbertModel's pooler is a bare Linear
        key, transpose = _PARAMETER[parameter]
        return f"{prefix}pooler.{key}", transpose
    # Embeddings and pooler have BERT's HF names.
    return hf_name(name, prefix)
