"""`zoo finetune`: classification, tagging, span QA or regression through model.fit."""

from __future__ import annotations

import json
import pathlib

from zoo.cli.runs import (
    HelpFormatter,
    add_backend,
    add_data,
    add_run_control,
    add_run_output,
    add_schedule,
    check_out_apart,
    checkpoint_path,
    data_path,
    help_examples,
    keras_verbosity,
    report_finished,
    start_run,
    training_output,
)
from zoo.train import distribute
from zoo.train.baseline import baseline_for_examples
from zoo.train.finetune import FinetuneConfig, check_inputs, finetune
from zoo.utils.atomic import atomic_file


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
    # The linear baseline is fitted before training (seconds), so its score
    # is on the terminal while the model trains.
    baseline = _linear_baseline(data) if args.task == "classify" and chief else None
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
    if baseline is not None:
        result["linear_baseline"] = baseline
        with atomic_file(pathlib.Path(args.out) / "metrics.json", "w") as f:
            json.dump(result, f, indent=2)
    print(json.dumps(result, indent=2))
    if baseline is not None:
        print(_baseline_line(baseline, result))
    print(f"best model: {pathlib.Path(args.out) / 'model'}")
    return 0


def _linear_baseline(data):
    """zoo.train.baseline on the run's own splits: fitted on train, scored
    on the split the model is scored on (test; validation when there is no
    test split). A dict with `skipped` (the reason) for text pairs or a
    class with fewer than 2 training examples."""
    scored = "test" if data.splits.get("test") else "validation"
    baseline = baseline_for_examples(data.splits["train"], data.splits[scored])
    baseline["scored_on"] = scored
    if "skipped" in baseline:
        print(f"linear baseline: skipped: {baseline['skipped']}")
    else:
        print(
            f"linear baseline ({baseline['description']}): accuracy "
            f"{baseline['accuracy']:.4f} on the {baseline['num_test']} {scored} "
            f"examples, fitted in {baseline['train_seconds']:.1f} s"
        )
    return baseline


def _baseline_line(baseline, result):
    """The baseline beside the fine-tuned model, in one line."""
    if "skipped" in baseline:
        return f"linear baseline: skipped: {baseline['skipped']}"
    return (
        f"accuracy {result['accuracy']:.4f} fine-tuned, {baseline['accuracy']:.4f} "
        f"linear baseline ({baseline['description']}, {baseline['size_bytes'] / 1e6:.1f} "
        f"MB, {baseline['latency_ms']:.1f} ms a text on one CPU)"
    )


DESCRIPTION = (
    "Fine-tune a checkpoint (any format `zoo convert` reads) with "
    "AdamW, linear warmup and decay, weight decay off for LayerNorm and biases, "
    "early stopping on validation loss (regress: on validation Spearman, and MSE loss "
    "with Pearson/Spearman/MSE reported). Writes OUT/model (the best model, a zoo "
    "model directory), OUT/metrics.json (test split), OUT/history.json. A killed "
    "run resumes at its last finished epoch when re-run with the same arguments (a "
    "finished one prints its metrics; other arguments are refused). classify runs "
    "also fit a linear baseline (TF-IDF word 1-2-grams + LinearSVC) on the same train "
    "split and record it in metrics.json (linear_baseline) beside the model's score.\n\n"
    "--data: trains on its train split, picks the best epoch on validation, reports "
    "the test split. Data without its own split is de-duplicated and split by index "
    "(i%5==0 test, i%10==1 validation, the rest train); with train and test but no "
    "validation, every 10th train example becomes validation."
)
EXAMPLES = help_examples(
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
)


def register(subparsers):
    p = subparsers.add_parser(
        "finetune",
        help="fine-tune for classification, tagging, span QA or regression (similarity)",
        formatter_class=HelpFormatter,
        description=DESCRIPTION,
        epilog=EXAMPLES,
    )
    p.add_argument(
        "--model",
        type=checkpoint_path,
        required=True,
        help="the checkpoint: any format `zoo convert` reads, or a zoo model directory",
    )
    add_data(p)
    p.add_argument(
        "--task",
        choices=("classify", "tag", "qa", "regress"),
        required=True,
        help="classify (label), tag (NER-style), qa (SQuAD spans), regress (a float "
        "score per text or pair, e.g. STS similarity: MSE loss, Pearson/Spearman)",
    )
    add_run_output(p)
    add_schedule(p)
    p.add_argument(
        "--patience",
        type=int,
        default=2,
        help="stop after this many epochs without a better validation loss "
        "(regress: validation Spearman), counted across a resume",
    )
    p.add_argument(
        "--mixed-precision",
        choices=("mixed_float16", "mixed_bfloat16"),
        help="compute policy for this run (float32 weights); OUT/model is "
        "saved computing in float32, ready for export. On a CPU, mixed_bfloat16 "
        "(float16 arithmetic is slower than float32 there); mixed_float16 is for GPUs",
    )
    _add_task_options(p)
    add_backend(p)
    add_run_control(p)
    p.set_defaults(func=run)


def _add_task_options(p):
    """What a task reads beyond the schedule: pooling, windows, QA spans."""
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
        "truncates, 64 at most. Exported artifacts classify one window.",
    )
    p.add_argument(
        "--max-answer-length",
        type=int,
        default=30,
        help="qa: the longest answer predicted, in word pieces",
    )
