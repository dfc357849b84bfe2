"""Re-load an exported artifact in the runtime that will serve it and compare it
with the Keras float32 model, text by text.

    report = validate_artifact("exports/bbc_int8", texts, labels, reference_model=model)
    print(format_report(report))

Runtimes: a `.tflite` runs in LiteRT's `Interpreter` (the text-in file in
`InterpreterWithCustomOps` with tensorflow-text's kernels); a SavedModel runs
in a FRESH Python process through the TF1 session loader
(`tf.compat.v1.saved_model.loader.load`), the restore path of TF Serving's C++
loader, which imports nothing but TensorFlow and tensorflow-text. Every
loader checks manifest.json first.

Measured per signature: max and mean |difference| of the outputs (logits, or
start/end logits; over real tokens for per-token outputs), cosine between
output vectors, label agreement (argmax, or best span for QA), accuracy of
both models and its delta when labels are given, file size, batch-1 latency.
`THRESHOLDS` holds the per-profile limits; a miss raises
`ExportValidationError` carrying the report, unless `allow_degraded=True`,
which records the miss in the report (`"degraded": true`) instead.

The first sequence length of a multi-length file is its primary one and gets
every validation text; the other lengths get the first `SECONDARY_TEXTS`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import pathlib
import time
import warnings

import numpy as np
import tensorflow as tf

from export import manifest as mf
from export import mediapipe
from export.mediapipe_probes import mediapipe_probes, mediapipe_probes_line
from export.runtime import (
    open_artifact,
    run_saved_model,
    run_tflite,
)
from zoo.checkpoints import load_model_dir
from zoo.text.tokenizer import vocabulary_sha256
from zoo.utils.numeric import softmax

MIN_VALIDATION_TEXTS = 200
SECONDARY_TEXTS = 32
LATENCY_RUNS = 20
REPORT = "validation.json"

# Per validation profile (metadata.json "validation_profile"). Each entry is
# a bound on a metric of every compared signature: `max_abs_diff` is an upper
# bound, the others are lower bounds. float32 must be the Keras model up to
# kernel rounding; quantized modes are judged on the decision they change.
THRESHOLDS = {
    "float32": {"max_abs_diff": 1e-4, "label_agreement": 1.0},
    "float16": {"label_agreement": 0.995},
    "dynamic_int8": {"label_agreement": 0.99},
    # Full-integer activations are the mode whose accuracy collapses quietly
    # (tensorflow#89904): below 97% agreement it is flagged.
    "int8": {"label_agreement": 0.97},
    # int4 weights: the same bar as full int8.
    "int4": {"label_agreement": 0.97},
    # label_string_agreement: the label name the graph answers with (its
    # assets/labels.txt) against the name metadata.json gives the Keras
    # model's class.
    "saved_model": {
        "max_abs_diff": 1e-4,
        "label_agreement": 1.0,
        "token_ids_match": 1.0,
        "label_string_agreement": 1.0,
    },
    "tpu_float32": {"max_abs_diff": 1e-4, "label_agreement": 1.0},
    "tpu_bfloat16": {"label_agreement": 0.99},
}
# A regressor (task "regress", one float `score`) has no label to agree on:
# every profile is gated on the score itself, by its largest difference from
# the Keras model (in the score's own units, 0..5 for STS) and by the Pearson
# r of the two over the validation texts. Measured on two MiniLM regressors
# fine-tuned on WordNet STS, 500 test pairs at 64 tokens (the gates: BUILD_NOTES.md,
# "Export formats and runtimes"): float16 max 5e-4 / 2.2e-3; dynamic_int8 max 0.053 / 0.22,
# r 0.9996 / 0.9991; int8 max 0.40 / 1.70, r 0.979 / 0.921; int4 max 0.31 /
# 1.20, r 0.984 / 0.964. The float16 and dynamic_int8 bounds leave 2-5x
# room; the int8/int4 bounds (r as the classifiers' 0.97 agreement, and a
# fifth of the 0..5 scale) pass the first model and flag the second.
REGRESSION_THRESHOLDS = {
    "float32": {"max_abs_diff": 1e-4},
    "float16": {"max_abs_diff": 0.01, "score_pearson": 0.9999},
    "dynamic_int8": {"max_abs_diff": 0.5, "score_pearson": 0.995},
    "int8": {"max_abs_diff": 1.0, "score_pearson": 0.97},
    "int4": {"max_abs_diff": 1.0, "score_pearson": 0.97},
    "saved_model": {"max_abs_diff": 1e-4, "token_ids_match": 1.0},
    "tpu_float32": {"max_abs_diff": 1e-4},
    # Not measured (no TPU here): bfloat16 keeps 8 bits of mantissa, between
    # float16 and int8.
    "tpu_bfloat16": {"max_abs_diff": 0.25, "score_pearson": 0.995},
}
LOWER_IS_BETTER = {"max_abs_diff", "mean_abs_diff"}


# A few sentences that exercise every signature when no validation texts are
# given (a load-and-run check, not a validation: the report says so).
PROBE_TEXTS = [
    "The shares rose sharply after the company reported record profits.",
    "The striker scored twice in the second half.",
    "Parliament will vote on the new bill next week.",
    "The film won three awards at the festival.",
]


class ExportValidationError(Exception):
    """An exported artifact disagrees with its Keras model beyond the thresholds.

    `.report` holds the full report (the same dict `validate_artifact` returns).
    """

    def __init__(self, message, report):
        super().__init__(message)
        self.report = report


def _check_texts(texts, who):
    if isinstance(texts, (str, bytes)):
        raise TypeError(
            f"{who}: `texts` must be a list of str (or of (text, text_b) pairs), not one str."
        )
    texts = list(texts)
    if len(texts) < MIN_VALIDATION_TEXTS:
        raise ValueError(
            f"{who}: validation needs at least {MIN_VALIDATION_TEXTS} real texts to say anything "
            f"about label agreement; received {len(texts)}. Pass more (e.g. --data bbc)."
        )
    return texts


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


def best_spans(start, end, ids, sep_id, max_answer_length=30):
    """Best (start, end) per example over context tokens, the rule the
    SavedModel's QA signature uses: segment 1, real, not [SEP], end >= start,
    at most `max_answer_length` tokens."""
    valid = (
        (ids["segment_ids"] == 1)
        & (ids["padding_mask"] == 1)
        & (ids["token_ids"] != sep_id)
    )
    n, length = start.shape
    i = np.arange(length)
    allowed = (i[None, :, None] <= i[None, None, :]) & (
        i[None, None, :] - i[None, :, None] < max_answer_length
    )
    scores = start[:, :, None] + end[:, None, :]
    allowed = allowed & valid[:, :, None] & valid[:, None, :]
    scores = np.where(allowed, scores, -np.inf).reshape(n, -1)
    best = scores.argmax(axis=1)
    return np.stack([best // length, best % length], axis=1)


# --- comparison ---------------------------------------------------------------


def _cosine(a, b):
    a = a.reshape(len(a), -1).astype(np.float64)
    b = b.reshape(len(b), -1).astype(np.float64)
    num = (a * b).sum(1)
    den = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    return np.where(den > 0, num / np.maximum(den, 1e-30), 1.0)


def _class_scores(artifact, reference=None):
    """A classifier's scores to compare: logits, or, for a file that keeps
    only `probabilities` (the MediaPipe file), probabilities against the
    reference's softmax."""
    if "logits" in artifact:
        return artifact["logits"], None if reference is None else reference["logits"]
    return artifact["probabilities"], None if reference is None else softmax(
        np.asarray(reference["logits"], np.float64)
    ).astype(np.float32)


