"""The training-only forms of dropout and GELU against Keras's own, in one
process: MiniLM + a 5-way head, batch 16 x 128, AdamW, 2 threads.

Two copies of the same model are traced, one with Keras's dropout and
`tf.nn.gelu` patched back in before its first `fit`, one with the project's
(`zoo.layers.dropout.Dropout`, `zoo.layers.projection.gelu_for_training`);
then `fit` runs on each in interleaved rounds (order alternating), the first
step of every round not counted. Prints examples/s per round, the medians
and their ratio (BUILD_NOTES.md, "Training and distribution").

    python bench/training_step.py [--rounds 6] [--steps 8]
"""

from __future__ import annotations

import argparse

# isort: off
import zoo  # noqa: F401  first: TensorFlow's environment (oneDNN, log level)

# isort: on
import keras
import numpy as np
import tensorflow as tf

from zoo.checkpoints import load_checkpoint
from zoo.datasets.corpora import minilm_checkpoint_dir
from zoo.layers import dropout, projection
from zoo.models import Classifier
from zoo.train.optimization import make_adamw
from zoo.utils.latency import StepTimes

BATCH = 16


def _traced_model(x, y, stock):
    """MiniLM + head, its train step traced with Keras's forms if `stock`."""
    project_call, project_gelu = dropout.Dropout.call, projection.gelu_for_training
    if stock:
        dropout.Dropout.call = keras.layers.Dropout.call
        projection.gelu_for_training = lambda t: projection.gelu(t, "gelu")
    try:
        encoder, _ = load_checkpoint(minilm_checkpoint_dir())
        model = Classifier(encoder, 5, pooling="cls")
        model.compile(
            optimizer=make_adamw(model, 5e-5, 10_000),
            loss={"logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True)},
        )
        model.fit(
            x, y, batch_size=BATCH, epochs=1, steps_per_epoch=2, shuffle=False, verbose=0
        )
    finally:
        dropout.Dropout.call, projection.gelu_for_training = project_call, project_gelu
    return model


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--steps", type=int, default=8, help="fit steps a round (>= 2)")
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.steps < 2:
        parser.error(
            f"--rounds must be >= 1 and --steps >= 2; received {args.rounds}, {args.steps}"
        )
    tf.config.threading.set_intra_op_parallelism_threads(2)
    ids = (
        np.random.default_rng(1)
        .integers(1000, 30000, (BATCH * args.steps, 128))
        .astype("int32")
    )
    x = {
        "token_ids": ids,
        "segment_ids": np.zeros_like(ids),
        "padding_mask": np.ones_like(ids),
    }
    y = {"logits": np.random.default_rng(0).integers(0, 5, len(ids))}
    models = {
        "Keras's dropout and GELU": _traced_model(x, y, stock=True),
        "project's": _traced_model(x, y, stock=False),
    }
    rates = {name: [] for name in models}
    for r in range(args.rounds):
        for name in list(models) if r % 2 == 0 else list(models)[::-1]:
            clock = StepTimes()
            models[name].fit(
                x,
                y,
                batch_size=BATCH,
                epochs=1,
                shuffle=False,
                verbose=0,
                callbacks=[clock],
            )
            rates[name].append(BATCH * len(clock.times[1:]) / sum(clock.times[1:]))
            print(f"round {r + 1}: {name} {rates[name][-1]:.2f} examples/s", flush=True)
    medians = {name: float(np.median(v)) for name, v in rates.items()}
    for name, value in medians.items():
        print(f"{name}: median {value:.2f} examples/s")
    stock, ours = medians.values()
    print(f"project's over Keras's: {ours / stock:.3f}x")


if __name__ == "__main__":
    main()
