"""How a command stops before it is done, in one line each: an interrupt
(SIGINT from Ctrl-C, SIGTERM from `kill`, a scheduler or a container's
stop) and a full disk.

An interrupt raises `Interrupted` (a KeyboardInterrupt, so every cleanup
that Ctrl-C runs runs for SIGTERM too) in the main thread. The exception
unwinds through the writers' own cleanup (`zoo.utils.atomic` removes its
temporaries on any exception, and publishes by rename, so nothing half
written is ever where a reader looks); the command then prints one line
and exits 128 + the signal's number (130 for SIGINT, 143 for SIGTERM), as
a shell reports a process a signal stopped. Signals after the first are
ignored while that cleanup runs: a second Ctrl-C must not cut it short.
An exception raised inside a finalizer (`__del__`, a weakref callback:
TensorFlow's objects run many) is printed and dropped by Python, so an
`Interrupted` that lands there is delivered again, from outside it; so is
one that C code wrapped on its way (a `SystemError` "returned a result with
an exception set" whose cause is ours). Should a library still swallow one
(`except Exception` around such a wrapper), nothing is published after it:
`zoo.utils.atomic` asks `Handling.check` before every rename into place,
and the command's status is the interrupt's. Once the command has returned,
a signal changes nothing: its output is published and its status stands
(`handled(...).done`; the `zoo` program then ignores both signals while
Python exits, where its own handlers are gone).

A full disk (ENOSPC or EDQUOT from a write, or TensorFlow's error whose
message carries the same text: tf.io and the SavedModel writer report
"No space left on device" as a `ResourceExhaustedError`, `InternalError` or
`UnknownError`) ends in one line naming the path being written and the
free space there, with exit status 2, as every other error a user can fix.
"""

from __future__ import annotations

import contextlib
import errno
import os
import pathlib
import re
import shutil
import signal
import sys
import threading
import time

from zoo.utils import atomic

# The commands that resume from their own checkpoints when run again with
# the same arguments (zoo.cli.runs.training_output; demo re-runs skip the
# stages that are done and resume its training stages).
RESUMING = ("pretrain", "finetune", "distill", "demo")
DISK_FULL_TEXTS = ("No space left on device", "Disk quota exceeded")
_DISK_FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT)


class Interrupted(KeyboardInterrupt):
    """A signal asked this command to stop (`signum`: SIGINT or SIGTERM)."""

    def __init__(self, signum):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def exit_status(signum) -> int:
    """What a shell reports for a process stopped by `signum`."""
    return 128 + int(signum)


def interrupted_line(command, signum) -> str:
    name = signal.Signals(signum).name
    if command == "demo":
        outcome = "finished stages are kept; run the same command again to resume"
    elif command in RESUMING:
        outcome = "nothing published; run the same command again to resume"
    else:
        outcome = "nothing published; run the same command again"
    return f"zoo {command}: interrupted ({name}): {outcome}"


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def raised_in(error):
    """The interrupt (`Interrupted`, or Ctrl-C's KeyboardInterrupt) that
    `error` is or was raised from, else None: C code that finds an
    exception set where it expected none wraps it in a `SystemError`, and
    a library may wrap it again."""
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, KeyboardInterrupt):
            return error
        error = error.__cause__ or error.__context__
    return None


class Handling:
    """What `handled` yields: set `done` once the command has returned, and
    a signal after that is only recorded (it would otherwise raise while
    the caller returns or Python exits, with the output already out).
    `raised` is the signal already raised as `Interrupted`, if any."""

    def __init__(self):
        self.done = False
        self.seen = []
        self.raised = None

    def check(self):
        """Raise the interrupt again if one was raised and the command is
        still going (something swallowed it): before publishing, and when
        the command returns."""
        if self.raised is not None and not self.done:
            raise Interrupted(self.raised)


def _send_again(state, signum):
    while state.seen and not state.done:  # the hook has not returned yet
        time.sleep(0.005)
    if not state.done:
        os.kill(os.getpid(), signum)


