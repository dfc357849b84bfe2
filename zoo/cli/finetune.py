"""`zoo finetune`: classification, tagging, span QA or regression through model.fit."""

from __future__ import annotations

import argparse
import json
import pathlib

from zoo.cli.runs import (
    ACCUMULATION_HELP,
    BATCH_HELP,
    DATA_HELP,
    FORCE_HELP,
    RUN_OUT_HELP,
    add_verbose,
    check_out_apart,
    data_path,
    help_examples,
    keras_verbosity,
    output_path,
    report_finished,
    start_run,
    training_output,
)
from zoo.configs import DEFAULT_SEQUENCE_LENGTH
from zoo.train import distribute
from zoo.train.finetune import FinetuneConfig, check_inputs, finetune


def _finetune_config(args):
    return FinetuneConfig(
        epochs=args.epochs,
        batch_size=args.batch_size,
        sequence_length=args.sequence_length,
        learning_rate=args.learning_rate,
        warmup_fraction=args.warmup_fraction,
        weight_decay=args.weight_decay,
        patience=args.patience,
        mixed_precision=args.mixed_precision,
        seed=args.seed,
        pooling=args.pooling,
        doc_stride=args.doc_stride,
        max_answer_length=args.max_answer_length,
        max_windows=args.max_windows,
        steps_per_epoch=args.steps_per_epoch,
        strategy=args.strategy,
        tpu=args.tpu,
        gradient_accumulation=args.gradient_accumulation,
    )


def run(args):
    config = _finetune_config(args)
    check_out_apart(args.out, [("--model", args.model), ("--data", data_path(args.data))])
    # Every input is checked before --out is touched: a bad run leaves
    # nothing behind that would refuse the corrected command, and --force
    # removes old outputs only after that.
    data = check_inputs(args.model, args.data, args.task, config)
    # Under --strategy multiworker every worker runs this command on a shared
    # --out: only the chief writes args.json and removes old outputs.
    chief = args.strategy != "multiworker" or distribute.is_chief_process()
    if training_output(args.out, args, args.force, remove=chief) == "finished":
        return report_finished(args.out)
    start_run(args.out, args, chief=chief)
    print(
        f"data: {data.source}; {', '.join(f'{k} {len(v)}' for k, v in data.splits.items())}; "
        f"split rule: {data.split_rule}"
    )
    result = finetune(
        args.model,
        args.data,
        args.task,
        args.out,
        config,
        data=data,
        verbose=keras_verbosity(args.verbose),
    )
    if "worker" in result:  # not the chief: the chief evaluates and reports
        print(f"{result['worker']}: done")
        return 0
    print(json.dumps(result, indent=2))
    print(f"best model: {pathlib.Path(args.out) / 'model'}")
    return 0


def register(subparsers):
    p = subparsers.add_parser(
        "finetune",
        help="fine-tune for classification, tagging, span QA or regression (similarity)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Fine-tune a checkpoint (any format `zoo convert` reads) with "
        "AdamW, linear warmup and decay, weight decay off for LayerNorm and biases, "
        "early stopping on validation loss (regress: on validation Spearman, and MSE loss "
        "with Pearson/Spearman/MSE reported). Writes OUT/model (the best model, a zoo "
        "model directory), OUT/metrics.json (test split), OUT/history.json. A killed "
        "run resumes at its last finished epoch when re-run with the same arguments (a "
        "finished one prints its metrics; other arguments are refused).\n\n"
        "--data: trains on its train split, picks the best epoch on validation, reports "
        "the test split. Data without its own split is de-duplicated and split by index "
        "(i%5==0 test, i%10==1 validation, the rest train); with train and test but no "
        "validation, every 10th train example becomes validation.",
        epilog=help_examples(
            """
            zoo finetune --model models/minilm --data bbc --task classify --out runs/bbc
            # long texts: train on up to 4 windows each, predict by their mean
            # (BBC News: 97.2-97.7% test accuracy, 10-25 min on 2 cores)
            zoo finetune --model models/minilm --data bbc --task classify --pooling mean \\
                --max-windows 4 --epochs 2 --out runs/bbc_windows
            zoo finetune --model models/bert_base --data ner/ --task tag --out runs/ner
            zoo finetune --model models/bert_base --data squad.json --task qa \\
                --sequence-length 384 --out runs/squad
            # sentence-pair similarity (rows text, text_b, score): MSE loss, test
            # Pearson/Spearman; wordnet-sts is a generated WordNet STS-style set
            zoo finetune --model models/minilm --data wordnet-sts --task regress \\
                --pooling mean --sequence-length 64 --out runs/sts
            """
        ),
    )
    p.add_argument("--model", type=pathlib.Path, required=True)
    p.add_argument("--data", required=True, help=DATA_HELP)
    p.add_argument(
        "--task",
        choices=("classify", "tag", "qa", "regress"),
        required=True,
        help="classify (label), tag (NER-style), qa (SQuAD spans), regress (a float "
        "score per text or pair, e.g. STS similarity: MSE loss, Pearson/Spearman)",
    )
    p.add_argument("--out", type=output_path, required=True, help=RUN_OUT_HELP)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=16, help=BATCH_HELP)
    p.add_argument(
        "--gradient-accumulation", type=int, default=1, metavar="N", help=ACCUMULATION_HELP
    )
    p.add_argument("--sequence-length", type=int, default=DEFAULT_SEQUENCE_LENGTH)
    p.add_argument("--learning-rate", type=float, default=5e-5)
    p.add_argument("--warmup-fraction", type=float, default=0.1)
    p.add_argument("--weight-decay", type=float, default=0.01)
    p.add_argument(
        "--patience",
        type=int,
        default=2,
        help="stop after this many epochs without a better validation loss "
        "(regress: validation Spearman) (counted across a resume; default 2)",
    )
    p.add_argument(
        "--mixed-precision",
        choices=("mixed_float16", "mixed_bfloat16"),
        help="compute policy for this run (float32 weights); OUT/model is "
        "saved computing in float32, ready for export",
    )
    p.add_argument(
        "--pooling",
        choices=("auto", "pooled", "cls", "mean"),
        default="auto",
        help="classifier and regressor pooling (mean suits sentence-transformers "
        "checkpoints)",
    )
    p.add_argument(
        "--doc-stride",
        type=int,
        default=128,
        help="pieces between the starts of consecutive windows of a long text "
        "(qa contexts; classify with --max-windows)",
    )
    p.add_argument(
        "--max-windows",
        type=int,
        default=1,
        help="classify: cut a text longer than the sequence into up to N windows "
        "(stepping --doc-stride pieces), train on each window with the "
        "text's label and predict by averaging the windows' logits; 1 "
        "truncates (default). Exported artifacts classify one window.",
    )
    p.add_argument("--max-answer-length", type=int, default=30)
    p.add_argument("--steps-per-epoch", type=int, default=None)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--strategy",
        choices=distribute.STRATEGIES,
        default="none",
        help=distribute.STRATEGY_HELP,
    )
    p.add_argument("--tpu", default=None, help=distribute.TPU_HELP)
    add_verbose(p)
    p.add_argument("--force", action="store_true", help=FORCE_HELP)
    p.set_defaults(func=run)
