"""AdamW with linear warmup and linear decay, no weight decay on LayerNorm
and biases: BERT's fine-tuning optimizer, from Keras's own parts (the
schedule lives in `zoo.utils.schedules`, where model loaders can register it)."""

from __future__ import annotations

import keras

from zoo.utils.schedules import WarmupLinearDecay

# Variable-name fragments excluded from weight decay, as in BERT.
NO_DECAY = ("layer_norm", "LayerNorm", "bias", "beta", "gamma")


def make_adamw(
    model,
    learning_rate,
    total_steps,
    warmup_fraction=0.1,
    weight_decay=0.01,
    clipnorm=1.0,
):
    """AdamW for `model` with BERT's schedule and decay exclusions."""
    schedule = WarmupLinearDecay(
        learning_rate, total_steps, int(round(warmup_fraction * total_steps))
    )
    optimizer = keras.optimizers.AdamW(
        learning_rate=schedule,
        weight_decay=weight_decay,
        beta_1=0.9,
        beta_2=0.999,
        epsilon=1e-6,
        clipnorm=clipnorm,
    )
    optimizer.exclude_from_weight_decay(var_names=list(NO_DECAY))
    return optimizer
