"""AdamW with linear warmup and linear decay, no weight decay on LayerNorm
and biases: BERT's fine-tuning optimizer, from Keras's own parts (the
schedule lives in `zoo.utils.schedules`, where model loaders can register it)."""

from __future__ import annotations

import dataclasses
import math

import keras
import numpy as np
import tensorflow as tf

from zoo.utils.schedules import AdamW, WarmupLinearDecay

# Without --epochs the number of passes grows with the data: at least
# AUTO_EPOCHS (BERT's fine-tuning recipe, enough for a large set) and at
# least AUTO_MIN_UPDATES optimizer updates (a 400-text set gives 25 updates
# an epoch at batch 16: three epochs left a distilled student at 96% of its
# teacher where six kept 99.5%), at most AUTO_MAX_EPOCHS. Early stopping
# on validation (--patience) ends a run sooner; the best epoch is kept.
AUTO_EPOCHS = 3
AUTO_MIN_UPDATES = 300
AUTO_MAX_EPOCHS = 20

# Variable-name fragments excluded from weight decay, as in BERT.
NO_DECAY = ("layer_norm", "LayerNorm", "bias", "beta", "gamma")


# A run's numbers are bounded by what they become, not only by sign: a
# sequence holds [CLS], a word piece and [SEP]; counts fit TensorFlow's int32
# shapes and counters; a seed is numpy's (32 bits); a rate or decay is a
# float32 in the optimizer, and AdamW multiplies each weight by
# 1 - rate * decay every update.
MIN_SEQUENCE_LENGTH = 3
MAX_COUNT = 2**31 - 1
MAX_SEED = 2**32 - 1
FLOAT32_MAX = float(np.finfo(np.float32).max)
FLOAT32_TINY = float(np.finfo(np.float32).tiny)


def _flag(name):
    return f"--{name.replace('_', '-')}"


def check_training_numbers(
    config,
    integers=("epochs", "batch_size", "sequence_length", "gradient_accumulation"),
    min_sequence_length=MIN_SEQUENCE_LENGTH,
):
    """Refuse a training run's numbers before anything is written: each of
    `integers` (and `steps_per_epoch`, when set) an integer in
    1..MAX_COUNT, the sequence length at least `min_sequence_length`, the
    seed (when the config has one) in 0..MAX_SEED, a learning rate that is
    a float32 above 0, a warmup fraction in [0, 1] and a weight decay >= 0
    whose product with the rate is below 1. The error names the flag and
    the value received."""
    for name in (*integers, "steps_per_epoch"):
        value = getattr(config, name, None)
        if value is None and name in ("steps_per_epoch", "epochs"):  # unset: chosen later
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(
                f"{_flag(name)} must be a positive integer; received {value!r}."
            )
        if value > MAX_COUNT:
            raise ValueError(
                f"{_flag(name)} must be at most {MAX_COUNT:,} (TensorFlow counts in "
                f"32 bits); received {value:.6g}."
            )
    length = getattr(config, "sequence_length", None)
    if "sequence_length" in integers and length < min_sequence_length:
        raise ValueError(
            f"--sequence-length must be at least {min_sequence_length} ("
            + (
                "[CLS], a word piece and [SEP]"
                if min_sequence_length == MIN_SEQUENCE_LENGTH
                else "room for the pre-training examples' text and special tokens"
            )
            + f"); received {length}."
        )
    seed = getattr(config, "seed", None)
    if seed is not None and (
        isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED
    ):
        raise ValueError(f"--seed must be an integer in 0..{MAX_SEED}; received {seed!r}.")
    checks = (
        (
            "learning_rate",
            lambda v: math.isfinite(v) and FLOAT32_TINY <= v <= FLOAT32_MAX,
            f"a finite number > 0 that float32 holds ({FLOAT32_TINY:.3g} to "
            f"{FLOAT32_MAX:.3g})",
        ),
        ("warmup_fraction", lambda v: 0 <= v <= 1, "in [0, 1]"),
        (
            "weight_decay",
            lambda v: math.isfinite(v) and 0 <= v <= FLOAT32_MAX,
            "a finite number >= 0",
        ),
    )
    for name, ok, expected in checks:
        value = getattr(config, name, None)
        if value is not None and not ok(value):
            raise ValueError(f"{_flag(name)} must be {expected}; received {value!r}.")
    accumulation = getattr(config, "gradient_accumulation", 1)
    cap = getattr(config, "steps_per_epoch", None)
    if cap is not None:
        # The most steps the run can make; the data may give fewer, which
        # `make_adamw` refuses once they are counted.
        most = cap * (getattr(config, "epochs", None) or AUTO_EPOCHS)
        if accumulation > most:
            raise ValueError(accumulation_message(accumulation, most))
    rate = getattr(config, "learning_rate", None)
    decay = getattr(config, "weight_decay", None)
    if rate is not None and decay is not None and rate * decay >= 1:
        raise ValueError(
            f"--learning-rate {rate:g} with --weight-decay {decay:g}: AdamW multiplies "
            f"each weight by 1 - rate x decay every update, here {1 - rate * decay:.3g}, "
            "which drives the weights through zero; lower --learning-rate (BERT "
            "fine-tunes at 2e-5 to 5e-5) or --weight-decay (BERT's is 0.01; 0 turns it off)."
        )