def _score_pearson(a, b):
    """Pearson's r of two score vectors; 1.0 when both are constant and equal
    (nothing to correlate, nothing differs)."""
    da, db = a - a.mean(), b - b.mean()
    denominator = np.sqrt((da * da).sum() * (db * db).sum())
    if denominator > 0:
        return float((da * db).sum() / denominator)
    return 1.0 if np.allclose(a, b) else 0.0


def compare(task, artifact, reference, ids, *, labels=None, label_names=None, sep_id=None):
    """Metrics of `artifact` outputs against `reference` outputs (both `[N, ...]`)."""
    metrics = {"num_texts": int(len(ids["token_ids"]))}
    mask = ids["padding_mask"].astype(bool)
    if task == "regress":
        a = np.asarray(artifact["score"], np.float64).reshape(-1)
        r = np.asarray(reference["score"], np.float64).reshape(-1)
        diff = np.abs(a - r)
        metrics.update(
            max_abs_diff=float(diff.max()) if diff.size else 0.0,
            mean_abs_diff=float(diff.mean()) if diff.size else 0.0,
            score_pearson=_score_pearson(a, r),
        )
        return metrics
    if task == "classify":
        a, r = _class_scores(artifact, reference)
        diff = np.abs(a - r)
        agree = a.argmax(-1) == r.argmax(-1)
        cos = _cosine(a, r)
    elif task == "tag":
        a, r = artifact["logits"], reference["logits"]
        diff = np.abs(a - r)[mask]
        agree = (a.argmax(-1) == r.argmax(-1))[mask]
        cos = _cosine(np.where(mask[..., None], a, 0), np.where(mask[..., None], r, 0))
    else:
        a = np.stack([artifact["start_logits"], artifact["end_logits"]], -1)
        r = np.stack([reference["start_logits"], reference["end_logits"]], -1)
        diff = np.abs(a - r)[mask]
        agree = (
            best_spans(artifact["start_logits"], artifact["end_logits"], ids, sep_id)
            == best_spans(reference["start_logits"], reference["end_logits"], ids, sep_id)
        ).all(1)
        cos = _cosine(np.where(mask[..., None], a, 0), np.where(mask[..., None], r, 0))
    metrics.update(
        max_abs_diff=float(diff.max()) if diff.size else 0.0,
        mean_abs_diff=float(diff.mean()) if diff.size else 0.0,
        cosine_min=float(cos.min()),
        cosine_mean=float(cos.mean()),
        label_agreement=float(agree.mean()),
    )
    if labels is not None and task == "classify" and label_names:
        index = {name: i for i, name in enumerate(label_names)}
        known = np.array([label in index for label in labels])
        if known.any():
            target = np.array([index.get(label, -1) for label in labels])
            acc_a = float((_class_scores(artifact)[0].argmax(-1) == target)[known].mean())
            acc_r = float((reference["logits"].argmax(-1) == target)[known].mean())
            metrics.update(
                accuracy_keras=acc_r, accuracy_artifact=acc_a, accuracy_delta=acc_a - acc_r
            )
    return metrics


