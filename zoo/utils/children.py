"""Starting a child process that must never outlive its parent's interrupt.

`subprocess.Popen` forks, execs and then waits for the exec's outcome. A
SIGINT or SIGTERM whose Python handler raises (Ctrl-C's KeyboardInterrupt,
`zoo`'s `Interrupted`) can run inside that wait: the exception leaves
`Popen()` after the child exists but before the caller holds its handle, so
nothing can kill or wait for it. `start` closes that window: while `Popen`
runs, the two signals are only recorded; the caller re-delivers them with
`redeliver` once it holds the handle inside its own cleanup (a `try` that
kills the child, or a block that forwards signals to it)."""

from __future__ import annotations

import signal
import subprocess
import threading

_DEFERRED = (signal.SIGINT, signal.SIGTERM)


def start(command, **popen_kwargs):
    """`subprocess.Popen(command, **popen_kwargs)` with SIGINT and SIGTERM
    held back while it runs. Returns `(process, pending)`: pass `pending` to
    `redeliver` where the process is already in the caller's care. Outside
    the main thread (where Python runs no signal handler) this is Popen."""
    pending = []
    if threading.current_thread() is not threading.main_thread():
        return subprocess.Popen(command, **popen_kwargs), pending

    def record(signum, _frame):
        pending.append(signum)

    previous = {}
    try:
        for signum in _DEFERRED:
            handler = signal.getsignal(signum)
            if handler is not signal.SIG_IGN:  # an ignored signal stays ignored
                previous[signum] = handler
                signal.signal(signum, record)
        process = subprocess.Popen(command, **popen_kwargs)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return process, pending


def redeliver(pending):
    """Raise again, in this process, each signal `start` held back: the
    handlers now in place (which raise, or forward to the child) run."""
    for signum in dict.fromkeys(pending):
        signal.raise_signal(signum)