def accumulation_message(accumulation, steps):
    return (
        f"--gradient-accumulation {accumulation}: the run makes at most {steps} training "
        f"step(s) in all, fewer than the {accumulation} whose gradients make one update, "
        "so the weights would never change; lower --gradient-accumulation, or train "
        "longer (--epochs, --steps-per-epoch)."
    )


def training_epochs(epochs, steps, gradient_accumulation=1, capped=False):
    """`(epochs, why)`: the passes a run makes over `steps` batches an
    epoch. `epochs` when given (--epochs pins it); else the budget rule of
    AUTO_EPOCHS / AUTO_MIN_UPDATES / AUTO_MAX_EPOCHS, and AUTO_EPOCHS when
    the epochs are `capped` (--steps-per-epoch: a run sized by hand).
    `why` is one plain sentence a run prints and records."""
    if epochs is not None:
        return epochs, f"{epochs} epochs, as given (--epochs, or the config's epochs)"
    if capped:
        return AUTO_EPOCHS, (
            f"{AUTO_EPOCHS} epochs (the default with --steps-per-epoch; --epochs N pins it)"
        )
    updates = max(1, math.ceil(steps / gradient_accumulation))
    chosen = min(AUTO_MAX_EPOCHS, max(AUTO_EPOCHS, math.ceil(AUTO_MIN_UPDATES / updates)))
    return chosen, (
        f"{chosen} epochs at most, chosen for {updates} updates an epoch: at least "
        f"{AUTO_EPOCHS} epochs and {AUTO_MIN_UPDATES} updates, at most {AUTO_MAX_EPOCHS} "
        "epochs; early stopping on validation may end it sooner (--epochs N pins it)"
    )


def chosen_schedule(config, steps, patience, announce):
    """`(config with its epochs set, the schedule record)` for a run of
    `steps` batches an epoch: `training_epochs` on `config`, said in one
    line when `announce` (patience None: no validation data, so no early
    stopping). The record goes into the run's metrics.json."""
    epochs, why = training_epochs(
        config.epochs,
        steps,
        config.gradient_accumulation,
        capped=config.steps_per_epoch is not None,
    )
    if announce:
        stop = (
            f"patience {patience}" if patience else "no validation data: every epoch runs"
        )
        print(f"epochs: {why}; {stop}", flush=True)
    record = {"epochs": epochs, "why": why, "patience": patience}
    return dataclasses.replace(config, epochs=epochs), record


def make_adamw(
    model,
    learning_rate,
    total_steps,
    warmup_fraction=0.1,
    weight_decay=0.01,
    clipnorm=1.0,
    gradient_accumulation=1,
    beta_2=0.999,
):
    """AdamW for `model` with BERT's schedule and decay exclusions.

    `total_steps` counts training steps (batches). With
    `gradient_accumulation` N > 1 the optimizer averages the gradients of N
    steps into one update (Keras's `gradient_accumulation_steps`) and the
    schedule counts updates (total_steps / N, rounded up): N steps of
    batch B train as one step of batch N x B; fewer than N steps in all
    are refused (no update would be made). `beta_2` is Adam's (0.999,
    BERT's; RoBERTa's recipe takes 0.98)."""
    n = int(gradient_accumulation)
    if n > int(total_steps):
        # Keras applies the accumulated gradients every n-th step only: the
        # run would end with the weights it started from.
        raise ValueError(accumulation_message(n, int(total_steps)))
    updates = -(-int(total_steps) // n)
    schedule = WarmupLinearDecay(
        learning_rate, updates, int(round(warmup_fraction * updates)), steps_per_update=n
    )
    optimizer = AdamW(
        learning_rate=schedule,
        weight_decay=weight_decay,
        beta_1=0.9,
        beta_2=beta_2,
        epsilon=1e-6,
        clipnorm=clipnorm,
        gradient_accumulation_steps=n if n > 1 else None,
    )
    optimizer.exclude_from_weight_decay(var_names=list(NO_DECAY))
    return optimizer


def build_for_fit(model, element_spec, variables=None):
    """Create, before `fit`, every variable Keras would otherwise create
    inside the first trace of the train step: the optimizer's slots (over
    `variables`, default the model's trainable ones), the compiled metrics'
    totals and the compiled loss's per-output trackers.

    Keras's TensorFlow trainer builds these lazily, inside the traced step,
    unless a tf.distribute strategy is in scope; a `tf.function` that
    creates variables is traced a second time, so each plain `fit` traced
    its whole train step twice (BUILD_NOTES.md, "Training and distribution"). The
    metrics and trackers are built on one all-zero batch shaped like
    `element_spec` (the dataset's) and then reset: no data is read, so the
    dataset's shuffling is untouched. Under a strategy Keras builds them
    itself, symbolically, and only the optimizer is built here."""
    model.optimizer.build(model.trainable_variables if variables is None else variables)
    if tf.distribute.has_strategy():
        return

    def zeros(spec):
        shape = [1 if d is None else d for d in spec.shape]
        if spec.dtype == tf.string:
            return tf.fill(shape, "")
        return tf.zeros(shape, spec.dtype)

    x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(
        tf.nest.map_structure(zeros, element_spec)
    )
    y_pred = model(x, training=False)
    model.compute_loss(x, y, y_pred, sample_weight, training=False)  # per-output trackers
    model.compute_metrics(x, y, y_pred, sample_weight)
    model.reset_metrics()
