"""Reliability corpus, areas "interrupts", "full disk" and "long names"
(issue #43, class 6).

interrupts: SIGINT or SIGTERM sent to a real `python -m zoo` at a chosen
moment (training, conversion, validation, loading, a --backend re-run). It
must exit 128 + the signal, print exactly one line mentioning "interrupted"
and no traceback, leave no `.tmp-` temporary, publish nothing at --out (a
training run keeps only its resumable run directory), leave no validation
worker running, and the same command run again must complete.

full disk: a write fails with ENOSPC, or TensorFlow's "No space left on
device" error, during export and convert: exit 2, one line naming the path
and the free space, no temporary left, the user's file beside --out kept.
A real 200 KB tmpfs when this machine lets us mount one (root), and the
same errors raised by monkeypatched writers everywhere.

long names: 250- and 255-byte names and a multibyte UTF-8 name through
`atomic_directory`, `atomic_file` and `zoo convert`."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest

from tests.reliability.corpus import Case, answer, check_case

ROOT = pathlib.Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """A tiny teacher model directory, its topic data, and 300 rows of the
    same data for exports (validation long enough to be interrupted)."""
    from tests.distill.tiny import teacher_dir, topic_data

    root = tmp_path_factory.mktemp("interrupt_inputs")
    teacher = teacher_dir(root)
    data = topic_data(root)
    rows = data.read_text().splitlines()
    big = root / "many.csv"
    big.write_text("\n".join([rows[0], *(rows[1:] * 8)]) + "\n")
    return {"teacher": teacher, "data": data, "many": big}


def _temporaries(*places):
    found = []
    for place in places:
        place = pathlib.Path(place)
        if place.is_dir():
            found += [
                str(p) for p in place.rglob("*") if ".tmp-" in p.name or ".old-" in p.name
            ]
    return found


# -------------------------------------------------------------- interrupts


def _workers_of(scratch):
    """Processes whose command line names `scratch` (a TF1 validation worker
    reads its request from there)."""
    alive = []
    for proc in pathlib.Path("/proc").glob("[0-9]*"):
        with contextlib.suppress(OSError):
            if str(scratch) in (proc / "cmdline").read_bytes().decode(errors="replace"):
                alive.append(proc.name)
    return alive


class Interrupt:
    """Run `zoo ARGV`, send `signum` once `ready(out)` holds, then run the
    same command again."""

    def __init__(self, tmp_path, name, argv, ready, signum, out, training=False):
        self.root = tmp_path / name
        self.root.mkdir()
        self.scratch = self.root / "scratch"
        self.scratch.mkdir()
        self.out = self.root / out
        self.argv = [a.replace("{OUT}", str(self.out)) for a in argv]
        self.ready, self.signum, self.training = ready, signum, training
        self.proc = None

    def _start(self, log):
        env = dict(
            os.environ,
            TMPDIR=str(self.scratch),
            TF_CPP_MIN_LOG_LEVEL="3",
            PYTHONUNBUFFERED="1",
        )
        return subprocess.Popen(
            [sys.executable, "-m", "zoo", *self.argv],
            cwd=ROOT,
            env=env,
            stdout=open(self.root / f"{log}.out", "w"),  # noqa: SIM115
            stderr=open(self.root / f"{log}.err", "w"),  # noqa: SIM115
        )

    def run(self):
        self.proc = self._start("first")
        deadline = time.time() + 300
        while not self.ready(self):
            if self.proc.poll() is not None or time.time() > deadline:
                raise RuntimeError(
                    f"ended (exit {self.proc.poll()}) before the moment to interrupt: "
                    + (self.root / "first.err").read_text()[-1500:]
                )
            time.sleep(0.02)
        self.proc.send_signal(self.signum)
        code = self.proc.wait()
        err = (self.root / "first.err").read_text()
        lines = [line for line in err.splitlines() if line.strip()]
        result = {
            "exit": code,
            "interrupted lines": [line for line in lines if "interrupted" in line],
            "last line": lines[-1] if lines else "",
            "traceback": "Traceback" in err,
            "temporaries": _temporaries(self.root.parent, self.root),
            # A training run keeps its run directory (backup/, the best
            # model so far) to resume from; its final output is metrics.json.
            "published": (self.out / "metrics.json").exists()
            if self.training
            # Elsewhere no file at --out (a SavedModel's NAME/ folder may
            # exist, empty: the writer makes the version's parent first).
            else any(p.is_file() for p in self.out.rglob("*")),
            "workers left": _workers_of(self.scratch),
        }
        again = self._start("again")
        result["again"] = again.wait(timeout=900)
        if result["again"]:
            result["again stderr"] = (self.root / "again.err").read_text()[-1500:]
        result["temporaries after again"] = _temporaries(self.root)
        return result

    def check(self, r):
        return (
            r["exit"] == 128 + self.signum
            and len(r["interrupted lines"]) == 1
            and r["last line"] == r["interrupted lines"][0]
            and signal.Signals(self.signum).name in r["last line"]
            and not r["traceback"]
            and not r["temporaries"]
            and not r["published"]
            and not r["workers left"]
            and r["again"] == 0
            and not r["temporaries after again"]
        )

    def release(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()


def _epoch_done(run):
    return (run.out / "history.json").exists()


def _temporary_beside(run):
    return [p for p in run.out.parent.glob(f".{run.out.name}.tmp-*")]


def _converting(run):
    return any((t / ".work").exists() for t in _temporary_beside(run))


def _validating(run):
    return any((t / "model.tflite").exists() for t in _temporary_beside(run))


def _tf1_worker_started(run):
    return any(run.scratch.glob("zoo-tf1-*"))


def _reading(run):
    return "reading" in (run.root / "first.out").read_text()


def _interrupt_plans(inputs):
    teacher, data, many = (str(inputs[k]) for k in ("teacher", "data", "many"))
    train = ["--data", data, "--out", "{OUT}", "--epochs", "40", "--batch-size", "8"]
    train += ["--sequence-length", "12", "--learning-rate", "1e-3"]
    finetune = ["finetune", "--model", teacher, "--task", "classify", *train]
    distill = ["distill", "--teacher", teacher, "--student-layers", "2", "--no-evaluate"]
    distill += ["--verbose", "0", *train]
    tflite = ["export", "--model", teacher, "--format", "tflite", "--data", many]
    tflite += ["--sequence-lengths", "12", "--allow-degraded", "--out", "{OUT}"]
    saved = ["export", "--model", teacher, "--format", "saved_model", "--data", many]
    saved += ["--sequence-lengths", "12", "--allow-degraded", "--out", "{OUT}"]
    convert = ["convert", teacher, "--to", "tf1", "--out", "{OUT}"]
    # One signal per moment, the two taking turns: both raise the same
    # `Interrupted` through one handler (zoo.cli.interrupts), and what
    # differs between them, the exit status and the line's name, is checked
    # for each in test_interrupted_line_and_status and in
    # tests/cli/test_interrupt_handler.py. Each case is two `zoo` processes
    # (about 25-70 s on 2 cores), so a second signal per moment would
    # double the cost and test the same path again.
    INT, TERM = signal.SIGINT, signal.SIGTERM
    return {
        "finetune training, SIGINT": (finetune, _epoch_done, INT, True),
        "finetune --backend jax (re-run in a child), SIGTERM to the parent": (
            [*finetune, "--backend", "jax"],
            _epoch_done,
            TERM,
            True,
        ),
        "distill training, SIGTERM": (distill, _epoch_done, TERM, True),
        "export tflite conversion, SIGINT": (tflite, _converting, INT, False),
        "export tflite validation, SIGTERM": (tflite, _validating, TERM, False),
        "export saved_model in the TF1 worker, SIGTERM": (
            saved,
            _tf1_worker_started,
            TERM,
            False,
        ),
        "convert while reading, SIGINT": (convert, _reading, INT, False),
    }


INTERRUPTS = list(_interrupt_plans({"teacher": "", "data": "", "many": ""}))


@pytest.mark.slow
@pytest.mark.parametrize("name", INTERRUPTS)
def test_interrupts(name, inputs, tmp_path):
    argv, ready, signum, training = _interrupt_plans(inputs)[name]
    run = Interrupt(tmp_path, "run", argv, ready, signum, "out", training)
    case = Case(name, run.run, "answer", check=run.check, timeout=1200, release=run.release)
    check_case("interrupts", case)


def test_interrupted_line_and_status():
    from zoo.cli import interrupts

    assert interrupts.exit_status(signal.SIGINT) == 130
    assert interrupts.exit_status(signal.SIGTERM) == 143
    assert interrupts.child_status(-signal.SIGTERM) == 143
    assert interrupts.interrupted_line("finetune", signal.SIGINT) == (
        "zoo finetune: interrupted (SIGINT): nothing published; run the same command "
        "again to resume"
    )
    assert interrupts.interrupted_line("export", signal.SIGTERM).endswith(
        "nothing published; run the same command again"
    )


def test_a_second_interrupt_during_cleanup_is_absorbed(tmp_path, monkeypatch):
    """`atomic_directory` removes its temporary even when Ctrl-C comes again
    while it does, and the first interrupt is the one that propagates."""
    import shutil

    from zoo.utils import atomic

    calls = []
    real = shutil.rmtree

    def interrupted_once(path, *a, **k):
        calls.append(path)
        if len(calls) == 1:
            raise KeyboardInterrupt("second")
        return real(path, *a, **k)

    monkeypatch.setattr(atomic.shutil, "rmtree", interrupted_once)
    with pytest.raises(KeyboardInterrupt, match="first"):
        with atomic.atomic_directory(tmp_path / "out") as tmp:
            (tmp / "a").write_text("x")
            raise KeyboardInterrupt("first")
    assert list(tmp_path.iterdir()) == []


def test_publishing_defers_signals(tmp_path):
    """The two renames that replace an existing output are not cut apart:
    a SIGINT during them is delivered after both."""
    from zoo.utils import atomic

    with atomic.atomic_directory(tmp_path / "out") as tmp:
        (tmp / "a").write_text("old")
    real = os.replace
    seen = []
    # Python's own SIGINT handler, even where the test process was started
    # with SIGINT ignored (a background job without job control).
    old_handler = signal.signal(signal.SIGINT, signal.default_int_handler)

    def replace(src, dst):
        if not seen:
            seen.append(dst)
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)  # the handler would run here, between the renames
        return real(src, dst)

    try:
        with pytest.raises(KeyboardInterrupt), pytest.MonkeyPatch.context() as m:
            m.setattr(atomic.os, "replace", replace)
            with atomic.atomic_directory(tmp_path / "out") as tmp:
                (tmp / "a").write_text("new")
    finally:
        signal.signal(signal.SIGINT, old_handler)
    assert (tmp_path / "out" / "a").read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


# --------------------------------------------------------------- full disk


@contextlib.contextmanager
def _small_disk(path, size="200k"):
    path.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
        capture_output=True,
    )
    if done.returncode:
        pytest.skip(f"no tmpfs here (mount: {done.stderr.decode().strip()[:100]})")
    try:
        yield path
    finally:
        subprocess.run(["umount", str(path)], capture_output=True)


def _main(argv, capsys):
    from zoo.cli import main

    capsys.readouterr()
    code = main(argv)
    return code, capsys.readouterr().err


def _full_disk_check(out, user_file):
    def check(result):
        code, err = result
        lines = [line for line in err.splitlines() if line.strip()]
        return (
            code == 2
            and len([line for line in lines if "no space left" in line]) == 1
            and "no space left" in lines[-1]
            and str(out) in lines[-1]
            and "free there" in lines[-1]
            and "Traceback" not in err
            and not _temporaries(out.parent)
            and user_file.read_text() == "mine\n"
        )

    return check


def _enospc(*_a, **_k):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


FULL_DISK = [
    "export tflite onto a full tmpfs",
    "export saved_model onto a full tmpfs (TensorFlow's error)",
    "convert --to tf1 onto a full tmpfs (TensorFlow's error)",
    "export tflite, ENOSPC from a file write",
    "export saved_model, TensorFlow's ResourceExhaustedError from the SavedModel writer",
    "convert --to zoo, ENOSPC from a file write",
]


@pytest.mark.slow
@pytest.mark.parametrize("name", FULL_DISK)
def test_full_disk(name, inputs, tmp_path, capsys, monkeypatch):
    teacher, data = str(inputs["teacher"]), str(inputs["many"])
    place = tmp_path / "disk"
    real = "tmpfs" in name
    # A tiny model's TF1 checkpoint fits in 200 KB; one page beside the
    # user's file does not.
    size = "8k" if name.startswith("convert") else "200k"
    with _small_disk(place, size) if real else contextlib.nullcontext(place.mkdir()):
        user_file = place / "notes.txt"
        user_file.write_text("mine\n")
        out = place / "out"
        export = ["export", "--model", teacher, "--data", data, "--sequence-lengths", "12"]
        export += ["--allow-degraded", "--out", str(out), "--format"]
        if name.startswith("export tflite"):
            argv = [*export, "tflite"]
        elif name.startswith("export saved_model"):
            argv = [*export, "saved_model"]
        else:
            argv = ["convert", teacher, "--out", str(out), "--to", "tf1" if real else "zoo"]
        if "ENOSPC" in name:
            # Every pathlib write under the disk's folder (the temporaries
            # beside --out included) fails as a full disk does.
            for method in ("write_bytes", "write_text"):
                original = getattr(pathlib.Path, method)

                def failing(self, *a, _original=original, **k):
                    if str(place) in str(self.absolute()):
                        _enospc()
                    return _original(self, *a, **k)

                monkeypatch.setattr(pathlib.Path, method, failing)
        elif "ResourceExhausted" in name:
            import tensorflow as tf

            import export.saved_model as saved_model

            def write_out(model, tokenizer, sequence_length, meta, tmp):
                # What the SavedModel writer raises on a full disk (seen on
                # a real tmpfs): a ResourceExhaustedError naming its file.
                raise tf.errors.ResourceExhaustedError(
                    None,
                    None,
                    f"{tmp}/variables/variables_temp/part-00000-of-00001.data-00000-of-00001"
                    ".tempstate1234; No space left on device",
                )

            monkeypatch.setattr(saved_model, "_write_text_saved_model", write_out)
        case = answer(name, lambda: _main(argv, capsys), _full_disk_check(out, user_file))
        check_case("full disk", case)


def test_disk_full_line_names_path_and_free_space(tmp_path):
    from zoo.cli import interrupts

    error = OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "x"))
    line = interrupts.disk_full_line("export", error)
    assert str(tmp_path / "x") in line and "free there" in line
    assert interrupts.disk_full_line("export", OSError(errno.EACCES, "denied")) is None
    wrapped = ValueError("could not write")
    wrapped.__cause__ = OSError(errno.ENOSPC, "No space left on device")
    assert "writing OUT" in interrupts.disk_full_line("convert", wrapped, "OUT")


# -------------------------------------------------------------- long names

LONG = {
    "250 bytes": "n" * 250,
    "255 bytes": "n" * 255,
    "255 bytes, multibyte (2-byte é)": "é" * 127 + "x",
    "254 bytes, multibyte (3-byte €) ending mid-cut": "€" * 84 + "xx",
}


def _long_directory(tmp_path, name):
    from zoo.utils.atomic import atomic_directory

    with atomic_directory(tmp_path / name) as tmp:
        (tmp / "a").write_text("a")
    with atomic_directory(tmp_path / name) as tmp:  # replaced: the .old- name too
        (tmp / "a").write_text("b")
    return tmp_path


def _long_file(tmp_path, name):
    from zoo.utils.atomic import atomic_file

    for text in ("a", "b"):
        with atomic_file(tmp_path / name, "w") as f:
            f.write(text)
    return tmp_path


def _only(name, text, directory):
    def check(root):
        entries = [p.name for p in root.iterdir()]
        target = root / name
        content = (target / "a" if directory else target).read_text()
        return entries == [name] and content == text

    return check


LONG_CASES = [
    *[f"atomic_directory, {k}" for k in LONG],
    *[f"atomic_file, {k}" for k in LONG],
    "a killed writer's shortened temporary is removed by the next write",
    "zoo convert --out NAME of 255 bytes",
]


@pytest.mark.parametrize("name", LONG_CASES)
def test_long_names(name, tmp_path, capsys):
    if name.startswith("atomic_directory"):
        long = LONG[name.split(", ", 1)[1]]
        case = answer(name, lambda: _long_directory(tmp_path, long), _only(long, "b", True))
    elif name.startswith("atomic_file"):
        long = LONG[name.split(", ", 1)[1]]
        case = answer(name, lambda: _long_file(tmp_path, long), _only(long, "b", False))
    elif name.startswith("a killed"):
        case = answer(name, lambda: _killed_long_writer(tmp_path), lambda r: r)
    else:
        case = answer(name, lambda: _convert_long(tmp_path, capsys), lambda r: r)
    check_case("long names", case)


def _killed_long_writer(tmp_path):
    from zoo.utils.atomic import atomic_directory, stale_prefix

    long = "n" * 255
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f"{stale_prefix(tmp_path / long)}{dead.pid}-abcdefgh"
    stale.mkdir()
    assert len(stale.name.encode()) <= 255
    with atomic_directory(tmp_path / long) as tmp:
        (tmp / "a").write_text("a")
    return sorted(p.name for p in tmp_path.iterdir()) == [long]


def _convert_long(tmp_path, capsys):
    import tests.distill.tiny as tiny

    teacher = tiny.teacher_dir(tmp_path)
    out = tmp_path / ("m" * 255)
    code, err = _main(["convert", str(teacher), "--out", str(out)], capsys)
    if code:
        raise ValueError(f"exit {code}: {err}")
    manifest = json.loads((out / "zoo_model.json").read_text())
    return bool(manifest["files"]) and not _temporaries(tmp_path)


@pytest.mark.parametrize("kind", ["tmp", "old"])
def test_every_temporary_name_fits(tmp_path, kind):
    from zoo.utils.atomic import temporary_prefix

    for name in ("a", "n" * 200, "n" * 255, "é" * 127, "€" * 85):
        prefix = temporary_prefix(tmp_path / name, kind)
        assert len(prefix.encode()) + 8 <= os.pathconf(tmp_path, "PC_NAME_MAX")
        # Two long names that share their beginning keep apart.
    assert temporary_prefix(tmp_path / ("n" * 254 + "a")) != temporary_prefix(
        tmp_path / ("n" * 254 + "b")
    )
