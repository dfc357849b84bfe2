"""Training on a small set at the defaults: the teacher against the linear
baseline, and the distilled student's retention of the teacher's accuracy.

    .venv/bin/python bench/small_data.py --out runs/small_data [--fixed-epochs 3] \
        [--unlabelled]
    .venv/bin/python bench/small_data.py --corpus bbc --out runs/small_bbc --unlabelled
    .venv/bin/python bench/small_data.py --out runs/small_data --dev \
        [--setting NAME="--learning-rate 2e-4"]...

The set is the project's own, built from WordNet (installed by `make
setup`): glosses of five noun supersenses (animal, artifact, food, person,
plant), 80 training, 20 validation and 200 test glosses of each, drawn with a
fixed seed from disjoint synsets: 400 / 100 / 1,000. It runs, with no flag
but --out:

    zoo finetune --model <all-MiniLM-L6-v2> --data SET --task classify
    zoo distill --teacher <that>/model --data SET --student-layers 3

and the linear baseline (`zoo.train.baseline`) on the same training and
test texts. With `--fixed-epochs N` it runs both commands again with
`--epochs N` (the old fixed default was 3), for the comparison. With
`--unlabelled` it distils the same teacher again with `zoo distill
--unlabelled OUT/unlabelled.jsonl`: 400 further glosses of each class
(2,000), drawn after the development set and written without their
labels, as a user would add texts of the task's kind that nobody
labelled. `--corpus bbc` builds the same shape from BBC News
instead (`build_bbc_set`): long articles where the glosses are short. A
measurement, not a test: nothing here asserts a figure; it writes
OUT/small_data.json and prints a table.

Defaults are chosen on a development set, never on the test split: the
100 validation texts are too few to tell settings apart (one text is a
point of accuracy), and a setting picked on test scores would overstate
itself there. `--dev` draws 200 further glosses of each class (1,000),
from the synsets left after train, validation and test, with their own
seed, so the three splits are the same as without it. It writes
OUT/dev/data, whose train and validation files are the set's and whose
test file holds the development glosses (the test split is not written
there), fine-tunes the teacher on it once (reused while
OUT/dev/teacher/metrics.json exists) and distils a student for each
`--setting NAME=FLAGS` (default: one run at the defaults, "defaults"),
each reused while its metrics.json exists (remove OUT/dev/student_NAME to
run it again, e.g. after a default changed; the table records the
learning rate, patience and temperature each run used). `zoo distill`
scores teacher and student on that test file: the development accuracy.
The table of every setting run so far goes to OUT/dev/dev.json.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import random
import shlex
import subprocess
import sys
import time

# isort: off
import zoo  # noqa: F401  first: TensorFlow's environment (oneDNN, log level)

# isort: on
from zoo.datasets.corpora import bbc_news_split, minilm_checkpoint_dir, wordnet_glosses
from zoo.train.baseline import linear_baseline

# WordNet lexicographer files (lex_filenum) of the five classes.
CLASSES = {5: "animal", 6: "artifact", 13: "food", 18: "person", 20: "plant"}
PER_CLASS = {"train": 80, "validation": 20, "test": 200}
SEED = 20261128
# The development set (--dev): glosses per class, drawn after the three
# splits with their own seed.
DEV_PER_CLASS = 200
DEV_SEED = SEED + 1
# The unlabelled texts (--unlabelled): glosses per class after the
# development draw, written without their labels to OUT/unlabelled.jsonl.
UNLABELLED_PER_CLASS = 400


def build_set(directory, dev_directory=None):
    """Write train/validation/test JSONL files of the five-class gloss set;
    return their rows. Also draw the development rows (key "dev") from
    each class's glosses left after the three splits, and after them the
    unlabelled texts (key "unlabelled"), written without labels to
    directory/../unlabelled.jsonl. With `dev_directory`, write there
    train/validation as in `directory` and the development rows as its
    test file."""
    by_class = {name: [] for name in CLASSES.values()}
    seen = set()
    for gloss, lex in wordnet_glosses():
        if lex in CLASSES and gloss not in seen:
            seen.add(gloss)
            by_class[CLASSES[lex]].append(gloss)
    rng = random.Random(SEED)
    dev_rng = random.Random(DEV_SEED)  # its own: the three splits stay as they were
    splits = {name: [] for name in PER_CLASS}
    dev, unlabelled = [], []
    for label, glosses in sorted(by_class.items()):
        rng.shuffle(glosses)
        start = 0
        for split, count in PER_CLASS.items():
            splits[split] += [
                {"text": g, "label": label} for g in glosses[start : start + count]
            ]
            start += count
        rest = glosses[start:]
        if len(rest) < DEV_PER_CLASS + UNLABELLED_PER_CLASS:
            raise ValueError(
                f"class {label}: {len(rest)} glosses left after the splits; the "
                f"development set and the unlabelled texts need {DEV_PER_CLASS} + "
                f"{UNLABELLED_PER_CLASS}."
            )
        dev_rng.shuffle(rest)
        dev += [{"text": g, "label": label} for g in rest[:DEV_PER_CLASS]]
        unlabelled += [
            {"text": g} for g in rest[DEV_PER_CLASS : DEV_PER_CLASS + UNLABELLED_PER_CLASS]
        ]
    for rows in splits.values():
        rng.shuffle(rows)
    dev_rng.shuffle(dev)
    dev_rng.shuffle(unlabelled)
    _write_splits(directory, splits)
    _write_splits(directory.parent, {"unlabelled": unlabelled})
    if dev_directory is not None:
        _write_splits(
            dev_directory,
            {"train": splits["train"], "validation": splits["validation"], "test": dev},
        )
    return {**splits, "dev": dev, "unlabelled": unlabelled}


def build_bbc_set(directory):
    """`--corpus bbc`: the same shape from BBC News, long texts where the
    glosses are short. 80 training and 20 validation articles of each of
    the five classes, drawn with SEED from the project's fixed BBC train
    split; test is that split's fixed 426 test articles; the class's other
    training articles (988 in all) are the unlabelled texts, written
    without labels to directory/../unlabelled.jsonl. BBC's validation
    split is not used."""
    bbc = bbc_news_split()
    by_class = {}
    for text, label in bbc["train"]:
        by_class.setdefault(label, []).append(text)
    rng = random.Random(SEED)
    splits = {"train": [], "validation": [], "test": []}
    unlabelled = []
    for label, texts in sorted(by_class.items()):
        rng.shuffle(texts)
        start = 0
        for split in ("train", "validation"):
            count = PER_CLASS[split]
            splits[split] += [
                {"text": t, "label": label} for t in texts[start : start + count]
            ]
            start += count
        unlabelled += [{"text": t} for t in texts[start:]]
    splits["test"] = [{"text": t, "label": label} for t, label in bbc["test"]]
    for rows in (*splits.values(), unlabelled):
        rng.shuffle(rows)
    _write_splits(directory, splits)
    _write_splits(directory.parent, {"unlabelled": unlabelled})
    return {**splits, "unlabelled": unlabelled}


def _write_splits(directory, splits):
    directory.mkdir(parents=True, exist_ok=True)
    for split, rows in splits.items():
        with open(directory / f"{split}.jsonl", "w", encoding="utf-8") as f:
            f.writelines(json.dumps(row) + "\n" for row in rows)


def zoo_command(*argv):
    """Run `python -m zoo ARGV`, streaming its output; its seconds."""
    started = time.time()
    print("$ zoo " + " ".join(map(str, argv)), flush=True)
    subprocess.run([sys.executable, "-m", "zoo", *map(str, argv)], check=True)
    return round(time.time() - started, 1)


def train_pair(out, data, extra, label):
    """Teacher, then 3-layer student, with `extra` flags; their figures."""
    teacher = out / f"teacher{label}"
    teacher_seconds = zoo_command(
        "finetune", "--model", minilm_checkpoint_dir(), "--data", data,
        "--task", "classify", "--out", teacher, "--force", *extra,
    )  # fmt: skip
    t = json.loads((teacher / "metrics.json").read_text())
    return {
        "flags": list(extra),
        "teacher": {
            "accuracy": t["accuracy"],
            "schedule": t.get("schedule"),
            "seconds": teacher_seconds,
        },
        "student": distil(out / f"student{label}", teacher, data, extra),
    }


def distil_again(out, data, pair, label, extra):
    """Another 3-layer student of the defaults' teacher, with `extra` flags:
    `pair` with its student figures replaced."""
    return {
        "flags": list(map(str, extra)),
        "teacher": pair["teacher"],
        "student": distil(out / f"student{label}", out / "teacher", data, extra),
    }


def distil(student, teacher, data, extra):
    """`zoo distill` of the run directory `teacher` into a 3-layer student
    at `student`, with `extra` flags; the student's figures."""
    seconds = zoo_command(
        "distill", "--teacher", teacher / "model", "--data", data,
        "--student-layers", "3", "--out", student, "--force", *extra,
    )  # fmt: skip
    s = json.loads((student / "metrics.json").read_text())
    figures = {
        "accuracy": s["student"]["accuracy"],
        "teacher_accuracy_same_run": s["teacher"]["accuracy"],
        "retention": s["student"]["accuracy"] / s["teacher"]["accuracy"],
        "schedule": s.get("schedule"),
        "seconds": seconds,
    }
    if "unlabelled" in s:
        figures["unlabelled"] = s["unlabelled"]
    return figures


