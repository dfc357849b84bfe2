"""`zoo distill` end to end on a tiny teacher, in two fresh processes at
once: the CLI works, and the same seed gives bit-identical students."""

import csv
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import zoo
from zoo.checkpoints import load_model_dir, save_model_dir
from zoo.text.tokenizer import WordPieceTokenizer

WORDS = ("goal match team win cup rain storm cloud wind sun vote law party "
         "minister tax the a of is").split()
TOPICS = {"sport": WORDS[:5], "weather": WORDS[5:10], "politics": WORDS[10:15]}


def _teacher_dir(tmp_path):
    tokenizer = WordPieceTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS])
    encoder = zoo.BertEncoder(vocabulary_size=len(tokenizer.vocabulary), num_layers=4,
                              num_heads=2, hidden_dim=8, intermediate_dim=16,
                              max_sequence_length=16)
    teacher = zoo.Classifier(encoder, 3, labels=sorted(TOPICS))
    return save_model_dir(teacher, tmp_path / "teacher", tokenizer)


def _data(tmp_path):
    rng = np.random.default_rng(0)
    path = tmp_path / "news.csv"
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["text", "label"])
        for i in range(40):
            label = sorted(TOPICS)[i % 3]
            words = list(rng.choice(TOPICS[label], 4)) + list(rng.choice(WORDS[15:], 2))
            w.writerow([" ".join(words) + f" {i % 7}", label])  # unique rows
    return path


def _command(teacher, data, out):
    return [sys.executable, "-m", "zoo", "distill", "--teacher", str(teacher),
            "--data", str(data), "--student-layers", "2", "--layer-map", "1,3",
            "--out", str(out), "--epochs", "1", "--steps-per-epoch", "2", "--batch-size", "8",
            "--sequence-length", "12", "--learning-rate", "1e-3", "--seed", "3",
            "--run-eagerly", "--no-evaluate", "--verbose", "0"]


def test_cli_writes_student_and_is_deterministic(tmp_path):
    teacher, data = _teacher_dir(tmp_path), _data(tmp_path)
    env = dict(os.environ, PYTHONHASHSEED="0")
    runs = [subprocess.Popen(_command(teacher, data, tmp_path / f"run{i}"), env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for i in (1, 2)]
    for run in runs:
        stdout, stderr = run.communicate(timeout=300)
        assert run.returncode == 0, stderr[-3000:]
    students = [load_model_dir(tmp_path / f"run{i}" / "model") for i in (1, 2)]
    (s1, _, meta), (s2, _, _) = students
    assert type(s1) is zoo.Classifier and type(s1.encoder) is zoo.DistilBertEncoder
    assert s1.encoder.num_layers == 2 and meta["sequence_length"] == 12
    assert meta["distill_config"]["layer_map"] == [1, 3]
    for a, b in zip(s1.get_weights(), s2.get_weights()):
        assert np.array_equal(a, b)
    metrics = json.loads((tmp_path / "run1" / "metrics.json").read_text())
    assert metrics["student_parameters"] < metrics["teacher_parameters"]
    history = json.loads((tmp_path / "run1" / "history.json").read_text())["history"]
    assert {"soft_loss", "hard_loss", "cosine_loss", "val_loss"} <= set(history)
    assert (tmp_path / "run1" / "args.json").is_file()


def test_parser_and_errors(tmp_path, capsys):
    from zoo.cli import build_parser, main

    parser = build_parser()
    args = parser.parse_args(["distill", "--teacher", "t", "--data", "d", "--student-layers",
                              "3", "--layer-map", "0,2,4", "--out", "o"])
    assert args.layer_map == (0, 2, 4) and args.mode == "task" and args.strategy == "none"
    with pytest.raises(SystemExit):
        parser.parse_args(["distill", "--teacher", "t", "--data", "d", "--student-layers",
                           "3", "--layer-map", "0,x", "--out", "o"])
    with pytest.raises(SystemExit):
        parser.parse_args(["distill", "--help"])
    assert "zoo distill --teacher" in capsys.readouterr().out
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("")
    assert main(["distill", "--teacher", "t", "--data", "d", "--student-layers", "2",
                 "--out", str(tmp_path / "full")]) == 2


def test_cached_teacher_run_in_process(tmp_path):
    """`--cache-teacher`: the teacher runs once, before fit; the run trains
    and writes its student like the live-teacher path."""
    from zoo.distill.cli import DistillConfig, distill

    teacher, data = _teacher_dir(tmp_path), _data(tmp_path)
    config = DistillConfig(student_layers=2, layer_map=(1, 3), epochs=2, batch_size=8,
                           sequence_length=12, learning_rate=1e-3, seed=3,
                           run_eagerly=True, evaluate=False, cache_teacher=True)
    summary = distill(teacher, data, tmp_path / "cached", config, verbose=0)
    history = json.loads((tmp_path / "cached" / "history.json").read_text())["history"]
    assert len(history["loss"]) == 2 and all(np.isfinite(history["loss"]))
    assert history["loss"][1] < history["loss"][0]
    assert summary["student_parameters"] < summary["teacher_parameters"]
    assert load_model_dir(tmp_path / "cached" / "model")[0].encoder.num_layers == 2
