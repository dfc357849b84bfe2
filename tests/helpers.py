"""One set of checks every layer and model goes through (keras-hub's
TestCase idea): config round trip, eager and symbolic call, a `fit` step,
`.keras` save and reload to 1e-6."""

from __future__ import annotations

import keras
import numpy as np

TINY = dict(
    vocabulary_size=30,
    num_layers=2,
    num_heads=2,
    hidden_dim=8,
    intermediate_dim=16,
    max_sequence_length=12,
)


def tiny_batch(batch=3, seq=7, vocab=30, masked=None, seed=0):
    rng = np.random.default_rng(seed)
    lengths = np.linspace(seq, 2, batch).astype(int)
    mask = (np.arange(seq)[None, :] < lengths[:, None]).astype("int32")
    ids = rng.integers(5, vocab, size=(batch, seq)).astype("int32") * mask
    segments = ((np.arange(seq)[None, :] >= lengths[:, None] // 2) * mask).astype("int32")
    out = {"token_ids": ids, "segment_ids": segments, "padding_mask": mask}
    if masked:
        out["masked_positions"] = np.tile(
            np.arange(1, masked + 1, dtype="int32"), (batch, 1)
        )
    return out


def to_numpy(outputs):
    return {
        k: np.asarray(keras.ops.convert_to_numpy(v))
        for k, v in outputs.items()
        if not isinstance(v, (list, tuple))
    }


def max_diff(a, b):
    return max(float(np.max(np.abs(a[k] - b[k]))) for k in a)


def check_config_round_trip(model, inputs):
    clone = type(model).from_config(model.get_config())
    assert type(clone) is type(model)
    clone.set_weights(model.get_weights())
    assert max_diff(to_numpy(model(inputs)), to_numpy(clone(inputs))) == 0.0


def check_save_reload(model, inputs, path):
    model.save(path)
    restored = keras.saving.load_model(path, safe_mode=True)
    assert type(restored) is type(model)
    assert max_diff(to_numpy(model(inputs)), to_numpy(restored(inputs))) <= 1e-6


def check_fit_step(model, inputs, targets, losses):
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss=losses)
    before = [w.copy() for w in model.get_weights()]
    history = model.fit(
        inputs, targets, batch_size=len(inputs["token_ids"]), epochs=1, verbose=0
    )
    assert np.isfinite(history.history["loss"][0])
    changed = sum(not np.array_equal(a, b) for a, b in zip(before, model.get_weights()))
    assert changed > 0