def _setting(text):
    """--setting NAME=FLAGS -> (NAME, [flags])."""
    name, sep, flags = text.partition("=")
    if not sep or not name or "/" in name:
        raise argparse.ArgumentTypeError(
            f"--setting {text!r}: expected NAME=FLAGS, e.g. "
            'lr2e-4="--learning-rate 2e-4" (NAME names OUT/dev/student_NAME).'
        )
    return name, shlex.split(flags)


def dev_runs(out, settings):
    """The teacher once, then a student per setting, on OUT/dev/data (test
    file: the development glosses); the table of every setting run so far."""
    data, dev = out / "dev" / "data", out / "dev"
    teacher = dev / "teacher"
    if not (teacher / "metrics.json").is_file():
        zoo_command(
            "finetune", "--model", minilm_checkpoint_dir(), "--data", data,
            "--task", "classify", "--out", teacher, "--force",
        )  # fmt: skip
    t = json.loads((teacher / "metrics.json").read_text())
    table = {}
    recorded = dev / "dev.json"
    if recorded.is_file():
        table = json.loads(recorded.read_text())["settings"]
    given = dict(settings)
    earlier = [(name, row["flags"]) for name, row in table.items() if name not in given]
    for name, flags in [*earlier, *settings]:
        student = dev / f"student_{name}"
        if not (student / "metrics.json").is_file():
            seconds = zoo_command(
                "distill", "--teacher", teacher / "model", "--data", data,
                "--student-layers", "3", "--out", student, "--force", *flags,
            )  # fmt: skip
        else:
            seconds = table.get(name, {}).get("seconds")
        s = json.loads((student / "metrics.json").read_text())
        history = json.loads((student / "history.json").read_text())
        # The values the run used, defaults included (a default may have
        # changed since an earlier setting ran).
        used = json.loads((student / "args.json").read_text())["arguments"]
        val_losses = [v for v in history["history"].get("val_loss", []) if v is not None]
        table[name] = {
            "flags": flags,
            "used": {k: used.get(k) for k in ("learning_rate", "patience", "temperature")},
            "student": s["student"]["accuracy"],
            "teacher": s["teacher"]["accuracy"],
            "retention": s["student"]["accuracy"] / s["teacher"]["accuracy"],
            "epochs_trained": s["schedule"]["epochs_trained"],
            "epochs_chosen": s["schedule"]["epochs"],
            "best_val_loss": min(val_losses) if val_losses else None,
            "seconds": seconds,
        }
    report = {
        "teacher": {
            "accuracy": t["accuracy"],
            "epochs_trained": (t.get("schedule") or {}).get("epochs_trained"),
        },
        "settings": table,
    }
    recorded.write_text(json.dumps(report, indent=2))
    print(f"\ndevelopment set: teacher {t['accuracy']:.4f}")
    for name, row in table.items():
        print(
            f"{name:>12}: student {row['student']:.4f} = {row['retention']:.1%} of the "
            f"teacher, {row['epochs_trained']} of {row['epochs_chosen']} epochs, best "
            f"validation loss {row['best_val_loss']:.4f}, {row.get('used')}"
        )
    return report


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=pathlib.Path, default=pathlib.Path("runs/small_data"))
    parser.add_argument(
        "--fixed-epochs",
        type=int,
        default=None,
        help="also run both commands with --epochs N (the comparison)",
    )
    parser.add_argument(
        "--corpus",
        choices=("wordnet", "bbc"),
        default="wordnet",
        help="wordnet: the gloss set; bbc: 400 / 100 BBC News training articles, "
        "BBC's fixed 426 test articles, the other 988 training articles unlabelled",
    )
    parser.add_argument(
        "--unlabelled",
        action="store_true",
        help="also distil the defaults' teacher with --unlabelled OUT/unlabelled.jsonl "
        f"({UNLABELLED_PER_CLASS * len(CLASSES):,} further glosses without labels; "
        "with --corpus bbc, the 988 other training articles)",
    )
    parser.add_argument(
        "--dev",
        action="store_true",
        help="choose on the development set: teacher and students scored on "
        "1,000 further glosses, the test split unused",
    )
    parser.add_argument(
        "--setting",
        type=_setting,
        action="append",
        metavar="NAME=FLAGS",
        help="with --dev: a student run with these zoo distill flags (repeatable; "
        "default: defaults=)",
    )
    args = parser.parse_args(argv)
    if args.dev and args.corpus != "wordnet":
        parser.error("--dev is the gloss set's development set: drop --corpus bbc")
    if args.setting and not args.dev:
        parser.error(
            "--setting goes with --dev (settings are compared on the development set)"
        )
    data = args.out / "data"
    if args.dev:
        build_set(data, args.out / "dev" / "data")
        dev_runs(args.out, args.setting or [("defaults", [])])
        return 0
    splits = build_bbc_set(data) if args.corpus == "bbc" else build_set(data)
    base = linear_baseline(
        [r["text"] for r in splits["train"]],
        [r["label"] for r in splits["train"]],
        [r["text"] for r in splits["test"]],
        [r["label"] for r in splits["test"]],
    )
    runs = {"defaults": train_pair(args.out, data, [], "")}
    if args.unlabelled:
        runs["defaults, --unlabelled"] = distil_again(
            args.out, data, runs["defaults"], "_unlabelled",
            ["--unlabelled", args.out / "unlabelled.jsonl"],
        )  # fmt: skip
    if args.fixed_epochs:
        runs[f"epochs {args.fixed_epochs}"] = train_pair(
            args.out, data, ["--epochs", args.fixed_epochs], f"_e{args.fixed_epochs}"
        )
    report = {
        "set": {split: len(rows) for split, rows in splits.items()},
        "corpus": args.corpus,
        "classes": sorted({r["label"] for r in splits["train"]}),
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
