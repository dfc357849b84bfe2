"""The untuned baseline for `zoo finetune --task regress` on WordNet STS:
cosine of frozen mean-pooled all-MiniLM-L6-v2 embeddings.

    .venv/bin/python bench/wordnet_sts.py [--model DIR] [--sequence-length 64]
        [--finetuned runs/sts/metrics.json] [--out runs/wordnet_sts_baseline.json]

On the test split of `zoo.datasets.wordnet_sts` (the split `--data wordnet-sts`
reads) each pair's two definitions are embedded separately (mean pooling
over real tokens, L2-normalised: `zoo.models.sentence_embedding`) and scored
by their cosine. Pearson and Spearman are unchanged by any increasing linear
map, so they are the cosine's own; for MSE the cosine is put on the 0..5
scale two ways: `5 * max(cos, 0)`, and an affine map `a * cos + b` fitted by
least squares on the validation split (the test split is scored once).
`--finetuned` prints a fine-tuned run's test metrics beside it. A
measurement, not a test: nothing here asserts a figure.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time

import numpy as np

from zoo.checkpoints import load_checkpoint
from zoo.datasets.corpora import minilm_checkpoint_dir
from zoo.models.sentence_embedding import pair_cosines
from zoo.text.readers import wordnet_sts_examples
from zoo.train.metrics import regression_scores
from zoo.utils.atomic import atomic_file


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--model",
        type=pathlib.Path,
        default=None,
        help="checkpoint (default: the installed all-MiniLM-L6-v2)",
    )
    parser.add_argument("--sequence-length", type=int, default=64)
    parser.add_argument(
        "--finetuned",
        type=pathlib.Path,
        default=None,
        help="metrics.json of a `zoo finetune --task regress` run to compare",
    )
    parser.add_argument("--out", type=pathlib.Path, default=None)
    args = parser.parse_args(argv)
    t0 = time.time()
    encoder, tokenizer = load_checkpoint(args.model or minilm_checkpoint_dir())
    splits = wordnet_sts_examples()

    def cosines(examples):
        return pair_cosines(
            encoder,
            tokenizer,
            [e.text for e in examples],
            [e.text_b for e in examples],
            args.sequence_length,
        )

    val_cos, test_cos = cosines(splits["validation"]), cosines(splits["test"])
    val_y = np.array([e.score for e in splits["validation"]])
    test_y = np.array([e.score for e in splits["test"]])
    a, b = np.polyfit(val_cos, val_y, 1)
    result = {
        "split": f"wordnet-sts test ({len(test_y)} pairs)",
        "sequence_length": args.sequence_length,
        "cosine_5x": regression_scores(test_y, 5 * np.maximum(test_cos, 0)),
        "cosine_affine_on_validation": {
            **regression_scores(test_y, a * test_cos + b),
            "a": float(a),
            "b": float(b),
        },
        "seconds": round(time.time() - t0, 1),
    }
    if args.finetuned:
        tuned = json.loads(args.finetuned.read_text())
        result["finetuned"] = {k: tuned[k] for k in ("pearson", "spearman", "mse")}
    for name in ("cosine_5x", "cosine_affine_on_validation", "finetuned"):
        if name in result:
            r = result[name]
            print(
                f"{name:<30} pearson {r['pearson']:.4f}  spearman {r['spearman']:.4f}  "
                f"mse {r['mse']:.4f}"
            )
    if args.out:
        with atomic_file(args.out, "w") as f:
            json.dump(result, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
