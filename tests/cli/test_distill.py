"""`zoo distill` from the command line: in two fresh processes at once the
CLI writes its student and the same seed gives bit-identical students; the
parser and its errors."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import zoo
from tests.distill.tiny import teacher_dir, topic_data
from zoo.checkpoints import load_model_dir
from zoo.cli import build_parser, main


def _command(teacher, data, out):
    return [
        sys.executable,
        "-m",
        "zoo",
        "distill",
        "--teacher",
        str(teacher),
        "--data",
        str(data),
        "--student-layers",
        "2",
        "--layer-map",
        "1,3",
        "--student-intermediate-dim",
        "12",
        "--out",
        str(out),
        "--epochs",
        "1",
        "--steps-per-epoch",
        "2",
        "--batch-size",
        "8",
        "--sequence-length",
        "12",
        "--learning-rate",
        "1e-3",
        "--seed",
        "3",
        "--run-eagerly",
        "--no-evaluate",
        "--verbose",
        "0",
    ]


@pytest.mark.slow  # two distillation runs
def test_cli_writes_student_and_is_deterministic(tmp_path):
    teacher, data = teacher_dir(tmp_path), topic_data(tmp_path)
    env = dict(os.environ, PYTHONHASHSEED="0")
    runs = [
        subprocess.Popen(
            _command(teacher, data, tmp_path / f"run{i}"),
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in (1, 2)
    ]
    for run in runs:
        stdout, stderr = run.communicate(timeout=300)
        assert run.returncode == 0, stderr[-3000:]
    students = [load_model_dir(tmp_path / f"run{i}" / "model") for i in (1, 2)]
    (s1, _, meta), (s2, _, _) = students
    assert type(s1) is zoo.Classifier and type(s1.encoder) is zoo.DistilBertEncoder
    assert s1.encoder.num_layers == 2 and meta["sequence_length"] == 12
    assert s1.encoder.config.intermediate_dim == 12  # 12 of the teacher's 16 units
    assert meta["distill_config"]["layer_map"] == [1, 3]
    for a, b in zip(s1.get_weights(), s2.get_weights()):
        assert np.array_equal(a, b)
    metrics = json.loads((tmp_path / "run1" / "metrics.json").read_text())
    assert metrics["student_parameters"] < metrics["teacher_parameters"]
    history = json.loads((tmp_path / "run1" / "history.json").read_text())["history"]
    assert {"soft_loss", "hard_loss", "cosine_loss", "val_loss"} <= set(history)
    assert (tmp_path / "run1" / "args.json").is_file()


def test_parser_and_errors(tmp_path, capsys):
    parser = build_parser()
    args = parser.parse_args(
        [
            "distill",
            "--teacher",
            "t",
            "--data",
            "d",
            "--student-layers",
            "3",
            "--layer-map",
            "0,2,4",
            "--out",
            "o",
        ]
    )
    assert args.layer_map == (0, 2, 4) and args.mode == "task" and args.strategy == "none"
    # The optimizer flags zoo finetune takes, with its defaults.
    assert (args.gradient_accumulation, args.warmup_fraction, args.weight_decay) == (
        1,
        0.1,
        0.01,
    )
    with pytest.raises(SystemExit):
        parser.parse_args(
            [
                "distill",
                "--teacher",
                "t",
                "--data",
                "d",
                "--student-layers",
                "3",
                "--layer-map",
                "0,x",
                "--out",
                "o",
            ]
        )
    with pytest.raises(SystemExit):
        parser.parse_args(["distill", "--help"])
    assert "zoo distill --teacher" in capsys.readouterr().out
    teacher = teacher_dir(tmp_path)
    assert (
        main(
            [
                "distill",
                "--teacher",
                str(teacher),
                "--data",
                "d",
                "--student-layers",
                "2",
                "--student-intermediate-dim",
                "17",
                "--out",
                str(tmp_path / "w"),
            ]
        )
        == 2
    )
    assert "--student-intermediate-dim 17" in capsys.readouterr().err
    narrow = ["distill", "--teacher", str(teacher), "--data", "d", "--student-layers", "2"]
    assert main(narrow + ["--student-hidden-dim", "6", "--out", str(tmp_path / "n")]) == 2
    assert "--student-hidden-dim 6: " in capsys.readouterr().err
    assert not (tmp_path / "n").exists()
    # A Hub name is a checkpoint, not a teacher with its head: refused before
    # anything is fetched or written, with the way to make one.
    hub_teacher = ["distill", "--teacher", "hf://acme/bert", "--data", "d"]
    assert main(hub_teacher + ["--student-layers", "1", "--out", str(tmp_path / "h")]) == 2
    err = capsys.readouterr().err
    assert (
        "--teacher hf://acme/bert" in err and "zoo finetune --model hf://acme/bert" in err
    )
    assert not (tmp_path / "h").exists()
    for flag, value in (
        ("--gradient-accumulation", "0"),
        ("--warmup-fraction", "1.5"),
        ("--weight-decay", "-0.1"),
    ):
        assert (
            main(
                [
                    "distill",
                    "--teacher",
                    str(teacher),
                    "--data",
                    "d",
                    "--student-layers",
                    "2",
                    flag,
                    value,
                    "--out",
                    str(tmp_path / "w"),
                ]
            )
            == 2
        )
        assert f"{flag} must be" in capsys.readouterr().err
    assert not (tmp_path / "w").exists(), "a refused run writes nothing"
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("")
    assert (
        main(
            [
                "distill",
                "--teacher",
                "t",
                "--data",
                "d",
                "--student-layers",
                "2",
                "--out",
                str(tmp_path / "full"),
            ]
        )
        == 2
    )


def test_demo_student_widths_are_checked_before_anything_is_written(tmp_path, capsys):
    for flag, value, says in (
        ("--student-hidden-dim", "100", "multiple of 32 up to 384"),
        ("--student-hidden-dim", "416", "multiple of 32 up to 384"),
        ("--student-intermediate-dim", "0", "give 1..1536"),
    ):
        out = tmp_path / f"demo{value}"
        assert (
            main(["demo", flag, value, "--out", str(out), "--android-assets", "none"]) == 2
        )
        err = capsys.readouterr().err
        assert f"{flag} {value}: " in err and says in err, err
        assert not out.exists()


def test_a_diverged_run_is_one_line_and_publishes_no_model(tmp_path, capsys):
    """A learning rate that drives the validation loss to NaN: finetune
    printed a RuntimeError traceback, and distill published its last,
    diverged student with exit 0. Both now end in one line naming the cause
    (exit 2), with no model in --out."""
    teacher, data = teacher_dir(tmp_path), topic_data(tmp_path)
    common = ["--data", str(data), "--sequence-length", "12", "--epochs", "1"]
    # No weight decay: 1e30 x 0.01 would be refused before training.
    common += ["--batch-size", "8", "--learning-rate", "1e30", "--weight-decay", "0"]
    common += ["--verbose", "0"]
    runs = {
        "finetune": ["--model", str(teacher), "--task", "classify"],
        "distill": ["--teacher", str(teacher), "--student-layers", "1"],
    }
    for command, args in runs.items():
        out = tmp_path / command
        assert main([command, *args, *common, "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert f"zoo {command}: error:" in err and "was never finite" in err
        assert "Traceback" not in err
        assert not (out / "model").exists()
