"""`zoo finetune` and `zoo evaluate` from the command line: a short windowed
classification run on a CSV (with the linear baseline in its metrics.json),
the evaluation reading the window setting the model was trained with, and
bad window arguments named in the error."""

import json

import pytest

from tests.train.synthetic import write_topics_csv
from zoo.cli import main

pytestmark = pytest.mark.assets


def test_finetune_and_evaluate_with_windows(minilm_dir, tmp_path, capsys):
    data = tmp_path / "topics.csv"
    write_topics_csv(data)
    out = tmp_path / "run"
    command = [
        "finetune",
        "--model",
        str(minilm_dir),
        "--data",
        str(data),
        "--task",
        "classify",
        "--out",
        str(out),
        "--sequence-length",
        "16",
        "--max-windows",
        "3",
        "--epochs",
        "2",
        "--learning-rate",
        "1e-4",
        "--pooling",
        "mean",
    ]
    assert main(command) == 0
    trained = json.loads((out / "metrics.json").read_text())
    printed = capsys.readouterr().out
    # The linear baseline beside the model: fitted on the same train split,
    # scored on the same test examples, recorded and printed in one line.
    baseline = trained["linear_baseline"]
    assert baseline["description"] == "TF-IDF word 1-2-grams + LinearSVC"
    assert baseline["scored_on"] == "test" and baseline["num_test"] == trained["num_test"]
    assert baseline["num_train"] == trained["num_train"]
    assert baseline["accuracy"] >= 0.9  # two topics with their own words
    assert baseline["size_bytes"] > 0 and baseline["latency_ms"] > 0
    assert (
        f"accuracy {trained['accuracy']:.4f} fine-tuned, {baseline['accuracy']:.4f} "
        "linear baseline (TF-IDF word 1-2-grams + LinearSVC, "
    ) in printed
    # The same command again: the run is finished, so it reports, not retrains.
    history = (out / "history.json").read_text()
    capsys.readouterr()
    assert main(command) == 0
    assert "finished" in capsys.readouterr().out
    assert (out / "history.json").read_text() == history
    # Other arguments into the same --out are refused, naming what differs.
    assert main(command[:-4] + ["--learning-rate", "3e-4", "--pooling", "mean"]) == 2
    assert "--learning-rate 0.0001 there, 0.0003 now" in capsys.readouterr().err
    assert trained["max_windows"] == 3
    saved = json.loads((out / "model" / "zoo_model.json").read_text())
    assert saved["finetune_config"]["max_windows"] == 3
    capsys.readouterr()
    assert (
        main(["evaluate", "--model", str(out / "model"), "--data", str(data), "--json"])
        == 0
    )
    evaluated = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    # Same windows, same model, same test split: the same figure as training reported.
    assert evaluated["max_windows"] == 3
    assert evaluated["accuracy"] == trained["accuracy"]
    assert evaluated["accuracy"] > 0.9  # two easy topics; chance is 0.5
    assert (
        main(
            [
                "evaluate",
                "--model",
                str(out / "model"),
                "--data",
                str(data),
                "--max-windows",
                "0",
            ]
        )
        == 2
    )
    assert "--max-windows must be a positive integer; received 0" in capsys.readouterr().err
    # A held-out file of the user's own: two rows of one class, every row
    # scored with --split all (too few, and too uniform, to train on).
    rows = data.read_text().splitlines()
    label = rows[1].rsplit(",", 1)[1]
    held = tmp_path / "held.csv"
    held.write_text("\n".join([rows[0], *[r for r in rows[1:] if r.endswith(label)][:2]]))
    model = ["evaluate", "--model", str(out / "model"), "--data", str(held), "--json"]
    assert main([*model, "--split", "all"]) == 0
    scored = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert scored["num_examples"] == 2 and scored["split"] == "all"
    assert main(model) == 0  # the fixed rule's test split: the first row
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["num_examples"] == 1
    assert main([*model, "--split", "train"]) == 2
    assert "--split all to score every example" in capsys.readouterr().err
