"""ALBERT's own behaviour: config rules, parameter counts against
transformers.AlbertModel, the encoder's grouped sharing and factorisation,
its GELU and its masked-LM head (tiny configs). Every head on ALBERT goes
through the shared checks of tests/models/harness.py."""

import numpy as np
import pytest

import zoo
from tests.helpers import tiny_batch
from tests.models.harness import B, P, T, tiny_encoder
from zoo.configs import EncoderConfig
from zoo.layers.transformer_encoder import gelu

# transformers.AlbertModel(AlbertConfig(...)) counts (tests/checkpoints/
# test_hf_albert.py recounts albert_base with transformers).
EXPECTED = {"albert_base": 11_683_584, "albert_large": 17_683_968}


def albert(**changes):
    """The harness's tiny ALBERT (vocab 30, E 6, H 8, 4 layers sharing 2
    blocks: layers 0-1 block 0, 2-3 block 1), with `changes`."""
    return tiny_encoder("albert", **changes)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_preset_counts(name):
    config = zoo.PRESETS[name]
    assert config.family == "albert" and config.embedding_dim == 128
    assert config.activation == "gelu_tanh"
    assert config.num_parameters() == EXPECTED[name]
    encoder = zoo.BertEncoder.from_preset(name)
    assert type(encoder) is zoo.AlbertEncoder
    assert encoder.count_params() == EXPECTED[name]
    assert encoder.config == config


@pytest.mark.parametrize(
    "changes, field, fragment",
    [
        ({"family": "albert"}, "embedding_dim", "positive embedding width"),
        (
            {"family": "albert", "embedding_dim": 4, "num_groups": 3},
            "num_groups",
            "divisor of num_layers=2",
        ),
        ({"embedding_dim": 4}, "embedding_dim", "family='albert'"),
        ({"num_groups": 2}, "num_groups", "family='albert'"),
        ({"activation": "relu"}, "activation", "gelu_tanh"),
    ],
)
def test_config_errors_name_the_field(changes, field, fragment):
    base = dict(
        vocabulary_size=10, num_layers=2, num_heads=2, hidden_dim=4, intermediate_dim=8
    )
    with pytest.raises(ValueError) as err:
        EncoderConfig(**{**base, **changes})
    assert f"EncoderConfig.{field}" in str(err.value)
    assert fragment in str(err.value)


def test_config_json_round_trip():
    config = zoo.PRESETS["albert_large"]
    assert EncoderConfig.from_dict(config.to_dict()) == config
    # A config written before these fields existed still reads (as BERT).
    old = {
        k: v
        for k, v in zoo.PRESETS["bert_tiny"].to_dict().items()
        if k not in ("activation", "embedding_dim", "num_groups")
    }
    assert EncoderConfig.from_dict(old) == zoo.PRESETS["bert_tiny"]


def test_factorisation_and_sharing():
    encoder = albert()
    config = encoder.config
    assert encoder.count_params() == config.num_parameters()
    assert tuple(encoder.token_embedding.embeddings.shape) == (30, 6)
    assert tuple(encoder.embedding_projection.kernel.shape) == (6, 8)
    # Sharing: 4 layers hold the weights of 2 blocks; layer i runs block i // 2.
    assert len(encoder.blocks) == 2
    assert [encoder.blocks.index(b) for b in encoder.transformer_layers] == [0, 0, 1, 1]
    deeper = albert(num_layers=8)
    assert deeper.count_params() == encoder.count_params()
    # The graph really reuses the block: layer 1's output is block 0 applied to
    # layer 0's output (computed by hand through the block).
    inputs = tiny_batch(B, T, 30)
    out = encoder.with_internals()(inputs)
    hidden = [np.asarray(h) for h in out["hidden_states"]]
    assert len(hidden) == 5 and len(out["attention_probs"]) == 4
    again, _ = encoder.blocks[0](hidden[1], padding_mask=inputs["padding_mask"])
    np.testing.assert_allclose(np.asarray(again), hidden[2], atol=1e-6)
    np.testing.assert_allclose(hidden[-1], np.asarray(out["sequence_output"]), atol=0)


def test_activation_is_the_configured_gelu():
    # gelu_tanh is 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))), not the erf form.
    x = np.linspace(-4, 4, 101).astype("float32")
    tanh_form = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))
    np.testing.assert_allclose(np.asarray(gelu(x, "gelu_tanh")), tanh_form, atol=1e-6)
    assert np.max(np.abs(np.asarray(gelu(x, "gelu")) - tanh_form)) > 1e-4
    # Weights of std 1 so the FFN's pre-activations reach where the forms differ.
    a = albert(activation="gelu_tanh", initializer_range=1.0)
    b = albert(activation="gelu", initializer_range=1.0)
    b.set_weights(a.get_weights())
    inputs = tiny_batch(B, T, 30)
    assert (
        np.max(
            np.abs(
                np.asarray(a(inputs)["sequence_output"])
                - np.asarray(b(inputs)["sequence_output"])
            )
        )
        > 1e-6
    )


def test_mlm_head_is_albert_shaped():
    """Dense H -> E, LayerNorm(E), decoder tied to the V x E table."""
    model = zoo.MaskedLM(albert())
    head = model.mlm_head
    assert tuple(head.transform_dense.kernel.shape) == (8, 6)
    assert tuple(head.transform_layer_norm.gamma.shape) == (6,)
    assert head.token_embedding is model.encoder.token_embedding
    assert head.activation == "gelu_tanh"
    # The decoder is the embedding table: changing the table changes logits.
    inputs = tiny_batch(B, T, 30, masked=P)
    before = np.asarray(model(inputs)["mlm_logits"])
    table = model.encoder.token_embedding.embeddings
    table.assign(table.numpy() * 2.0)
    assert np.max(np.abs(np.asarray(model(inputs)["mlm_logits"]) - before)) > 1e-4
