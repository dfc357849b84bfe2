"""How pretrain, finetune and distill treat an existing --out
(`zoo.cli.runs.training_output`): new, resume, finished, refused, --force."""

import argparse
import json

import pytest

from zoo.cli.runs import CliError, training_output, write_run_info


def _args(out, **changes):
    values = dict(
        model="models/minilm",
        data="bbc",
        out=out,
        learning_rate=5e-5,
        epochs=3,
        force=False,
        verbose=1,
    )
    return argparse.Namespace(**{**values, **changes})


def test_new_resume_finished_and_force(tmp_path):
    out = tmp_path / "run"
    args = _args(out)
    assert training_output(out, args, False) == "new"
    out.mkdir()
    assert training_output(out, args, False) == "new"  # empty
    write_run_info(out, args)
    (out / "backup").mkdir()
    assert training_output(out, args, False) == "resume"
    # --force and --verbose may change on a resume; they do not change the run.
    assert training_output(out, _args(out, verbose=0, force=True), False) == "resume"
    (out / "metrics.json").write_text("{}")
    assert training_output(out, args, False) == "resume"  # backup left: not finished
    (out / "backup").rmdir()
    assert training_output(out, args, False) == "finished"

    (out / "model").mkdir()
    (out / "notes.txt").write_text("mine")
    assert training_output(out, args, True, remove=False) == "new"
    assert (out / "model").is_dir(), "remove=False must not delete"
    assert training_output(out, args, True) == "new"
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"], (
        "--force removes this command's outputs and nothing else"
    )


def test_other_arguments_and_foreign_directories_are_refused(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    write_run_info(out, _args(out))
    (out / "backup").mkdir()
    with pytest.raises(CliError) as e:
        training_output(out, _args(out, learning_rate=1e-4, data="austen"), False)
    message = str(e.value)
    assert "--data 'bbc' there, 'austen' now" in message
    assert "--learning-rate 5e-05 there, 0.0001 now" in message
    assert "--force" in message

    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    with pytest.raises(CliError, match="not empty and was not written by this command"):
        training_output(foreign, _args(foreign), False)
    (foreign / "model").mkdir()
    with pytest.raises(CliError, match="without its args.json"):
        training_output(foreign, _args(foreign), False)
    # A non-chief worker leaves that check to the chief (which writes args.json).
    assert training_output(foreign, _args(foreign), False, remove=False) == "resume"
    assert json.loads((out / "args.json").read_text())["arguments"]["epochs"] == 3


def test_a_flag_added_since_the_run_started_resumes_at_its_default(tmp_path):
    """A run started before `zoo distill` had --gradient-accumulation (its
    args.json lacks it) resumes when the flag keeps its default, and is
    refused when it is given another value."""
    from zoo.cli import build_parser

    out = tmp_path / "run"
    command = [
        "distill",
        "--teacher",
        "t",
        "--data",
        "bbc",
        "--student-layers",
        "2",
        "--out",
        str(out),
    ]
    args = build_parser().parse_args(command)
    out.mkdir()
    write_run_info(out, args)
    info = json.loads((out / "args.json").read_text())
    assert "parser" not in info["arguments"] and "func" not in info["arguments"]
    del info["arguments"]["gradient_accumulation"]  # as an older zoo wrote it
    (out / "args.json").write_text(json.dumps(info))
    (out / "backup").mkdir()
    assert training_output(out, args, False) == "resume"
    other = build_parser().parse_args(command + ["--gradient-accumulation", "2"])
    with pytest.raises(CliError, match="--gradient-accumulation None there, 2 now"):
        training_output(out, other, False)
