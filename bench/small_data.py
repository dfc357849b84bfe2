"""Training on a small set at the defaults: the teacher against the linear
baseline, and the distilled student's retention of the teacher's accuracy.

    .venv/bin/python bench/small_data.py --out runs/small_data [--fixed-epochs 3]

The set is the project's own, built from WordNet (installed by `make
setup`): glosses of five noun supersenses (animal, artifact, food, person,
plant), 80 training, 20 validation and 200 test glosses of each, drawn with a
fixed seed from disjoint synsets: 400 / 100 / 1,000. It runs, with no flag
but --out:

    zoo finetune --model <all-MiniLM-L6-v2> --data SET --task classify
    zoo distill --teacher <that>/model --data SET --student-layers 3

and the linear baseline (`zoo.train.baseline`) on the same training and
test texts. With `--fixed-epochs N` it runs both commands again with
`--epochs N` (the old fixed default was 3), for the comparison. A
measurement, not a test: nothing here asserts a figure; it writes
OUT/small_data.json and prints a table.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import random
import subprocess
import sys
import time

# isort: off
import zoo  # noqa: F401  first: TensorFlow's environment (oneDNN, log level)

# isort: on
from zoo.datasets.corpora import minilm_checkpoint_dir, wordnet_glosses
from zoo.train.baseline import linear_baseline

# WordNet lexicographer files (lex_filenum) of the five classes.
CLASSES = {5: "animal", 6: "artifact", 13: "food", 18: "person", 20: "plant"}
PER_CLASS = {"train": 80, "validation": 20, "test": 200}
SEED = 20261128


def build_set(directory):
    """Write train/validation/test JSONL files of the five-class gloss set;
    return their rows."""
    by_class = {name: [] for name in CLASSES.values()}
    seen = set()
    for gloss, lex in wordnet_glosses():
        if lex in CLASSES and gloss not in seen:
            seen.add(gloss)
            by_class[CLASSES[lex]].append(gloss)
    rng = random.Random(SEED)
    splits = {name: [] for name in PER_CLASS}
    for label, glosses in sorted(by_class.items()):
        rng.shuffle(glosses)
        start = 0
        for split, count in PER_CLASS.items():
            splits[split] += [
                {"text": g, "label": label} for g in glosses[start : start + count]
            ]
            start += count
    directory.mkdir(parents=True, exist_ok=True)
    for split, rows in splits.items():
        rng.shuffle(rows)
        with open(directory / f"{split}.jsonl", "w", encoding="utf-8") as f:
            f.writelines(json.dumps(row) + "\n" for row in rows)
    return splits


def zoo_command(*argv):
    """Run `python -m zoo ARGV`, streaming its output; its seconds."""
    started = time.time()
    print("$ zoo " + " ".join(map(str, argv)), flush=True)
    subprocess.run([sys.executable, "-m", "zoo", *map(str, argv)], check=True)
    return round(time.time() - started, 1)


def train_pair(out, data, extra, label):
    """Teacher, then 3-layer student, with `extra` flags; their figures."""
    teacher = out / f"teacher{label}"
    student = out / f"student{label}"
    teacher_seconds = zoo_command(
        "finetune", "--model", minilm_checkpoint_dir(), "--data", data,
        "--task", "classify", "--out", teacher, "--force", *extra,
    )  # fmt: skip
    student_seconds = zoo_command(
        "distill", "--teacher", teacher / "model", "--data", data,
        "--student-layers", "3", "--out", student, "--force", *extra,
    )  # fmt: skip
    t = json.loads((teacher / "metrics.json").read_text())
    s = json.loads((student / "metrics.json").read_text())
    return {
        "flags": list(extra),
        "teacher": {
            "accuracy": t["accuracy"],
            "schedule": t.get("schedule"),
            "seconds": teacher_seconds,
        },
        "student": {
            "accuracy": s["student"]["accuracy"],
            "teacher_accuracy_same_run": s["teacher"]["accuracy"],
            "retention": s["student"]["accuracy"] / s["teacher"]["accuracy"],
            "schedule": s.get("schedule"),
            "seconds": student_seconds,
        },
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=pathlib.Path, default=pathlib.Path("runs/small_data"))
    parser.add_argument(
        "--fixed-epochs",
        type=int,
        default=None,
        help="also run both commands with --epochs N (the comparison)",
    )
    args = parser.parse_args(argv)
    data = args.out / "data"
    splits = build_set(data)
    base = linear_baseline(
        [r["text"] for r in splits["train"]],
        [r["label"] for r in splits["train"]],
        [r["text"] for r in splits["test"]],
        [r["label"] for r in splits["test"]],
    )
    runs = {"defaults": train_pair(args.out, data, [], "")}
    if args.fixed_epochs:
        runs[f"epochs {args.fixed_epochs}"] = train_pair(
            args.out, data, ["--epochs", args.fixed_epochs], f"_e{args.fixed_epochs}"
        )
    report = {
        "set": {split: len(rows) for split, rows in splits.items()},
        "classes": sorted(CLASSES.values()),
        "machine": {
            "cpu": platform.processor() or platform.machine(),
            "cores": os.cpu_count(),
        },
        "baseline": {k: base[k] for k in ("accuracy", "description") if k in base},
        "runs": runs,
    }
    (args.out / "small_data.json").write_text(json.dumps(report, indent=2))
    print(f"\nbaseline ({base.get('description')}): accuracy {base['accuracy']:.4f}")
    for name, run in runs.items():
        t, s = run["teacher"], run["student"]
        print(
            f"{name:>10}: teacher {t['accuracy']:.4f} "
            f"({(t['schedule'] or {}).get('epochs_trained')} epochs, {t['seconds']} s); "
            f"3-layer student {s['accuracy']:.4f} = {s['retention']:.1%} of the teacher "
            f"({(s['schedule'] or {}).get('epochs_trained')} epochs, {s['seconds']} s)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
