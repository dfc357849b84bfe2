"""Runs tests/backends/worker.py once per Keras backend, each in its own
process (the backend is fixed at `import keras`)."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
WORKER = ROOT / "tests" / "backends" / "worker.py"


def worker_env(backend):
    env = dict(os.environ, KERAS_BACKEND=backend, PYTHONPATH=str(ROOT))
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    env.setdefault("JAX_PLATFORMS", "cpu")
    return env


def run_workers(root, modes, backends, timeout=600):
    """One worker process per backend running `modes` in order, the backends
    side by side; fails with the worker's stderr when one fails (a backend
    that is not installed fails too: jax and torch are in the `test` extra)."""
    started = time.monotonic()
    procs = {
        b: subprocess.Popen(
            [sys.executable, str(WORKER), ",".join(modes), str(root)],
            env=worker_env(b),
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for b in backends
    }
    for b, p in procs.items():
        _, err = p.communicate(timeout=timeout)
        if p.returncode:
            raise AssertionError(
                f"the {modes} worker on KERAS_BACKEND={b} exited {p.returncode}:\n"
                f"{err[-4000:]}"
            )
    print(f"\nworkers {modes} on {backends}: {time.monotonic() - started:.0f} s")
