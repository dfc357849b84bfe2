"""Fine-tuning throughput per Keras backend (issue #39): the zoo's
`Classifier` on TensorFlow, JAX and PyTorch, and HF transformers'
`BertForSequenceClassification` on PyTorch as the peer.

    python bench/backends.py                              # tiny and bert_base, all engines
    python bench/backends.py --config tiny --steps 20     # one config
    python bench/backends.py --engines jax,torch,hf       # a machine without TensorFlow

Each engine runs in its own process (bench/backends_worker.py; the Keras
backend is fixed at `import keras`), on whatever device it finds (a GPU
when the backend sees one), and times train steps (forward, backward,
AdamW update; dropout on) on synthetic token ids: a fixed batch and
length, no tokenizer, no tf.data. On JAX and PyTorch the worker imports
only `zoo.configs`, `zoo.models` and `zoo.utils.schedules`, none of which
loads TensorFlow, and this script imports nothing of the zoo or Keras, so
it runs where TensorFlow is not installed. Prints a table; writes `--json`
and, with `--results-md`, its section of bench/results.md.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import subprocess
import sys
import time
from importlib import metadata

ROOT = pathlib.Path(__file__).resolve().parents[1]
# One engine's run, in its own process on its own backend.
WORKER = ROOT / "bench" / "backends_worker.py"
ENGINES = ("tensorflow", "jax", "torch", "hf")
ENGINE_NAMES = {
    "tensorflow": "zoo Keras, TensorFlow",
    "jax": "zoo Keras, JAX",
    "torch": "zoo Keras, PyTorch",
    "hf": "HF transformers, PyTorch (peer)",
}
# `tiny` is BERT-Tiny (2 x 128); `bert_base` is BERT-Base (12 x 768).
CONFIGS = ("tiny", "bert_base")
MARK_BEGIN = "<!-- bench/backends.py: begin -->"
MARK_END = "<!-- bench/backends.py: end -->"


def _versions(engines):
    names = ["keras"]
    for engine in engines:
        names += {
            "tensorflow": ["tensorflow"],
            "jax": ["jax", "jaxlib"],
            "torch": ["torch"],
            "hf": ["torch", "transformers"],
        }[engine]
    versions = {}
    for name in dict.fromkeys(names):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def run_engine(engine, config, args):
    env = dict(
        os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")
    )
    env["KERAS_BACKEND"] = "torch" if engine == "hf" else engine
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    command = [
        sys.executable,
        str(WORKER),
        engine,
        config,
        *(str(getattr(args, k)) for k in ("batch", "length", "steps", "warmup")),
    ]
    started = time.perf_counter()
    proc = subprocess.run(command, env=env, capture_output=True, text=True)
    if proc.returncode:
        raise SystemExit(
            f"bench/backends.py: engine {engine!r} on config {config!r} failed "
            f"(exit {proc.returncode}); its stderr ends:\n{proc.stderr[-3000:]}\n"
            "Install what it names, or leave the engine out with --engines."
        )
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["process_seconds"] = time.perf_counter() - started
    return result


def table(rows, meta):
    lines = [
        f"## Fine-tuning throughput per Keras backend ({meta['machine']}; "
        f"batch {meta['batch']} x {meta['length']} tokens, {meta['steps']} timed steps "
        f"after {meta['warmup']}; examples/s, higher is better)",
        "",
        "| config | engine | device | examples/s | vs HF | s/step |",
        "|---|---|---|---|---|---|",
    ]
    for row in rows:
        hf = next(
            (r for r in rows if r["config"] == row["config"] and r["engine"] == "hf"), None
        )
        ratio = "" if hf is None else f"{row['examples_per_s'] / hf['examples_per_s']:.2f}"
        lines.append(
            f"| {row['config']} | {ENGINE_NAMES[row['engine']]} | {row['device']} | "
            f"{row['examples_per_s']:.2f} | {ratio} | {row['seconds'] / meta['steps']:.3f} |"
        )
    lines += [
        "",
        f"{meta['date']}; `python bench/backends.py {meta['argv']}`; versions: "
        + ", ".join(f"{k} {v}" for k, v in meta["versions"].items())
        + ". Synthetic ids, dropout on, AdamW; the first steps (tracing, XLA and "
        "graph compilation) are not timed. vs HF = the engine's rate over HF's. "
        f"1-minute load average {meta['load'][0]:.2f} before / {meta['load'][1]:.2f} after.",
    ]
    return "\n".join(lines)


def write_results_md(path, text):
    """Replace this script's section of `path` (between its markers), or
    append it; bench/peers.py keeps the section when it rewrites the file."""
    block = f"{MARK_BEGIN}\n{text}\n{MARK_END}\n"
    old = path.read_text() if path.exists() else ""
    if MARK_BEGIN in old and MARK_END in old:
        head, rest = old.split(MARK_BEGIN, 1)
        tail = rest.split(MARK_END, 1)[1].lstrip("\n")
        new = head + block + tail
    else:
        new = old.rstrip("\n") + "\n\n" + block
    path.write_text(new)


def _csv(value, allowed, flag):
    items = [v.strip() for v in value.split(",") if v.strip()]
    bad = [v for v in items if v not in allowed]
    if bad or not items:
        raise SystemExit(
            f"bench/backends.py: {flag}={value!r}: expected a comma-separated subset of "
            f"{', '.join(allowed)}."
        )
    return items


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engines", default=",".join(ENGINES), help=",".join(ENGINES))
    parser.add_argument(
        "--config", default="tiny,bert_base", help="tiny (BERT-Tiny), bert_base or both"
    )
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--length", type=int, default=128)
    parser.add_argument("--steps", type=int, default=5, help="timed train steps (>= 1)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed first steps (>= 1)")
    parser.add_argument(
        "--json", type=pathlib.Path, default=ROOT / "bench" / "backends.json"
    )
    parser.add_argument(
        "--results-md",
        type=pathlib.Path,
        default=None,
        help="also write the table into this markdown file (bench/results.md)",
    )
    args = parser.parse_args(argv)
    for flag in ("batch", "length", "steps", "warmup"):
        if getattr(args, flag) < 1:
            raise SystemExit(
                f"bench/backends.py: --{flag}={getattr(args, flag)}: must be >= 1."
            )
    engines = _csv(args.engines, ENGINES, "--engines")
    configs = _csv(args.config, CONFIGS, "--config")
    rows = []
    load_before = os.getloadavg()[0]
    for config in configs:
        for engine in engines:
            result = run_engine(engine, config, args)
            rows.append({"config": config, "engine": engine, **result})
            print(
                f"{config:9s} {ENGINE_NAMES[engine]:32s} {result['device']:24s} "
                f"{result['examples_per_s']:8.2f} examples/s",
                flush=True,
            )
    meta = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPU cores",
        "batch": args.batch,
        "length": args.length,
        "steps": args.steps,
        "warmup": args.warmup,
        "argv": " ".join(sys.argv[1:] if argv is None else argv),
        "versions": _versions(engines),
        "load": [load_before, os.getloadavg()[0]],
    }
    text = table(rows, meta)
    print()
    print(text)
    args.json.write_text(json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n")
    if args.results_md:
        write_results_md(args.results_md, text)


if __name__ == "__main__":
    main()
