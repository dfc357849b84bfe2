"""MLM accuracy against steps: the RoBERTa recipe against the BERT recipe in
the same budget (same model, corpus, steps, batch, sequence length and peak
rate), both scored every epoch on ONE fixed probe of MLM-only examples
(runs of one document's sentences, token masking, seed 12345), so the two
curves are comparable.

    ZOO_ASSETS=.assets python scripts/recipe_curves.py --out runs/recipes
    python scripts/recipe_curves.py --steps-per-epoch 50 --epochs 6 --batch-size 32

Each recipe keeps what makes it itself (objective, packing, warmup, Adam
beta_2); `--batch-size` and `--learning-rate` are set equal for both (the
recipes' own defaults, 32/1e-4 and 128/6e-4, are for real pre-training,
not a few hundred steps of bert_tiny). Prints and writes curves.json.
"""

import argparse
import json
import pathlib
import time

# isort: off
import zoo  # noqa: F401  first: TensorFlow's environment (oneDNN, log level)

# isort: on
import keras

from zoo.datasets.corpora import minilm_checkpoint_dir
from zoo.text.pretraining import pretraining_dataset
from zoo.text.tokenizer import WordPieceTokenizer
from zoo.train.pretrain import PretrainConfig, _accuracy, corpus_documents, pretrain
from zoo.utils.atomic import atomic_file


class ProbeCurve(keras.callbacks.Callback):
    def __init__(self, probe, batches, steps_per_epoch):
        super().__init__()
        self.probe, self.batches, self.steps_per_epoch = probe, batches, steps_per_epoch
        self.points = []

    def _score(self, step):
        acc = _accuracy(self.model, self.probe, self.batches)["mlm_accuracy"]
        self.points.append([step, round(acc, 4)])
        print(f"  step {step}: probe MLM accuracy {acc:.4f}", flush=True)

    def on_train_begin(self, logs=None):
        self._score(0)

    def on_epoch_end(self, epoch, logs=None):
        self._score((epoch + 1) * self.steps_per_epoch)


def main(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--out", type=pathlib.Path, default=pathlib.Path("runs/recipes"))
    p.add_argument("--config", default="bert_tiny")
    p.add_argument("--data", default="austen+wordnet")
    p.add_argument("--epochs", type=int, default=6)
    p.add_argument("--steps-per-epoch", type=int, default=50)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--sequence-length", type=int, default=64)
    p.add_argument("--max-predictions", type=int, default=10)
    p.add_argument("--learning-rate", type=float, default=1e-3)
    p.add_argument("--probe-batches", type=int, default=20)
    p.add_argument("--recipes", nargs="+", default=["bert", "roberta"])
    args = p.parse_args(argv)
    documents = corpus_documents(args.data)
    tokenizer = WordPieceTokenizer(str(minilm_checkpoint_dir() / "vocab.txt"))
    probe = (
        pretraining_dataset(
            documents,
            tokenizer,
            sequence_length=args.sequence_length,
            max_predictions=args.max_predictions,
            batch_size=args.batch_size,
            seed=12345,
            objective="mlm",
        )
        .take(args.probe_batches)
        .cache()
    )
    curves = {}
    for recipe in args.recipes:
        config = PretrainConfig.for_recipe(
            recipe,
            epochs=args.epochs,
            steps_per_epoch=args.steps_per_epoch,
            batch_size=args.batch_size,
            sequence_length=args.sequence_length,
            max_predictions=args.max_predictions,
            learning_rate=args.learning_rate,
        )
        print(
            f"{recipe}: {config.objective}, {config.packing} packing, warmup "
            f"{config.warmup_fraction}, beta_2 {config.beta_2}",
            flush=True,
        )
        curve = ProbeCurve(probe, args.probe_batches, args.steps_per_epoch)
        started = time.time()
        result = pretrain(
            args.config, documents, args.out / recipe, config, callbacks=[curve], verbose=0
        )
        curves[recipe] = {
            "probe_mlm_accuracy": curve.points,
            "own_probe": result["trained"],
            "seconds": round(time.time() - started, 1),
            "settings": {
                k: getattr(config, k)
                for k in (
                    "objective",
                    "packing",
                    "masking",
                    "batch_size",
                    "learning_rate",
                    "warmup_fraction",
                    "beta_2",
                    "sequence_length",
                )
            },
        }
    args.out.mkdir(parents=True, exist_ok=True)
    with atomic_file(args.out / "curves.json", "w") as f:
        json.dump(curves, f, indent=2)
    print(json.dumps({k: v["probe_mlm_accuracy"] for k, v in curves.items()}))


if __name__ == "__main__":
    main()
