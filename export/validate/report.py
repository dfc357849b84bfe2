"""The validation report: its failures decided (thresholds, claims, the
SavedModel's signatures), its text table (`format_report`) and its file
(`write_report`)."""

from __future__ import annotations

import pathlib
import time

from export import manifest as mf
from export.mediapipe_probes import mediapipe_probes_line
from export.validate.claims import check_claims
from export.validate.limits import check_thresholds, thresholds

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
