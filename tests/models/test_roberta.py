"""RobertaEncoder's own behaviour: the presets' parameter counts against
transformers' RobertaModel, RoBERTa's position table and position ids, and
the family's config rules. Every head on RoBERTa goes through the shared
checks of tests/models/harness.py."""

import numpy as np
import pytest
import torch
from transformers import RobertaConfig, RobertaModel

import zoo
from zoo.configs import EncoderConfig
from zoo.layers.roberta_embeddings import RobertaEmbeddings

# roberta-base's and distilroberta-base's config.json (the Hub's), sizes only.
HF_SHAPES = {
    "roberta_base": dict(num_hidden_layers=12),
    "distilroberta_base": dict(num_hidden_layers=6),
}


def _hf_count(num_hidden_layers):
    config = RobertaConfig(
        vocab_size=50265,
        hidden_size=768,
        num_hidden_layers=num_hidden_layers,
        num_attention_heads=12,
        intermediate_size=3072,
        max_position_embeddings=514,
        type_vocab_size=1,
        layer_norm_eps=1e-5,
        pad_token_id=1,
    )
    with torch.device("meta"):  # shapes only: no memory, no init time
        model = RobertaModel(config)  # add_pooling_layer=True, as released
    return sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("name", sorted(HF_SHAPES))
def test_preset_counts_equal_hf_roberta_model(name):
    config = zoo.get_preset(name)
    assert config.family == "roberta"
    assert config.position_table_size == 514
    assert config.num_parameters() == _hf_count(**HF_SHAPES[name])
    assert (
        config.num_parameters()
        == {
            "roberta_base": 124_645_632,
            "distilroberta_base": 82_118_400,
        }[name]
    )


def _tiny(**overrides):
    fields = dict(
        vocabulary_size=60,
        num_layers=2,
        num_heads=2,
        hidden_dim=16,
        intermediate_dim=32,
        max_sequence_length=20,
        dropout=0.0,
    )
    return zoo.RobertaEncoder(**{**fields, **overrides})


def test_built_encoder_has_514_style_positions_and_roberta_defaults():
    encoder = _tiny()
    assert encoder.embeddings.position_embedding.embeddings.shape == (22, 16)
    assert encoder.config.num_segments == 1 and encoder.config.layer_norm_epsilon == 1e-5


def test_position_ids_follow_hf_create_position_ids_from_input_ids():
    layer = RobertaEmbeddings(10, 4, max_sequence_length=6, dropout=0.0)
    table = np.arange(8 * 4, dtype="float32").reshape(8, 4)
    layer.build((None, None))
    layer.position_embedding.embeddings.assign(table)
    layer.token_embedding.embeddings.assign(np.zeros((10, 4), "float32"))
    layer.segment_embedding.embeddings.assign(np.zeros((1, 4), "float32"))
    layer.layer_norm.gamma.assign(np.ones(4, "float32"))
    ids = np.array([[0, 5, 6, 2, 1, 1], [0, 7, 7, 7, 7, 2]], "int32")
    mask = (ids != 1).astype("int32")
    # HF: cumsum(mask) * mask + padding_idx: real tokens 2, 3, ...; padding 1.
    expected = np.cumsum(mask, axis=1) * mask + 1
    assert expected.tolist() == [[2, 3, 4, 5, 1, 1], [2, 3, 4, 5, 6, 7]]
    for given in (mask, None):  # the encoder's mask, or HF's rule on the ids
        out = np.asarray(layer(ids, np.zeros_like(ids), padding_mask=given))
        rows = table[expected]
        normed = (rows - rows.mean(-1, keepdims=True)) / np.sqrt(
            rows.var(-1, keepdims=True) + 1e-5
        )
        np.testing.assert_allclose(out, normed, atol=1e-5)


def test_config_rules_name_the_field():
    with pytest.raises(ValueError, match="num_segments"):
        EncoderConfig(100, 1, 2, 8, 16, num_segments=0, family="roberta")
    with pytest.raises(ValueError, match="embedding_dim"):
        EncoderConfig(100, 1, 2, 8, 16, family="roberta", embedding_dim=4)
