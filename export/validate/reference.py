"""The Keras float32 reference an artifact is compared with: the given
model, or the unchanged source model metadata.json names, and its outputs,
computed once per (model, ids) and once per run shape."""

from __future__ import annotations

import hashlib
import pathlib
import time

import numpy as np
import tensorflow as tf

from export import manifest as mf
from zoo.checkpoints import load_model_dir
from zoo.text.tokenizer import vocabulary_sha256

# --- reference ----------------------------------------------------------------


_REFERENCE_CACHE = {}


def _weights_fingerprint(model):
    return tuple(float(np.abs(np.asarray(w)).sum(dtype=np.float64)) for w in model.weights)


def keras_outputs(model, ids, batch_size=32):
    """Float32 outputs of the Keras model `{name: [N, ...]}` for host ids.

    Cached per (model, ids): exporting one model in four modes runs the
    reference once. The key includes a fingerprint of the weights, so a model
    trained further in between is recomputed.
    """
    digest = hashlib.sha1()
    for k in sorted(ids):
        digest.update(k.encode())
        digest.update(np.ascontiguousarray(ids[k]).tobytes())
    key = (id(model), digest.hexdigest())
    fingerprint = _weights_fingerprint(model)
    hit = _REFERENCE_CACHE.get(key)
    if hit is not None and hit[0] == fingerprint:
        return hit[1]
    outputs = _keras_outputs(model, ids, batch_size)
    if len(_REFERENCE_CACHE) >= 8:
        _REFERENCE_CACHE.pop(next(iter(_REFERENCE_CACHE)))
    _REFERENCE_CACHE[key] = (fingerprint, outputs)
    return outputs


def _keras_outputs(model, ids, batch_size):
    spec = {k: tf.TensorSpec([None, None], tf.int32) for k in ids}

    @tf.function(autograph=False, input_signature=[spec])
    def run(batch):
        return {k: tf.cast(v, tf.float32) for k, v in model(batch, training=False).items()}

    n = len(ids["token_ids"])
    out = {}
    for start in range(0, n, batch_size):
        batch = {k: tf.constant(v[start : start + batch_size]) for k, v in ids.items()}
        for k, v in run(batch).items():
            out.setdefault(k, []).append(v.numpy())
    return {k: np.concatenate(v) for k, v in out.items()}


def _load_reference_from_metadata(directory, meta):
    """The source model, when metadata names a model directory that still
    holds the same `model.keras` (by sha256); else None. Its vocabulary must
    be the artifact's: a vocab.txt edited in the artifact (with its sha256
    in metadata.json and the manifest rewritten) is refused here."""
    source = meta.get("source_model", {})
    path, digest = source.get("path"), source.get("model_keras_sha256")
    if not path or not digest:
        return None
    model_file = pathlib.Path(path) / "model.keras"
    if not model_file.is_file() or mf.sha256_file(model_file) != digest:
        return None
    model, tokenizer, _ = load_model_dir(path)
    if vocabulary_sha256(tokenizer.vocabulary) != meta["vocabulary_sha256"]:
        raise mf.MetadataError(
            f"{pathlib.Path(directory) / mf.VOCABULARY}: `vocabulary_sha256`: not the "
            f"vocabulary of the model it was exported from ({path}/vocab.txt); the artifact "
            "would tokenize into other ids than the model was trained on. Restore it from the "
            "original export or re-export it with `zoo export`."
        )
    return model


def _reference(artifact_dir, meta, reference_model):
    """The Keras model to compare with: the given one, else the source model
    metadata.json names if it is unchanged, else none (`model` None)."""
    if reference_model is not None:
        return _ReferenceOutputs(reference_model, "given")
    reference_model = _load_reference_from_metadata(artifact_dir, meta)
    if reference_model is None:
        return _ReferenceOutputs(None, None)
    return _ReferenceOutputs(reference_model, "metadata source_model")


class _ReferenceOutputs:
    """The Keras reference's outputs for a run's ids, computed once per
    (length, number of texts, input kind): the files and signatures that
    share them share one computation. `model` None: no reference; `source`
    says where it came from, `seconds` how long its outputs took."""

    def __init__(self, model, source):
        self.model = model
        self.source = source
        self.seconds = 0.0
        self._cache = {}

    def __call__(self, run):
        key = (run["sequence_length"], len(run["ids"]["token_ids"]), run["input"])
        if key not in self._cache:
            t1 = time.time()
            self._cache[key] = keras_outputs(self.model, run["ids"])
            self.seconds += time.time() - t1
        return self._cache[key]
