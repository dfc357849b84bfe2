"""Starting a child process that must never outlive its parent's interrupt.

`subprocess.Popen` forks, execs and then waits for the exec's outcome. A
SIGINT or SIGTERM whose Python handler raises (Ctrl-C's KeyboardInterrupt,
`zoo`'s `Interrupted`) can run inside that wait: the exception leaves
`Popen()` after the child exists but before the caller holds its handle, so
nothing can kill or wait for it. `start` closes that window: while `Popen`
runs, the two signals are only recorded; the caller re-delivers them with
`redeliver` once it holds the handle inside its own cleanup (a `try` that
kills the child, or a block that forwards signals to it).

`held` is the same guard for any such step: `zoo.utils.atomic` creates its
temporaries under it, so an interrupt never leaves one that no `try` owns."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import threading

_DEFERRED = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def holding(pending=None):
    """Inside the block SIGINT and SIGTERM are only recorded, into the list
    it yields (`pending`, when given); their handlers are back in place
    when it ends, and `redeliver(pending)` then raises what came. An
    ignored signal stays ignored. Outside the main thread (where Python
    runs no signal handler) nothing is held."""
    pending = [] if pending is None else pending
    if threading.current_thread() is not threading.main_thread():
        yield pending
        return

    def record(signum, _frame):
        pending.append(signum)

    previous = {}
    try:
        for signum in _DEFERRED:
            handler = signal.getsignal(signum)
            if handler is not signal.SIG_IGN:
                previous[signum] = handler
                signal.signal(signum, record)
        yield pending
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def held(make, *args, **kwargs):
    """`make(*args, **kwargs)` under `holding`: for a step that creates
    something (a child, a temporary file or directory) and must hand it to
    the caller before an interrupt can cut in. Returns `(result, pending)`:
    pass `pending` to `redeliver` where the result is already in the
    caller's care."""
    with holding() as pending:
        result = make(*args, **kwargs)
    return result, pending


def start(command, **popen_kwargs):
    """`subprocess.Popen(command, **popen_kwargs)` under `held`: returns
    `(process, pending)`."""
    return held(subprocess.Popen, command, **popen_kwargs)


def redeliver(pending):
    """Raise again, in this process, each signal `start` held back: the
    handlers now in place (which raise, or forward to the child) run."""
    for signum in dict.fromkeys(pending):
        signal.raise_signal(signum)