def artifact_only_metrics(task, artifact, labels, label_names):
    metrics = {"num_texts": int(len(next(iter(artifact.values()))))}
    if labels is not None and task == "classify" and label_names:
        index = {name: i for i, name in enumerate(label_names)}
        target = np.array([index.get(label, -1) for label in labels])
        known = target >= 0
        if known.any():
            metrics["accuracy_artifact"] = float(
                (_class_scores(artifact)[0].argmax(-1) == target)[known].mean()
            )
    return metrics


def thresholds(profile, task=None):
    """The limits a `task`'s artifact validated under `profile` must meet."""
    table = REGRESSION_THRESHOLDS if task == "regress" else THRESHOLDS
    return table.get(profile, {})


def check_thresholds(profile, results, task=None):
    """Failures (one line each) of every result against `thresholds(profile, task)`."""
    limits = thresholds(profile, task)
    failures = []
    for result in results:
        metrics = result.get("metrics", {})
        for name, bound in limits.items():
            if name not in metrics:
                continue
            value = metrics[name]
            bad = value > bound if name in LOWER_IS_BETTER else value < bound
            if bad:
                op = "<=" if name in LOWER_IS_BETTER else ">="
                failures.append(
                    f"{result['file']}:{result['signature']}: {name} = {value:.6g}, needs {op} {bound:g}"
                )
    return failures


