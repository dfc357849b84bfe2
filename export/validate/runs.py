"""The artifact run in the runtime that will serve it (`export.runtime`),
and each (file, signature) run made into a report row with its metrics."""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from export import manifest as mf
from export.runtime import run_saved_model, run_tflite
from export.validate.metrics import artifact_only_metrics, compare


@dataclasses.dataclass
class _RuntimeRuns:
    """The artifact's runs in its runtime (`export.runtime`), and how it ran."""

    runs: list
    runtime: str  # the runtime, as the report names it
    seconds: float  # the time the runs took
    interpreters: int | None = None  # .tflite: LiteRT interpreters that validated
    signatures_seen: list | None = None  # SavedModel: the loaded MetaGraphDef's


def _run_in_runtime(artifact, texts, workers):
    """Every signature of `artifact` (an `OpenedArtifact`) on `texts`, in
    the runtime that will serve it, tokenized with `artifact.tokenizer`."""
    started = time.time()
    if artifact.format == "tflite":
        runs = run_tflite(artifact, texts, workers=workers)
        interpreters = max(run["workers"] for run in runs)
        runtime = (
            f"LiteRT Interpreter (ai_edge_litert), num_threads=1; validated on {interpreters} "
            "interpreters (latency on the first alone)"
        )
        return _RuntimeRuns(runs, runtime, time.time() - started, interpreters=interpreters)
    runtime = (
        "tf.compat.v1.saved_model.loader in a fresh process (TF Serving's restore path)"
    )
    runs, signatures_seen = run_saved_model(artifact, texts)
    return _RuntimeRuns(
        runs, runtime, time.time() - started, signatures_seen=signatures_seen
    )


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
        # A derived file checked on a sample (export/runtime/litert_run.py).
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
        # export/tflite/__init__.py): numbers compare where the ids agree.
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
