"""Head-and-tail truncation of BBC News articles for the demo's teacher.

    .venv/bin/python bench/head_tail.py --model runs/demo/minilm --out runs/head_tail \
        [--cut 96:30] [--cut 64:62] [--seed 0] [--seed 1]

Sun et al. 2019 ("How to fine-tune BERT for text classification?") found
that keeping an article's first and last word pieces beat its first ones on
long reviews. `zoo` tokenizers keep the head, so this measures the idea
without changing them: for each `--cut HEAD:TAIL` it writes the fixed BBC
split (1,488 / 213 / 426) with every article cut, at whole words, to its
first words holding at most HEAD word pieces and its last words holding at
most TAIL (by the model's own WordPiece vocabulary; a shorter article stays
whole), fine-tunes the teacher with the demo's settings (mean pooling, 2
epochs, batch 16, 1e-4, 128 tokens, so nothing more is cut), and scores:

    validation   accuracy and loss of the epoch kept (`history.json`): what
                 chooses between cuts and against the head alone
    test         accuracy, and the articles only it / only the linear
                 baseline gets right with McNemar's exact p
                 (`zoo.train.baseline.paired_comparison`; the baseline reads
                 the whole articles, as in the demo's report)

A run is reused while its metrics.json exists. A measurement, not a test:
it writes OUT/head_tail.json and prints a table.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import subprocess
import sys

# isort: off
import zoo  # noqa: F401  first: TensorFlow's environment (oneDNN, log level)

# isort: on
import numpy as np

from export.validate import keras_outputs
from zoo.checkpoints import load_model_dir
from zoo.text.tokenizer import tokenize_texts
from zoo.train.baseline import baseline_for_examples, paired_comparison
from zoo.train.data import load_task_data
from zoo.utils.atomic import atomic_file

SETTINGS = ["--task", "classify", "--pooling", "mean", "--epochs", "2"]
SETTINGS += ["--batch-size", "16", "--learning-rate", "1e-4", "--sequence-length", "128"]


def cut_text(text, tokenizer, head, tail):
    """`text`'s first words within `head` word pieces and its last words
    within `tail`, joined by spaces; the text itself when it fits."""
    words = text.split()
    if not words:
        return text
    pieces = [len(ids) for ids in tokenizer.tokenize(words).to_list()]
    if sum(pieces) <= head + tail:
        return text
    h = used = 0
    while h < len(words) and used + pieces[h] <= head:
        used += pieces[h]
        h += 1
    t, used = len(words), 0
    while t > h and used + pieces[t - 1] <= tail:
        used += pieces[t - 1]
        t -= 1
    return " ".join(words[:h] + words[t:])


def write_cut(data, tokenizer, head, tail, directory):
    directory.mkdir(parents=True, exist_ok=True)
    for split, examples in data.splits.items():
        rows = [
            {"text": cut_text(e.text, tokenizer, head, tail), "label": e.label}
            for e in examples
        ]
        with atomic_file(directory / f"{split}.jsonl", "w") as f:
            f.writelines(json.dumps(r) + "\n" for r in rows)


def score(run, data, baseline):
    """Validation figures from the run's history; accuracy on the cut test
    articles (`data`) and the paired comparison against the baseline."""
    history = json.loads((run / "history.json").read_text())["history"]
    best = json.loads((run / "model" / "zoo_model.json").read_text())["best"]["epoch"]
    model, tokenizer, _ = load_model_dir(run / "model")
    index = {name: i for i, name in enumerate(model.labels)}
    examples = data.splits["test"]
    gold = np.array([index[e.label] for e in examples])
    inputs = tokenize_texts(tokenizer, [e.text for e in examples], 128)
    predicted = keras_outputs(model, inputs)["logits"].argmax(-1)
    theirs = np.array([index[y] for y in baseline["predictions"]])
    return {
        "epoch_kept": best,
        "validation_accuracy": history["val_accuracy"][best - 1],
        "validation_loss": history["val_loss"][best - 1],
        "test_accuracy": float((predicted == gold).mean()),
        "against_baseline": paired_comparison(gold, predicted, theirs),
    }


def _cut(text):
    """--cut HEAD:TAIL, two whole numbers that fit 128 tokens with [CLS] and [SEP]."""
    try:
        head, tail = (int(v) for v in text.split(":"))
    except ValueError:
        head = tail = None
    if head is None or head < 1 or tail < 0 or head + tail > 126:
        raise argparse.ArgumentTypeError(
            f"expected HEAD:TAIL word pieces with HEAD >= 1, TAIL >= 0 and "
            f"HEAD + TAIL <= 126 (128 tokens), e.g. 96:30; received {text!r}"
        )
    return head, tail


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True, help="the converted MiniLM (runs/demo/minilm)")
    p.add_argument("--out", required=True, type=pathlib.Path)
    p.add_argument(
        "--cut", action="append", type=_cut, help="HEAD:TAIL word pieces (default 96:30)"
    )
    p.add_argument("--seed", action="append", type=int, help="default 0")
    args = p.parse_args(argv)
    cuts = args.cut or [(96, 30)]
    try:
        _, tokenizer, _ = load_model_dir(args.model)
    except (ValueError, FileNotFoundError) as e:
        p.error(f"--model {args.model}: {e}")
    data = load_task_data("bbc", "classify")
    baseline = baseline_for_examples(
        data.splits["train"], data.splits["test"], predictions=True
    )
    table = {"baseline_test_accuracy": baseline["accuracy"], "runs": {}}
    for head, tail in cuts:
        directory = args.out / f"data_{head}_{tail}"
        if not (directory / "test.jsonl").is_file():
            if directory.exists() and any(directory.iterdir()):
                p.error(
                    f"{directory} holds files this script did not write; choose another --out."
                )
            write_cut(data, tokenizer, head, tail, directory)
        for seed in args.seed or [0]:
            name = f"{head}_{tail}_seed{seed}"
            run = args.out / f"teacher_{name}"
            if not (run / "metrics.json").is_file():
                subprocess.run(
                    [sys.executable, "-m", "zoo", "finetune", "--model", args.model,
                     "--data", directory, "--out", run, "--force", "--seed", str(seed),
                     "--verbose", "2", *SETTINGS],
                    check=True,
                )  # fmt: skip
            cut = load_task_data(directory, "classify")
            table["runs"][name] = score(run, cut, baseline)
            r = table["runs"][name]
            c = r["against_baseline"]
            print(
                f"head {head} + tail {tail}, seed {seed}: validation "
                f"{r['validation_accuracy']:.4f} (loss {r['validation_loss']:.3f}), test "
                f"{r['test_accuracy']:.4f}; only it / only the baseline right "
                f"{c['model_only']} / {c['baseline_only']}, p = {c['p_value']:.2f}",
                flush=True,
            )
    with atomic_file(args.out / "head_tail.json", "w") as f:
        json.dump(table, f, indent=2)
    print(
        f"baseline (whole articles) {baseline['accuracy']:.4f}; {args.out / 'head_tail.json'}"
    )


if __name__ == "__main__":
    main()