# --- the report ------------------------------------------------------------------


def _file_sizes(artifact_dir, meta):
    sizes = {}
    for name in meta.get("files", {}):
        path = pathlib.Path(artifact_dir) / name
        if path.is_file():
            sizes[name] = path.stat().st_size
    if meta["kind"] != "tflite":
        total = sum(
            p.stat().st_size
            for p in pathlib.Path(artifact_dir).rglob("*")
            if p.is_file() and (p.name == "saved_model.pb" or "variables" in p.parts)
        )
        sizes["saved_model (pb + variables)"] = total
    return sizes


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


def texts_sha256(texts):
    """sha256 of a list of texts (or pairs), to know the same texts again."""
    data = json.dumps(
        [list(t) if isinstance(t, (tuple, list)) else t for t in texts], ensure_ascii=False
    )
    return hashlib.sha256(data.encode("utf-8")).hexdigest()


def _primary(results):
    """The result of the artifact's primary signature on every text."""
    runs = [r for r in results if r.get("predictions") is not None]
    return max(runs, key=lambda r: len(r["predictions"])) if runs else None


def answers(meta, texts, labels, results):
    """What the artifact answered on `texts`, as recorded in metadata.json's
    `validated` at export: the label names it predicted (hashed) and its
    accuracy when gold labels are known. None for tasks without labels."""
    primary = _primary(results)
    if primary is None or meta["task"] != "classify":
        return None
    names = [meta["labels"][i] for i in primary["predictions"]]
    out = {
        "texts": len(texts),
        "texts_sha256": texts_sha256(texts),
        "labels": list(meta["labels"]),
        "signature": f"{primary['file']}:{primary['signature']}",
        "predicted_labels_sha256": hashlib.sha256(
            "\n".join(names).encode("utf-8")
        ).hexdigest(),
        "accuracy": None,
    }
    if labels is not None:
        out["accuracy"] = float(np.mean([a == b for a, b in zip(names, labels)]))
    return out


def check_claims(meta, reference_model, texts, labels, results):
    """Failures where the artifact is not what it claims to be: label names
    that differ from the reference model's, or, on the texts it was validated
    on at export, other answers than the ones recorded then (a relabelled
    metadata.json or a swapped model file with a regenerated manifest)."""
    failures = []
    if reference_model is not None and meta["task"] != "qa":
        theirs = mf.label_names(reference_model)
        if theirs != meta["labels"]:
            failures.append(
                f"labels: metadata.json lists {meta['labels']} but the reference model's are "
                f"{theirs}; the artifact would name its answers wrongly"
            )
    recorded = meta.get("validated")
    now = answers(meta, texts, labels, results)
    if recorded and now and recorded.get("texts_sha256") == now["texts_sha256"]:
        if recorded.get("labels") != now["labels"]:
            failures.append(
                f"labels: metadata.json lists {now['labels']} but the artifact was validated "
                f"with {recorded.get('labels')}"
            )
        if recorded.get("predicted_labels_sha256") != now["predicted_labels_sha256"]:
            failures.append(
                "answers: on the texts it was validated on at export, the artifact now gives "
                "other labels than the ones recorded then (metadata.json relabelled, or the "
                "model file replaced)"
            )
        if (
            now["accuracy"] is not None
            and recorded.get("accuracy") is not None
            and abs(now["accuracy"] - recorded["accuracy"]) > 1e-9
        ):
            failures.append(
                f"accuracy: {now['accuracy']:.4f} on the export's validation texts, recorded "
                f"{recorded['accuracy']:.4f} at export"
            )
    return failures


