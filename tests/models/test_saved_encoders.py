"""Encoders saved by an earlier zoo load into today's classes unchanged.

tests/models/data holds a BERT and an ALBERT encoder (2 groups of shared
blocks) saved as `.keras` files by the code before issue #37 split the
encoders' `__init__` into named steps, with their outputs on two fixed rows:
a change to how an encoder is built that renames a weight, reorders the
graph or changes a seeded initialisation fails here, not in a user's
`zoo_model.json` directory."""

import pathlib

import keras
import numpy as np
import pytest

import zoo
from zoo.models.albert_encoder import AlbertEncoder

DATA = pathlib.Path(__file__).parent / "data"
BUILDERS = {
    "bert": lambda: zoo.BertEncoder(
        vocabulary_size=30,
        num_layers=2,
        num_heads=2,
        hidden_dim=8,
        intermediate_dim=16,
        max_sequence_length=16,
    ),
    "albert": lambda: AlbertEncoder(
        vocabulary_size=30,
        num_layers=4,
        num_heads=2,
        hidden_dim=8,
        intermediate_dim=16,
        embedding_dim=4,
        num_groups=2,
        max_sequence_length=16,
    ),
}


@pytest.fixture(scope="module")
def recorded():
    with np.load(DATA / "encoders_before_issue_37.npz") as f:
        return {k: f[k] for k in f.files}


def _inputs(recorded):
    return {k.split("/", 1)[1]: v for k, v in recorded.items() if k.startswith("input/")}


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_an_encoder_saved_before_loads_with_its_weights_and_outputs(name, recorded):
    loaded = keras.saving.load_model(DATA / f"{name}_encoder.keras")
    assert type(loaded) is type(BUILDERS[name]())
    assert [w.path for w in loaded.weights] == list(recorded[f"{name}/weight_paths"])
    out = loaded.with_internals()(_inputs(recorded))
    for key in ("sequence_output", "pooled_output"):
        np.testing.assert_array_equal(np.asarray(out[key]), recorded[f"{name}/{key}"])
    for i, hidden in enumerate(out["hidden_states"]):
        np.testing.assert_array_equal(
            np.asarray(hidden), recorded[f"{name}/hidden_states/{i}"]
        )


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_a_seeded_build_gives_the_saved_weights(name):
    # The file was saved right after `set_random_seed(7)` and the build:
    # the same layers created in the same order draw the same initial weights.
    loaded = keras.saving.load_model(DATA / f"{name}_encoder.keras")
    keras.utils.set_random_seed(7)
    built = BUILDERS[name]()
    assert [w.path for w in built.weights] == [w.path for w in loaded.weights]
    for a, b in zip(built.weights, loaded.weights):
        np.testing.assert_array_equal(np.asarray(a.value), np.asarray(b.value), a.path)
