"""Native log lines that bypass TF_CPP_MIN_LOG_LEVEL, filtered.

TensorFlow 2.20's TFLite converter logs through absl, which does not read
TF_CPP_MIN_LOG_LEVEL, so every conversion printed lines such as
`W0000 00:00:... tf_tfl_flatbuffer_helpers.cc:364] Ignored output_format.`
to the terminal (14 lines in one `zoo demo`), none of them actionable.
`filtered_stderr` routes file descriptor 2 to a temporary file for a block
and writes back every line except the known-noise ones; if the block
raises, it writes back everything.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
import threading

from zoo.utils import children

# Each seen on every conversion of this project's models (TF 2.20) and
# harmless: options the new converter ignores, absl's own notice that it
# was not initialised, and the MLIR pass manager's status line.
CONVERTER_NOISE = (
    re.compile(
        r"WARNING: All log messages before absl::InitializeLog\(\) is called "
        r"are written to STDERR"
    ),
    re.compile(
        r"[WI]\d{4} [\d:.]+ +\d+ tf_tfl_flatbuffer_helpers\.cc:\d+\] "
        r"Ignored (output_format|drop_control_dependency)\."
    ),
    re.compile(
        r"I\d{4} [\d:.]+ +\d+ mlir_graph_optimization_pass\.cc:\d+\] "
        r"MLIR V1 optimization pass is not enabled"
    ),
)

# One redirect at a time across threads: two overlapping ones would restore
# each other's temporary file as the process's stderr. Re-entrant, because
# a nested redirect in one thread unwinds in order.
_LOCK = threading.RLock()


def _capture():
    """fd 2 routed to a new temporary file: `(saved copy of fd 2, the file)`."""
    saved = os.dup(2)
    try:
        captured = tempfile.TemporaryFile()
        try:
            os.dup2(captured.fileno(), 2)
        except BaseException:
            captured.close()
            raise
    except BaseException:
        os.close(saved)
        raise
    return saved, captured


def _restore(saved):
    sys.stderr.flush()
    os.dup2(saved, 2)
    os.close(saved)


@contextlib.contextmanager
def filtered_stderr(noise=CONVERTER_NOISE):
    """Run the block with fd 2 captured; afterwards write back every line
    that fully matches none of `noise` (every line if the block raised).
    Python's own `sys.stderr` output in the block goes the same way, in
    order, wherever `sys.stderr` writes to fd 2 (test harnesses that
    replace `sys.stderr` keep theirs apart). The switches of fd 2 run with
    SIGINT and SIGTERM held, so an interrupt never leaves fd 2 pointing at
    the temporary file (where the interrupted line would vanish)."""
    with _LOCK:
        try:
            sys.stderr.flush()
            (saved, captured), pending = children.held(_capture)
        except (OSError, ValueError):  # no fd 2 (an embedding host): nothing to filter
            yield
            return
        with captured:
            raised = True
            try:
                children.redeliver(pending)
                yield
                raised = False
            finally:
                _, pending = children.held(_restore, saved)
                try:
                    captured.seek(0)
                    lines = (
                        captured.read().decode(errors="replace").splitlines(keepends=True)
                    )
                    kept = [
                        line
                        for line in lines
                        if raised
                        or not any(p.fullmatch(line.rstrip("\r\n")) for p in noise)
                    ]
                    # Back to fd 2, where the lines were headed: inside an
                    # enclosing block that is the enclosing capture, in order.
                    data = "".join(kept).encode()
                    while data:
                        data = data[os.write(2, data) :]
                finally:
                    children.redeliver(pending)
