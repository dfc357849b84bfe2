"""Answers on raw text from any model the project makes: the library under
`zoo predict`.

    predictor = open_predictor("runs/bbc/model")     # or exports/phone, serving/bbc/1
    predictor.predict([{"text": "Shares fell 3% in Tokyo."}])
    # [{"label": "business", "scores": {"business": 0.97, ...}, "windows": 1}]

`open_predictor` takes a zoo model directory (Keras), a `.tflite` artifact
directory (LiteRT, its primary signature) or a text-in SavedModel (a TF
Serving version directory, or the model directory above its versions: the
newest). Every format runs the same host-side steps around its runtime:
the project tokenizer on the model's own vocab.txt and casing; for
classifiers the windows of `zoo finetune --max-windows` (every window's
logits averaged); for taggers one tag per whitespace word (its first
piece), joined into BIO entity spans; for QA (`text` the question,
`text_b` the context) the best span over the context's windows. So one
text gets one answer from all three formats, up to the numerical
differences the exporter validated. The SavedModel runs `serve_ids`, the
signature TF Serving clients that tokenize themselves call.

Answers (one dict per input, JSON-ready):
    classify  {"label", "scores": {label: probability} (top k), "windows"}
    tag       {"entities": [{"label", "text", "start", "end", "score"}],
               "tags": [tag per word]}
    qa        {"answer", "start", "end", "score"}   ("" and -1 when no span)
    regress   {"score"}   (the regression head's float output, e.g. similarity 0..5)
Character offsets index the input string (end exclusive).
"""

from __future__ import annotations

import dataclasses
import pathlib
import threading

import numpy as np
import tensorflow as tf

from export import manifest as mf
from export.runtime import load_saved_model, load_signature, open_artifact
from zoo.checkpoints import load_model_dir
from zoo.checkpoints.model_dir import MANIFEST as MODEL_DIR_MANIFEST
from zoo.models import task_of
from zoo.tasks import decode
from zoo.text.tokenizer import WordPieceTokenizer, check_text
from zoo.train.finetune import evaluation_config
from zoo.utils.numeric import softmax

FORMATS = ("model", "tflite", "saved_model")
DEFAULT_DOC_STRIDE = 128
DEFAULT_MAX_ANSWER_LENGTH = 30


class PredictError(ValueError):
    """A path or input `zoo predict` cannot use; the message says what to do."""


@dataclasses.dataclass
class Predictor:
    """A model in one format with what its host-side steps need."""

    format: str
    path: pathlib.Path
    task: str
    labels: list | None
    tokenizer: WordPieceTokenizer
    sequence_length: int
    run_ids: object  # inputs {name: [N, L] int32} -> {output: [N, ...]}
    max_windows: int = 1
    doc_stride: int = DEFAULT_DOC_STRIDE
    max_answer_length: int = DEFAULT_MAX_ANSWER_LENGTH

    def predict(self, records, top_k=None):
        """Answers for `records` (dicts with "text" and optional "text_b",
        or plain strings), in order."""
        records = [check_record(r, i, self.task) for i, r in enumerate(records)]
        if not records:
            return []
        if self.task == "classify":
            return self._classify(records, top_k)
        if self.task == "tag":
            return self._tag(records)
        if self.task == "regress":
            return self._regress(records)
        return self._answer(records)

    # --- classify ------------------------------------------------------------------------

    def _classify(self, records, top_k):
        pairs = any(r["text_b"] is not None for r in records)
        # Pairs take the tokenizer's truncating packer (windows are for
        # single long texts, as in `zoo finetune`).
        logits, windows = decode.classify_logits(
            [r["text"] for r in records],
            [r["text_b"] or "" for r in records] if pairs else None,
            self.tokenizer,
            self.sequence_length,
            self.run_ids,
            max_windows=self.max_windows,
            doc_stride=self.doc_stride,
        )
        probabilities = softmax(logits)
        k = len(self.labels) if top_k is None else max(1, min(int(top_k), len(self.labels)))
        answers = []
        for row, n in zip(probabilities, windows):
            order = np.argsort(-row, kind="stable")[:k]
            answers.append(
                {
                    "label": self.labels[int(order[0])],
                    "scores": {self.labels[int(i)]: round(float(row[i]), 6) for i in order},
                    "windows": int(n),
                }
            )
        return answers

    # --- regress -------------------------------------------------------------------------

    def _regress(self, records):
        pairs = any(r["text_b"] is not None for r in records)
        scores = decode.regression_scores(
            [r["text"] for r in records],
            [r["text_b"] or "" for r in records] if pairs else None,
            self.tokenizer,
            self.sequence_length,
            self.run_ids,
        )
        return [{"score": round(float(s), 6)} for s in scores]

    # --- tag -----------------------------------------------------------------------------

    def _tag(self, records):
        texts = [r["text"] for r in records]
        words = decode.tag_words(
            texts, self.tokenizer, self.labels, self.sequence_length, self.run_ids
        )
        return [
            decode.entities(text, span, w, self.labels)
            for text, (span, w) in zip(texts, words)
        ]

    # --- qa ------------------------------------------------------------------------------

    def _answer(self, records):
        return decode.answer_spans(
            [r["text"] for r in records],
            [r["text_b"] for r in records],
            self.tokenizer,
            self.sequence_length,
            self.run_ids,
            doc_stride=self.doc_stride,
            max_answer_length=self.max_answer_length,
        )


