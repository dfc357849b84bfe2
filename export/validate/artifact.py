"""The two entry points: `validate_artifact` (an artifact on directory,
its steps in order) and `validate_new_artifact` (the last step of every
exporter, on the artifact still in its temporary directory)."""

from __future__ import annotations

import time
import warnings

from export import manifest as mf
from export import mediapipe
from export.mediapipe_probes import mediapipe_probes
from export.runtime import open_artifact
from export.validate.claims import answers
from export.validate.limits import MIN_VALIDATION_TEXTS, ExportValidationError
from export.validate.reference import _reference
from export.validate.report import _report, format_report, write_report
from export.validate.runs import _run_in_runtime, _run_result

# A few sentences that exercise every signature when no validation texts are
# given (a load-and-run check, not a validation: the report says so).
PROBE_TEXTS = [
    "The shares rose sharply after the company reported record profits.",
    "The striker scored twice in the second half.",
    "Parliament will vote on the new bill next week.",
    "The film won three awards at the festival.",
]


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


def check_validation_texts(validation, who):
    """An exporter's first check of its `Validation`: too few texts are
    refused before anything is built, not after the whole file was written
    and loaded. None (a load-and-run check on probe sentences) passes."""
    if validation.texts is not None:
        _check_texts(validation.texts, who)


def validate_artifact(
    artifact,
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
        artifact: a `zoo export` artifact (TFLite directory, or a
            SavedModel version directory `BASE/NAME/VERSION`), or one
            already opened (`export.runtime.open_artifact`): the checks
            that opening runs run once either way.
        texts: at least `MIN_VALIDATION_TEXTS` str, or `(text, text_b)` pairs.
        labels: optional gold labels (names), for the accuracy delta.
        reference_model: the Keras model to compare with. None: the source
            model named in metadata.json if it still exists unchanged, else
            the report holds the artifact's own figures only.
        tokenizer: the project tokenizer for host-side ids; it must have
            the artifact's vocabulary and tokenization description. None:
            the opened artifact's own (built once from its files).
        allow_degraded: record threshold misses in the report instead of
            raising `ExportValidationError`.
        workers: `.tflite` only: how many 1-thread LiteRT interpreters share
            the texts after the latency calls (None: one per available core,
            see `export.runtime.validation_workers`); recorded in the report
            as `validation_interpreters`. The outputs do not depend on it.

    Returns the report dict (see `format_report`).
    """
    texts = _check_texts(texts, "validate_artifact")
    _check_labels(labels, texts)
    artifact = open_artifact(artifact).with_tokenizer(tokenizer)
    artifact_dir, meta = artifact.directory, artifact.meta
    reference = _reference(artifact_dir, meta, reference_model)
    started = time.time()
    ran = _run_in_runtime(artifact, texts, workers)
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


# The step of `validate_artifact` that checks its arguments (the opening,
# the reference, the runs and the report have modules of their own).


def _check_labels(labels, texts):
    if labels is not None and len(labels) != len(texts):
        raise ValueError(
            f"validate_artifact: {len(labels)} labels for {len(texts)} texts; pass one per text."
        )


def validate_new_artifact(tmp, model, tokenizer, validation):
    """The last step of every exporter, on the artifact still in its temporary
    directory: manifest, validation in the artifact's runtime against `model`
    (or, without texts, a load-and-run check on probe sentences, said so in
    the report), `validation.json`, then the final manifest. `validation` is
    the exporter's `export.specs.Validation` (texts, labels, allow_degraded,
    workers)."""

    mf.write_manifest(tmp)
    texts, labels = validation.texts, validation.labels
    probe = texts is None
    if probe:
        warnings.warn(
            "No Validation.texts: the export is only load-checked on a few probe sentences. "
            "Pass >= 200 real texts (e.g. --data bbc) to validate it.",
            stacklevel=3,
        )
        texts = (PROBE_TEXTS * (MIN_VALIDATION_TEXTS // len(PROBE_TEXTS) + 1))[
            :MIN_VALIDATION_TEXTS
        ]
        labels = None
    # Opened once: the validation and the MediaPipe probes share its checks
    # and its tokenizer (the exporter's own, checked against the files).
    artifact = open_artifact(tmp).with_tokenizer(tokenizer)
    report = validate_artifact(
        artifact,
        texts,
        labels,
        reference_model=model,
        allow_degraded=validation.allow_degraded,
        workers=validation.workers,
    )
    if mediapipe.FILE in artifact.meta.get("files", {}):
        report["mediapipe_probes"] = mediapipe_probes(artifact)
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
