"""`zoo finetune --backend` and `zoo distill --backend` (issue #39): the
command runs again in a process on that Keras backend, records it in
args.json and the model directory, and what it writes loads on TensorFlow."""

from __future__ import annotations

import json

import keras
import numpy as np
import pytest

from tests.distill.tiny import teacher_dir, topic_data
from zoo.cli import main


@pytest.mark.slow  # two training commands, each in a process on its backend
def test_finetune_and_distill_on_jax_write_models_tensorflow_loads(tmp_path):
    from zoo.checkpoints import load_model_dir

    teacher = teacher_dir(tmp_path)
    data = topic_data(tmp_path)
    common = ["--epochs", "1", "--sequence-length", "16"]
    out = tmp_path / "ft"
    # Batches of 4 divide the split's 28 / 4 / 8 rows, so every batch has one
    # shape: the command took 41.5 s against 50.4 s with batches of 8 (cold
    # JAX compilation cache, idle 2-core AVX2 machine).
    code = main(
        ["finetune", "--backend", "jax", "--model", str(teacher), "--data", str(data)]
        + ["--task", "classify", "--out", str(out), "--verbose", "0", "--batch-size", "4"]
        + common
    )
    assert code == 0
    assert json.loads((out / "args.json").read_text())["arguments"]["backend"] == "jax"
    meta = json.loads((out / "model" / "zoo_model.json").read_text())
    assert meta["keras_backend"] == "jax"
    distilled = tmp_path / "distilled"
    code = main(
        ["distill", "--backend", "torch", "--teacher", str(out / "model")]
        + ["--data", str(data), "--student-layers", "2", "--out", str(distilled)]
        + ["--verbose", "0", "--batch-size", "8", *common]
    )
    assert code == 0
    assert (
        json.loads((distilled / "args.json").read_text())["arguments"]["backend"] == "torch"
    )
    assert (
        json.loads((distilled / "model" / "zoo_model.json").read_text())["keras_backend"]
        == "torch"
    )
    # This process is TensorFlow: both directories load here and answer.
    assert keras.backend.backend() == "tensorflow"
    for directory in (out / "model", distilled / "model"):
        model, tokenizer, _ = load_model_dir(directory)
        logits = model(tokenizer(["goal match team"], sequence_length=16))["logits"]
        assert np.isfinite(np.asarray(logits)).all() and logits.shape == (1, 3)


def test_a_strategy_needs_the_tensorflow_backend(tmp_path, capsys, monkeypatch):
    from zoo.cli import build_parser
    from zoo.cli.runs import CliError, check_backend
    from zoo.utils import children

    args = [
        "--model",
        str(tmp_path),
        "--data",
        "bbc",
        "--task",
        "classify",
        "--out",
        str(tmp_path / "o"),
    ]
    parsed = build_parser().parse_args(
        ["finetune", "--backend", "jax", "--strategy", "mirrored", *args]
    )
    with pytest.raises(CliError, match="--backend jax with --strategy mirrored"):
        check_backend(parsed)
    # The same through the command: refused before anything is read or
    # written, and before a process is started on JAX.
    started = []
    monkeypatch.setattr(children, "start", lambda *a, **k: started.append(a))
    code = main(["finetune", "--backend", "jax", "--strategy", "mirrored", *args])
    assert code == 2 and started == []
    assert "--backend jax with --strategy mirrored" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()
    with pytest.raises(SystemExit):
        main(["finetune", "--backend", "mxnet", *args])
    assert "invalid choice: 'mxnet'" in capsys.readouterr().err
