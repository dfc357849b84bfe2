"""`zoo pretrain`: BERT-family pre-training from raw text (MLM with NSP,
SOP or SBO; token, whole-word or span masking; the BERT or RoBERTa recipe)."""

from __future__ import annotations

import pathlib

from zoo.cli.runs import (
    BATCH_HELP,
    HelpFormatter,
    add_gradient_accumulation,
    add_run_control,
    add_run_output,
    check_out_apart,
    data_path,
    help_examples,
    keras_verbosity,
    report_finished,
    start_run,
    training_output,
)
from zoo.configs import DEFAULT_SEQUENCE_LENGTH, PRESETS
from zoo.train import distribute
from zoo.train.pretrain import (
    RECIPES,
    PretrainConfig,
    check_pretrain_inputs,
    describe_corpus,
    pretrain,
)

RECIPE_HELP = """\
recipes (--recipe; paper vs ours, scaled for a small machine):
                     BERT paper   bert (ours)   RoBERTa paper   roberta (ours)
  objective          MLM+NSP      mlm+nsp       MLM             mlm
  input              sent. pairs  sent. pairs   FULL-SENTENCES  full (across docs)
  masking            static x10   per epoch     dynamic         per epoch
  batch              256          32            8K              128
  peak rate          1e-4         1e-4          6e-4            6e-4
  warmup             10K of 1M    10%           24K of 500K     5%
  Adam beta_2, eps   0.999, 1e-6  0.999, 1e-6   0.98, 1e-6      0.98, 1e-6
  weight decay       0.01         0.01          0.01            0.01
  sequence length    128 -> 512   128           512             128
ALBERT's SOP: --objective mlm+sop. SpanBERT: --objective mlm+sbo (span masking)."""


def run(args):
    # Flags left unset (None) take the recipe's default (RECIPES, then
    # PretrainConfig's); --no-nsp and --whole-word map onto --objective and
    # --masking, and contradicting those is an error.
    config = PretrainConfig.for_recipe(
        args.recipe,
        epochs=args.epochs,
        batch_size=args.batch_size,
        sequence_length=args.sequence_length,
        max_predictions=args.max_predictions,
        learning_rate=args.learning_rate,
        warmup_fraction=args.warmup_fraction,
        beta_2=args.beta_2,
        nsp=False if args.no_nsp else None,
        whole_word=True if args.whole_word else None,
        objective=args.objective,
        masking=args.masking,
        packing=args.packing,
        seed=args.seed,
        steps_per_epoch=args.steps_per_epoch,
        strategy=args.strategy,
        tpu=args.tpu,
        gradient_accumulation=args.gradient_accumulation,
    )
    # Under --strategy multiworker every worker runs this command on a shared
    # --out: only the chief writes args.json and removes old outputs.
    chief = args.strategy != "multiworker" or distribute.is_chief_process()
    check_out_apart(
        args.out,
        [
            # A preset name is no path, even if a folder of that name exists.
            ("--config", None if args.config in PRESETS else data_path(args.config)),
            ("--data", data_path(args.data)),
        ],
    )
    # Every input is checked before --out is touched (--force removes old
    # outputs only after that).
    corpus = check_pretrain_inputs(args.config, args.data, config)
    if training_output(args.out, args, args.force, remove=chief) == "finished":
        return report_finished(args.out)
    start_run(args.out, args, chief=chief)
    print(
        f"pre-training ({config.recipe} recipe: {config.objective}, {config.masking} "
        f"masking, {config.packing} packing, batch {config.batch_size}, peak rate "
        f"{config.learning_rate:g}) on {describe_corpus(corpus)}"
    )
    result = pretrain(
        args.config, corpus, args.out, config, verbose=keras_verbosity(args.verbose)
    )
    if "worker" in result:  # not the chief: the chief reports
        print(
            f"{result['worker']}: done ({result['train_examples_per_second']:.0f} "
            "examples/s)"
        )
        return 0
    before, after = result["step_0"], result["trained"]
    for key in after:
        print(
            f"{key}: {before[key]:.3f} at step 0 -> {after[key]:.3f} after {result['steps']} steps "
            f"({result['updates']} updates)"
        )
    print(
        f"input pipeline {result['pipeline_examples_per_second']:.0f} examples/s vs training "
        f"{result['train_examples_per_second']:.0f} examples/s"
    )
    print(f"model: {pathlib.Path(args.out) / 'model'}")
    return 0


