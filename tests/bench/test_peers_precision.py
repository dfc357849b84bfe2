"""`make bench`'s bfloat16 part (bench/peers.py, bench/peers_precision.py):
which CPUs get bfloat16 rows, a bfloat16 row's rate over its own float32
rate, and how the report shows it and the accuracy check, on made-up rates
(the measurements themselves are a benchmark, not a test)."""

import json

import pytest

from tests.script_modules import load_script


@pytest.fixture(scope="module")
def peers():
    return load_script("bench/peers.py")


def test_bfloat16_rows_only_where_the_cpu_computes_bfloat16(peers):
    plan = peers.bfloat16_plan
    assert plan(["avx2", "avx512f", "avx512_bf16"]) is None
    assert plan(["avx2", "amx_bf16"]) is None
    assert plan(["avx2", "avx512_vnni"]) == (
        "no bfloat16 rows: the CPU has neither AVX-512 BF16 nor AMX"
    )
    assert plan(["avx2"], "on") is None  # forced
    assert plan(["avx512_bf16"], "off") == "no bfloat16 rows: --bfloat16 off"
    with pytest.raises(ValueError, match=r"--bfloat16 'yes'.*auto, on, off"):
        plan(["avx2"], "yes")


def test_bfloat16_row_gives_each_engine_over_its_own_float32(peers, tmp_path):
    rates = {
        ("project", "float32"): [30.0, 32.0, 34.0],
        ("HF torch", "float32"): [16.0, 17.0, 18.0],
        ("project", "bfloat16"): [40.0, 48.0, 44.0],
        ("HF torch", "bfloat16"): [20.0, 21.0, 25.5],
    }
    engines = ["project", "HF torch"]
    row32, row16 = (
        peers._training_row("MiniLM fine-tuning", p, engines, rates, [0.1, 0.2], 3)
        for p in ("float32", "bfloat16")
    )
    assert row32["row"] == "MiniLM fine-tuning, float32, batch 16 x 128, 2 threads"
    assert "over_float32" not in row32
    assert row16["values"] == {"project": 44.0, "HF torch": 21.0}
    assert row16["over_float32"] == {
        "project": pytest.approx(44 / 32),
        "HF torch": pytest.approx(21 / 17),
    }
    accuracy = {
        "row": "accuracy check",
        "unit": "accuracy",
        "lower_is_better": False,
        "compare": False,
        "values": {"project float32": 0.953, "project bfloat16": 0.9484},
        "load": [0.3, 0.4],
    }
    meta = {
        "date": "2026-11-28 17:00",
        "quick": True,
        "training_only": True,
        "bfloat16": "bfloat16 rows: the CPU has them",
        "cpu": "x86_64",
        "cores": 2,
        "cpu_flags": ["avx2", "avx512_bf16"],
        "versions": {"tensorflow": "2.20.0"},
        "seconds": 1.0,
    }
    peers.write_report([row32, row16, accuracy], meta, tmp_path)
    saved = json.loads((tmp_path / "results.json").read_text())["rows"]
    # bfloat16 against bfloat16: HF torch's 21.0 over the project's 44.0.
    assert saved[1]["ratio_to_best_peer"] == {"project": pytest.approx(21 / 44)}
    assert saved[2]["ratio_to_best_peer"] == {}  # the accuracy check races no one
    report = (tmp_path / "results.md").read_text()
    assert "training rows only" in report
    assert "bfloat16 rows: the CPU has them" in report
    assert "| project | 44.00 | 0.48 | 0.48 | 1.38 |" in report
    assert "| HF torch (best peer) | 21.00 |  |  | 1.24 |" in report
    assert "| project bfloat16 | 0.9484 |" in report


def test_accuracy_row_compares_each_engine_with_its_own_float32(peers):
    logits = {
        ("project", "float32"): [[2.0, 0.0], [0.0, 1.0], [1.0, 0.0]],
        ("project", "bfloat16"): [[2.0, 0.5], [0.0, 1.0], [0.0, 1.0]],
        ("HF torch", "float32"): [[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]],
        ("HF torch", "bfloat16"): [[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]],
    }
    calls = []

    def run_child(*argv):
        args = dict(zip(argv[::2], argv[1::2]))
        calls.append(args)
        key = args["--engine"], args["--precision"]
        return {"accuracy": len(calls) / 10, "logits": logits[key], "train_seconds": 1.0}

    row = peers.accuracy_row(run_child, 7, lambda: 0.5)
    assert {(c["--engine"], c["--precision"], c["--steps"]) for c in calls} == {
        (e, p, "7") for e, p in logits
    }
    assert row["compare"] is False
    assert "213" not in row["row"] and "its 3 validation articles" in row["row"]
    assert row["values"]["project float32"] == 0.1
    # project: one label of three moved; its logits by 2.5 / 6 against a
    # mean float32 size of 4 / 6.
    assert "project 66.7%, HF torch 100.0%" in row["note"]
    assert "project 62.50%, HF torch 0.00%" in row["note"]


def test_accuracy_steps_must_fit_the_training_split(peers):
    split = {"train": [("text", "label")] * 100}
    assert peers.check_accuracy_steps(6, split) == 6
    with pytest.raises(
        ValueError, match=r"--accuracy-steps 7: 7 x 16 .* has 100; give 1 to 6"
    ):
        peers.check_accuracy_steps(7, split)
