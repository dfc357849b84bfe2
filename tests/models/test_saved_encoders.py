"""Encoders saved by an earlier zoo load into today's classes unchanged.

tests/models/data holds what the code before the encoders' `__init__` was
split into named steps wrote for a BERT and an ALBERT encoder (2 groups of
shared blocks) built right after `set_random_seed(7)`: the `config.json` of
each `.keras` file, and the weight names and outputs on two fixed rows:
a change to how an encoder is built that renames a weight, reorders the
graph or changes a seeded initialisation fails here, not in a user's
`zoo_model.json` directory."""

import json
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


def _saved_config(name):
    """The `config.json` the earlier code wrote into `{name}_encoder.keras`."""
    return json.loads((DATA / f"{name}_encoder_config.json").read_text())


# The recorded outputs were computed on an AVX2 machine; oneDNN's AVX-512
# kernels sum in another order and differ by a few float32 ulps (2.4e-7 seen),
# so outputs are compared to 1e-6. A renamed weight, a reordered graph or
# another seeded initialisation changes them by orders of magnitude more.
_TOLERANCE = dict(rtol=1e-6, atol=1e-6)


def _check_against_recorded(name, encoder, recorded):
    assert [w.path for w in encoder.weights] == list(recorded[f"{name}/weight_paths"])
    out = encoder.with_internals()(_inputs(recorded))
    for key in ("sequence_output", "pooled_output"):
        np.testing.assert_allclose(
            np.asarray(out[key]), recorded[f"{name}/{key}"], **_TOLERANCE
        )
    for i, hidden in enumerate(out["hidden_states"]):
        np.testing.assert_allclose(
            np.asarray(hidden), recorded[f"{name}/hidden_states/{i}"], **_TOLERANCE
        )


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_an_encoder_config_saved_before_builds_todays_class(name, recorded):
    # The earlier files were saved right after `set_random_seed(7)` and the
    # build: the saved config, built under the same seed, must give today's
    # class with the same weight names and the recorded outputs.
    keras.utils.set_random_seed(7)
    loaded = keras.saving.deserialize_keras_object(_saved_config(name))
    assert type(loaded) is type(BUILDERS[name]())
    _check_against_recorded(name, loaded, recorded)


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_a_seeded_build_gives_the_saved_weights(name, recorded, tmp_path):
    # The same layers created in the same order draw the same initial
    # weights, and a .keras file of today's build reads back unchanged.
    keras.utils.set_random_seed(7)
    built = BUILDERS[name]()
    _check_against_recorded(name, built, recorded)
    built.save(tmp_path / "encoder.keras")
    _check_against_recorded(
        name, keras.saving.load_model(tmp_path / "encoder.keras"), recorded
    )
