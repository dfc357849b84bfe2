"""Measure a masking scheme on real pre-training examples.

    ZOO_ASSETS=.assets python scripts/masking_stats.py --masking span
    python scripts/masking_stats.py --masking token --examples 10000 --sequence-length 128

Builds the examples with `zoo.text.pretraining.pretraining_dataset` (the
training pipeline) from Austen + WordNet glosses with BERT's uncased vocabulary
(MiniLM's vocab.txt), and prints the share of maskable tokens masked, the
mean span length in words against SpanBERT's truncated-geometric mean
(3.797 for p=0.2, max 10), special tokens masked and the 80/10/10 split.
"""

import argparse
import json
import time

from zoo.datasets.corpora import minilm_checkpoint_dir
from zoo.text.masking import truncated_geometric_mean
from zoo.text.pretraining import masking_statistics, pretraining_dataset
from zoo.text.tokenizer import WordPieceTokenizer
from zoo.train.pretrain import corpus_documents


def main(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--masking", choices=["token", "whole-word", "span"], default="span")
    p.add_argument("--examples", type=int, default=10_000)
    p.add_argument("--sequence-length", type=int, default=128)
    p.add_argument("--max-predictions", type=int, default=20)
    p.add_argument(
        "--packing",
        choices=["sentences", "full"],
        default="full",
        help="full (default): whole-length rows, as SpanBERT trained on; "
        "sentences: runs of one document's sentences",
    )
    p.add_argument("--data", default="austen+wordnet")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    started = time.time()
    tokenizer = WordPieceTokenizer(str(minilm_checkpoint_dir() / "vocab.txt"))
    objective = "mlm+sbo" if args.masking == "span" else "mlm"
    dataset = pretraining_dataset(
        corpus_documents(args.data),
        tokenizer,
        sequence_length=args.sequence_length,
        max_predictions=args.max_predictions,
        batch_size=500,
        seed=args.seed,
        objective=objective,
        masking=args.masking,
        packing=args.packing,
        drop_remainder=False,
    )
    stats = masking_statistics(dataset, tokenizer, args.examples)
    stats["geometric_clipped_mean"] = round(truncated_geometric_mean(0.2, 10), 3)
    stats["seconds"] = round(time.time() - started, 1)
    print(json.dumps(stats, indent=2))


if __name__ == "__main__":
    main()
