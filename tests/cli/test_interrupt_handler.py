"""`zoo.cli.interrupts.handled`: a signal stops the command however the
main thread is busy when it lands, and changes nothing once the command
has returned.

Two windows that once went wrong: a SIGINT that arrived while a finalizer
ran (TensorFlow's objects run many) raised inside it, where Python prints
the exception and drops it, so the command ran on and exited 0 with a
traceback on stderr; a SIGINT after the command had returned (its output
published) raised while Python exited, and printed a traceback."""

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from zoo.cli import interrupts

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def own_signals():
    """Python's own handlers for the test, whatever the runner installed;
    the runner's back afterwards."""
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    yield
    for signum, handler in saved.items():
        signal.signal(signum, handler)


class _SlowFinalizer:
    """Busy in `__del__` until the signal has been sent and has had time to
    be handled there."""

    def __init__(self, entered, sent):
        self.entered, self.sent = entered, sent

    def __del__(self):
        self.entered.set()
        self.sent.wait(10)
        until = time.monotonic() + 0.3
        while time.monotonic() < until:  # bytecodes: the handler runs here
            pass


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["INT", "TERM"])
def test_a_signal_during_a_finalizer_still_stops_the_command(own_signals, signum):
    entered, sent = threading.Event(), threading.Event()
    dropped = []
    hook = sys.unraisablehook
    sys.unraisablehook = lambda info: dropped.append(info.exc_value)

    def send():
        entered.wait(10)
        os.kill(os.getpid(), signum)
        sent.set()

    try:
        with pytest.raises(interrupts.Interrupted) as caught:  # noqa: PT012
            with interrupts.handled():
                threading.Thread(target=send, daemon=True).start()
                finalized = _SlowFinalizer(entered, sent)
                del finalized  # the signal lands in __del__
                until = time.monotonic() + 10
                while time.monotonic() < until:  # the command's own work
                    time.sleep(0.01)
    finally:
        sys.unraisablehook = hook
    assert caught.value.signum == signum
    assert entered.is_set() and sent.is_set()
    # Nothing reached Python's default hook (which prints a traceback).
    assert dropped == []
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert sys.unraisablehook is hook


def test_a_signal_after_the_command_returned_changes_nothing(own_signals):
    with interrupts.handled(restore=False) as handling:
        handling.done = True
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)
    # The program's handlers stay (it is exiting) and only record.
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(0.05)
    assert handling.seen == [signal.SIGINT, signal.SIGTERM]


def test_main_gives_the_callers_handlers_back(own_signals):
    with interrupts.handled() as handling:
        assert signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    assert handling.done
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def _through_program_and_main(script):
    """`script` (with `{entry}` for `program` or `main`) run in a fresh
    Python each way: the finished processes by entry."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    return {
        entry: subprocess.run(
            [sys.executable, "-c", script.format(entry=entry)],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        for entry in ("program", "main")
    }


def test_the_program_exits_quietly_when_a_signal_comes_as_it_exits():
    """A real `zoo` process: the command has finished and a SIGINT arrives
    while Python exits (an atexit hook sends it): status 0, no traceback.
    `main`, which gives the caller's handler back, shows what it was."""
    script = (
        "import atexit, os, signal, sys\n"
        "atexit.register(lambda: os.kill(os.getpid(), signal.SIGINT))\n"
        "from zoo.cli import {entry}\n"
        "sys.argv = ['zoo', 'presets']\n"
        "raise SystemExit({entry}())\n"
    )
    done = _through_program_and_main(script)
    program = done["program"]
    assert program.returncode == 0, program.stderr[-2000:]
    assert "Traceback" not in program.stderr, program.stderr[-2000:]
    assert "bert" in program.stdout
    # The same exit through `main`: Python's handler is back and raises.
    assert "KeyboardInterrupt" in done["main"].stderr


