"""Small numeric helpers shared by validation and prediction."""

import numpy as np


def softmax(x):
    """Softmax over the last axis, computed in float64."""
    x = np.asarray(x, np.float64)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
