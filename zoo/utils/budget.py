"""The memory a model needs, from its config alone, checked before it is built.

A config file is untrusted: `num_layers` 200 of width 30,000 is each in
range (`zoo.configs.INT_LIMITS`) and still asks for hundreds of gigabytes.
Building it would allocate as it goes and end in an out-of-memory kill or a
TensorFlow `ResourceExhaustedError` minutes later. So every encoder
constructor asks `check_memory` first, with the figures this module derives
from the config (no tensor exists yet):

- weights: `config.num_parameters()` float32 values, counted twice, since a
  loader holds a checkpoint's tensors while it assigns them to the model's;
- activations: one transformer block's working set at the requested length
  (batch 1): the query/key/value, output and feed-forward activations, and
  the attention scores and probabilities, `num_heads x L x L` each.

The limit is `ZOO_MEMORY_LIMIT` (bytes, or a number with K/M/G/T, e.g.
`ZOO_MEMORY_LIMIT=48G`) when set, else half of this machine's physical
memory. A refusal names the figure, the limit and how to raise it.
"""

from __future__ import annotations

import os
import re

ENVIRONMENT_VARIABLE = "ZOO_MEMORY_LIMIT"
# Half the machine: room for the framework, the data and a second copy.
DEFAULT_SHARE = 0.5
_FLOAT_BYTES = 4
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


class MemoryBudgetError(ValueError):
    """A model whose config asks for more memory than the limit allows."""


def physical_memory() -> int:
    """Bytes of physical memory on this machine (0 when unknown)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0


def parse_bytes(text) -> int:
    """`12G`, `512M`, `1.5G`, `1000000` -> bytes; ValueError naming the
    variable otherwise."""
    match = re.fullmatch(
        r"\s*([0-9]+(?:\.[0-9]+)?)\s*([KMGT]?)(?:i?B)?\s*", str(text), re.I
    )
    if not match or float(match.group(1)) <= 0:
        raise ValueError(
            f"{ENVIRONMENT_VARIABLE}={text!r}: expected a positive size in bytes, or with "
            "a unit K, M, G or T (e.g. 48G)."
        )
    return int(float(match.group(1)) * _UNITS[match.group(2).upper()])


def memory_limit() -> tuple[int, str]:
    """`(bytes, where it comes from)`."""
    value = os.environ.get(ENVIRONMENT_VARIABLE)
    if value:
        return parse_bytes(value), f"{ENVIRONMENT_VARIABLE}={value}"
    total = physical_memory()
    if total <= 0:  # unknown: no limit of our own; the system's applies
        return 1 << 62, "no limit (this machine's memory is unknown)"
    return int(total * DEFAULT_SHARE), f"half of this machine's {_size(total)} of memory"


def estimate(config, sequence_length=None) -> dict:
    """`{"parameters", "weight_bytes", "activation_bytes", "total_bytes"}`
    for `config` (an `EncoderConfig`) run at `sequence_length` tokens
    (default: its `max_sequence_length`, the longest it accepts)."""
    length = config.max_sequence_length if sequence_length is None else sequence_length
    h, i = config.hidden_dim, config.intermediate_dim
    parameters = config.num_parameters()
    weights = parameters * _FLOAT_BYTES
    # One block's working set at batch 1: q, k, v, context and output (5h),
    # the feed-forward (i), and the scores and probabilities (2 x heads x L).
    per_token = 5 * h + i + 2 * config.num_heads * length
    activations = length * per_token * _FLOAT_BYTES
    return {
        "parameters": parameters,
        "weight_bytes": weights,
        "activation_bytes": activations,
        "total_bytes": 2 * weights + activations,
    }


def check_memory(config, origin="the model", sequence_length=None) -> dict:
    """`estimate(config)`, or `MemoryBudgetError` when it exceeds the limit.
    `origin` names what described the model (a file, a class)."""
    figures = estimate(config, sequence_length)
    limit, source = memory_limit()
    if figures["total_bytes"] > limit:
        raise MemoryBudgetError(
            f"{origin}: this config describes a model of {figures['parameters']:,} parameters "
            f"({config.num_layers} layers, hidden_dim {config.hidden_dim}, intermediate_dim "
            f"{config.intermediate_dim}, vocabulary_size {config.vocabulary_size}, "
            f"max_sequence_length {config.max_sequence_length}) that needs about "
            f"{_size(figures['total_bytes'])} to load and run, over the limit of "
            f"{_size(limit)} ({source}). Check that the file is the model you meant; if it "
            f"is, raise the limit with {ENVIRONMENT_VARIABLE} (e.g. "
            f"{ENVIRONMENT_VARIABLE}={_suggest(figures['total_bytes'])})."
        )
    return figures


def _size(n) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB", "PB"):
        if n < 1024 or unit == "PB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{n} B"
        n /= 1024
    return f"{n:.1f} PB"  # pragma: no cover - the loop returns


def _suggest(total) -> str:
    gigabytes = -(-int(total * 1.25) // (1 << 30))
    return f"{gigabytes}G"
