"""Atomic writes: what a killed writer left is removed by the next write to
the same place; a live writer's temporaries are left alone."""

import json
import os
import subprocess
import sys

import pytest

from zoo.utils.atomic import (
    ForeignDirectoryError,
    atomic_directory,
    atomic_file,
    remove_stale,
    unrecorded_files,
)


def _dead_pid():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid  # exited and reaped: no such process now


def test_stale_temporaries_of_dead_writers_are_removed(tmp_path):
    dead = _dead_pid()
    stale_dir = tmp_path / f".out.tmp-{dead}-abc"
    (stale_dir / ".work").mkdir(parents=True)
    stale_file = tmp_path / f".out.old-{dead}-xyz"
    stale_file.write_text("old")
    live = tmp_path / f".out.tmp-{os.getppid()}-live"  # a live process (our parent)
    live.mkdir()
    other = tmp_path / f".other.tmp-{dead}-abc"  # another destination's
    other.mkdir()
    with atomic_directory(tmp_path / "out") as tmp:
        (tmp / "a").write_text("new")
    assert (tmp_path / "out" / "a").read_text() == "new"
    assert not stale_dir.exists() and not stale_file.exists()
    assert live.exists() and other.exists()
    with atomic_file(tmp_path / "f.json", "w") as f:
        f.write("{}")
    (tmp_path / f".f.json.tmp-{dead}-q").write_text("x")
    with atomic_file(tmp_path / "f.json", "w") as f:
        f.write("{}")
    assert not (tmp_path / f".f.json.tmp-{dead}-q").exists()
    assert remove_stale(tmp_path, ".other.tmp-") == [other]


def test_a_file_where_a_directory_goes_is_refused(tmp_path):
    (tmp_path / "out").write_text("not a directory")
    with pytest.raises(NotADirectoryError, match="is a file"):
        with atomic_directory(tmp_path / "out"):
            pass


def test_the_marker_says_whose_and_what(tmp_path):
    from zoo.utils.atomic import output_marker, write_run_marker

    assert output_marker(tmp_path) is None
    with atomic_directory(tmp_path / "model") as tmp:
        (tmp / "model.keras").write_text("x")
    assert output_marker(tmp_path / "model") == {"kind": "output"}
    run = tmp_path / "run"
    run.mkdir()
    write_run_marker(run, "finetune", ["backup/", "model/"])
    assert output_marker(run) == {"kind": "run", "command": "finetune"}
    (run / "notes.txt").write_text("mine")
    # A run directory is never replaced whole, not even by a marked writer.
    with pytest.raises(ForeignDirectoryError, match="run directory of `zoo finetune`"):
        with atomic_directory(run):
            pass
    assert (run / "notes.txt").read_text() == "mine"


def test_a_file_added_to_our_output_is_not_ours_to_replace(tmp_path):
    """A marked directory whose record (manifest.json, zoo_model.json) does
    not list a file: someone put it there, so the directory is not replaced."""
    out = tmp_path / "artifact"
    with atomic_directory(out) as tmp:
        (tmp / "model.tflite").write_text("x")
        (tmp / "manifest.json").write_text(
            json.dumps({"files": {".zoo-output": {}, "model.tflite": {}}})
        )
    (out / "validation-20260101T000000.json").write_text("{}")  # zoo validate's report
    assert unrecorded_files(out) == []
    with atomic_directory(out) as tmp:  # ours: replaced
        (tmp / "manifest.json").write_text(json.dumps({"files": {"model.tflite": {}}}))
        (tmp / "model.tflite").write_text("y")
    (out / "mine.txt").write_text("the user's")
    (out / "sub").mkdir()
    (out / "sub" / "deep.txt").write_text("the user's too")
    assert unrecorded_files(out) == ["mine.txt", "sub/deep.txt"]
    with pytest.raises(ForeignDirectoryError, match="mine.txt, sub/deep.txt"):
        with atomic_directory(out):
            pass
    assert (out / "mine.txt").read_text() == "the user's"
    # A model directory from before zoo_model.json listed files: its own
    # three files, args.json, and nothing else.
    legacy = tmp_path / "legacy"
    legacy.mkdir()
    for name in (".zoo-output", "zoo_model.json", "model.keras", "vocab.txt", "args.json"):
        (legacy / name).write_text("{}")
    assert unrecorded_files(legacy) == []
    (legacy / "notes.txt").write_text("mine")
    assert unrecorded_files(legacy) == ["notes.txt"]


def test_a_directory_without_the_marker_is_never_replaced(tmp_path):
    out = tmp_path / "theirs"
    out.mkdir()
    (out / "model.keras").write_text("theirs")
    with pytest.raises(ForeignDirectoryError, match="did not write"):
        with atomic_directory(out):
            pass
    assert (out / "model.keras").read_text() == "theirs"
