"""`zoo distill`'s own defaults (learning rate, patience): the same in the
command line and in `DistillConfig`, apart from `zoo finetune`'s, and
pinned by their flags."""

from zoo.cli import build_parser
from zoo.distill.pipeline import DISTILL_LEARNING_RATE, DISTILL_PATIENCE, DistillConfig
from zoo.train.finetune import FinetuneConfig

DISTILL = [
    "distill",
    "--teacher",
    "t",
    "--data",
    "d",
    "--student-layers",
    "3",
    "--out",
    "o",
]
FINETUNE = ["finetune", "--model", "m", "--data", "d", "--task", "classify", "--out", "o"]


def test_distill_defaults_differ_from_finetune_and_flags_pin_them():
    parser = build_parser()
    args = parser.parse_args(DISTILL)
    config = DistillConfig(student_layers=3)
    # The measured defaults (bench/small_data.py --dev), in both places.
    assert (args.learning_rate, args.patience) == (DISTILL_LEARNING_RATE, DISTILL_PATIENCE)
    assert (config.learning_rate, config.patience) == (
        DISTILL_LEARNING_RATE,
        DISTILL_PATIENCE,
    )
    assert DISTILL_LEARNING_RATE == 2e-4
    # Fine-tuning keeps BERT's 5e-5.
    finetune = parser.parse_args(FINETUNE)
    assert finetune.learning_rate == FinetuneConfig().learning_rate == 5e-5
    # The flags pin them.
    pinned = parser.parse_args([*DISTILL, "--learning-rate", "5e-5", "--patience", "7"])
    assert (pinned.learning_rate, pinned.patience) == (5e-5, 7)