def validate_artifact(
    artifact_dir,
    texts,
    labels=None,
    reference_model=None,
    tokenizer=None,
    *,
    allow_degraded=False,
    workers=None,
):
    """Load the artifact in its runtime, run `texts` through it and compare.

    Args:
        artifact_dir: a `zoo export` artifact (TFLite directory, or a
            SavedModel version directory `BASE/NAME/VERSION`).
        texts: at least `MIN_VALIDATION_TEXTS` str, or `(text, text_b)` pairs.
        labels: optional gold labels (names), for the accuracy delta.
        reference_model: the Keras model to compare with. None: the source
            model named in metadata.json if it still exists unchanged, else
            the report holds the artifact's own figures only.
        tokenizer: the project tokenizer for host-side ids. None: built from
            the artifact's vocab.txt and metadata's lower-casing.
        allow_degraded: record threshold misses in the report instead of
            raising `ExportValidationError`.
        workers: `.tflite` only: how many 1-thread LiteRT interpreters share
            the texts after the latency calls (None: one per available core,
            see `export.runtime.validation_workers`); recorded in the report
            as `validation_interpreters`. The outputs do not depend on it.

    Returns the report dict (see `format_report`).
    """
    artifact_dir = pathlib.Path(artifact_dir)
    texts = _check_texts(texts, "validate_artifact")
    _check_labels(labels, texts)
    meta = open_artifact(artifact_dir)
    tokenizer = _artifact_tokenizer(artifact_dir, meta, tokenizer)
    reference = _reference(artifact_dir, meta, reference_model)
    started = time.time()
    ran = _run_in_runtime(artifact_dir, meta, texts, tokenizer, workers)
    results = [_run_result(artifact_dir, meta, run, labels, reference) for run in ran.runs]
    report = _report(
        artifact_dir, meta, texts, labels, ran, reference, results, allow_degraded, started
    )
    if report["failures"] and not allow_degraded:
        raise ExportValidationError(
            f"{artifact_dir} failed validation ({report['validation_profile']} thresholds):\n  "
            + "\n  ".join(report["failures"])
            + "\n\n"
            + format_report(report)
            + "\nFix the export (or accept it with allow_degraded=True / --allow-degraded).",
            report,
        )
    return report


# The steps of `validate_artifact`, in its order.


def _check_labels(labels, texts):
    if labels is not None and len(labels) != len(texts):
        raise ValueError(
            f"validate_artifact: {len(labels)} labels for {len(texts)} texts; pass one per text."
        )


def _artifact_tokenizer(artifact_dir, meta, tokenizer):
    """`tokenizer`, or the artifact's own (built once from its files and
    tokenization description); a given one must have the artifact's
    vocabulary and tokenize by its description (`mf.artifact_tokenizer`)."""
    return mf.artifact_tokenizer(artifact_dir, meta, given=tokenizer)


def _reference(artifact_dir, meta, reference_model):
    """The Keras model to compare with: the given one, else the source model
    metadata.json names if it is unchanged, else none (`model` None)."""
    if reference_model is not None:
        return _ReferenceOutputs(reference_model, "given")
    reference_model = _load_reference_from_metadata(artifact_dir, meta)
    if reference_model is None:
        return _ReferenceOutputs(None, None)
    return _ReferenceOutputs(reference_model, "metadata source_model")


@dataclasses.dataclass
class _RuntimeRuns:
    """The artifact's runs in its runtime (`export.runtime`), and how it ran."""

    runs: list
    runtime: str  # the runtime, as the report names it
    seconds: float  # the time the runs took
    interpreters: int | None = None  # .tflite: LiteRT interpreters that validated
    signatures_seen: list | None = None  # SavedModel: the loaded MetaGraphDef's


