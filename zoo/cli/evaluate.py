"""`zoo evaluate`: task metrics of a fine-tuned model directory on a split of --data."""

from __future__ import annotations

import json
import pathlib

from zoo.checkpoints import load_model_dir
from zoo.cli.runs import CliError, HelpFormatter, add_data, help_examples
from zoo.models import task_of
from zoo.train import data as task_data
from zoo.train.finetune import evaluate_model, evaluation_config

SPLITS = ("train", "validation", "test")


def run(args):
    model, tokenizer, meta = load_model_dir(args.model)
    task = task_of(model)
    data = task_data.load_task_data(args.data, task, training=False)
    if args.split == "all":
        examples = [e for name in SPLITS for e in data.splits.get(name) or []]
    else:
        examples = data.splits.get(args.split) or []
    if not examples:
        raise CliError(
            f"--split {args.split}: the data has no such split "
            f"(it has {sorted(k for k, v in data.splits.items() if v) or 'no examples'}); "
            "choose one of those, or --split all to score every example."
        )
    config = evaluation_config(meta, args.sequence_length, args.max_windows)
    result = evaluate_model(model, tokenizer, task, examples, meta.get("labels"), config)
    result["split"] = args.split
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(
                f"{key:>16}: {value:.4f}"
                if isinstance(value, float)
                else f"{key:>16}: {value}"
            )
    return 0


def register(subparsers):
    p = subparsers.add_parser(
        "evaluate",
        help="accuracy / macro-F1, entity F1, EM/F1 or Pearson/Spearman/MSE of a fine-tuned "
        "model",
        formatter_class=HelpFormatter,
        description="Evaluate a fine-tuned zoo model directory on the test split (or "
        "--split) of --data, split as `zoo finetune` splits it: its own split, else "
        "de-duplicated and split by index (i%5==0 test, i%10==1 validation). A held-out "
        "file of your own: --split all scores every example in it.",
        epilog=help_examples(
            """
            zoo evaluate --model runs/bbc/model --data bbc
            zoo evaluate --model runs/ner/model --data ner/ --json
            zoo evaluate --model runs/sts/model --data wordnet-sts   # pearson, spearman, mse
            zoo evaluate --model runs/bbc/model --data held_out.csv --split all
            """
        ),
    )
    p.add_argument("--model", type=pathlib.Path, required=True)
    add_data(p)
    p.add_argument(
        "--split",
        default="test",
        choices=(*SPLITS, "all"),
        help="the split of --data to score; all: every example (de-duplicated)",
    )
    p.add_argument(
        "--sequence-length",
        type=int,
        default=None,
        help="default: the length the model was fine-tuned with",
    )
    p.add_argument(
        "--max-windows",
        type=int,
        default=None,
        help="classify: windows per long text, at most 64 (default: as fine-tuned)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)
