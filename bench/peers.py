"""The project against its peers, in one run: `make bench` (or `--quick`).

    .venv/bin/python bench/peers.py [--quick] [--out bench] [--training-only]
        [--bfloat16 auto|on|off] [--accuracy-steps 60]

Peers: keras-hub (`BertBackbone`), HF transformers on PyTorch (`BertModel`),
ONNX Runtime (fp32, and dynamic int8 from `onnxruntime.quantization`, both
exported from the same torch weights) and LiteRT (the project's own
`.tflite` files). Rows:

- encoder forward: latency at batch 1 (1 and 2 threads), throughput at
  batch 8 and 32 (2 threads), 128 tokens; the real all-MiniLM-L6-v2, and
  BERT-Base (random weights, the timing does not depend on them) unless
  `--quick`;
- fine-tuning examples/s (MiniLM, batch 16 x 128, AdamW) for the project's
  `fit`, a PyTorch loop and keras-hub's `fit`: the median of 3 rounds (2
  with `--quick`), each engine in a fresh process per round, the order
  rotated between rounds;
- distillation examples/s, the same way: the frozen MiniLM teacher into a
  2-layer student from its layers 0 and 3 with DistilBERT's losses, the
  project's `Distiller.fit` against a PyTorch loop (its student keeps
  BERT's layout with the teacher's layers 0 and 3 copied in; the project's
  is DistilBERT-style, without segment embeddings and pooler: the same two
  layers of compute);
- where the CPU has AVX-512 BF16 or AMX (or with `--bfloat16 on`): the
  fine-tuning and distillation rows again in bfloat16 (the project and
  keras-hub under Keras's `mixed_bfloat16`, HF torch under bfloat16
  autocast; bench/peers_training.py), their rounds interleaved with the
  float32 ones, each engine's bfloat16 rate also given over its own float32
  rate; and a check that bfloat16 training learns as float32 does: the
  project and HF torch fine-tuned `--accuracy-steps` steps on BBC training
  articles in each precision, then scored on the validation articles
  (bench/peers_precision.py);
- text-in serving texts/s through the project's SavedModel at batch
  1 / 8 / 32 on whole BBC articles;
- every `.tflite` mode the project exports (batch 1, 1 thread).

`--training-only` runs the training rows (and the bfloat16 check) alone.
Each thread count runs in its own process (TensorFlow fixes its thread
pools at start-up); within a process the engines are called in interleaved
rounds so that load from elsewhere falls on all alike. Every row records
the 1-minute load average before and after it. Writes OUT/results.md,
OUT/results.json (versions, CPU flags, loads) and OUT/results.png (each
row's ratio to the best peer; below 1 the project is faster).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

# isort: off
import zoo  # noqa: F401  first: TensorFlow's environment (oneDNN, log level)

# isort: on
import numpy as np

# `python bench/peers.py` puts bench/ on sys.path, not the repository root
# that this script's parts (bench/peers_*.py, one job each) are imported from.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from bench.peers_artifacts import build_artifacts  # noqa: E402
from bench.peers_forward import latency_worker, serving_worker  # noqa: E402
from bench.peers_precision import CHOICES as BFLOAT16_CHOICES  # noqa: E402
from bench.peers_precision import (  # noqa: E402
    accuracy_row,
    accuracy_worker,
    bfloat16_plan,
    check_accuracy_steps,
)
from bench.peers_report import write_report  # noqa: E402
from bench.peers_training import distill_worker, finetune_worker  # noqa: E402
from zoo.utils.provenance import (  # noqa: E402
    cpu_features,
    cpu_flags,
    cpu_model,
    load_average,
)

HERE = pathlib.Path(__file__).resolve().parent


def _child(args):
    work = pathlib.Path(args.work) if args.work else None  # the accuracy child has none
    if args.child == "latency":
        result = latency_worker(args.encoder, work, args.threads, args.rounds)
    elif args.child == "finetune":
        result = finetune_worker(args.engine, args.steps, args.precision)
    elif args.child == "distill":
        result = distill_worker(args.engine, args.steps, args.precision)
    elif args.child == "accuracy":
        result = accuracy_worker(args.engine, args.precision, args.steps)
    elif args.child == "serving":
        result = serving_worker(work, args.rounds)
    else:
        result = build_artifacts(args.encoder, work, args.tflite)
    print("RESULT " + json.dumps(result))


def _run_child(*argv):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL=os.environ.get("TF_CPP_MIN_LOG_LEVEL", "3"))
    run = subprocess.run(
        [sys.executable, __file__, *argv],
        capture_output=True,
        text=True,
        env=env,
        cwd=HERE.parent,
    )
    if run.returncode != 0:
        raise SystemExit(f"bench child {argv} failed:\n{run.stderr[-4000:]}")
    line = [x for x in run.stdout.splitlines() if x.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT ") :])


def main():
    """A child's job when `--child` names one; else the whole run and its report."""
    args = _parse_args()
    if args.child:
        return _child(args)
    started = time.time()
    load_at_start = load_average()
    work = args.work or pathlib.Path(tempfile.mkdtemp(prefix="zoo-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    encoders = ["minilm"] if args.quick else ["minilm", "bert_base"]
    rounds = 10 if args.quick else 30
    no_bfloat16 = bfloat16_plan(cpu_flags(), args.bfloat16)
    precisions = ["float32"] if no_bfloat16 else ["float32", "bfloat16"]
    if not no_bfloat16:
        check_accuracy_steps(args.accuracy_steps)  # before the long rows, not after
    rows = []
    if not args.training_only:
        _build(encoders, work, args.quick)
        rows += _latency_rows(encoders, work, rounds)
    rows += _training_rows(work, args.quick, precisions)
    if not no_bfloat16:
        rows.append(accuracy_row(_run_child, args.accuracy_steps, load_average))
    if not args.training_only:
        rows.append(_serving_row(work, args.quick))

    versions = _versions()
    meta = {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "quick": args.quick,
        "training_only": args.training_only,
        "bfloat16": no_bfloat16
        or "bfloat16 rows: "
        + ("forced by --bfloat16 on" if args.bfloat16 == "on" else "the CPU has them"),
        "cpu": cpu_model(),
        "cpu_features": cpu_features(cpu_flags()),
        "load_at_start": load_at_start,
        "cores": os.cpu_count(),
        "cpu_flags": cpu_flags(),
        "versions": versions,
        "seconds": time.time() - started,
    }
    write_report(rows, meta, args.out)
    print((args.out / "results.md").read_text())


def _parse_args():
    """The command line: the run's flags and a child process's hidden ones."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="MiniLM only, fewer rounds (a few minutes)"
    )
    parser.add_argument("--out", type=pathlib.Path, default=HERE)
    parser.add_argument(
        "--work",
        type=pathlib.Path,
        default=None,
        help="where artifacts are built and kept (default: a temporary folder)",
    )
    parser.add_argument(
        "--training-only",
        action="store_true",
        help="only the fine-tuning and distillation rows (and the bfloat16 check)",
    )
    parser.add_argument(
        "--bfloat16",
        choices=BFLOAT16_CHOICES,
        default="auto",
        help="bfloat16 training rows and accuracy check: auto (where the CPU has "
        "AVX-512 BF16 or AMX), on (always), off (never)",
    )
    parser.add_argument(
        "--accuracy-steps",
        type=_positive,
        default=60,
        help="fine-tuning steps of the bfloat16 accuracy check (batch 16; default 60)",
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--encoder", help=argparse.SUPPRESS)
    parser.add_argument("--engine", help=argparse.SUPPRESS)
    parser.add_argument("--threads", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--rounds", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--steps", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--tflite", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--precision", default="float32", help=argparse.SUPPRESS)
    return parser.parse_args()


def _positive(text):
    """argparse type: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(
            f"got {text!r}; give a whole number of steps, 1 or more"
        )
    return value


def _build(encoders, work, quick):
    """Each encoder's artifacts built under `work`, one child process each."""
    for name in encoders:
        print(f"building artifacts for {name} in {work}", flush=True)
        _run_child(
            "--child",
            "build",
            "--encoder",
            name,
            "--work",
            str(work),
            *(["--tflite"] if name == "minilm" or not quick else []),
        )


def _latency_rows(encoders, work, rounds):
    """The encoder forward rows, one child process per encoder and thread count."""
    rows = []
    for name in encoders:
        for threads in (1, 2):
            print(f"{name}: encoder latency, {threads} thread(s)", flush=True)
            rows += _run_child(
                "--child",
                "latency",
                "--encoder",
                name,
                "--work",
                str(work),
                "--threads",
                str(threads),
                "--rounds",
                str(rounds),
            )
    return rows


def _training_rows(work, quick, precisions):
    """The fine-tuning and distillation rows, one per precision, each the
    median of rotated rounds."""
    # Each (engine, precision) in a fresh process per round, their order
    # rotated every round, the median round reported: one process per
    # engine in turn put load swings into the ratio (1.18-1.31x across
    # runs). A bfloat16 run sits in the same rounds as its float32 one, so
    # that its rate over float32 sees the same load.
    rows = []
    training_rounds = 2 if quick else 3
    for child, title, engines in (
        ("finetune", "MiniLM fine-tuning", ["project", "HF torch", "keras-hub"]),
        ("distill", "MiniLM -> 2-layer student distillation", ["project", "HF torch"]),
    ):
        runs = [(e, p) for p in precisions for e in engines]
        rates = {run: [] for run in runs}
        load = load_average()
        for r in range(training_rounds):
            for engine, precision in runs[r % len(runs) :] + runs[: r % len(runs)]:
                print(
                    f"{child}: {engine}, {precision}, round {r + 1} of {training_rounds}",
                    flush=True,
                )
                rates[engine, precision].append(
                    _run_child(
                        "--child",
                        child,
                        "--engine",
                        engine,
                        "--precision",
                        precision,
                        "--work",
                        str(work),
                        "--steps",
                        "6" if quick else "12",
                    )
                )
        load = [load, load_average()]
        for precision in precisions:
            rows.append(
                _training_row(title, precision, engines, rates, load, training_rounds)
            )
    return rows


def _training_row(title, precision, engines, rates, load, training_rounds):
    """One precision's training row from `rates[engine, precision]` (the
    rounds' examples/s); a bfloat16 row also gives each engine's median
    over its own float32 median."""
    mine = {e: rates[e, precision] for e in engines}
    row = {
        "row": f"{title}, {precision}, batch 16 x 128, 2 threads",
        "unit": "examples/s",
        "lower_is_better": False,
        "values": {e: float(np.median(v)) for e, v in mine.items()},
        "rounds": mine,
        "load": load,
        "note": f"median of {training_rounds} rounds, a fresh process per engine, "
        "precision and round; ranges: "
        + ", ".join(f"{e} {min(v):.2f}-{max(v):.2f}" for e, v in mine.items()),
    }
    if precision != "float32":
        row["over_float32"] = {
            e: float(np.median(mine[e]) / np.median(rates[e, "float32"])) for e in engines
        }
    return row


def _serving_row(work, quick):
    """The text-in serving row: the project's SavedModel at batch 1, 8 and 32."""
    print("text-in serving", flush=True)
    load = load_average()
    serving = _run_child(
        "--child", "serving", "--work", str(work), "--rounds", "3" if quick else "10"
    )
    return {
        "row": "MiniLM text-in SavedModel (whole BBC articles), 2 threads",
        "unit": "texts/s",
        "lower_is_better": False,
        "values": {f"project {k}": v for k, v in serving.items()},
        "load": [load, load_average()],
        "note": f"no peer serves text in; batch 32 over batch 1: "
        f"{serving['batch 32'] / serving['batch 1']:.2f}x",
    }


def _versions():
    """The installed version of each engine's package (None when absent)."""
    versions = {}
    for package in (
        "tensorflow",
        "keras",
        "keras-hub",
        "torch",
        "transformers",
        "onnxruntime",
        "ai-edge-litert",
    ):
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            versions[package] = None
    return versions


if __name__ == "__main__":
    sys.exit(main())
