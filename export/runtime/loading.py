"""An artifact loaded in the runtime that serves it: LiteRT's interpreter
for a `.tflite` file and its signatures called by name with their inputs
checked (`load_interpreter`, `load_signature`), and TensorFlow's loader for
a SavedModel (`load_saved_model`). Each takes an `OpenedArtifact`
(`export.runtime.opened`), or a directory, which it opens first."""

from __future__ import annotations

import threading

import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401  registers the text signatures' ops
from google.protobuf.message import DecodeError
from tensorflow_text import tflite_registrar

from export import manifest as mf
from export.runtime.opened import open_artifact
from zoo.models import InvalidInputError, check_ids
from zoo.text.tokenizer import check_text

try:
    from ai_edge_litert import interpreter as litert
except ImportError:  # the retired runtime: numpy 1 only, old op versions (BUILD_NOTES.md)
    from tflite_runtime import interpreter as litert

MODEL_FILE = "model.tflite"


class ArtifactLoadError(ValueError):
    """An artifact that passed its checks failed to load or run in its runtime."""


# --- LiteRT ---------------------------------------------------------------------


def load_interpreter(artifact, file=MODEL_FILE, num_threads=1):
    """A LiteRT interpreter for `file` of `artifact` (an `OpenedArtifact`, or
    a directory, opened first).

    A file whose metadata lists custom (tensorflow-text) ops gets
    `InterpreterWithCustomOps` with tensorflow-text's registrar. One
    interpreter runs one call at a time: `CheckedSignature` holds its lock
    for the whole call, so sharing it between threads is safe but serial
    (for parallel calls, load one interpreter per thread).
    """
    artifact = open_artifact(artifact)
    artifact_dir, meta = artifact.directory, artifact.meta
    info = meta.get("files", {}).get(file)
    if info is None:
        raise FileNotFoundError(
            f"{artifact_dir}: metadata.json lists no {file!r} (files: {sorted(meta.get('files', {}))})."
        )
    path = str(artifact_dir / file)
    try:
        if info.get("custom_ops"):
            interpreter = litert.InterpreterWithCustomOps(
                model_path=path,
                custom_op_registerers=tflite_registrar.SELECT_TFTEXT_OPS,
                num_threads=num_threads,
            )
        else:
            interpreter = litert.Interpreter(model_path=path, num_threads=num_threads)
    except (RuntimeError, ValueError) as e:
        raise ArtifactLoadError(
            f"{path}: LiteRT cannot load it ({str(e).strip()[:300]}); re-export the artifact."
        ) from None
    interpreter.zoo_lock = threading.Lock()
    if info.get("input") == "text":
        # LiteRT's own runner resizes the text-in file's [1] string input to
        # whatever it is fed, and the graph, packed to [1, L], then answers
        # for the first text only; every runner of this file loops instead.
        raw_runner = interpreter.get_signature_runner
        interpreter.get_signature_runner = lambda signature_key=None: TextBatchRunner(
            raw_runner(signature_key), signature_key or "the signature"
        )
    return interpreter


class TextBatchRunner:
    """A signature runner of a text-in `.tflite` (string inputs of shape
    [1]) that takes a batch of N texts and answers N times: the file's
    graph tokenizes and packs one text, so the batch is run one text at a
    time and the outputs are stacked on their first (batch) axis. N = 0
    gives outputs with 0 rows. Everything else is the LiteRT runner's."""

    def __init__(self, raw, signature):
        self._raw = raw
        self.signature = signature

    def __getattr__(self, name):
        return getattr(self._raw, name)

    def __call__(self, **inputs):
        batches = {}
        for name, value in inputs.items():
            value = np.asarray(value, dtype=object)
            if value.ndim == 0:  # one text, not in a list: a batch of one
                value = value.reshape(1)
            if value.ndim != 1:
                raise InvalidInputError(
                    f"{name}: {self.signature} takes a 1-D array of texts (shape [N]; the "
                    f"file's own input is [1], one text per call); received shape "
                    f"{list(value.shape)}."
                )
            batches[name] = value
        sizes = {len(v) for v in batches.values()}
        if len(sizes) > 1:
            raise InvalidInputError(
                f"{self.signature}: inputs {sorted(batches)} hold different numbers of texts "
                f"({sorted(sizes)}); give each the same N."
            )
        count = sizes.pop() if sizes else 1
        answers = [
            self._raw(**{k: np.array([v[i]], dtype=object) for k, v in batches.items()})
            for i in range(count)
        ]
        if answers:
            return {k: np.concatenate([a[k] for a in answers]) for k in answers[0]}
        details = self._raw.get_output_details()
        return {
            k: np.zeros((0, *d["shape"][1:]), dtype=d["dtype"]) for k, d in details.items()
        }


