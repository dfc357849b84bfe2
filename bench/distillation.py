"""Distillation on BBC News: does the teacher's signal beat the labels alone?

    .venv/bin/python bench/distillation.py --demo runs/demo [--out runs/bench_distil]

Takes the fine-tuned teacher of a finished `zoo demo` (runs/demo/teacher)
and, with the demo's recipe (epochs, learning rate, batch, sequence length):

    student3            the demo's distilled 3-layer student (teacher layers 0,2,4)
    student3_hard       the same initialisation trained on the hard labels alone
                        (soft and cosine weights 0, hard weight 1)
    student2            a distilled 2-layer student

Reports parameters, model size, batch-1 latency at sequence 128 (Keras on
TensorFlow, same process, same threads, median of 30) and test accuracy for
the teacher and every student, as ratios to the teacher measured in this
run, and how often each student's label equals the teacher's. Writes OUT/distillation.json and prints a table. A benchmark, not a
test: nothing here asserts a timing.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

import numpy as np

from export.validate import keras_outputs
from zoo.checkpoints.model_dir import load_model_dir
from zoo.demo import DemoConfig
from zoo.distill.pipeline import DistillConfig, distill
from zoo.text.readers import read_data
from zoo.text.tokenizer import tokenize_texts
from zoo.utils.latency import keras_latency_ms

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--demo",
        type=pathlib.Path,
        default=pathlib.Path("runs/demo"),
        help="a finished `zoo demo` output directory",
    )
    parser.add_argument(
        "--out", type=pathlib.Path, default=pathlib.Path("runs/bench_distil")
    )
    args = parser.parse_args(argv)

    report = json.loads((args.demo / "report.json").read_text())
    config = DemoConfig(
        **{k: tuple(v) if isinstance(v, list) else v for k, v in report["config"].items()}
    )
    teacher_dir = args.demo / "teacher" / "model"
    base = dict(
        epochs=config.distill_epochs,
        batch_size=config.batch_size,
        sequence_length=config.sequence_length,
        learning_rate=config.distill_learning_rate,
        steps_per_epoch=config.steps_per_epoch,
        seed=config.seed,
    )
    runs = {"teacher": teacher_dir, "student3": args.demo / "student3" / "model"}
    recipes = {
        "student3_hard": DistillConfig(
            student_layers=3, soft_weight=0.0, cosine_weight=0.0, hard_weight=1.0, **base
        ),
        "student2": DistillConfig(student_layers=2, **base),
    }
    for name, dc in recipes.items():
        out = args.out / name
        if not (out / "metrics.json").is_file():
            print(f"training {name} ...", flush=True)
            distill(teacher_dir, "bbc", out, dc, verbose=2)
        runs[name] = out / "model"

    texts, labels = read_data("bbc")
    rows = []
    teacher_pred = None
    for name, path in runs.items():
        model, tokenizer, _ = load_model_dir(path)
        index = {n: i for i, n in enumerate(model.labels)}
        gold = np.array([index[y] for y in labels])
        pred = keras_outputs(
            model, tokenize_texts(tokenizer, texts, config.sequence_length)
        )
        pred = pred["logits"].argmax(-1)
        teacher_pred = pred if teacher_pred is None else teacher_pred
        rows.append(
            {
                "model": name,
                "layers": int(model.encoder.num_layers),
                "parameters": int(model.count_params()),
                "size_mb": (path / "model.keras").stat().st_size / 1e6,
                "latency_ms": keras_latency_ms(model, 128, runs=30),
                "accuracy": float((pred == gold).mean()),
                "agreement_with_teacher": float((pred == teacher_pred).mean()),
            }
        )
    teacher = rows[0]
    for r in rows:
        r["speedup_vs_teacher"] = teacher["latency_ms"] / r["latency_ms"]
        r["accuracy_vs_teacher"] = r["accuracy"] / teacher["accuracy"]
    print(
        f"\n{'model':<15} {'L':>2} {'parameters':>12} {'MB':>7} {'ms@128':>8} {'speedup':>8} "
        f"{'accuracy':>9} {'vs teacher':>10} {'agrees':>7}"
    )
    for r in rows:
        print(
            f"{r['model']:<15} {r['layers']:>2} {r['parameters']:>12,} {r['size_mb']:>7.1f} "
            f"{r['latency_ms']:>8.2f} {r['speedup_vs_teacher']:>7.2f}x {r['accuracy']:>9.4f} "
            f"{100 * r['accuracy_vs_teacher']:>9.1f}% {r['agreement_with_teacher']:>7.4f}"
        )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "distillation.json").write_text(
        json.dumps({"recipe": base, "texts": len(texts), "rows": rows}, indent=2)
    )
    print(f"\n{args.out / 'distillation.json'}")


if __name__ == "__main__":
    main()
