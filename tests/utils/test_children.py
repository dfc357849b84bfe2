"""zoo.utils.children: a signal that arrives while Popen runs is held back
until the caller holds the child's handle, so the child can be killed (or
sent the signal) instead of outliving an interrupted `zoo`."""

import signal
import subprocess
import sys

import pytest

from zoo.utils import children

SLEEPER = [sys.executable, "-c", "import time; time.sleep(60)"]


class Stop(BaseException):
    pass


def _raise_stop(_signum, _frame):
    raise Stop


@pytest.fixture
def sigterm_raises():
    previous = signal.signal(signal.SIGTERM, _raise_stop)
    yield
    signal.signal(signal.SIGTERM, previous)


@pytest.fixture
def signal_inside_popen(monkeypatch):
    """Popen that starts the child, then receives SIGTERM before returning:
    the moment the exec's outcome is awaited."""
    real = subprocess.Popen

    def popen_then_signal(*args, **kwargs):
        process = real(*args, **kwargs)
        popen_then_signal.started.append(process)
        signal.raise_signal(signal.SIGTERM)
        return process

    popen_then_signal.started = []
    monkeypatch.setattr(subprocess, "Popen", popen_then_signal)
    return popen_then_signal.started


def test_plain_popen_loses_the_child_to_a_signal(sigterm_raises, signal_inside_popen):
    """What `start` prevents: the handler raises out of Popen and the caller
    never gets the handle of a child that is running."""
    with pytest.raises(Stop):
        subprocess.Popen(SLEEPER)
    (orphan,) = signal_inside_popen
    try:
        assert orphan.poll() is None
    finally:
        orphan.kill()
        orphan.wait()


def test_start_holds_the_signal_until_the_handle_is_ours(
    sigterm_raises, signal_inside_popen
):
    process, pending = children.start(SLEEPER)
    assert pending == [signal.SIGTERM]
    assert signal.getsignal(signal.SIGTERM) is _raise_stop  # the caller's handler is back
    with pytest.raises(Stop):
        try:
            children.redeliver(pending)
        except BaseException:
            process.kill()
            process.wait()
            raise
    assert process.returncode == -signal.SIGKILL


def test_an_ignored_signal_stays_ignored(signal_inside_popen):
    previous = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        process, pending = children.start(SLEEPER)
        assert pending == [] and signal.getsignal(signal.SIGTERM) is signal.SIG_IGN
        process.kill()
        process.wait()
    finally:
        signal.signal(signal.SIGTERM, previous)
