"""MediaPipe's agreement with the zoo tokenizer, measured at export.

MediaPipe Tasks' TextClassifier tokenizes with its own C++ BertTokenizer,
not the model's tokenization description, so on text BERT's English does
not cover it may give other ids. Each export that writes mediapipe.tflite
runs zoo.text.probes' multilingual sentences through MediaPipe (in its own
interpreter: export.mediapipe.CLASSIFY) and through LiteRT fed the zoo
tokenizer's ids, and records the agreement in validation.json
(`mediapipe_probes`); export.validate prints `mediapipe_probes_line`."""

from __future__ import annotations

import json
import pathlib
import subprocess
import tempfile

import numpy as np

from export import mediapipe
from export.runtime import load_signature, open_artifact, run_worker
from zoo.text import probes
from zoo.text.tokenizer import tokenize_texts

# Probabilities of the same file on the same ids differ by float rounding
# only (MediaPipe's XNNPACK against LiteRT's kernels: under 1e-6 measured);
# a larger difference means MediaPipe's tokenizer gave other ids.
PROBE_SAME_IDS_TOLERANCE = 1e-4
MEDIAPIPE_TIMEOUT_S = 600


def mediapipe_probes(artifact, python=None):
    """mediapipe.tflite of `artifact` (an `OpenedArtifact`, or a directory,
    opened first) in MediaPipe Tasks' TextClassifier (its own C++
    BertTokenizer) against the same file in LiteRT fed the ids of
    `artifact.tokenizer`, on
    zoo.text.probes' multilingual sentences: per group and overall, the
    sentences, how many got the same top label, the largest probability
    difference, and how many differ by more than float rounding (MediaPipe
    tokenized them into other ids; it does not expose its ids).

    MediaPipe's tokenizer is not the project's, so disagreement is recorded,
    not a failure. Without MediaPipe's venv, or when it fails, the record
    says so (`ran` False and why)."""
    python = python or mediapipe.mediapipe_python()
    if python is None:
        return {
            "ran": False,
            "reason": f"no MediaPipe interpreter (set ${mediapipe.PYTHON_ENV} or run "
            "`make mediapipe-venv`)",
        }
    artifact = open_artifact(artifact)
    artifact_dir = artifact.directory
    texts = list(probes.ALL)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        (tmp / "texts.json").write_text(json.dumps(texts), encoding="utf-8")
        command = [
            str(python),
            "-c",
            mediapipe.CLASSIFY,
            str(artifact_dir / mediapipe.FILE),
            str(tmp / "texts.json"),
            str(tmp / "out.json"),
        ]
        try:
            proc = run_worker(command, None, MEDIAPIPE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return {"ran": False, "reason": f"MediaPipe ran over {MEDIAPIPE_TIMEOUT_S} s"}
        if proc.returncode != 0:
            tail = proc.stderr.strip().splitlines()[-3:]
            return {
                "ran": False,
                "reason": f"MediaPipe exited {proc.returncode}: " + " | ".join(tail),
            }
        out = json.loads((tmp / "out.json").read_text(encoding="utf-8"))
    run = load_signature(artifact, file=mediapipe.FILE)
    ids = tokenize_texts(artifact.tokenizer, texts, run.sequence_length)
    ours = np.concatenate(
        [
            run(**{k: v[i : i + 1] for k, v in ids.items()})[mediapipe.OUTPUT]
            for i in range(len(texts))
        ]
    ).astype(np.float64)
    rows = out["scores"]
    if len(rows) != len(texts) or any(len(r) != ours.shape[1] for r in rows):
        return {
            "ran": False,
            "reason": f"MediaPipe returned {len(rows)} results of "
            f"{sorted({len(r) for r in rows})} scores; expected {len(texts)} of "
            f"{ours.shape[1]} (one per label)",
        }
    theirs = np.asarray(rows, dtype=np.float64)
    difference = np.abs(ours - theirs).max(axis=1)
    same = ours.argmax(axis=1) == theirs.argmax(axis=1)

    def figures(rows):
        return {
            "sentences": len(rows),
            "same_label": int(same[rows].sum()),
            "agreement": float(same[rows].mean()),
            "max_probability_difference": float(difference[rows].max()),
            "other_ids": int((difference[rows] > PROBE_SAME_IDS_TOLERANCE).sum()),
        }

    groups, start = {}, 0
    for name, group in probes.GROUPS.items():
        groups[name] = figures(np.arange(start, start + len(group)))
        start += len(group)
    return {
        "ran": True,
        "mediapipe": out["mediapipe"],
        "sequence_length": run.sequence_length,
        "same_ids_tolerance": PROBE_SAME_IDS_TOLERANCE,
        **figures(np.arange(len(texts))),
        "groups": groups,
        "differing_groups": [n for n, g in groups.items() if g["other_ids"]],
    }


def mediapipe_probes_line(record):
    """One plain line: MediaPipe's agreement with the zoo tokenizer on the
    probe set, and the groups where it tokenizes differently."""
    if not record.get("ran"):
        return f"MediaPipe probe set: not run ({record['reason']})"
    line = (
        f"MediaPipe TextClassifier vs LiteRT with the zoo tokenizer on "
        f"{record['sentences']} multilingual probe sentences: same label "
        f"{record['same_label']}/{record['sentences']} ({record['agreement']:.1%}), "
        f"max probability difference {record['max_probability_difference']:.2e}"
    )
    if not record["differing_groups"]:
        return line + "; every group tokenized alike"
    differ = ", ".join(
        f"{n} {record['groups'][n]['other_ids']}/{record['groups'][n]['sentences']}"
        for n in record["differing_groups"]
    )
    return (
        line + f"; MediaPipe's tokenizer gives other ids on {differ} "
        "(its C++ BertTokenizer normalizes differently: docs/android.md)"
    )