def test_a_signal_while_python_finalizes_changes_nothing():
    """Python puts back each signal's default action before its last
    finalizers run (a module's objects): a SIGTERM then would kill a
    process whose command has published its output. The `zoo` program
    ignores it there; through `main`, which gives the default back, the
    same moment kills the process, as a check that the moment is real."""
    script = (
        "import os, signal, sys, time\n"
        "class Late:\n"
        "    # Runs as Python clears this module at exit, its globals gone.\n"
        "    def __del__(self, kill=os.kill, pid=os.getpid(), term=signal.SIGTERM.value,\n"
        "                sleep=time.sleep, out=sys.stdout):\n"
        "        kill(pid, term)\n"
        "        sleep(0.2)\n"
        "        out.write('finalized')\n"
        "        out.flush()\n"
        "late = Late()\n"
        "from zoo.cli import {entry}\n"
        "sys.argv = ['zoo', 'presets']\n"
        "raise SystemExit({entry}())\n"
    )
    done = _through_program_and_main(script)
    assert done["program"].returncode == 0, done["program"].stderr[-2000:]
    assert "bert" in done["program"].stdout and "finalized" in done["program"].stdout
    assert done["main"].returncode == -signal.SIGTERM


class _WrappingFinalizer:
    """A finalizer whose C code wraps the interrupt raised inside it, as
    CPython does when a function returns a result with an exception set."""

    def __del__(self):
        try:
            signal.raise_signal(signal.SIGTERM)  # our handler raises here
        except KeyboardInterrupt as e:
            raise SystemError("<built-in function __import__> returned a result") from e


def test_an_interrupt_wrapped_in_a_finalizer_still_stops_the_command(own_signals):
    dropped = []
    hook = sys.unraisablehook
    sys.unraisablehook = lambda info: dropped.append(info.exc_value)
    try:
        with pytest.raises(interrupts.Interrupted) as caught:  # noqa: PT012
            with interrupts.handled():
                finalized = _WrappingFinalizer()
                del finalized
                until = time.monotonic() + 10
                while time.monotonic() < until:  # the command's own work
                    time.sleep(0.01)
    finally:
        sys.unraisablehook = hook
    assert caught.value.signum == signal.SIGTERM
    assert dropped == []


@pytest.mark.parametrize("writer", ["atomic_file", "atomic_directory"])
def test_an_interrupt_a_library_swallowed_publishes_nothing(own_signals, tmp_path, writer):
    from zoo.utils import atomic

    out = tmp_path / "out"
    with pytest.raises(interrupts.Interrupted) as caught:  # noqa: PT012
        with interrupts.handled():
            try:  # a library's `except Exception` around a wrapped interrupt
                signal.raise_signal(signal.SIGINT)
            except BaseException:
                pass
            if writer == "atomic_file":
                with atomic.atomic_file(out, "w") as f:
                    f.write("late")
            else:
                with atomic.atomic_directory(out) as made:
                    (made / "a").write_text("late")
    assert caught.value.signum == signal.SIGINT
    assert list(tmp_path.iterdir()) == []  # neither --out nor a temporary
    # Outside a command, the writers publish as ever.
    with atomic.atomic_file(out, "w") as f:
        f.write("now")
    assert out.read_text() == "now"


def _command_parser(func):
    import argparse

    parser = argparse.ArgumentParser(prog="zoo")
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("work").set_defaults(func=func)
    return parser


def _wrapped(_args):
    try:
        signal.raise_signal(signal.SIGTERM)
    except KeyboardInterrupt as e:
        raise SystemError("returned a result with an exception set") from e


def _swallowed(_args):
    try:
        signal.raise_signal(signal.SIGTERM)
    except BaseException:
        pass
    print("done")
    return 0


@pytest.mark.parametrize("func", [_wrapped, _swallowed], ids=["wrapped", "swallowed"])
def test_a_wrapped_or_swallowed_interrupt_is_the_commands_status(
    own_signals, monkeypatch, capsys, func
):
    import zoo.cli as cli

    monkeypatch.setattr(cli, "build_parser", lambda: _command_parser(func))
    assert cli.main(["work"]) == 143
    err = capsys.readouterr().err
    assert (
        err.strip()
        == "zoo work: interrupted (SIGTERM): nothing published; run the same command again"
    )
