"""`zoo distill`: teacher model directory -> student model directory.

    zoo distill --teacher runs/bbc/model --data bbc --student-layers 3 --out runs/distil3
    zoo distill --teacher runs/mlm/model --data austen --mode general \\
        --student-layers 3 --out runs/general3

The pipeline itself is `zoo.distill.pipeline.distill`.
"""

from __future__ import annotations

import argparse
import json
import pathlib

from zoo.cli.runs import (
    CliError,
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
from zoo.distill.pipeline import (
    DISTILL_LEARNING_RATE,
    DISTILL_PATIENCE,
    DISTILL_SELECT_BY,
    GENERAL_MAX_PREDICTIONS,
    MODES,
    SELECT_BY,
    DistillConfig,
    check_distill_inputs,
    distill,
)
from zoo.train import distribute as multiworker


def _layer_map(text):
    try:
        return tuple(int(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--layer-map {text!r}: expected comma-separated teacher layer indices, e.g. 0,2,4"
        ) from None


def run(args):
    out = pathlib.Path(args.out)
    # Under --strategy multiworker every worker runs this command on a shared
    # --out: only the chief writes args.json and removes old outputs.
    chief = args.strategy != "multiworker" or multiworker.is_chief_process()
    config = DistillConfig(
        student_layers=args.student_layers,
        layer_map=args.layer_map,
        style=args.style,
        student_intermediate_dim=args.student_intermediate_dim,
        student_hidden_dim=args.student_hidden_dim,
        mode=args.mode,
        epochs=args.epochs,
        patience=args.patience,
        select_by=args.select_by,
        batch_size=args.batch_size,
        sequence_length=args.sequence_length,
        max_predictions=args.max_predictions,
        learning_rate=args.learning_rate,
        warmup_fraction=args.warmup_fraction,
        weight_decay=args.weight_decay,
        gradient_accumulation=args.gradient_accumulation,
        temperature=args.temperature,
        soft_weight=args.soft_weight,
        hard_weight=args.hard_weight,
        cosine_weight=args.cosine_weight,
        hidden_weight=args.hidden_weight,
        attention_weight=args.attention_weight,
        strategy=args.strategy,
        tpu=args.tpu,
        mixed_precision=args.mixed_precision,
        steps_per_epoch=args.steps_per_epoch,
        seed=args.seed,
        run_eagerly=args.run_eagerly,
        cache_teacher=args.cache_teacher,
        evaluate=not args.no_evaluate,
        unlabelled=args.unlabelled,
    )
    check_out_apart(
        out,
        [
            ("--teacher", args.teacher),
            ("--data", data_path(args.data)),
            ("--unlabelled", args.unlabelled),
        ],
    )
    # Every input is checked before --out is touched (a bad run leaves
    # nothing behind that would refuse the corrected command), and --force
    # removes old outputs only after that.
    check_distill_inputs(args.teacher, args.data, config)
    # Every worker decides the same way (so none waits for a chief that has
    # refused or finished); only the chief removes anything.
    if training_output(out, args, args.force, remove=chief) == "finished":
        return report_finished(out)
    start_run(out, args, chief=chief)
    try:
        summary = distill(
            args.teacher, args.data, out, config, verbose=keras_verbosity(args.verbose)
        )
    except (ValueError, TypeError, FileNotFoundError) as e:
        raise CliError(str(e)) from e
    print(json.dumps(summary, indent=2, default=str))
    print(f"student: {out / 'model'}")
    return 0


DESCRIPTION = (
    "Build a student from the teacher's embeddings and an evenly spread "
    "subset of its layers (DistilBERT's 0,2,4,7,9,11 for 12 -> 6; 0,2,4 for 6 -> 3), "
    "then train it with soft targets at temperature T (times T²), the hard loss and "
    "a hidden-state cosine term (DistilBERT's weights 5/2/1 by default). "
    "--mode task reads --data as `zoo finetune` does for the teacher's task (trains "
    "on its train split, validates on validation, scores teacher and student on "
    "test); --mode general distils a masked-LM teacher on raw text (files, or "
    "austen / wordnet). "
    "Writes OUT/model (a zoo model directory), OUT/metrics.json, OUT/history.json, "
    "OUT/args.json. A killed run resumes at its last finished epoch when re-run with "
    "the same arguments (a finished one prints its metrics; other arguments are "
    "refused)."
)
EXAMPLES = help_examples(
    """
    zoo distill --teacher runs/bbc/model --data bbc --student-layers 3 \\
        --layer-map 0,2,4 --out runs/distil3
    zoo distill --teacher runs/bbc/model --data bbc --student-layers 2 \\
        --strategy mirrored --mixed-precision mixed_bfloat16 --out runs/distil2
    zoo distill --teacher runs/small/model --data small.jsonl --student-layers 3 \\
        --unlabelled more_texts.jsonl --out runs/small_distil3
    zoo distill --teacher runs/mlm/model --data austen --mode general \\
        --student-layers 3 --out runs/general3
    """
)


def register(subparsers):
    p = subparsers.add_parser(
        "distill",
        help="distil a teacher model directory into a shallower student",
        formatter_class=HelpFormatter,
        description=DESCRIPTION,
        epilog=EXAMPLES,
    )
    p.add_argument(
        "--teacher",
        type=checkpoint_path,
        required=True,
        help="teacher zoo model directory (zoo finetune / zoo pretrain output)",
    )
    add_data(p)
    p.add_argument(
        "--mode",
        choices=MODES,
        default="task",
        help="task: the teacher's fine-tuned task on --data; general: a masked-LM "
        "teacher on raw text",
    )
    p.add_argument(
        "--unlabelled",
        metavar="FILE",
        help="--mode task: more texts of the task's kind, without labels (a .csv, .tsv "
        "or .jsonl file with a `text` column; `text_b` is a pair's second text, or a "
        "QA teacher's context with the question in `text`; a tagger's words are split "
        "at whitespace; a `label` column is not read), trained on with the teacher's "
        "soft targets and every term but the hard loss; texts also in --data's splits "
        "are left out",
    )
    _add_student(p)
    add_run_output(p)
    # Distillation's own learning rate and patience: measured on a
    # development set (zoo.distill.pipeline, DISTILL_LEARNING_RATE).
    add_schedule(p, learning_rate=DISTILL_LEARNING_RATE)
    p.add_argument(
        "--patience",
        type=int,
        default=DISTILL_PATIENCE,
        help="--mode task: stop after this many epochs without a better validation "
        "loss (the student's cross-entropy on the validation labels), counted across "
        "a resume",
    )
    p.add_argument(
        "--select-by",
        choices=tuple(SELECT_BY),
        default=DISTILL_SELECT_BY,
        help="--mode task: what early stopping and the best student watch on the "
        "validation texts: labels (the student's cross-entropy on their labels) or "
        "teacher (its soft-target KL to the teacher on them)",
    )
    p.add_argument(
        "--max-predictions",
        type=int,
        default=GENERAL_MAX_PREDICTIONS,
        help="masked positions per sequence, at most (--mode general); never more "
        "than --sequence-length",
    )
    _add_loss_weights(p)
    p.add_argument(
        "--mixed-precision",
        choices=("mixed_float16", "mixed_bfloat16"),
        help="compute policy of the student for this run (the teacher's encoder "
        "stays float32); OUT/model is saved computing in float32. On a CPU, "
        "mixed_bfloat16; mixed_float16 is for GPUs",
    )
    p.add_argument(
        "--cache-teacher",
        action="store_true",
        help="run the teacher once over the training data and keep the outputs "
        "the losses read (memory: N x L x H floats for the cosine term), instead "
        "of once per epoch",
    )
    p.add_argument(
        "--run-eagerly",
        action="store_true",
        help="no tf.function (debugging; faster for tiny models)",
    )
    p.add_argument(
        "--no-evaluate",
        action="store_true",
        help="skip the test-split metrics of teacher and student",
    )
    add_backend(p)
    add_run_control(p)
    p.set_defaults(func=run)


def _add_student(p):
    """The student's shape: depth, the teacher layers it starts from, width, style."""
    p.add_argument("--student-layers", type=int, required=True, help="the student's depth")
    p.add_argument(
        "--layer-map",
        type=_layer_map,
        default=None,
        help="teacher layer per student layer, e.g. 0,2,4 (default: evenly spread)",
    )
    p.add_argument(
        "--student-intermediate-dim",
        type=int,
        default=None,
        metavar="N",
        help="the student's feed-forward width (default: the teacher's); "
        "narrower keeps each copied layer's N strongest units "
        "(|W_in[:, j]| * |W_out[j, :]|), e.g. 768 of MiniLM's 1536",
    )
    p.add_argument(
        "--student-hidden-dim",
        type=int,
        default=None,
        metavar="N",
        help="the student's hidden width, a multiple of the teacher's head width "
        "(default: the teacher's); narrower keeps the N residual features with the "
        "largest LayerNorm gamma^2 + beta^2 and each copied layer's N / head-width "
        "strongest heads, e.g. 256 of MiniLM's 384 (8 of 12 heads); the hidden-state "
        "loss through learned projections then replaces the cosine term",
    )
    p.add_argument(
        "--style",
        choices=("distilbert", "bert"),
        default="distilbert",
        help="distilbert drops segment embeddings and the pooler",
    )


def _add_loss_weights(p):
    """The distillation loss: `zoo.distill.distiller.Distiller`'s terms."""
    p.add_argument(
        "--temperature",
        type=float,
        default=2.0,
        help="softmax temperature T of the soft targets (their loss is scaled by T²)",
    )
    p.add_argument(
        "--soft-weight",
        type=float,
        default=5.0,
        help="weight of the soft-target KL divergence from the teacher",
    )
    p.add_argument(
        "--hard-weight",
        type=float,
        default=2.0,
        help="weight of the student's own cross-entropy on the labels (--mode general: "
        "the masked word pieces)",
    )
    p.add_argument(
        "--cosine-weight",
        type=float,
        default=1.0,
        help="weight of 1 - cosine between the last hidden states (same width only)",
    )
    p.add_argument(
        "--hidden-weight",
        type=float,
        default=0.0,
        help="hidden-state MSE through a learned projection (TinyBERT)",
    )
    p.add_argument(
        "--attention-weight",
        type=float,
        default=0.0,
        help="attention-distribution KL over the layer map",
    )
