"""TF Model Garden interop: Garden's BertEncoder is the oracle for ours, and
Garden checkpoints (tf.train.Checkpoint(encoder=...)) load into ours.

Garden (tf_keras) and zoo (Keras 3) run in this one process; the first test
checks that importing Garden leaves Keras 3 in charge of `tf.keras`.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

from zoo.checkpoints.errors import CheckpointMismatchError
from zoo.checkpoints.garden import (
    GARDEN_INSTALL,
    build_garden_encoder,
    garden_inputs,
    import_garden_networks,
    load_garden_encoder,
    load_garden_weights,
    to_garden,
)
from zoo.configs import EncoderConfig
from zoo.models import build_encoder

TOLERANCE = 1e-5
TINY = EncoderConfig(
    vocabulary_size=64, num_layers=2, num_heads=4, hidden_dim=32, intermediate_dim=48,
    max_sequence_length=24,
)  # fmt: skip


def _random_batch(config, batch=4, length=11, seed=0):
    rng = np.random.default_rng(seed)
    lengths = np.array([length, 7, 3, 1])[:batch]
    mask = (np.arange(length)[None, :] < lengths[:, None]).astype("int32")
    return {
        "token_ids": rng.integers(1, config.vocabulary_size, (batch, length)).astype(
            "int32"
        )
        * mask,
        "segment_ids": (rng.integers(0, 2, (batch, length)) * mask).astype("int32"),
        "padding_mask": mask,
    }


def _run_garden(garden, batch):
    return garden(garden_inputs(batch), training=False)


def _write_checkpoint(garden, path):
    import tensorflow as tf

    return tf.train.Checkpoint(encoder=garden).write(str(path / "ckpt"))


def test_missing_garden_names_the_install_command(monkeypatch):
    # None in sys.modules makes the import fail even when Garden is installed.
    monkeypatch.setitem(sys.modules, "official.nlp.modeling", None)
    with pytest.raises(ImportError, match=r"pip install -e '\.\[garden\]'"):
        import_garden_networks()
    assert GARDEN_INSTALL == "pip install -e '.[garden]'"


def test_checkpoint_without_an_encoder_is_explained(tmp_path):
    import tensorflow as tf

    prefix = tf.train.Checkpoint(step=tf.Variable(3)).write(str(tmp_path / "ckpt"))
    with pytest.raises(ValueError, match="no Garden BertEncoder"):
        load_garden_encoder(prefix)


@pytest.mark.garden
def test_garden_leaves_keras_3_in_charge(garden_networks):
    """Garden is tf_keras code; importing and running it must not switch
    `tf.keras` to tf_keras the way tensorflow-model-optimization does."""
    import keras
    import tensorflow as tf

    garden = build_garden_encoder(TINY)
    _run_garden(garden, _random_batch(TINY))
    assert "TF_USE_LEGACY_KERAS" not in os.environ
    assert "tensorflow_model_optimization" not in sys.modules, (
        "something imported tensorflow-model-optimization, which switches tf.keras "
        'to tf_keras for the whole process (BUILD_NOTES.md, "Dependencies and why"); '
        "it must not be imported here"
    )
    assert tf.keras.__version__ == keras.__version__
    assert keras.__version__.startswith("3.")


# --- (a) real MiniLM weights: ours vs Garden's BertEncoder --------------------


@pytest.fixture(scope="module")
def minilm_garden(minilm_encoder, garden_networks):
    """Garden's functional `networks.BertEncoder` holding MiniLM's weights."""
    garden = to_garden(minilm_encoder)
    assert isinstance(garden, garden_networks.BertEncoder)
    return garden


@pytest.fixture(scope="module")
def minilm_garden_outputs(minilm_garden, sentence_batch):
    return _run_garden(minilm_garden, sentence_batch)


@pytest.mark.garden
@pytest.mark.assets
def test_minilm_matches_garden_bert_encoder(
    minilm_encoder, minilm_garden_outputs, sentence_batch, compare_outputs
):
    assert sentence_batch["token_ids"].shape[0] >= 16
    lengths = sentence_batch["padding_mask"].sum(axis=1)
    assert lengths.min() < lengths.max() // 4  # padding really is exercised
    ours = minilm_encoder(sentence_batch, training=False)
    diffs = compare_outputs(ours, minilm_garden_outputs, sentence_batch["padding_mask"])
    print(f"MiniLM zoo vs Garden BertEncoder, max |diff|: {diffs}")
    assert max(diffs.values()) <= TOLERANCE, diffs


# --- (b) a Garden checkpoint loads into ours and reproduces Garden ------------


@pytest.mark.garden
@pytest.mark.assets
def test_minilm_garden_checkpoint_loads(
    minilm_garden,
    minilm_garden_outputs,
    minilm_encoder,
    sentence_batch,
    tmp_path,
    compare_outputs,
):
    prefix = _write_checkpoint(minilm_garden, tmp_path)
    encoder = load_garden_encoder(prefix, dropout=minilm_encoder.config.dropout)
    assert encoder.config == minilm_encoder.config
    ours = encoder(sentence_batch, training=False)
    diffs = compare_outputs(ours, minilm_garden_outputs, sentence_batch["padding_mask"])
    print(f"MiniLM Garden checkpoint -> zoo vs Garden, max |diff|: {diffs}")
    assert max(diffs.values()) <= TOLERANCE, diffs


@pytest.mark.garden
@pytest.mark.parametrize("functional", [True, False], ids=["BertEncoder", "BertEncoderV2"])
def test_garden_initialised_checkpoint_loads(
    garden_networks, functional, tmp_path, compare_outputs
):
    """Weights that Garden initialised itself (no zoo code wrote them), in
    both checkpoint layouts, from a file and from the live object."""
    garden = build_garden_encoder(TINY, functional=functional)
    batch = _random_batch(TINY)
    expected = _run_garden(garden, batch)
    prefix = _write_checkpoint(garden, tmp_path)

    from_file = load_garden_encoder(tmp_path)  # the directory finds the latest prefix
    from_file_prefix = load_garden_encoder(prefix)
    from_object = build_encoder(TINY)
    assert load_garden_weights(from_object, garden) == []
    for encoder in (from_file, from_file_prefix, from_object):
        diffs = compare_outputs(
            encoder(batch, training=False), expected, batch["padding_mask"]
        )
        assert max(diffs.values()) <= TOLERANCE, diffs


# --- (c) mismatches are reported by Garden tensor name ------------------------


@pytest.mark.garden
@pytest.mark.parametrize(
    "change, key, found, expected",
    [
        # Same element count, other head split: must not be reshaped into place.
        (
            {"num_heads": 8},
            "encoder/layer_with_weights-4/_attention_layer/_query_dense/kernel",
            "(32, 4, 8)",
            "(32, 8, 4)",
        ),
        (
            {"intermediate_dim": 40},
            "encoder/layer_with_weights-5/_intermediate_dense/kernel",
            "(32, 48)",
            "(32, 40)",
        ),
    ],
    ids=["num_heads", "intermediate_dim"],
)
def test_shape_mismatch_names_the_tensor(
    garden_networks, change, key, found, expected, tmp_path
):
    prefix = _write_checkpoint(build_garden_encoder(TINY), tmp_path)
    encoder = build_encoder(TINY.replace(**change))
    before = [w.numpy().copy() for w in encoder.weights]
    with pytest.raises(CheckpointMismatchError) as info:
        load_garden_weights(encoder, prefix)
    message = str(info.value)
    assert f"{key}: {expected} -> {found}" in message
    assert any(name == key for name, _, _ in info.value.problems)
    # All-or-nothing: nothing was assigned.
    for old, weight in zip(before, encoder.weights, strict=True):
        np.testing.assert_array_equal(old, weight.numpy())


@pytest.mark.garden
@pytest.mark.assets
def test_load_checkpoint_detects_a_garden_release(minilm_garden, minilm_dir, tmp_path):
    """`zoo.load_checkpoint` / `zoo convert` accept a Garden checkpoint
    directory with its vocab.txt beside it."""
    import shutil

    import zoo
    from zoo.checkpoints import detect_format

    _write_checkpoint(minilm_garden, tmp_path)
    shutil.copy(minilm_dir / "vocab.txt", tmp_path / "vocab.txt")
    assert detect_format(tmp_path) == "garden"
    encoder, tokenizer = zoo.load_checkpoint(tmp_path)
    assert encoder.num_layers == 6 and tokenizer.vocabulary_size == 30522
