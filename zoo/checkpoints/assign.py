"""Copy named tensors into Keras variables, all-or-nothing."""

from __future__ import annotations

import numpy as np

from zoo.checkpoints.errors import CheckpointMismatchError


def assign_tensors(pairs, source, *, unused=(), allow_partial=False):
    """Assign `tensor` to `variable` for every `(variable, key, transpose)` in
    `pairs`, where `source` maps keys to numpy arrays.

    Every problem is collected first (missing key, wrong shape, and the source
    keys in `unused` that nothing consumed); if any, nothing is assigned and a
    `CheckpointMismatchError` lists them all. With `allow_partial=True` the
    matching tensors are assigned and the problems are returned instead.
    """
    problems, plan = [], []
    for variable, key, transpose in pairs:
        expected = tuple(variable.shape)
        if key not in source:
            problems.append((key, expected, "missing"))
            continue
        value = np.asarray(source[key])
        if transpose:
            value = value.T
        if tuple(value.shape) != expected:
            found = tuple(value.T.shape) if transpose else tuple(value.shape)
            note = " (stored transposed)" if transpose else ""
            problems.append((key, expected, f"{found}{note}"))
            continue
        plan.append((variable, value))
    problems += [(key, "nothing", f"unexpected {np.shape(source[key])}") for key in unused]
    if problems and not allow_partial:
        raise CheckpointMismatchError(getattr(source, "origin", "<tensors>"), problems)
    for variable, value in plan:
        variable.assign(value.astype(variable.dtype))
    return problems


class NamedTensors(dict):
    """A dict of name -> array that remembers where it came from (for errors)."""

    def __init__(self, data, origin):
        super().__init__(data)
        self.origin = str(origin)
