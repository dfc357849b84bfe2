"""What an artifact claims to answer: the answers recorded in
metadata.json's `validated` at export, and the failures where it now
answers otherwise or names its labels differently from its reference."""

from __future__ import annotations

import hashlib
import json

import numpy as np

from export import manifest as mf


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
