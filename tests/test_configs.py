import pytest

import zoo
from zoo.configs import EncoderConfig

# Published / issue-specified counts (BERT-Base 110M, BERT-Large 340M,
# DistilBERT 66M; MiniLM: HF reports 22,713,728 incl. a 512-entry buffer).
EXPECTED = {
    "bert_base": 109_482_240,
    "bert_large": 335_141_888,
    "distil_bert_base": 66_362_880,
    "minilm_l6_h384": 22_713_216,
    "bert_tiny": 4_385_920,
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_preset_counts_formula(name):
    assert zoo.PRESETS[name].num_parameters() == EXPECTED[name]


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_preset_counts_built_model(name):
    encoder = zoo.BertEncoder.from_preset(name)
    expected_class = zoo.DistilBertEncoder if name.startswith("distil") else zoo.BertEncoder
    assert type(encoder) is expected_class
    assert encoder.count_params() == EXPECTED[name]
    assert encoder.config == zoo.PRESETS[name]


def test_minilm_matches_hf_count_minus_buffer():
    assert EXPECTED["minilm_l6_h384"] + 512 == 22_713_728


@pytest.mark.parametrize(
    "changes, field, fragment",
    [
        ({"hidden_dim": 100, "num_heads": 3}, "hidden_dim", "divisible by num_heads=3"),
        ({"num_layers": 0}, "num_layers", "an integer from 1 to 256"),
        ({"family": "gpt"}, "family", "expected one of"),
        ({"dropout": 1.5}, "dropout", "0 <= dropout < 1"),
        ({"num_segments": 2, "family": "distilbert"}, "num_segments", "no segment"),
    ],
)
def test_config_errors_name_the_field(changes, field, fragment):
    base = dict(
        vocabulary_size=10, num_layers=1, num_heads=2, hidden_dim=4, intermediate_dim=8
    )
    with pytest.raises(ValueError) as err:
        EncoderConfig(**{**base, **changes})
    assert f"EncoderConfig.{field}" in str(err.value)
    assert fragment in str(err.value)


def test_config_json_round_trip():
    config = zoo.PRESETS["distil_bert_base"]
    assert EncoderConfig.from_dict(config.to_dict()) == config
    with pytest.raises(ValueError, match="unknown field"):
        EncoderConfig.from_dict({**config.to_dict(), "hidden_size": 3})


def test_unknown_preset_lists_available():
    with pytest.raises(ValueError, match="bert_base"):
        zoo.BertEncoder.from_preset("bert_huge")
    with pytest.raises(ValueError, match="is a bert-family encoder"):
        zoo.DistilBertEncoder.from_preset("bert_tiny")