def _run_in_runtime(artifact_dir, meta, texts, tokenizer, workers):
    """Every signature of the artifact on `texts`, in the runtime that will serve it."""
    started = time.time()
    if meta["kind"] == "tflite":
        runs = run_tflite(artifact_dir, meta, texts, tokenizer, workers=workers)
        interpreters = max(run["workers"] for run in runs)
        runtime = (
            f"LiteRT Interpreter (ai_edge_litert), num_threads=1; validated on {interpreters} "
            "interpreters (latency on the first alone)"
        )
        return _RuntimeRuns(runs, runtime, time.time() - started, interpreters=interpreters)
    runtime = (
        "tf.compat.v1.saved_model.loader in a fresh process (TF Serving's restore path)"
    )
    runs, signatures_seen = run_saved_model(artifact_dir, meta, texts, tokenizer)
    return _RuntimeRuns(
        runs, runtime, time.time() - started, signatures_seen=signatures_seen
    )


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


def _run_result(artifact_dir, meta, run, labels, reference):
    """One (file, signature) row of the report: what ran, its predictions,
    and its metrics against the reference (or the artifact's own)."""
    task = meta["task"]
    result = {
        "file": run["file"],
        "signature": run["signature"],
        "sequence_length": run["sequence_length"],
        "input": run["input"],
        "latency": run["latency"],
    }
    if run.get("same_as"):
        # A derived file checked on a sample (export/runtime.py).
        result["texts_run"] = run["texts_run"]
        result["same_as"] = run["same_as"]
    if run.get("note"):
        result["note"] = run["note"]
    outputs = run["outputs"]
    scores = outputs.get("logits", outputs.get("probabilities"))
    _check_class_count(artifact_dir, meta, run, scores)
    if task == "classify" and scores is not None:
        # Per-text predicted class indices: lets a caller compare two
        # artifacts (e.g. a student with its teacher) on the same texts.
        result["predictions"] = scores.argmax(-1).astype(int).tolist()
    run_labels = None if labels is None else labels[: len(run["ids"]["token_ids"])]
    if run["input"] in ("text", "text_pair") and "token_ids" in outputs:
        # The artifact tokenized in-graph: how often its ids are the host's.
        same = (outputs["token_ids"] == run["ids"]["token_ids"]).all(1)
        result["token_ids_match"] = float(same.mean())
    if run.get("role") == "tokenize":
        result["metrics"] = {"token_ids_match": result.pop("token_ids_match")}
    elif reference.model is not None:
        result["metrics"] = _compared_metrics(meta, run, result, run_labels, reference(run))
    else:
        result["metrics"] = artifact_only_metrics(
            task, outputs, run_labels, meta.get("labels")
        )
    return result


def _check_class_count(artifact_dir, meta, run, scores):
    """A classifier's or tagger's scores are one per label metadata.json names."""
    if (
        meta["task"] in ("classify", "tag")
        and scores is not None
        and scores.shape[-1] != len(meta["labels"])
    ):
        raise mf.MetadataError(
            f"{artifact_dir / mf.METADATA}: `labels` names {len(meta['labels'])} classes "
            f"but {run['file']}:{run['signature']} outputs {scores.shape[-1]}; "
            "re-export the artifact."
        )


def _compared_metrics(meta, run, result, run_labels, reference):
    """`compare`'s metrics of a run against the reference outputs; the
    run's `token_ids_match` moves from `result` into them."""
    task = meta["task"]
    outputs = run["outputs"]
    keep = np.ones(len(run["ids"]["token_ids"]), bool)
    if run["file"].endswith(".tflite") and "token_ids_match" in result:
        # The text-in .tflite tokenizes with FastBertTokenizer, which
        # differs from the project tokenizer on some inputs (see
        # export/tflite.py): numbers compare where the ids agree.
        keep = (outputs["token_ids"] == run["ids"]["token_ids"]).all(1)
    sub = lambda d, keep=keep: {k: v[keep] for k, v in d.items()}  # noqa: E731
    metrics = compare(
        task,
        sub(outputs),
        sub(reference),
        sub(run["ids"]),
        labels=None if run_labels is None else [x for x, k in zip(run_labels, keep) if k],
        label_names=meta.get("labels"),
        sep_id=meta["special_tokens"]["sep"],
    )
    if "token_ids_match" in result:
        metrics["token_ids_match"] = result.pop("token_ids_match")
    if "label" in run.get("strings", {}) and task == "classify":
        names = meta["labels"]
        expected = [names[i] for i in reference["logits"].argmax(-1)]
        metrics["label_string_agreement"] = float(
            np.mean([x == y for x, y in zip(run["strings"]["label"], expected)])
        )
    return metrics


