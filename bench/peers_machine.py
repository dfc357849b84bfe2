"""The machine `make bench` runs on (bench/peers.py): the load average, the
CPU's vector flags and model, and what they offer int8 and bfloat16 work,
since every ratio in the report depends on them."""

from __future__ import annotations

import os
import pathlib
import platform


def _load():
    return round(os.getloadavg()[0], 2)


def _cpu_flags():
    try:
        text = pathlib.Path("/proc/cpuinfo").read_text()
    except OSError:
        return []
    flags = next(
        (
            line.split(":", 1)[1].split()
            for line in text.splitlines()
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


def _cpu_model():
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()
