"""DistilBertEncoder's own behaviour: it takes `segment_ids` like every
encoder and ignores them, and has no pooler (the shared checks are in
tests/models/harness.py)."""

import numpy as np

from tests.helpers import max_diff, to_numpy
from tests.models.harness import batch, tiny_encoder


def test_distil_encoder_ignores_segments_and_has_no_pooler():
    encoder = tiny_encoder("distilbert")
    inputs = batch(encoder)
    assert inputs["segment_ids"].any()  # segments 0 and 1 go in
    other = dict(inputs, segment_ids=np.ones_like(inputs["segment_ids"]))
    a, b = to_numpy(encoder(inputs)), to_numpy(encoder(other))
    assert sorted(a) == ["sequence_output"]
    assert encoder.pooler_dense is None and encoder.embeddings.segment_embedding is None
    assert max_diff(a, b) == 0.0
