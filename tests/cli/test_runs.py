"""The rules for --out (`zoo.cli.runs`, docs/outputs.md): never empty, never
an input or around one, --force only on what zoo wrote; and how pretrain,
finetune and distill treat an existing --out (`training_output`): new,
resume, finished, refused, --force."""

import argparse
import contextlib
import io
import json
import os
import pathlib

import pytest

from zoo.cli import build_parser, main
from zoo.cli.runs import (
    FORCE_HELP,
    TRAINING_OUTPUTS,
    CliError,
    check_out_apart,
    check_replace_output,
    data_path,
    output_path,
    start_run,
    training_output,
    write_run_info,
)
from zoo.utils.atomic import OUTPUT_MARKER, output_marker, write_marker, write_run_marker

ROOT = pathlib.Path(__file__).resolve().parents[2]
WRITING_COMMANDS = ("convert", "pretrain", "finetune", "distill", "prune", "export", "demo")


def _args(out, **changes):
    values = dict(
        command="finetune",
        model="models/minilm",
        data="bbc",
        out=out,
        learning_rate=5e-5,
        epochs=3,
        force=False,
        verbose=1,
    )
    return argparse.Namespace(**{**values, **changes})


def _tree(root):
    return {
        p.relative_to(root).as_posix(): p.read_bytes() if p.is_file() else None
        for p in sorted(pathlib.Path(root).rglob("*"))
    }


def _foreign(path):
    path.mkdir(parents=True)
    (path / "notes.txt").write_text("mine")
    (path / "model").mkdir()
    (path / "model" / "weights.bin").write_bytes(b"\x00mine")
    (path / "metrics.json").write_text('{"mine": 1}')
    (path / "args.json").write_text('{"tool": "another", "arguments": {"lr": 1}}')
    return path


def test_new_resume_finished_and_force(tmp_path):
    out = tmp_path / "run"
    args = _args(out)
    assert training_output(out, args, False) == "new"
    out.mkdir()
    assert training_output(out, args, False) == "new"  # empty
    start_run(out, args)
    assert output_marker(out) == {"kind": "run", "command": "finetune"}
    assert training_output(out, args, False) == "resume"  # args.json only: not finished
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
    assert sorted(p.name for p in out.iterdir()) == [OUTPUT_MARKER, "notes.txt"], (
        "--force removes this command's outputs and nothing else"
    )


def test_other_arguments_and_foreign_directories_are_refused(tmp_path):
    out = tmp_path / "run"
    start_run(out, _args(out))
    (out / "backup").mkdir()
    with pytest.raises(CliError) as e:
        training_output(out, _args(out, learning_rate=1e-4, data="austen"), False)
    message = str(e.value)
    assert "--data 'bbc' there, 'austen' now" in message
    assert "--learning-rate 5e-05 there, 0.0001 now" in message
    assert "--force" in message

    # A directory of someone else's files, another tool's args.json among
    # them: refused, --force or not, and left as it was.
    foreign = _foreign(tmp_path / "foreign")
    before = _tree(foreign)
    for force in (False, True):
        with pytest.raises(CliError, match="was not written by zoo") as e:
            training_output(foreign, _args(foreign), force)
        assert "--out" in str(e.value) and "notes.txt" in str(e.value)
    assert _tree(foreign) == before
    # A non-chief worker leaves that check to the chief (which writes args.json).
    (foreign / "args.json").unlink()
    assert training_output(foreign, _args(foreign), False, remove=False) == "resume"
    assert json.loads((out / "args.json").read_text())["arguments"]["epochs"] == 3


def test_a_run_that_trained_nothing_starts_over_with_other_arguments(tmp_path, capsys):
    """A run refused after start_run (a late check: a batch larger than the
    corpus, --strategy tpu with no TPU) leaves only args.json: the corrected
    command starts over without --force, since no weights would be mixed."""
    out = tmp_path / "run"
    start_run(out, _args(out))
    (out / "notes.txt").write_text("mine")
    # A non-chief worker decides the same, and removes nothing.
    assert training_output(out, _args(out, epochs=5), False, remove=False) == "new"
    assert (out / "args.json").is_file()
    assert training_output(out, _args(out, epochs=5), False) == "new"
    assert "stopped before training; starting over" in capsys.readouterr().out
    assert sorted(p.name for p in out.iterdir()) == [OUTPUT_MARKER, "notes.txt"]
    # Anything trained (a backup, a model, a history) keeps the refusal.
    for trained in ("backup", "model", "history.json", "metrics.json"):
        start_run(out, _args(out))
        (out / trained).mkdir()
        with pytest.raises(CliError, match="other arguments"):
            training_output(out, _args(out, epochs=5), False)
        (out / trained).rmdir()


def test_a_run_without_its_args_json(tmp_path):
    out = tmp_path / "run"
    start_run(out, _args(out))
    (out / "args.json").unlink()
    (out / "model").mkdir()
    with pytest.raises(CliError, match="without its args.json"):
        training_output(out, _args(out), False)
    assert training_output(out, _args(out), True) == "new"
    assert not (out / "model").exists()


def test_a_run_of_an_older_zoo_is_ours_by_its_args_json(tmp_path):
    """Runs written before run directories had a marker: our own args.json
    (arguments.command a training command) makes the directory ours."""
    out = tmp_path / "old"
    out.mkdir()
    write_run_info(out, _args(out))
    (out / "model").mkdir()
    (out / "notes.txt").write_text("mine")
    assert training_output(out, _args(out), False) == "resume"
    with pytest.raises(CliError, match="other arguments"):
        training_output(out, _args(out, epochs=5), False)
    assert training_output(out, _args(out, epochs=5), True) == "new"
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]


