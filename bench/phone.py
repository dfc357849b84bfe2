"""Phone files side by side: size, XNNPACK delegation, batch-1 latency at 1
and 2 threads (interleaved rounds, one process, so load hits all alike) and
BBC test accuracy, for any number of `zoo export --format tflite` artifacts.

    .venv/bin/python bench/phone.py runs/demo/exports/teacher_float32 \\
        runs/demo/exports/student3_dynamic_int8 runs/demo/exports/student3_int4 \\
        [--rounds 30] [--out runs/bench_phone.json]

Latency: the median over `--rounds` rounds of one call per file per thread
count, after warm-up, on the artifact's primary signature with a real BBC
test article; the ratio column divides by the first file's time.
Delegation: the LiteRT interpreter's node table after its default XNNPACK
delegate is applied (ops reached from a delegate node are delegated); this
reads the interpreter's internal node API, a benchmark-only shortcut.
"""

from __future__ import annotations

import argparse
import collections
import json
import pathlib

import numpy as np
from ai_edge_litert import interpreter as litert

from export.runtime import load_signature, open_artifact
from zoo.text.readers import read_data
from zoo.text.tokenizer import tokenize_texts
from zoo.utils.latency import interleaved_latency_ms


def delegation(path, num_threads=1):
    """`{ops, delegated, partitions, left: {op: count}}` after XNNPACK."""
    interpreter = litert.Interpreter(model_path=str(path), num_threads=num_threads)
    interpreter.allocate_tensors()
    raw = interpreter._interpreter  # noqa: SLF001 - node table, benchmark only
    names = [raw.NodeName(i) for i in range(raw.NumNodes())]
    delegates = [
        i for i, n in enumerate(names) if n == "DELEGATE" or n.startswith("TfLite")
    ]
    ops = min(delegates) if delegates else len(names)
    producer = {t: i for i in range(ops) for t in raw.NodeOutputs(i)}
    inside = set()
    for d in delegates:
        boundary = {int(t) for t in raw.NodeInputs(d)}
        stack, seen = [int(t) for t in raw.NodeOutputs(d)], set()
        while stack:
            t = stack.pop()
            if t in seen or t in boundary:
                continue
            seen.add(t)
            op = producer.get(t)
            if op is not None and op not in inside:
                inside.add(op)
                stack.extend(int(x) for x in raw.NodeInputs(op) if x >= 0)
    left = collections.Counter(names[i] for i in range(ops) if i not in inside)
    return {
        "ops": ops,
        "delegated": len(inside),
        "partitions": len(delegates),
        "left": dict(sorted(left.items())),
    }


def measure(artifacts, rounds, texts, labels):
    rows = []
    # Each artifact checked once, and tokenized as its metadata.json says
    # (the opened artifact's own tokenizer).
    opened = [open_artifact(path) for path in artifacts]
    for path, artifact in zip(artifacts, opened):
        meta = artifact.meta
        run = load_signature(artifact)
        ids = tokenize_texts(artifact.tokenizer, texts, run.sequence_length)
        names = meta["labels"]
        predicted = []
        for i in range(len(texts)):
            out = run(**{k: v[i : i + 1] for k, v in ids.items()})
            predicted.append(
                names[int(np.argmax(out.get("logits", out.get("probabilities"))))]
            )
        file = path / "model.tflite"
        rows.append(
            {
                "artifact": str(path),
                "quantization": meta.get("quantization"),
                "size_mb": file.stat().st_size / 1e6,
                "vocabulary": meta["vocabulary_size"],
                # Absent in artifacts written before source_model was recorded.
                "layers": (meta.get("source_model") or {})
                .get("encoder_config", {})
                .get("num_layers"),
                "accuracy": float(np.mean([p == g for p, g in zip(predicted, labels)])),
                "delegation": delegation(file),
                "one": {k: v[:1] for k, v in ids.items()},
            }
        )
    calls = {}
    for i, artifact in enumerate(opened):
        for t in (1, 2):
            runner, one = load_signature(artifact, num_threads=t).raw, rows[i]["one"]
            calls[(i, t)] = lambda runner=runner, one=one: runner(**one)
    for (i, t), ms in interleaved_latency_ms(calls, rounds=rounds).items():
        rows[i][f"ms_{t}_thread"] = ms
    for row in rows:
        row.pop("one")
    return rows


def table(rows):
    lines = [
        "| artifact | mode | layers | vocabulary | MB | XNNPACK ops (partitions) | "
        "ms 1 thread | ms 2 threads | x first @1 | x first @2 | accuracy |",
        "|---|---|---:|---:|---:|---|---:|---:|---:|---:|---:|",
    ]
    base = rows[0]
    for r in rows:
        d = r["delegation"]
        lines.append(
            f"| {pathlib.Path(r['artifact']).name} | {r['quantization']} | {r['layers']} | "
            f"{r['vocabulary']:,} | {r['size_mb']:.2f} | {d['delegated']}/{d['ops']} "
            f"({d['partitions']}) | {r['ms_1_thread']:.1f} | {r['ms_2_thread']:.1f} | "
            f"{base['ms_1_thread'] / r['ms_1_thread']:.2f} | "
            f"{base['ms_2_thread'] / r['ms_2_thread']:.2f} | {r['accuracy']:.4f} |"
        )
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("artifacts", nargs="+", type=pathlib.Path)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--out", type=pathlib.Path)
    args = parser.parse_args()
    texts, labels = read_data("bbc")
    rows = measure(args.artifacts, args.rounds, texts, labels)
    print(table(rows))
    if args.out:
        args.out.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
