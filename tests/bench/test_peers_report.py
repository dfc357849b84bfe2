"""`make bench`'s report (bench/peers.py `write_report`): the ratio to the
best peer, like for like, and the fine-tuning row's rounds, on made-up rows
(the measurements themselves are a benchmark, not a test)."""

import json

import pytest

from tests.script_modules import load_script


@pytest.fixture(scope="module")
def peers():
    return load_script("bench/peers.py")


def test_ratios_and_report(peers, tmp_path):
    rows = [
        {
            "row": "latency",
            "unit": "ms",
            "lower_is_better": True,
            "load": [0.1, 0.2],
            "values": {
                "project Keras": 60.0,
                "ORT fp32": 50.0,
                "ORT int8": 40.0,
                "LiteRT dynamic_int8": 44.0,
            },
        },
        {
            "row": "MiniLM fine-tuning",
            "unit": "examples/s",
            "lower_is_better": False,
            "load": [0.3, 0.4],
            "values": {"project": 10.0, "HF torch": 8.0, "keras-hub": 9.0},
            "rounds": {"project": [9.0, 10.0, 11.0]},
            "note": "median of 3 rounds, a fresh process per engine and round",
        },
    ]
    meta = {
        "date": "2026-11-27 03:00",
        "quick": True,
        "cpu": "x86_64",
        "cores": 2,
        "cpu_flags": ["avx2"],
        "versions": {"tensorflow": "2.20.0"},
        "seconds": 1.0,
    }
    peers.write_report(rows, meta, tmp_path)
    latency, finetune = json.loads((tmp_path / "results.json").read_text())["rows"]
    assert latency["best_peer"] == "ORT int8"
    assert latency["ratio_to_best_peer"]["project Keras"] == pytest.approx(60 / 40)
    # Like for like: a float engine against the float peers, int8 against int8.
    assert latency["ratio_like_for_like"]["project Keras"] == pytest.approx(60 / 50)
    assert latency["ratio_like_for_like"]["LiteRT dynamic_int8"] == pytest.approx(44 / 40)
    # A rate: the best peer's rate over ours, so below 1 the project leads.
    assert finetune["best_peer"] == "keras-hub"
    assert finetune["ratio_to_best_peer"]["project"] == pytest.approx(0.9)
    assert finetune["rounds"]["project"] == [9.0, 10.0, 11.0]
    report = (tmp_path / "results.md").read_text()
    assert "| keras-hub (best peer) | 9.00 |" in report
    assert "load 0.3 / 0.4; median of 3 rounds" in report
    assert (tmp_path / "results.png").stat().st_size > 0
    # The header says what the ratios depend on: the int8/bf16 features and the load.
    assert "int8: AVX2 only, bfloat16: none; load ? at the start" in report


def test_cpu_features_name_the_int8_and_bf16_paths(peers):
    assert peers.cpu_features(["avx2", "fma"]) == {"int8": "AVX2 only", "bf16": "none"}
    assert peers.cpu_features(["avx2", "avx512f", "avx512_vnni"])["int8"] == "AVX-512 VNNI"
    assert peers.cpu_features(
        ["avx2", "avx512_vnni", "avx512_bf16", "amx_bf16", "amx_int8"]
    ) == {
        "int8": "AMX",
        "bf16": "AMX and AVX-512 BF16",
    }
