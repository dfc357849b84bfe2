"""The memory budget: what a config needs, the limit, the refusal."""

import pytest

import zoo
from zoo.configs import PRESETS, EncoderConfig
from zoo.utils import budget


def test_parse_bytes():
    assert budget.parse_bytes("1000") == 1000
    assert budget.parse_bytes("48G") == 48 << 30
    assert budget.parse_bytes("1.5g") == int(1.5 * (1 << 30))
    assert budget.parse_bytes("512MiB") == 512 << 20
    for bad in ("", "-1G", "0", "lots", "1X"):
        with pytest.raises(ValueError, match="ZOO_MEMORY_LIMIT"):
            budget.parse_bytes(bad)


def test_limit_is_half_the_machine_unless_set(monkeypatch):
    monkeypatch.delenv("ZOO_MEMORY_LIMIT", raising=False)
    limit, source = budget.memory_limit()
    assert limit == int(budget.physical_memory() * 0.5) and "half" in source
    monkeypatch.setenv("ZOO_MEMORY_LIMIT", "3G")
    assert budget.memory_limit() == (3 << 30, "ZOO_MEMORY_LIMIT=3G")


def test_estimate_counts_the_exact_parameters():
    config = PRESETS["bert_base"]
    figures = budget.estimate(config, sequence_length=128)
    assert figures["parameters"] == config.num_parameters() == 109_482_240
    assert figures["weight_bytes"] == 4 * 109_482_240
    # One block at 128 tokens: 5h + i + 2 x heads x L floats a token.
    assert figures["activation_bytes"] == 128 * (5 * 768 + 3072 + 2 * 12 * 128) * 4
    assert (
        figures["total_bytes"] == 2 * figures["weight_bytes"] + figures["activation_bytes"]
    )


def test_every_preset_fits_this_machine():
    for name, config in PRESETS.items():
        budget.check_memory(config, name)


def test_refusal_names_the_figure_the_limit_and_the_variable(monkeypatch):
    monkeypatch.setenv("ZOO_MEMORY_LIMIT", "100M")
    with pytest.raises(budget.MemoryBudgetError) as err:
        zoo.BertEncoder.from_preset("bert_base")
    message = str(err.value)
    assert "BertEncoder" in message and "109,482,240 parameters" in message
    assert "100.0 MB (ZOO_MEMORY_LIMIT=100M)" in message
    # Raising the limit is the way through.
    monkeypatch.setenv("ZOO_MEMORY_LIMIT", "2G")
    tiny = EncoderConfig(30, 1, 2, 8, 16)
    assert budget.check_memory(tiny)["parameters"] == tiny.num_parameters()