@contextlib.contextmanager
def handled(restore=True):
    """Within the block, SIGINT and SIGTERM raise `Interrupted` in the main
    thread, once; later ones are ignored (cleanup is under way). A signal
    the caller ignores (`nohup`, a shell's background job: SIG_IGN) stays
    ignored, and a handler someone else installed is left alone. With
    `restore` the previous handlers come back afterwards, so `main` may be
    called from Python (tests, notebooks) without changing the caller's
    signals; without it (the `zoo` program, about to exit) ours stay, and
    record only."""
    state = Handling()
    if not _in_main_thread():
        yield state
        return

    def raise_once(signum, _frame):
        state.seen.append(signum)
        if len(state.seen) == 1 and not state.done:
            state.raised = state.raised or signum
            raise Interrupted(signum)

    def unraisable(info, before=sys.unraisablehook):
        # Python prints an exception raised in a finalizer and drops it:
        # the command would run on as if no signal had come. Send it again
        # from another thread once this hook is over, so that it lands in
        # the main thread's own code (or in another finalizer, and again).
        error = raised_in(info.exc_value)
        if error is None or not (state.seen and not state.done):
            before(info)
            return
        signum = getattr(error, "signum", state.raised or signal.SIGINT)
        threading.Thread(target=_send_again, args=(state, signum), daemon=True).start()
        state.seen.clear()  # last: from here the signal raises again

    previous = {}
    for signum, ours_to_replace in (
        (signal.SIGINT, (signal.default_int_handler, signal.SIG_DFL)),
        (signal.SIGTERM, (signal.SIG_DFL,)),
    ):
        current = signal.getsignal(signum)
        if current in ours_to_replace:
            previous[signum] = current
            signal.signal(signum, raise_once)
    hook = sys.unraisablehook
    sys.unraisablehook = unraisable
    try:
        with atomic.checked_before_publishing(state.check):
            yield state
    finally:
        state.done = True
        if sys.unraisablehook is unraisable:
            sys.unraisablehook = hook
        if restore:
            for signum, handler in previous.items():
                signal.signal(signum, handler)


@contextlib.contextmanager
def forwarded_to(process):
    """Within the block, SIGINT and SIGTERM go to `process` (a command
    re-run in a child, e.g. on another Keras backend), which cleans up and
    reports; this process only waits for it and passes on its status."""
    if not _in_main_thread():
        yield
        return

    def forward(signum, _frame):
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signum)

    previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    for signum, handler in previous.items():
        if handler is not signal.SIG_IGN:
            signal.signal(signum, forward)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def child_status(returncode) -> int:
    """A child's exit status as this process should pass it on: a child
    stopped by signal N (returncode -N) exits 128 + N, as a shell says."""
    return exit_status(-returncode) if returncode < 0 else returncode


def is_disk_full(error) -> bool:
    """Whether `error` (or an error it was raised from) says the disk or
    the user's quota is full."""
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, OSError) and error.errno in _DISK_FULL_ERRNOS:
            return True
        if any(text in str(error) for text in DISK_FULL_TEXTS):
            return True
        error = error.__cause__ or error.__context__
    return False


def _written_path(error, fallback):
    """The path a full-disk error names: an OSError's filename, else the
    first absolute path in the message (TensorFlow names the file it was
    writing), else `fallback` (the command's --out)."""
    while error is not None:
        if isinstance(error, OSError) and error.filename:
            return os.fsdecode(error.filename)
        match = re.search(r"(/[^\s;:,'\"]+)", str(error))
        if match:
            return match.group(1)
        error = error.__cause__ or error.__context__
    return None if fallback is None else str(fallback)


def _free_space(path) -> str:
    """Free bytes on the file system holding `path` (its nearest existing
    ancestor: the file itself is gone or was never made), in words."""
    place = pathlib.Path(path).absolute()
    while not place.exists() and place != place.parent:
        place = place.parent
    try:
        free = shutil.disk_usage(place).free
    except OSError:
        return "free space unknown"
    for unit in ("bytes", "KB", "MB", "GB", "TB"):
        if free < 1024 or unit == "TB":
            amount = f"{free:.0f}" if unit == "bytes" else f"{free:.1f}"
            return f"{amount} {unit} free there"
        free /= 1024
    return ""  # not reached


def disk_full_line(command, error, out=None):
    """One line for a full disk (None when `error` is something else)."""
    if not is_disk_full(error):
        return None
    path = _written_path(error, out)
    if path is None:
        where = "writing"
    elif out is not None and path != str(out):
        # TensorFlow names its own temporary inside --out: say both.
        where = f"writing {out} ({path}; {_free_space(path)})"
    else:
        where = f"writing {path} ({_free_space(path)})"
    return (
        f"zoo {command}: error: no space left on the device {where}; nothing was "
        "published. Free some space (or choose an --out on another disk) and run the "
        "same command again."
    )
