"""Processes for the multi-worker tests: free ports on 127.0.0.1 and one
TF_CONFIG per worker (zoo.utils.local_cluster, shared with bench/workers.py),
starting and waiting with a hang guard."""

import os
import signal
import subprocess
import time

import numpy as np
import pytest

TIMEOUT = 300  # seconds, per group of processes (a hang guard)


def env(tf_config=None):
    env = dict(os.environ, PYTHONHASHSEED="0", TF_CPP_MIN_LOG_LEVEL="2")
    env.pop("TF_CONFIG", None)
    if tf_config:
        env["TF_CONFIG"] = tf_config
    return env


def start(jobs, logs):
    """Popen each (command, env), output to the files `logs`."""
    procs = []
    for (cmd, env), log in zip(jobs, logs):
        with open(log, "w") as f:
            procs.append(subprocess.Popen(cmd, env=env, stdout=f, stderr=subprocess.STDOUT))
    return procs


GRACE = 30  # seconds the rest of a cluster get after one worker dies
# Seconds a test worker waits after its epoch's last collective (EpochSync's
# barrier) before it SIGKILLs itself. A collective can return on one worker
# while its peer is still reading the last bytes from it; a worker that dies
# at that instant closes the socket under the peer, which then fails in the
# barrier ("Socket closed", exit 1) instead of reaching its own kill: a
# race CI lost once with three test workers on 2 cores. A real cluster's
# peers fail so too, and resume from the same backups; these tests want
# every worker killed at the same point.
SETTLE = 3


def wait(procs, logs, *, kill_all_when_one_dies=False, timeout=TIMEOUT, grace=GRACE):
    """Wait for `procs` (killing all on timeout); optionally SIGKILL the rest
    `grace` seconds after one dies, as a cluster manager would. The workers
    of these tests kill themselves after an epoch's records are written, so
    the grace lets the slower one finish its own records rather than be cut
    off between its backup and its record (a race CI once lost)."""
    deadline = time.time() + timeout
    first_death = None
    while any(p.poll() is None for p in procs):
        if time.time() > deadline:
            for p in procs:
                p.kill()
            pytest.fail("timeout:\n" + "\n".join(tail(log) for log in logs))
        if kill_all_when_one_dies and any(p.poll() not in (None, 0) for p in procs):
            first_death = first_death or time.time()
            if time.time() - first_death >= grace:
                for p in procs:
                    if p.poll() is None:
                        p.send_signal(signal.SIGKILL)
        time.sleep(0.1)
    return [p.wait() for p in procs]


def tail(log, n=3000):
    return f"--- {log}\n" + open(log).read()[-n:]


def max_diff(a, b):
    assert len(a) == len(b)
    return max(float(np.max(np.abs(np.asarray(x) - np.asarray(y)))) for x, y in zip(a, b))