def check_record(record, index, task):
    """`{"text": str, "text_b": str | None}` from a string or a dict, or a
    PredictError naming the input."""
    if isinstance(record, str):
        record = {"text": record}
    if not isinstance(record, dict):
        raise PredictError(
            f'input {index + 1}: expected a text or an object with "text"; '
            f"received {type(record).__name__}."
        )
    text, text_b = record.get("text"), record.get("text_b")
    if task == "qa":
        text = record.get("question", text)
        text_b = record.get("context", text_b)
    if not isinstance(text, str) or not text.strip():
        raise PredictError(
            f'input {index + 1}: "text" must be a non-empty string; received {text!r}.'
        )
    if text_b is not None and not isinstance(text_b, str):
        raise PredictError(
            f'input {index + 1}: "text_b" must be a string; '
            f"received {type(text_b).__name__}."
        )
    if task == "qa" and not (text_b or "").strip():
        raise PredictError(
            f"input {index + 1}: a QA model needs a question (text) and a "
            "context (text_b, or --text-b)."
        )
    if task == "tag" and text_b is not None:
        raise PredictError(f"input {index + 1}: a tagger takes one text; drop text_b.")
    try:
        check_text(text, "text")
        if text_b is not None:
            check_text(text_b, "text_b")
    except ValueError as e:
        raise PredictError(f"input {index + 1}: {e}") from None
    return {"text": text, "text_b": text_b}


# --- opening the three formats ---------------------------------------------------------


def detect_format(path) -> tuple[str, pathlib.Path]:
    """`("model" or "artifact", directory)` of `path`; a TF Serving model
    directory (numbered versions inside) resolves to its newest version.
    Nothing is read: an artifact's metadata.json is read and checked once,
    by `open_artifact`."""
    path = pathlib.Path(path)
    if not path.exists():
        raise PredictError(f"--model {path}: no such file or directory.")
    if path.is_file():
        if path.suffix == ".tflite":
            raise PredictError(
                f"--model {path}: give the artifact directory that holds it "
                f"({path.parent}): its metadata.json names the labels and "
                "vocab.txt the tokenizer."
            )
        raise PredictError(
            f"--model {path}: a file; give a directory (a zoo model directory, "
            "a .tflite artifact, or a SavedModel)."
        )
    if (path / MODEL_DIR_MANIFEST).is_file():
        return "model", path
    versions = sorted(
        (int(p.name), p)
        for p in path.iterdir()
        if p.is_dir() and p.name.isdigit() and (p / mf.METADATA).is_file()
    )
    if not (path / mf.METADATA).is_file() and versions:
        path = versions[-1][1]
    if (path / mf.METADATA).is_file():
        return "artifact", path
    raise PredictError(
        f"--model {path}: neither a zoo model directory ({MODEL_DIR_MANIFEST}) "
        f"nor an export artifact ({mf.METADATA})."
    )


