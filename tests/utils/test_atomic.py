"""Atomic writes: what a killed writer left is removed by the next write to
the same place; a live writer's temporaries are left alone."""

import os
import subprocess
import sys

import pytest

from zoo.utils.atomic import atomic_directory, atomic_file, remove_stale


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