def test_directories_zoo_wrote_for_something_else_are_not_run_directories(tmp_path):
    model_dir = tmp_path / "model_dir"
    model_dir.mkdir()
    write_marker(model_dir)
    (model_dir / "model.keras").write_text("x")
    demo = tmp_path / "demo"
    demo.mkdir()
    write_run_marker(demo, "demo")
    (demo / "report.md").write_text("x")
    for path, what in ((model_dir, "model directory or artifact"), (demo, "zoo demo")):
        for force in (False, True):
            with pytest.raises(CliError, match=what):
                training_output(path, _args(path), force)
        assert any(path.iterdir())


def test_force_removes_a_link_not_what_it_points_to(tmp_path):
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / "keep.txt").write_text("mine")
    out = tmp_path / "run"
    start_run(out, _args(out))
    os.symlink(target, out / "model")
    assert training_output(out, _args(out), True) == "new"
    assert not (out / "model").exists() and (target / "keep.txt").read_text() == "mine"


def test_out_is_never_empty():
    with pytest.raises(argparse.ArgumentTypeError, match="unset shell variable"):
        output_path("")
    with pytest.raises(argparse.ArgumentTypeError):
        output_path("  ")
    assert output_path(".") == pathlib.Path(".")  # the working directory, explicitly
    # Every writing command parses --out with it.
    sub = next(
        a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)
    )
    for command in WRITING_COMMANDS:
        outs = [a for a in sub.choices[command]._actions if "--out" in a.option_strings]
        assert outs and outs[0].type is output_path, command
    err = io.StringIO()
    with contextlib.redirect_stderr(err), pytest.raises(SystemExit) as e:
        main(["convert", "x", "--out", ""])
    assert e.value.code == 2 and "argument --out" in err.getvalue()


def test_out_apart_from_the_inputs(tmp_path):
    model = tmp_path / "runs" / "bbc" / "model"
    model.mkdir(parents=True)
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "runs" / "bbc")
    for out, relation in (
        (model, "is"),
        (model / "sub", "lies inside"),
        (tmp_path / "runs" / "bbc", "contains"),
        (link, "contains"),  # the same directory through a symbolic link
        (tmp_path, "contains"),
    ):
        with pytest.raises(CliError, match=f"{relation} --model") as e:
            check_out_apart(out, [("--data", None), ("--model", model)])
        assert str(out) in str(e.value)
    check_out_apart(tmp_path / "runs" / "other", [("--model", model), ("--data", None)])
    check_out_apart(
        tmp_path / "runs" / "bbc2", [("--model", model)]
    )  # a prefix, not a parent


def test_data_names_a_path_or_not(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert data_path("bbc") is None and data_path("austen+wordnet") is None
    (tmp_path / "bbc").mkdir()
    assert data_path("bbc") == pathlib.Path("bbc")  # a folder of that name exists
    assert data_path("data/news.csv") == pathlib.Path("data/news.csv")
    assert data_path("shards/*.txt") == pathlib.Path("shards")
    assert data_path("/corpus/**/part-*.txt") == pathlib.Path("/corpus")
    assert data_path("*.txt") == pathlib.Path(".")


def test_force_replaces_only_a_directory_zoo_wrote(tmp_path):
    check_replace_output(tmp_path / "new", False, "convert")
    (tmp_path / "empty").mkdir()
    check_replace_output(tmp_path / "empty", False, "convert")
    foreign = _foreign(tmp_path / "foreign")
    with pytest.raises(CliError, match="pass --force"):
        check_replace_output(foreign, False, "convert")
    with pytest.raises(CliError, match="--out .*did not write.*zoo convert never replaces"):
        check_replace_output(foreign, True, "convert")
    ours = tmp_path / "ours"
    ours.mkdir()
    write_marker(ours)
    (ours / "model.keras").write_text("x")
    (ours / "zoo_model.json").write_text('{"format": "zoo-model"}')
    check_replace_output(ours, True, "convert")
    (ours / "notes.txt").write_text("mine")  # a file a user added to our output
    with pytest.raises(CliError, match="notes.txt"):
        check_replace_output(ours, True, "convert")
    run = tmp_path / "run"
    start_run(run, _args(run))
    with pytest.raises(CliError, match="run directory of `zoo finetune`"):
        check_replace_output(run, True, "prune")
    (tmp_path / "file").write_text("x")
    with pytest.raises(CliError, match="is a file"):
        check_replace_output(tmp_path / "file", True, "prune")


def test_the_rules_are_in_the_help_and_the_docs():
    assert ".zoo-output" in FORCE_HELP and "other files there are kept" in FORCE_HELP
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        main(["--help"])
    text = out.getvalue()
    assert "docs/outputs.md" in text and '--out ""' in text and "models.config" in text
    docs = (ROOT / "docs" / "outputs.md").read_text()
    for name in (
        *TRAINING_OUTPUTS,
        OUTPUT_MARKER,
        "models.config",
        "README.zoo.md",
        "--force",
    ):
        assert name in docs, name


def test_a_flag_added_since_the_run_started_resumes_at_its_default(tmp_path):
    """A run started before `zoo distill` had --gradient-accumulation (its
    args.json lacks it) resumes when the flag keeps its default, and is
    refused when it is given another value."""
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
    start_run(out, args)
    info = json.loads((out / "args.json").read_text())
    assert "parser" not in info["arguments"] and "func" not in info["arguments"]
    del info["arguments"]["gradient_accumulation"]  # as an older zoo wrote it
    (out / "args.json").write_text(json.dumps(info))
    (out / "backup").mkdir()
    assert training_output(out, args, False) == "resume"
    other = build_parser().parse_args(command + ["--gradient-accumulation", "2"])
    with pytest.raises(CliError, match="--gradient-accumulation None there, 2 now"):
        training_output(out, other, False)
