"""What every `make bench` row feeds its engines (bench/peers.py): the
sequence length, the encoders measured and the synthetic token ids."""

from __future__ import annotations

import numpy as np

LENGTH = 128
ENCODERS = {
    "minilm": None,  # the installed real checkpoint
    "bert_base": dict(
        vocabulary_size=30522,
        num_layers=12,
        num_heads=12,
        hidden_dim=768,
        intermediate_dim=3072,
        max_sequence_length=512,
    ),
}


def _ids(batch, vocabulary=30522, seed=0):

    rng = np.random.default_rng(seed)
    ids = rng.integers(1000, vocabulary, (batch, LENGTH)).astype("int32")
    ids[:, 0], ids[:, -1] = 101, 102
    return ids
