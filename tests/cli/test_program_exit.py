"""The `zoo` program's exit: once its command has returned, Python's last
garbage collections skip the objects alive then (`gc.freeze`), while the
atexit functions (temporary directories' cleanup among them) still run.
`main`, which callers use in their own process, leaves the collector alone."""

from __future__ import annotations

import gc
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]

SCRIPT = """\
import atexit, gc, sys, tempfile
from zoo.cli import {entry}
kept = tempfile.TemporaryDirectory()  # removed by its atexit finalizer
print("scratch", kept.name)
atexit.register(lambda: print("frozen at exit", gc.get_freeze_count(), flush=True))
sys.argv = ["zoo", "presets"]
raise SystemExit({entry}())
"""


def _run(entry):
    return subprocess.run(
        [sys.executable, "-c", SCRIPT.format(entry=entry)],
        cwd=ROOT,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"),
        capture_output=True,
        text=True,
        timeout=300,
    )


def _field(stdout, name):
    return next(line.split()[-1] for line in stdout.splitlines() if line.startswith(name))


def test_the_program_freezes_the_heap_before_python_exits_and_still_cleans_up():
    proc = _run("program")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "bert" in proc.stdout  # the command's output is whole
    # The atexit finalizer removed the temporary directory.
    assert not pathlib.Path(_field(proc.stdout, "scratch")).exists()
    # TensorFlow and Keras alone leave hundreds of thousands of objects.
    assert int(_field(proc.stdout, "frozen at exit")) > 100_000


def test_main_leaves_the_collector_alone(capsys):
    from zoo.cli import main

    before = gc.get_freeze_count()  # pytest's own (tests/conftest.py)
    assert main(["presets"]) == 0
    assert "bert" in capsys.readouterr().out
    assert gc.get_freeze_count() == before
    assert gc.isenabled()
