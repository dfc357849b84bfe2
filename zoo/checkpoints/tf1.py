"""google-research BERT TF1 checkpoints.

A release directory holds `bert_config.json`, `vocab.txt` and
`bert_model.ckpt.{index,data-*}` with names such as
`bert/encoder/layer_0/attention/self/query/kernel`, plus the pre-training
heads `cls/predictions/...` and `cls/seq_relationship/...` when present.
These names are the canonical ones in `names.py`, so no renaming is needed:
only `cls/seq_relationship/output_weights` is stored transposed.
"""

from __future__ import annotations

import json
import pathlib

import numpy as np
import tensorflow as tf

from zoo.checkpoints.assign import NamedTensors, assign_tensors
from zoo.checkpoints.hf import config_from_hf
from zoo.checkpoints.names import model_entries
from zoo.models.bert_encoder import build_encoder
from zoo.utils.atomic import atomic_directory
from zoo.utils.jsonfile import read_json_object

# Training state found in released checkpoints; never model weights.
_TRAINING_STATE_SUFFIXES = ("/adam_m", "/adam_v", "/Momentum")
_TRAINING_STATE_NAMES = ("global_step", "_CHECKPOINTABLE_OBJECT_GRAPH")


def find_tf1_checkpoint(path):
    """(config_path, checkpoint_prefix) for a TF1 BERT release, or None.

    `path` may be the release directory or the checkpoint prefix itself
    (`.../bert_model.ckpt`).
    """
    path = pathlib.Path(path)
    if path.is_dir():
        config = path / "bert_config.json"
        indexes = sorted(path.glob("*.ckpt*.index")) or sorted(path.glob("*.index"))
        if config.is_file() and indexes:
            return config, indexes[0].with_suffix("")
        return None
    if pathlib.Path(f"{path}.index").is_file():
        config = path.parent / "bert_config.json"
        if config.is_file():
            return config, path
    return None


def read_tf1_tensors(prefix) -> NamedTensors:
    reader = tf.train.load_checkpoint(str(prefix))
    names = [
        n
        for n in reader.get_variable_to_shape_map()
        if n not in _TRAINING_STATE_NAMES and not n.endswith(_TRAINING_STATE_SUFFIXES)
    ]
    return NamedTensors({n: reader.get_tensor(n) for n in names}, prefix)


def load_tf1_weights(model, prefix, *, allow_partial=False):
    tensors = read_tf1_tensors(prefix)
    pairs = [(e.variable, e.name, e.transposed) for e in model_entries(model)]
    consumed = {name for _, name, _ in pairs}
    unused = [k for k in tensors if k not in consumed and not k.startswith("cls/")]
    return assign_tensors(pairs, tensors, unused=unused, allow_partial=allow_partial)


def load_tf1_encoder(path, *, allow_partial=False):
    found = find_tf1_checkpoint(path)
    if found is None:
        raise FileNotFoundError(
            f"{path}: not a google-research BERT checkpoint (expected bert_config.json "
            "and bert_model.ckpt.index/.data-* in one directory)."
        )
    config_path, prefix = found
    config = config_from_hf(
        read_json_object(config_path, "use the release's own bert_config.json"), config_path
    )
    encoder = build_encoder(config)
    load_tf1_weights(encoder, prefix, allow_partial=allow_partial)
    return encoder


def config_to_tf1(config) -> dict:
    return {
        "attention_probs_dropout_prob": config.dropout,
        "hidden_act": "gelu",
        "hidden_dropout_prob": config.dropout,
        "hidden_size": config.hidden_dim,
        "initializer_range": config.initializer_range,
        "intermediate_size": config.intermediate_dim,
        "max_position_embeddings": config.max_sequence_length,
        "num_attention_heads": config.num_heads,
        "num_hidden_layers": config.num_layers,
        "type_vocab_size": config.num_segments,
        "vocab_size": config.vocabulary_size,
    }


def save_tf1(model, directory, *, vocabulary=None, name="bert_model.ckpt"):
    """Write a google-research style release directory (the names TF1 BERT
    code, and its converters, read) for an encoder or a pre-training model."""

    encoder = getattr(model, "encoder", model)
    if encoder.config.family != "bert":
        raise ValueError(
            "google-research checkpoints hold bert-family encoders (with segment "
            f"embeddings and pooler); save a {encoder.config.family}-family encoder "
            "as a zoo model directory (or HF) instead."
        )
    if encoder.config.activation != "gelu":
        raise ValueError(
            f"save_tf1: EncoderConfig.activation={encoder.config.activation!r}, but a "
            "google-research bert_config.json says 'gelu' and the zoo reads that as "
            "exact GELU; this encoder would load back computing something else. "
            "Save it as HF (`zoo convert ... --to hf`) or as a zoo model directory."
        )
    entries = model_entries(model)
    names = [e.name for e in entries]
    values = [
        np.ascontiguousarray(e.variable.numpy().T if e.transposed else e.variable.numpy())
        for e in entries
    ]
    with atomic_directory(directory) as tmp:
        (tmp / "bert_config.json").write_text(
            json.dumps(config_to_tf1(encoder.config), indent=2) + "\n"
        )
        # SaveV2 writes the exact TF1 names (an object-based tf.train.Checkpoint
        # would add `/.ATTRIBUTES/VARIABLE_VALUE` paths no BERT tool reads).
        tf.raw_ops.SaveV2(
            prefix=str(tmp / name),
            tensor_names=names,
            shape_and_slices=[""] * len(names),
            tensors=values,
        )
        if vocabulary is not None:
            (tmp / "vocab.txt").write_text("\n".join(vocabulary) + "\n", encoding="utf-8")
    return pathlib.Path(directory)