class CheckedSignature:
    """One signature of a `.tflite`, called by input name, that checks its
    inputs first: LiteRT has no assert op, so an out-of-range id would
    otherwise come back as wrong logits. `metadata.json`'s `input_contract`
    says what is allowed; the phone app applies the same checks.

        classify = load_signature("exports/bbc_dyn")       # the primary length
        out = classify(token_ids=..., segment_ids=..., padding_mask=...)

    A runner may be shared between threads: each call holds its
    interpreter's lock from the input check to the copy of the outputs (an
    interpreter keeps one set of input and output buffers, so two
    interleaved calls would read each other's results).
    """

    def __init__(self, interpreter, signature, sequence_length, kind, contract):
        self.raw = interpreter.get_signature_runner(signature)
        self._lock = getattr(interpreter, "zoo_lock", None) or threading.Lock()
        self.signature = signature
        self.sequence_length = sequence_length
        self.kind = kind
        self.contract = contract

    def check(self, inputs):
        """Raise `InvalidInputError` unless `inputs` fit this signature."""
        if self.kind == "text":
            # N texts, each run on its own (TextBatchRunner): N answers.
            for name, value in inputs.items():
                value = np.asarray(value, dtype=object)
                if value.ndim > 1:
                    raise InvalidInputError(
                        f"{name}: {self.signature} takes a 1-D array of texts (shape [N]); "
                        f"received shape {list(value.shape)}."
                    )
                for i, text in enumerate(value.reshape(-1)):
                    if not isinstance(text, (str, bytes)):
                        raise InvalidInputError(
                            f"{name}[{i}]: {self.signature} takes texts (str or UTF-8 "
                            f"bytes); received {type(text).__name__}."
                        )
                    if isinstance(text, str):
                        check_text(text, f"{name}[{i}]")
            return
        check_ids(inputs, self.contract, sequence_length=self.sequence_length, batch_size=1)

    def __call__(self, **inputs):
        self.check(inputs)
        if self.kind != "text":
            # Checked in range above, so int32 loses nothing (int64, tf tensors).
            inputs = {k: np.asarray(v).astype(np.int32) for k, v in inputs.items()}
        with self._lock:
            return invoke(self, inputs)


def invoke(runner, inputs):
    """`runner.raw(**inputs)` with its outputs copied; a LiteRT failure as an
    `ArtifactLoadError` naming the signature. The caller holds the runner's
    interpreter (its lock, or one interpreter per thread)."""
    try:
        outputs = runner.raw(**inputs)
    except RuntimeError as e:
        raise ArtifactLoadError(
            f"{runner.signature}: LiteRT failed to run it ({str(e).strip()[:300]}); the file "
            "does not fit its metadata.json or is damaged. Re-export the artifact."
        ) from None
    return {k: np.array(v) for k, v in outputs.items()}


def load_signature(artifact, signature=None, file=MODEL_FILE, num_threads=1):
    """A `CheckedSignature` of `file` of `artifact` (an `OpenedArtifact`, or
    a directory, opened first), by default its primary, first-listed signature."""
    artifact = open_artifact(artifact)
    artifact_dir, meta = artifact.directory, artifact.meta
    interpreter = load_interpreter(artifact, file, num_threads=num_threads)
    info = meta["files"][file]
    names = info["signatures"]
    signature = names[0] if signature is None else signature
    if signature not in names:
        raise ValueError(
            f"{artifact_dir / file}: no signature {signature!r}; it has {names}."
        )
    length = info["sequence_lengths"][names.index(signature)]
    runner = CheckedSignature(
        interpreter, signature, length, info.get("input", "ids"), meta["input_contract"]
    )
    details = runner.raw.get_output_details()
    logits = details.get("logits", details.get("probabilities"))
    if (
        logits is not None
        and meta["labels"] is not None
        and int(logits["shape"][-1]) != len(meta["labels"])
    ):
        raise mf.MetadataError(
            f"{artifact_dir / mf.METADATA}: `labels` names {len(meta['labels'])} classes but "
            f"{file}:{signature} outputs {int(logits['shape'][-1])}; re-export the artifact."
        )
    return runner


# --- SavedModel (TensorFlow) -------------------------------------------------------


def load_saved_model(artifact):
    """`tf.saved_model.load` of `artifact` (an `OpenedArtifact`, or a
    version directory, opened first); returns `(loaded, metadata)`."""
    artifact = open_artifact(artifact)
    version_dir, meta = artifact.directory, artifact.meta
    try:
        loaded = tf.saved_model.load(str(version_dir))
    except (tf.errors.OpError, ValueError, IndexError, OSError, DecodeError) as e:
        first = (str(getattr(e, "message", e)).strip().splitlines() or [""])[0][:300]
        raise ArtifactLoadError(
            f"{version_dir}: TensorFlow cannot load the SavedModel ({type(e).__name__}: "
            f"{first}); it is damaged. Restore it from the original export or re-export it."
        ) from None
    return loaded, meta