DESCRIPTION = (
    "Build BERT pre-training examples from raw text inside tf.data "
    "(sentence pairs, 50% next / 50% random, 15% masking re-drawn each epoch) and "
    "train zoo.Pretrainer with model.fit. --data is a text file, folder or glob "
    "(blank lines separate documents; streamed in groups of files, never held whole), "
    "or `austen`, `wordnet` or `austen+wordnet` for the installed real corpora. "
    "--strategy runs the same command on several devices, workers or a TPU; "
    "--batch-size is the global batch. Re-running the same command resumes after a kill "
    "(a finished run prints its metrics; other arguments are refused).\n\n" + RECIPE_HELP
)
EXAMPLES = help_examples(
    """
    # the CI test's budget: 300 steps, MLM and NSP well above chance
    zoo pretrain --config bert_tiny --data austen+wordnet --out runs/pretrain \\
        --epochs 3 --steps-per-epoch 100 --sequence-length 64 \\
        --max-predictions 10 --learning-rate 1e-3
    zoo pretrain --config models/minilm --data 'shards/*.txt' --out runs/continued \\
        --no-nsp --batch-size 32 --gradient-accumulation 8
    # ALBERT's sentence order; SpanBERT's spans and boundary objective
    zoo pretrain --config bert_tiny --data austen+wordnet --out runs/sop \\
        --objective mlm+sop --sequence-length 64 --learning-rate 1e-3
    zoo pretrain --config bert_tiny --data austen+wordnet --out runs/span \\
        --objective mlm+sbo --sequence-length 64 --learning-rate 1e-3
    # RoBERTa: no NSP, full sentences across documents, batch 128, 6e-4
    zoo pretrain --config bert_tiny --data austen+wordnet --out runs/roberta \\
        --recipe roberta --sequence-length 64
    # two workers (one command per worker, each with its TF_CONFIG; README)
    zoo pretrain --config bert_base --data /shared/shards --out /shared/run \\
        --strategy multiworker --batch-size 256
    """
)


def register(subparsers):
    p = subparsers.add_parser(
        "pretrain",
        help="BERT-family pre-training from raw text: MLM + NSP/SOP/SBO, BERT or RoBERTa "
        "recipe (random init or continued)",
        formatter_class=HelpFormatter,
        description=DESCRIPTION,
        epilog=EXAMPLES,
    )
    p.add_argument(
        "--config",
        required=True,
        help="preset name (random init) or checkpoint/model directory (continued)",
    )
    p.add_argument(
        "--data",
        required=True,
        help="text file, folder or glob (quote it), or austen / wordnet / austen+wordnet",
    )
    add_run_output(p)
    p.add_argument(
        "--recipe",
        choices=list(RECIPES),
        default="bert",
        help="defaults for the flags below (table above); flags you give win",
    )
    _add_objective(p)
    _add_recipe_numbers(p)
    add_run_control(p)
    p.set_defaults(func=run)


def _add_objective(p):
    """What is trained on what: heads, masking, packing (and the two older
    switches that map onto them)."""
    p.add_argument(
        "--objective",
        default=None,
        metavar="mlm[+nsp|+sop][+sbo]",
        help="heads trained: mlm (+nsp: BERT, the bert recipe's default; +sop: "
        "ALBERT's sentence order; +sbo: SpanBERT's span boundary, needs --masking "
        "span); the roberta recipe: mlm",
    )
    p.add_argument(
        "--masking",
        choices=["token", "whole-word", "span"],
        default=None,
        help="what 15%% of the tokens are chosen as: tokens (default), whole words, "
        "or SpanBERT's spans of Geometric(0.2) words clipped at 10 (default with "
        "+sbo)",
    )
    p.add_argument(
        "--packing",
        choices=["sentences", "full"],
        default=None,
        help="sentences: a sentence pair, or a run of one document's sentences "
        "(bert default); full: RoBERTa's FULL-SENTENCES, one segment of whole "
        "sentences across documents, [SEP] between them (roberta default; the "
        "installed corpora only)",
    )
    p.add_argument(
        "--no-nsp",
        action="store_true",
        help="MLM only (DistilBERT recipe); same as --objective mlm",
    )
    p.add_argument(
        "--whole-word",
        action="store_true",
        help="whole-word masking; same as --masking whole-word",
    )


def _add_recipe_numbers(p):
    """The numbers whose defaults come from --recipe (None: the recipe's)."""
    p.add_argument(
        "--epochs", type=int, default=None, help="passes over the corpus (default: 3)"
    )
    p.add_argument(
        "--batch-size",
        type=int,
        default=None,
        help=BATCH_HELP + " (default: 32; roberta recipe: 128)",
    )
    add_gradient_accumulation(p)
    p.add_argument(
        "--sequence-length",
        type=int,
        default=None,
        help="word pieces per example, [CLS] and [SEP] included (default: "
        f"{DEFAULT_SEQUENCE_LENGTH})",
    )
    p.add_argument(
        "--max-predictions",
        type=int,
        default=None,
        help="masked positions per sequence, at most (default: 20); never more than "
        "--sequence-length",
    )
    p.add_argument(
        "--learning-rate",
        type=float,
        default=None,
        help="peak AdamW rate (default 1e-4, for continued pre-training; roberta "
        "recipe 6e-4); bert_tiny from scratch wants about 1e-3 (2e-3 kept NSP at "
        "chance)",
    )
    p.add_argument(
        "--warmup-fraction",
        type=float,
        default=None,
        help="share of the updates warming up (default 0.1; roberta recipe 0.05)",
    )
    p.add_argument(
        "--beta-2",
        type=float,
        default=None,
        help="Adam's beta_2 (default 0.999; roberta recipe 0.98)",
    )
