"""HF transformers `BertModel` directories: config.json + model.safetensors.

Reads the plain BertModel layout (`embeddings.word_embeddings.weight`, ...),
the sentence-transformers layout (the same files at the top of the
directory, or in a `0_Transformer/` sub-folder) and BertForPreTraining files
(`bert.` prefix plus `cls.predictions` / `cls.seq_relationship` heads).
Weights are read with `safetensors.numpy`: no torch needed.
"""

from __future__ import annotations

import json
import pathlib

import numpy as np
from safetensors.numpy import load_file, save_file

from zoo.checkpoints.assign import NamedTensors, assign_tensors
from zoo.checkpoints.names import hf_name, model_entries
from zoo.configs import EncoderConfig
from zoo.models.bert_encoder import build_encoder
from zoo.utils.atomic import atomic_directory
from zoo.utils.jsonfile import read_json_object

# Buffers HF stores beside the weights; they are not parameters.
_HF_BUFFERS = ("embeddings.position_ids", "bert.embeddings.position_ids")
# HF spells exact GELU "gelu"; the tanh approximations would change outputs.
_EXACT_GELU = ("gelu",)


def find_hf_dir(path) -> pathlib.Path | None:
    """The folder holding config.json + model.safetensors, or None."""
    path = pathlib.Path(path)
    for candidate in (path, path / "0_Transformer"):
        if (candidate / "config.json").is_file() and (
            candidate / "model.safetensors"
        ).is_file():
            return candidate
    return None


def config_from_hf(hf: dict, origin="config.json") -> EncoderConfig:
    """Translate HF / google-research BERT config keys into an EncoderConfig."""
    model_type = hf.get("model_type", "bert")
    if model_type != "bert":
        raise ValueError(
            f"{origin}: model_type={model_type!r}; only BERT-architecture checkpoints "
            "(model_type 'bert', e.g. BERT, MiniLM, TinyBERT) load here."
        )
    activation = hf.get("hidden_act", "gelu")
    if activation not in _EXACT_GELU:
        raise ValueError(
            f"{origin}: hidden_act={activation!r}; zoo encoders use exact (erf) GELU, "
            "which HF calls 'gelu'. A checkpoint trained with another activation "
            "would load but give different outputs."
        )
    missing = [
        k
        for k in (
            "vocab_size",
            "hidden_size",
            "num_hidden_layers",
            "num_attention_heads",
            "intermediate_size",
        )
        if k not in hf
    ]
    if missing:
        raise ValueError(f"{origin}: missing key(s) {missing}; is this a BERT config?")
    return EncoderConfig(
        vocabulary_size=hf["vocab_size"],
        num_layers=hf["num_hidden_layers"],
        num_heads=hf["num_attention_heads"],
        hidden_dim=hf["hidden_size"],
        intermediate_dim=hf["intermediate_size"],
        max_sequence_length=hf.get("max_position_embeddings", 512),
        num_segments=hf.get("type_vocab_size", 2),
        dropout=hf.get("hidden_dropout_prob", 0.1),
        layer_norm_epsilon=hf.get("layer_norm_eps", 1e-12),
        initializer_range=hf.get("initializer_range", 0.02),
    )


def config_to_hf(config: EncoderConfig) -> dict:
    if config.family != "bert":
        raise ValueError(
            "HF BertModel format holds bert-family encoders; a "
            f"{config.family} encoder (no segment embeddings/pooler) does not fit it. "
            "Save it as a zoo model directory instead."
        )
    return {
        "architectures": ["BertModel"],
        "model_type": "bert",
        "vocab_size": config.vocabulary_size,
        "hidden_size": config.hidden_dim,
        "num_hidden_layers": config.num_layers,
        "num_attention_heads": config.num_heads,
        "intermediate_size": config.intermediate_dim,
        "hidden_act": "gelu",
        "hidden_dropout_prob": config.dropout,
        "attention_probs_dropout_prob": config.dropout,
        "max_position_embeddings": config.max_sequence_length,
        "type_vocab_size": config.num_segments,
        "initializer_range": config.initializer_range,
        "layer_norm_eps": config.layer_norm_epsilon,
        "pad_token_id": 0,
        "position_embedding_type": "absolute",
    }


def read_hf_tensors(directory) -> NamedTensors:
    path = pathlib.Path(directory) / "model.safetensors"
    return NamedTensors(load_file(str(path)), path)


def _prefix_of(tensors) -> str:
    return "bert." if "bert.embeddings.word_embeddings.weight" in tensors else ""


def load_hf_weights(model, directory, *, allow_partial=False):
    """Load an HF safetensors file into an encoder or a zoo pre-training model.

    Head tensors (`cls.*`) a bare encoder cannot hold are ignored; any other
    tensor left over is reported, since it means the architectures differ.
    """
    tensors = read_hf_tensors(directory)
    prefix = _prefix_of(tensors)
    pairs = []
    for entry in model_entries(model):
        key, transpose = hf_name(entry.name, prefix)
        pairs.append((entry.variable, key, transpose != entry.transposed))
    consumed = {key for _, key, _ in pairs}
    unused = [
        k
        for k in tensors
        if k not in consumed and k not in _HF_BUFFERS and not k.startswith("cls.")
    ]
    return assign_tensors(pairs, tensors, unused=unused, allow_partial=allow_partial)


def load_hf_encoder(directory, *, allow_partial=False):
    """Build a `BertEncoder` from an HF directory and load its weights."""
    found = find_hf_dir(directory)
    if found is None:
        raise FileNotFoundError(
            f"{directory}: no HF BertModel files here (expected config.json and "
            "model.safetensors, or a 0_Transformer/ folder holding them)."
        )
    config = config_from_hf(
        read_json_object(found / "config.json", "use the checkpoint's own config.json"),
        found / "config.json"
    )
    encoder = build_encoder(config)
    load_hf_weights(encoder, found, allow_partial=allow_partial)
    return encoder


def save_hf(model, directory, *, vocabulary=None):
    """Write `config.json` + `model.safetensors` (+ `vocab.txt`) in HF's
    BertModel layout (BertForPreTraining keys when `model` has heads)."""


    encoder = getattr(model, "encoder", model)
    hf_config = config_to_hf(encoder.config)
    has_heads = model is not encoder
    prefix = "bert." if has_heads else ""
    if has_heads:
        hf_config["architectures"] = ["BertForPreTraining"]
    tensors = {}
    for entry in model_entries(model):
        key, transpose = hf_name(entry.name, prefix)
        value = np.asarray(entry.variable.numpy())
        tensors[key] = np.ascontiguousarray(
            value.T if transpose != entry.transposed else value
        )
    with atomic_directory(directory) as tmp:
        (tmp / "config.json").write_text(json.dumps(hf_config, indent=2) + "\n")
        save_file(tensors, str(tmp / "model.safetensors"), metadata={"format": "pt"})
        if vocabulary is not None:
            (tmp / "vocab.txt").write_text("\n".join(vocabulary) + "\n", encoding="utf-8")
    return pathlib.Path(directory)
