"""Several TensorFlow workers on this host: free ports on 127.0.0.1 and one
`TF_CONFIG` per worker, for the multi-worker tests and bench/workers.py.

    configs = tf_configs(free_ports(2))      # JSON strings, worker 0 first
    env = dict(os.environ, TF_CONFIG=configs[i])

A port is free when asked for and may be taken by another process before a
worker binds it (the sockets are closed so that the workers can bind); on a
machine that is not busy opening ports that does not happen in practice.
"""

from __future__ import annotations

import json
import socket

HOST = "127.0.0.1"


def free_ports(n):
    """`n` distinct TCP ports on 127.0.0.1 that nothing listened on just now:
    all `n` sockets are bound at once (so the ports differ), then closed."""
    sockets = [socket.socket() for _ in range(n)]
    try:
        for s in sockets:
            s.bind((HOST, 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def tf_configs(ports):
    """The `TF_CONFIG` JSON of each worker of a cluster with one worker per
    port on 127.0.0.1, worker i listening on `ports[i]` (worker 0 is the
    chief)."""
    cluster = {"worker": [f"{HOST}:{p}" for p in ports]}
    return [
        json.dumps({"cluster": cluster, "task": {"type": "worker", "index": i}})
        for i in range(len(ports))
    ]
