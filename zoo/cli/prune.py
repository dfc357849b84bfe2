"""`zoo prune`: keep only the word pieces a fine-tuned model's task needs."""

from __future__ import annotations

import json
import pathlib

from zoo.cli.runs import (
    OUT_RULES,
    REPLACE_HELP,
    HelpFormatter,
    add_data,
    check_out_apart,
    check_replace_output,
    data_path,
    help_examples,
    output_path,
    run_info,
)
from zoo.distill.prune import prune_model_dir


def run(args):
    out = pathlib.Path(args.out)
    check_out_apart(out, [("--model", args.model), ("--data", data_path(args.data))])
    check_replace_output(out, args.force, "prune")
    # args.json goes inside the pruned model directory, listed in its record.
    report = prune_model_dir(
        args.model, args.data, out, evaluate=not args.no_evaluate, run_info=run_info(args)
    )
    if args.json:
        print(json.dumps(report))
        return 0
    print(
        f"vocabulary {report['vocabulary_before']:,} -> {report['vocabulary_after']:,} "
        f"word pieces; parameters {report['parameters_before']:,} -> "
        f"{report['parameters_after']:,}"
    )
    print(
        f"{report['test_split']} texts tokenized differently: "
        f"{report['test_texts_tokenized_differently']} of {report['test_texts']}"
    )
    for when in ("before", "after"):
        if when in report:
            metrics = {k: v for k, v in report[when].items() if isinstance(v, float)}
            print(
                f"{report['test_split']} {when}: "
                + ", ".join(f"{k} {v:.4f}" for k, v in metrics.items())
            )
    print(f"pruned model: {out}")
    return 0


def register(subparsers):
    p = subparsers.add_parser(
        "prune",
        help="keep only the word pieces a fine-tuned model's data needs (smaller embedding)",
        formatter_class=HelpFormatter,
        description="Prune the vocabulary of a fine-tuned zoo model directory to the word "
        "pieces its training data uses, plus the special tokens and every single character "
        "(and its ## form), so new words still split into pieces. The token embedding's rows "
        "are gathered, vocab.txt is rewritten and ids renumbered (a byte-level BPE model's "
        "vocab.json keeps the tokens its training texts produce, the tokens they are "
        "merged from and the 256 bytes, and merges.txt the merges among them); the "
        "training texts "
        "tokenize to the same pieces as before. Reports rows kept, parameters, how many test "
        "texts tokenize differently, and test metrics before and after. --data is split as "
        "`zoo finetune` splits it: its train split is the corpus, its test split (validation "
        "when there is none) is scored.",
        epilog=help_examples(
            """
            zoo prune --model runs/student/model --data bbc --out runs/student_pruned
            zoo export --model runs/student_pruned --format tflite --quantize int4 \\
                --data bbc --out exports/phone
            """
        ),
    )
    p.add_argument(
        "--model", type=pathlib.Path, required=True, help="a fine-tuned zoo model directory"
    )
    add_data(p)
    p.add_argument(
        "--out",
        type=output_path,
        required=True,
        help=f"the pruned model directory to write: {OUT_RULES}",
    )
    p.add_argument(
        "--no-evaluate", action="store_true", help="skip the test metrics before and after"
    )
    p.add_argument(
        "--json", action="store_true", help="print the report as one JSON object"
    )
    p.add_argument("--force", action="store_true", help=REPLACE_HELP)
    p.set_defaults(func=run)
