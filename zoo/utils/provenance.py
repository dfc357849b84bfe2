"""Where a result came from: package versions and the git revision, recorded
beside every run (`args.json`), export (`metadata.json`) and demo report."""

from __future__ import annotations

import importlib.metadata
import pathlib
import subprocess
import sys

# The packages whose versions change what a run or an artifact computes.
PACKAGES = ("tensorflow", "tensorflow-text", "keras", "ai-edge-litert", "numpy", "bert-zoo")


def versions() -> dict:
    """`{"python": ..., package: version or None}` for `PACKAGES`."""
    out = {"python": sys.version.split()[0]}
    for name in PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


def git_revision() -> str | None:
    """The checkout's HEAD, or None for an installed package (no checkout)."""
    try:
        return subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=pathlib.Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
