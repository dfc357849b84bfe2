"""How a validation run spends its texts and reports its speed: how many
texts a secondary signature and a derived file run, how many calls time
the latency (and its summary), and how many interpreters share the rest."""

from __future__ import annotations

import os
import statistics

SECONDARY_TEXTS = 32
LATENCY_RUNS = 20
# Texts a derived file (mediapipe.tflite) runs itself, the latency calls
# included, before its outputs must equal its source's (run_tflite).
DERIVED_SAMPLE_TEXTS = 64
# Validation interpreters per file at most: each holds a copy of the weights.
MAX_VALIDATION_WORKERS = 4


def _latency(seconds, batch=1):
    ms = sorted(1000 * s for s in seconds)
    if not ms:
        return None
    return {
        "batch": batch,
        "p50_ms": round(statistics.median(ms), 3),
        "p90_ms": round(ms[min(len(ms) - 1, int(0.9 * len(ms)))], 3),
        "runs": len(ms),
    }


def validation_workers(workers=None):
    """How many 1-thread interpreters validate a file: `workers`, else the
    cores this process may run on (`os.sched_getaffinity`), at most
    `MAX_VALIDATION_WORKERS`. Each one holds its own copy of the file's
    (XNNPACK-packed) weights."""
    if workers is None:
        try:
            cores = len(os.sched_getaffinity(0))
        except AttributeError:  # not Linux
            cores = os.cpu_count() or 1
        return max(1, min(cores, MAX_VALIDATION_WORKERS))
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(
            f"workers: the number of validation interpreters must be an int >= 1; received "
            f"{workers!r}. Pass None to use one per available core."
        )
    return workers
