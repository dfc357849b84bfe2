"""One process against two `--strategy multiworker` processes on this host,
for `zoo pretrain` and `zoo finetune`: the same global batch, the examples
per second each reaches (history.json, the last epoch, which has no tracing).

    .venv/bin/python bench/workers.py [--steps 20] [--out runs/bench_workers.json]

Both workers share this machine's cores, so this measures the cost of the
collective all-reduce and of running two TensorFlow runtimes side by side,
not the speed-up of two machines (which would each bring their own cores).
Runs are sequential (1 process, then 2 workers), twice each, interleaved;
the table reports the median examples/s and the ratio two/one.

Pre-training: bert_tiny on Austen + WordNet written as text shards,
global batch 32 x 128 tokens. Fine-tuning: the real all-MiniLM-L6-v2 on
the BBC News training split, global batch 16 x 128 tokens.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

from zoo.datasets.corpora import minilm_checkpoint_dir
from zoo.train.pretrain import corpus_documents
from zoo.utils.local_cluster import free_ports, tf_configs


def _shards(root):
    root.mkdir(parents=True, exist_ok=True)
    documents = corpus_documents("austen+wordnet")

    def sentence(s):  # a WordNet gloss: no capital, no full stop
        s = s[:1].upper() + s[1:]
        return s if s.rstrip('"').endswith((".", "!", "?")) else s + "."

    for i in range(100):
        (root / f"shard-{i:03d}.txt").write_text(
            "\n\n".join(" ".join(map(sentence, d)) for d in documents[i::100]) + "\n"
        )
    return root


def _commands(kind, data, out, steps):
    common = [
        "--epochs",
        "2",
        "--steps-per-epoch",
        str(steps),
        "--sequence-length",
        "128",
        "--out",
        str(out),
        "--verbose",
        "0",
        "--force",
    ]
    if kind == "pretrain":
        return [
            sys.executable,
            "-m",
            "zoo",
            "pretrain",
            "--config",
            "bert_tiny",
            "--data",
            str(data),
            "--batch-size",
            "32",
            "--learning-rate",
            "1e-3",
            *common,
        ]
    return [
        sys.executable,
        "-m",
        "zoo",
        "finetune",
        "--model",
        str(minilm_checkpoint_dir()),
        "--data",
        "bbc",
        "--task",
        "classify",
        "--batch-size",
        "16",
        *common,
    ]


def _run(kind, data, out, steps, workers):
    env = dict(os.environ)  # zoo sets TensorFlow's log level itself
    env.pop("TF_CONFIG", None)
    cmd = _commands(kind, data, out, steps)
    if workers == 1:
        subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
    else:
        procs = [
            subprocess.Popen(
                cmd + ["--strategy", "multiworker"],
                stdout=subprocess.DEVNULL,
                env=dict(env, TF_CONFIG=tf_config),
            )
            for tf_config in tf_configs(free_ports(workers))
        ]
        if any(p.wait() for p in procs):
            raise SystemExit(f"{kind} with {workers} workers failed")
    history = json.loads((out / "history.json").read_text())["history"]
    return {
        key: history[key][-1]
        for key in (
            "examples_per_second",
            "worker_examples_per_second",
            "tokens_per_second",
        )
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=20, help="steps per epoch (2 epochs)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", type=pathlib.Path, default=None)
    args = parser.parse_args()
    root = pathlib.Path(tempfile.mkdtemp(prefix="bench-workers-"))
    data = {"pretrain": _shards(root / "shards"), "finetune": "bbc"}
    results = {}
    for kind in ("pretrain", "finetune"):
        for _ in range(args.rounds):
            for workers in (1, 2):
                row = _run(
                    kind, data[kind], root / f"{kind}-{workers}", args.steps, workers
                )
                results.setdefault((kind, workers), []).append(row)
                print(kind, workers, row, flush=True)
    table = {}
    for kind in ("pretrain", "finetune"):
        one, two = [
            statistics.median(r["examples_per_second"] for r in results[(kind, w)])
            for w in (1, 2)
        ]
        table[kind] = {
            "one_process": round(one, 2),
            "two_workers": round(two, 2),
            "ratio": round(two / one, 3),
        }
    print(
        "\n| command | 1 process ex/s | 2 workers ex/s (all) | ratio |\n|---|---|---|---|"
    )
    for kind, row in table.items():
        print(f"| {kind} | {row['one_process']} | {row['two_workers']} | {row['ratio']} |")
    if args.out:
        args.out.write_text(json.dumps({"table": table, "cpus": os.cpu_count()}, indent=2))


if __name__ == "__main__":
    main()
