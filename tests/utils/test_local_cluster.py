"""zoo.utils.local_cluster: the ports and TF_CONFIGs the multi-worker tests
and bench/workers.py start their workers with."""

import json
import socket

from zoo.utils.local_cluster import free_ports, tf_configs


def test_free_ports_are_distinct_and_bindable():
    ports = free_ports(3)
    assert len(set(ports)) == 3
    for port in ports:
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))  # closed again: free to bind


def test_one_tf_config_per_worker_over_the_same_cluster():
    configs = [json.loads(c) for c in tf_configs([4001, 4002])]
    cluster = {"worker": ["127.0.0.1:4001", "127.0.0.1:4002"]}
    assert configs == [
        {"cluster": cluster, "task": {"type": "worker", "index": 0}},
        {"cluster": cluster, "task": {"type": "worker", "index": 1}},
    ]
