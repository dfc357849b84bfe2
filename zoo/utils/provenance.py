"""Where a result came from: package versions and the git revision, recorded
beside every run (`args.json`), export (`metadata.json`) and demo report;
and the machine (CPU, its int8 and bfloat16 features, the load), which
every speed figure depends on."""

from __future__ import annotations

import importlib.metadata
import os
import pathlib
import platform
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


def load_average() -> float | None:
    """The 1-minute load average (None where the OS has none)."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def _cpuinfo() -> str:
    try:
        return pathlib.Path("/proc/cpuinfo").read_text()
    except OSError:
        return ""


def cpu_flags() -> list:
    """The CPU's vector flags that speed depends on (avx*, fma, amx*, vnni)."""
    flags = next(
        (
            line.split(":", 1)[1].split()
            for line in _cpuinfo().splitlines()
            if line.startswith("flags")
        ),
        [],
    )
    return sorted(f for f in flags if f.startswith(("avx", "fma", "amx", "vnni")))


def cpu_features(flags) -> dict:
    """What the CPU offers int8 and bfloat16 work, in the words the ratios
    depend on (LiteRT int8 ran 15.6x the float teacher on an AVX-512 VNNI
    machine, about 5x on an AVX2-only one): `{"int8": ..., "bf16": ...}`."""
    flags = set(flags)
    if "amx_int8" in flags:
        int8 = "AMX"
    elif "avx512_vnni" in flags:
        int8 = "AVX-512 VNNI"
    elif "avx_vnni" in flags:
        int8 = "AVX-VNNI"
    elif "avx2" in flags:
        int8 = "AVX2 only"
    else:
        int8 = "no AVX2"
    bf16 = [
        name
        for flag, name in (("amx_bf16", "AMX"), ("avx512_bf16", "AVX-512 BF16"))
        if flag in flags
    ]
    return {"int8": int8, "bf16": " and ".join(bf16) or "none"}


def cpu_model() -> str:
    for line in _cpuinfo().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def machine() -> dict:
    """`{"cpu", "cores", "int8", "bf16", "load"}`: the machine a figure was
    measured on, as the demo report and `make bench` state it."""
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        **cpu_features(cpu_flags()),
        "load": load_average(),
    }


def machine_line(info) -> str:
    """One sentence for a report: `info` as `machine()` returns it."""
    return (
        f"Machine: {info.get('cpu')}, {info.get('cores')} cores; int8: {info.get('int8')}; "
        f"bfloat16: {info.get('bf16')}; 1-minute load {info.get('load')}."
    )
