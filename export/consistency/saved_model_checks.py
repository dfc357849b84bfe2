"""A (TPU) SavedModel version against its metadata.json: the signatures
saved_model.pb holds, their inputs, padding and task outputs, assets/,
and every variable read back intact (the embedded record, the embedding's
rows)."""

from __future__ import annotations

import json
import pathlib

import tensorflow as tf
from google.protobuf.message import DecodeError
from tensorflow.core.protobuf import saved_model_pb2

from export import manifest as mf
from export.consistency.record import RECORD_COLLECTION, _check_record
from export.consistency.refuse import ModelFileError, _refuse
from zoo.models import INPUT_NAMES
from zoo.text.tokenizer_record import is_byte_pair

# The label names a text-in SavedModel answers with, in assets/ (the file
# export.saved_model writes there).
LABELS_FILE = "labels.txt"

_TF_INT32, _TF_FLOAT32, _TF_STRING = (
    tf.int32.as_datatype_enum,
    tf.float32.as_datatype_enum,
    tf.string.as_datatype_enum,
)


# --- SavedModel -----------------------------------------------------------------------


def saved_model_signatures(directory) -> dict:
    """`{signature: {"inputs": {name: (dtype, shape)}, "outputs": {...}}}`
    read from `saved_model.pb` (dtype as TensorFlow's enum, -1 for an
    unknown dimension)."""
    proto = saved_model_pb2.SavedModel()
    proto.ParseFromString((pathlib.Path(directory) / "saved_model.pb").read_bytes())
    if len(proto.meta_graphs) != 1:
        raise ValueError(f"{len(proto.meta_graphs)} MetaGraphs (the exporter writes one)")

    def describe(tensors):
        return {
            k: (v.dtype, [int(d.size) for d in v.tensor_shape.dim])
            for k, v in tensors.items()
        }

    return {
        name: {"inputs": describe(sig.inputs), "outputs": describe(sig.outputs)}
        for name, sig in proto.meta_graphs[0].signature_def.items()
        if not name.startswith("__")
    }


def read_variables(directory):
    """Every variable of a SavedModel, read back (TensorFlow checks each one
    against the checksum it stored). Returns `(record or None, shapes)`:
    the embedded artifact record and `{variable: shape}`."""
    prefix = str(pathlib.Path(directory) / "variables" / "variables")
    reader = tf.train.load_checkpoint(prefix)
    shapes = reader.get_variable_to_shape_map()
    record = None
    for name in shapes:
        value = reader.get_tensor(name)
        if name.startswith(RECORD_COLLECTION + "/"):
            record = json.loads(bytes(value).decode("utf-8"))
    return record, shapes


def check_saved_model_artifact(directory, meta):
    """Refuse a (TPU) SavedModel version whose metadata.json does not describe
    its graph, assets and variables (see the module doc)."""
    directory = pathlib.Path(directory)
    signatures = _graph_signatures(directory, meta)
    primary = meta.get("sequence_lengths", [None])[0]
    for name, info in meta["signatures"].items():
        sig = signatures[name]
        _check_signature_inputs(directory, name, sig, info)
        _check_padding(directory, name, sig, info, primary)
        if info.get("role", "predict") == "predict":
            _check_task_outputs(directory, name, sig, meta)
    _check_assets(directory, meta)
    record, shapes = _read_variables_intact(directory)
    _check_record(directory, meta, record, "the SavedModel's variables")
    _check_embedding_table(directory, meta, shapes)


def _graph_signatures(directory, meta):
    """saved_model.pb's signatures, which must be the ones metadata.json lists."""
    try:
        signatures = saved_model_signatures(directory)
    except (OSError, ValueError, DecodeError, RecursionError) as e:
        raise ModelFileError(
            f"{pathlib.Path(directory) / 'saved_model.pb'}: not a valid SavedModel "
            f"({type(e).__name__}: {str(e).strip()[:200]}); the file is truncated or damaged. "
            "Restore it from the original export or re-export the artifact with `zoo export`."
        ) from None
    # A TPU model also serves its first bucket as serving_default.
    expected = set(meta["signatures"]) | (
        {"serving_default"} if meta.get("serving_default") in meta["signatures"] else set()
    )
    if sorted(signatures) != sorted(expected):
        _refuse(
            directory,
            "signatures",
            f"saved_model.pb has {sorted(signatures)}, metadata.json lists "
            f"{sorted(meta['signatures'])}",
        )
    return signatures


def _check_signature_inputs(directory, name, sig, info):
    kind = info.get("input")
    dtypes = {dtype for dtype, _ in sig["inputs"].values()}
    if kind in ("text", "text_pair") and dtypes != {_TF_STRING}:
        _refuse(directory, "signatures", f"{name} does not take text (input: {kind})")
    if kind == "ids" and (
        sorted(sig["inputs"]) != sorted(INPUT_NAMES) or dtypes != {_TF_INT32}
    ):
        _refuse(directory, "signatures", f"{name} does not take int32 ids (input: ids)")
    for output in info.get("outputs") or []:
        if output not in sig["outputs"]:
            _refuse(directory, "signatures", f"{name} has no output {output!r}")


