"""BERT's optimizer and its learning-rate schedule, as registered Keras
objects: a model saved after `compile` carries them in its config, so every
loader of zoo model directories must know them (hence here, below them)."""

from __future__ import annotations

import keras


@keras.saving.register_keras_serializable(package="zoo")
class AdamW(keras.optimizers.AdamW):
    """`keras.optimizers.AdamW` with each embedding gradient summed per row
    before the update.

    An embedding's gradient is a `tf.IndexedSlices` with one slice per
    occurrence of a token in the batch. Keras 3.15's Adam (TensorFlow
    backend) squares those slices one by one (`ops.square` keeps them
    sparse), so a token seen k times gets the sum of its squared slices in
    the second moment instead of the square of their sum, and the clip norm
    is computed the same way: on the first step a row seen twice moved
    lr x sqrt(2) instead of lr. The rest of the update is dense already
    (`ops.subtract` densifies the slices), so densifying first costs no
    sparsity and gives Adam's update, the one a dense gradient (PyTorch's
    default) gets. On JAX and PyTorch, gradients are dense already.

    On TensorFlow the step is TensorFlow's fused Adam kernel; on JAX and
    PyTorch, Keras's own (the same formula; issue #39)."""

    def apply(self, grads, trainable_variables=None):
        if keras.backend.backend() != "tensorflow":
            return super().apply(grads, trainable_variables)
        # TensorFlow-only branch (the backend is TensorFlow here, so it is loaded).
        import tensorflow as tf

        grads = [
            tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g for g in grads
        ]
        return super().apply(grads, trainable_variables)

    def update_step(self, gradient, variable, learning_rate):
        """Keras's Adam step as TensorFlow's fused `ResourceApplyAdam`: the
        same formula (alpha = lr * sqrt(1 - beta_2^t) / (1 - beta_1^t);
        m += (g - m)(1 - beta_1); v += (g^2 - v)(1 - beta_2);
        var -= alpha * m / (sqrt(v) + epsilon)) in one pass over the
        variable and its moments instead of about ten element-wise ops, each
        a pass over memory. Weight decay is applied before, by Keras, as
        before; AMSGrad and other backends keep Keras's own step."""
        if self.amsgrad or keras.backend.backend() != "tensorflow":
            return super().update_step(gradient, variable, learning_rate)
        # TensorFlow-only branch (the backend is TensorFlow here, so it is loaded).
        import tensorflow as tf

        dtype = variable.dtype
        index = self._get_variable_index(variable)
        step = tf.cast(self.iterations + 1, dtype)
        tf.raw_ops.ResourceApplyAdam(
            var=variable.handle,
            m=self._momentums[index].handle,
            v=self._velocities[index].handle,
            beta1_power=tf.pow(tf.cast(self.beta_1, dtype), step),
            beta2_power=tf.pow(tf.cast(self.beta_2, dtype), step),
            lr=tf.cast(learning_rate, dtype),
            beta1=tf.cast(self.beta_1, dtype),
            beta2=tf.cast(self.beta_2, dtype),
            epsilon=tf.cast(self.epsilon, dtype),
            grad=tf.cast(gradient, dtype),
            use_locking=False,
        )


@keras.saving.register_keras_serializable(package="zoo")
class WarmupLinearDecay(keras.optimizers.schedules.LearningRateSchedule):
    """0 -> `peak` over `warmup_steps`, then linearly to 0 at `total_steps`.

    Steps count optimizer updates. Keras evaluates a schedule at its
    batch counter, which with gradient accumulation over N batches runs N
    times faster than the updates: `steps_per_update` N maps it back."""

    def __init__(self, peak, total_steps, warmup_steps, steps_per_update=1):
        if total_steps < 1:
            raise ValueError(f"total_steps must be >= 1; received {total_steps}.")
        self.peak = float(peak)
        self.total_steps = int(total_steps)
        self.warmup_steps = int(min(warmup_steps, total_steps))
        self.steps_per_update = int(steps_per_update)

    def __call__(self, step):
        if self.steps_per_update > 1:
            step = keras.ops.floor_divide(step, self.steps_per_update)
        step = keras.ops.cast(step, "float32")
        warm = self.peak * (step + 1.0) / max(self.warmup_steps, 1)
        remaining = max(self.total_steps - self.warmup_steps, 1)
        decay = self.peak * keras.ops.maximum(0.0, (self.total_steps - step) / remaining)
        return keras.ops.where(step < self.warmup_steps, warm, decay)

    def get_config(self):
        return {
            "peak": self.peak,
            "total_steps": self.total_steps,
            "warmup_steps": self.warmup_steps,
            "steps_per_update": self.steps_per_update,
        }
