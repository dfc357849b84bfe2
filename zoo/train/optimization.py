"""AdamW with linear warmup and linear decay, no weight decay on LayerNorm
and biases: BERT's fine-tuning optimizer, from Keras's own parts."""

from __future__ import annotations

import keras


@keras.saving.register_keras_serializable(package="zoo")
class WarmupLinearDecay(keras.optimizers.schedules.LearningRateSchedule):
    """0 -> `peak` over `warmup_steps`, then linearly to 0 at `total_steps`."""

    def __init__(self, peak, total_steps, warmup_steps):
        if total_steps < 1:
            raise ValueError(f"total_steps must be >= 1; received {total_steps}.")
        self.peak = float(peak)
        self.total_steps = int(total_steps)
        self.warmup_steps = int(min(warmup_steps, total_steps))

    def __call__(self, step):
        step = keras.ops.cast(step, "float32")
        warm = self.peak * (step + 1.0) / max(self.warmup_steps, 1)
        remaining = max(self.total_steps - self.warmup_steps, 1)
        decay = self.peak * keras.ops.maximum(
            0.0, (self.total_steps - step) / remaining
        )
        return keras.ops.where(step < self.warmup_steps, warm, decay)

    def get_config(self):
        return {
            "peak": self.peak,
            "total_steps": self.total_steps,
            "warmup_steps": self.warmup_steps,
        }


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
