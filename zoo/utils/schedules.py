"""The learning-rate schedule of BERT's optimizer, as a registered Keras
object: a model saved after `compile` carries it in its config, so every
loader of zoo model directories must know it (hence here, below them)."""

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
