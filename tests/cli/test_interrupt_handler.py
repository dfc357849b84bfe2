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
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    done = {
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
    program = done["program"]
    assert program.returncode == 0, program.stderr[-2000:]
    assert "Traceback" not in program.stderr, program.stderr[-2000:]
    assert "bert" in program.stdout
    # The same exit through `main`: Python's handler is back and raises.
    assert "KeyboardInterrupt" in done["main"].stderr