def open_predictor(
    path, *, sequence_length=None, max_windows=None, num_threads=1, batch_size=32
):
    """A `Predictor` for a zoo model directory, a `.tflite` artifact or a
    text-in SavedModel. `sequence_length`: default, the length a model
    directory was fine-tuned with, an artifact's primary length (a `.tflite`
    takes any of its signatures' lengths). `max_windows`: windows per long
    text for classifiers (default: as fine-tuned for a model directory, 1 for
    an artifact, which classifies one window as the phone and TF Serving do)."""
    kind, path = detect_format(path)
    for name, value in (
        ("--max-windows", max_windows),
        ("--sequence-length", sequence_length),
        ("--batch-size", batch_size),
    ):
        # An int, not a bool, a float or a string ("8" and 1.5 passed int();
        # batch_size 0 was taken as Keras's default, -1 gave no answers).
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1
        ):
            raise PredictError(
                f"{name} must be a positive integer; received {value!r:.40}."
            )
    if batch_size is None:
        raise PredictError("--batch-size must be a positive integer; received None.")
    if kind == "model":
        return _model_dir_predictor(path, sequence_length, max_windows, batch_size)
    # The manifest, the metadata and their agreement with the model files,
    # checked once before anything runs (export/consistency/); the runner
    # and the host-side steps share the opened artifact and its tokenizer.
    artifact = open_artifact(path)
    kind = artifact.format
    if kind not in ("tflite", "saved_model"):
        raise PredictError(
            f"--model {path}: a {kind} artifact (ids in, for TPU serving); "
            "predict from the text-in SavedModel or the model directory."
        )
    tokenizer = artifact.tokenizer  # built here, before any model file loads
    if kind == "tflite":
        length, run_ids = _tflite_runner(artifact, sequence_length, num_threads)
    else:
        length, run_ids = _saved_model_runner(artifact, sequence_length, batch_size)
    return Predictor(
        kind,
        path,
        artifact.meta["task"],
        artifact.meta["labels"],
        tokenizer,
        length,
        run_ids,
        max_windows or 1,
    )


# The ways `open_predictor` runs ids, one per format.


def _model_dir_predictor(path, sequence_length, max_windows, batch_size):
    """A zoo model directory's `Predictor`: Keras's predict, with the
    length, windows and QA settings it was fine-tuned with unless given."""
    model, tokenizer, meta = load_model_dir(path)
    longest = model.encoder.max_sequence_length
    if sequence_length is not None and not 3 <= sequence_length <= longest:
        raise PredictError(
            f"--sequence-length {sequence_length}: this model takes 3 to {longest} tokens."
        )
    config = evaluation_config(meta, sequence_length, max_windows)
    task = task_of(model)

    lock = threading.Lock()

    def run_ids(inputs):
        # Keras builds and caches its predict function on first use: one
        # call at a time, so threads sharing this Predictor are safe.
        with lock:
            return model.predict(inputs, batch_size=batch_size, verbose=0)

    return Predictor(
        "model",
        path,
        task,
        meta.get("labels") or getattr(model, "labels", None),
        tokenizer,
        config.sequence_length,
        run_ids,
        config.max_windows,
        config.doc_stride,
        config.max_answer_length,
    )


def _tflite_runner(artifact, sequence_length, num_threads):
    """(length, run_ids) of model.tflite's signature for `sequence_length`
    (default: its primary one) of an opened artifact, one text per call as
    on a phone."""
    path, meta = artifact.directory, artifact.meta
    info = meta["files"].get("model.tflite")
    if info is None:
        raise PredictError(
            f"--model {path}: metadata.json describes no model.tflite "
            f"({sorted(meta['files'])}); give the artifact directory `zoo export` wrote."
        )
    lengths = [int(n) for n in info["sequence_lengths"]]
    if sequence_length is not None and sequence_length not in lengths:
        raise PredictError(
            f"--sequence-length {sequence_length}: {path}/model.tflite has "
            f"signatures for {lengths} tokens."
        )
    name = info["signatures"][lengths.index(sequence_length or lengths[0])]
    signature = load_signature(artifact, name, num_threads=num_threads)

    def run_ids(inputs):
        rows = [
            signature(**{k: v[i : i + 1] for k, v in inputs.items()})
            for i in range(len(inputs["token_ids"]))
        ]
        return {k: np.concatenate([r[k] for r in rows]) for k in rows[0]}

    return signature.sequence_length, run_ids


def _saved_model_runner(artifact, sequence_length, batch_size):
    """(length, run_ids) of an opened text-in SavedModel's `serve_ids`
    signature, `batch_size` inputs per call."""
    loaded, _ = load_saved_model(artifact)
    serve = loaded.signatures["serve_ids"]
    length = int(artifact.meta["sequence_lengths"][0])
    if sequence_length not in (None, length):
        raise PredictError(
            f"--sequence-length {sequence_length}: this SavedModel was "
            f"exported for {length} tokens."
        )

    def run_ids(inputs):
        n = len(inputs["token_ids"])
        parts = [
            serve(
                **{
                    k: tf.constant(v[i : i + batch_size], tf.int32)
                    for k, v in inputs.items()
                }
            )
            for i in range(0, n, batch_size)
        ]
        return {k: np.concatenate([p[k].numpy() for p in parts]) for k in parts[0]}

    return length, run_ids