def _report(
    artifact_dir, meta, texts, labels, ran, reference, results, allow_degraded, started
):
    """The report (see `format_report`), its failures decided: the
    thresholds (with a reference), the artifact's claims, and, for a
    SavedModel, the signatures its MetaGraphDef must hold. `degraded` is
    decided before the signature check, which fails even when degraded
    artifacts are allowed."""
    task, profile = meta["task"], meta["validation_profile"]
    reference_model = reference.model
    failures = (
        check_thresholds(profile, results, task) if reference_model is not None else []
    )
    failures += check_claims(meta, reference_model, texts, labels, results)
    report = {
        "artifact": str(artifact_dir),
        "kind": meta["kind"],
        "task": task,
        "quantization": meta.get("quantization"),
        "validation_profile": profile,
        "runtime": ran.runtime,
        "validation_interpreters": ran.interpreters,
        "reference": reference.source,
        "num_texts": len(texts),
        "thresholds": thresholds(profile, task),
        "file_sizes": _file_sizes(artifact_dir, meta),
        "ops": {f: i.get("ops") for f, i in meta.get("files", {}).items() if i.get("ops")},
        "results": results,
        "failures": failures,
        "passed": not failures,
        "degraded": bool(failures) and allow_degraded,
        "seconds": round(time.time() - started, 1),
        # Where they went: the artifact in its runtime, the Keras reference.
        "seconds_runtime": round(ran.seconds, 1),
        "seconds_reference": round(reference.seconds, 1),
    }
    if meta.get("mediapipe"):
        report["mediapipe"] = meta["mediapipe"]
    if ran.signatures_seen is not None:
        report["signature_defs"] = ran.signatures_seen
        missing = sorted(set(meta["signatures"]) - set(ran.signatures_seen))
        if missing:
            failures.append(f"signatures missing from the loaded MetaGraphDef: {missing}")
            report["passed"] = False
    if reference_model is None:
        report["note"] = (
            "no reference model: artifact-only figures (pass the Keras model, or keep the "
            "source model directory named in metadata.json, to compare)"
        )
    return report


