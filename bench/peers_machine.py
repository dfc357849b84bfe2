"""The machine `make bench` runs on (bench/peers.py): the load average, the
CPU's vector flags and model, and what they offer int8 and bfloat16 work,
since every ratio in the report depends on them. The detection itself is
`zoo.utils.provenance`'s, which the demo report states too."""

from __future__ import annotations

from zoo.utils.provenance import cpu_features, cpu_flags, cpu_model, load_average

__all__ = ["_cpu_flags", "_cpu_model", "_load", "cpu_features"]

_cpu_flags = cpu_flags
_cpu_model = cpu_model
_load = load_average