def _check_padding(directory, name, sig, info, primary):
    """The length a text signature pads to (its id outputs' static width)
    against the signature's recorded length and the artifact's primary one."""
    fixed = info.get("sequence_length")
    for output, (_dtype, shape) in sig["outputs"].items():
        if output not in ("token_ids", "segment_ids", "padding_mask") or len(shape) != 2:
            continue
        width = shape[1]
        if width == -1:
            continue
        if fixed is not None and width != fixed:
            _refuse(
                directory,
                "sequence_lengths",
                f"{name} pads to {width} tokens, metadata.json says {fixed} (sequence_length)",
            )
        if primary is not None and info.get("input") == "text" and width != primary:
            _refuse(
                directory,
                "sequence_lengths",
                f"{name} pads to {width} tokens, metadata.json's sequence_lengths say "
                f"{primary} (sequence_length)",
            )


_TASK_OUTPUTS = {
    "classify": ("logits",),
    "tag": ("logits",),
    "qa": ("start_logits", "end_logits"),
    "regress": ("score",),
}


def _check_task_outputs(directory, name, sig, meta):
    """A predicting signature has its task's outputs, with one class per label."""
    task, labels = meta["task"], meta.get("labels")
    wanted = _TASK_OUTPUTS[task]
    if any(o not in sig["outputs"] for o in wanted):
        _refuse(
            directory,
            "task",
            f"{name} has outputs {sorted(sig['outputs'])}; a {task} model's include "
            f"{list(wanted)} (task {task!r})",
        )
    if task not in ("classify", "tag"):
        return
    _dtype, shape = sig["outputs"]["logits"]
    rank = 2 if task == "classify" else 3
    if len(shape) != rank:
        _refuse(
            directory,
            "task",
            f"{name}'s logits have shape {shape}; a {task} model's have rank {rank} "
            f"(task {task!r})",
        )
    if labels is not None and shape[-1] != len(labels):
        _refuse(
            directory,
            "labels",
            f"{len(labels)} label names for {name}'s {shape[-1]} classes",
        )


def _check_assets(directory, meta):
    """assets/ (the files the graph reads: its vocabulary and label names)
    against metadata.json and vocab.txt."""
    assets = directory / "assets"
    if meta.get("assets") is not None:
        present = sorted(p.name for p in assets.iterdir()) if assets.is_dir() else []
        if present != sorted(meta["assets"]):
            _refuse(
                directory,
                "assets",
                f"assets/ holds {present}, metadata.json lists {meta['assets']}",
            )
    if (assets / mf.VOCABULARY).is_file():
        graph_vocabulary = (assets / mf.VOCABULARY).read_text(encoding="utf-8").splitlines()
        if is_byte_pair(meta):  # the tokens' names, against vocab.json
            own, file = mf.artifact_tokenizer(directory, meta).vocabulary, "vocab.json"
        else:
            own = (directory / mf.VOCABULARY).read_text(encoding="utf-8").splitlines()
            file = mf.VOCABULARY
        if graph_vocabulary != own:
            _refuse(
                directory,
                "vocabulary_sha256",
                "assets/vocab.txt (the vocabulary the graph tokenizes with) differs from "
                f"{file}",
            )
    if (assets / LABELS_FILE).is_file():
        graph_labels = (assets / LABELS_FILE).read_text(encoding="utf-8").splitlines()
        if graph_labels != (meta.get("labels") or []):
            _refuse(
                directory,
                "labels",
                f"assets/labels.txt (the label names the graph answers with) holds "
                f"{graph_labels[:8]}, metadata.json {meta.get('labels')}",
            )


def _read_variables_intact(directory):
    try:
        return read_variables(directory)
    except (tf.errors.OpError, ValueError, IndexError, OSError, RecursionError) as e:
        first = str(getattr(e, "message", e)).strip().splitlines()[0][:300]
        _refuse(
            directory,
            "variables",
            "the SavedModel's variables (variables/variables.index and "
            f"variables.data-*) cannot be read back intact ({type(e).__name__}: "
            f"{first})",
        )


def _check_embedding_table(directory, meta, shapes):
    """Some variable of the embedding's width has `vocabulary_size` rows (a
    weak check, for artifacts without the embedded record)."""
    config = (meta.get("source_model") or {}).get("encoder_config") or {}
    width = config.get("embedding_dim") or config.get("hidden_dim")
    if not isinstance(width, int):
        return
    tables = [list(s) for s in shapes.values() if len(s) == 2 and s[1] == width]
    if tables and [meta["vocabulary_size"], width] not in tables:
        rows = sorted({t[0] for t in tables})
        _refuse(
            directory,
            "vocabulary_size",
            f"no embedding among the SavedModel's variables has {meta['vocabulary_size']:,} "
            f"rows (tables of width {width} have {rows} rows): the model was trained with "
            "another vocabulary",
        )