def format_report(report):
    """The report as a text table, one row per (file, signature)."""
    lines = [
        f"{report['artifact']}  [{report['kind']}, {report['task']}, profile "
        f"{report['validation_profile']}]",
        f"runtime: {report['runtime']}; {report['num_texts']} texts; reference: "
        f"{report['reference'] or 'none'}",
    ]
    # "agree": label agreement with the Keras model; for a regressor, the
    # Pearson r of its scores with the Keras model's.
    header = (
        f"{'file:signature':<34} {'L':>4} {'max|d|':>9} {'mean|d|':>9} {'cos_min':>8} "
        f"{'agree':>7} {'acc':>7} {'d_acc':>7} {'ids=':>6} {'p50 ms':>8} {'batch':>5}"
    )
    lines += [header, "-" * len(header)]

    def cell(value, spec, width):
        return ("-" if value is None else format(value, spec)).rjust(width)

    for r in report["results"]:
        m = r.get("metrics", {})
        latency = (r.get("latency") or {}).get("p50_ms")
        lines.append(
            f"{(r['file'] + ':' + r['signature'])[:34]:<34} {r['sequence_length']:>4} "
            f"{cell(m.get('max_abs_diff'), '.2e', 9)} {cell(m.get('mean_abs_diff'), '.2e', 9)} "
            f"{cell(m.get('cosine_min'), '.5f', 8)} {cell(m.get('label_agreement', m.get('score_pearson')), '.4f', 7)} "
            f"{cell(m.get('accuracy_artifact'), '.4f', 7)} {cell(m.get('accuracy_delta'), '+.4f', 7)} "
            f"{cell(m.get('token_ids_match'), '.3f', 6)} {cell(latency, '.2f', 8)} "
            f"{cell((r.get('latency') or {}).get('batch'), 'd', 5)}"
        )
    for r in report["results"]:
        where = f"{r['file']}:{r['signature']}"
        if r.get("same_as"):
            n = len(r.get("predictions") or []) or report["num_texts"]
            lines.append(
                f"{where}: the graph of {r['same_as']} (same operators, tensors and weight "
                f"bytes); ran {r['texts_run']} of {n} texts, bit-identical to it there; the "
                f"other {n - r['texts_run']} outputs are {r['same_as']}'s"
            )
        if r.get("note"):
            lines.append(f"{where}: {r['note']}")
    sizes = ", ".join(f"{k} {v / 1e6:.2f} MB" for k, v in report["file_sizes"].items())
    lines.append(f"sizes: {sizes}")
    if report.get("mediapipe"):
        lines.append(f"mediapipe.tflite: {report['mediapipe']}")
    if report.get("mediapipe_probes"):
        lines.append(mediapipe_probes_line(report["mediapipe_probes"]))
    if report["failures"]:
        state = "DEGRADED (recorded, allowed)" if report["degraded"] else "FAILED"
        lines.append(f"{state}: " + "; ".join(report["failures"]))
    else:
        lines.append(
            f"passed ({report['validation_profile']} thresholds {report['thresholds']})"
        )
    return "\n".join(lines)


def write_report(report, path):
    return mf.write_json(path, report)


def validate_new_artifact(
    tmp, model, texts, labels, tokenizer, allow_degraded, workers=None
):
    """The last step of every exporter, on the artifact still in its temporary
    directory: manifest, validation in the artifact's runtime against `model`
    (or, without `texts`, a load-and-run check on probe sentences, said so in
    the report), `validation.json`, then the final manifest."""

    mf.write_manifest(tmp)
    probe = texts is None
    if probe:
        warnings.warn(
            "No validation_texts: the export is only load-checked on a few probe sentences. "
            "Pass >= 200 real texts (e.g. --data bbc) to validate it.",
            stacklevel=3,
        )
        texts = (PROBE_TEXTS * (MIN_VALIDATION_TEXTS // len(PROBE_TEXTS) + 1))[
            :MIN_VALIDATION_TEXTS
        ]
        labels = None
    report = validate_artifact(
        tmp,
        texts,
        labels,
        reference_model=model,
        tokenizer=tokenizer,
        allow_degraded=allow_degraded,
        workers=workers,
    )
    meta = mf.read_metadata(tmp)
    if mediapipe.FILE in meta.get("files", {}):
        report["mediapipe_probes"] = mediapipe_probes(
            tmp, meta, _artifact_tokenizer(tmp, meta, tokenizer)
        )
    if probe:
        report["note"] = "probe sentences only: load-and-run check, not a validation"
    else:
        # What the artifact claims to be: a later `zoo validate` on the same
        # texts must get the same answers (see `check_claims`).
        meta = mf.read_metadata(tmp)
        claims = answers(meta, texts, labels, report["results"])
        if claims is not None:
            meta["validated"] = claims
            mf.write_json(tmp / mf.METADATA, meta)
    report["artifact"] = "(this directory)"
    write_report(report, tmp / "validation.json")
    mf.write_manifest(tmp)
    mf.make_readable(tmp)
    return report
