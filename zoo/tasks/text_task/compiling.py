"""`compile` for the text models: fine-tuning defaults (AdamW under BERT's
schedule, rebuilt for each `fit` call's steps; the task's loss and
metrics), and the compile config saved and restored with the model."""

from __future__ import annotations

import keras

from zoo.train.finetune import task_losses
from zoo.train.optimization import make_adamw


class CompileMixin:
    """The text models' compile: `auto` settings kept until `fit` knows its
    number of steps, and a saved model compiled again at its first
    fit/evaluate."""

    # --- compile -------------------------------------------------------------------------

    def compile(
        self,
        optimizer="auto",
        loss="auto",
        metrics="auto",
        *,
        learning_rate=5e-5,
        warmup_fraction=0.1,
        weight_decay=0.01,
        **kwargs,
    ):
        """Keras's `compile`, with defaults for fine-tuning: `optimizer="auto"`
        gives each `fit` call AdamW with BERT's warmup-and-linear-decay
        schedule over that call's steps (`learning_rate`, `warmup_fraction`,
        `weight_decay`); `loss`/`metrics` `"auto"`: cross-entropy on the
        logits and accuracy, as `zoo finetune`. A text model that was never
        compiled compiles with these defaults at its first `fit`/`evaluate`."""
        default_loss, default_metrics = task_losses(self.task)
        loss = default_loss if isinstance(loss, str) and loss == "auto" else loss
        metrics = (
            default_metrics if isinstance(metrics, str) and metrics == "auto" else metrics
        )
        self._auto_optimizer = None
        if isinstance(optimizer, str) and optimizer == "auto":
            if not learning_rate > 0:
                raise ValueError(
                    f"compile: learning_rate must be > 0; received {learning_rate}."
                )
            self._auto_optimizer = [
                float(learning_rate),
                float(warmup_fraction),
                float(weight_decay),
            ]
            # Replaced at `fit`, when the number of steps is known.
            optimizer = keras.optimizers.AdamW(learning_rate, weight_decay=weight_decay)
        self._compile_args = dict(loss=loss, metrics=metrics, **kwargs)
        super().compile(optimizer=optimizer, **self._compile_args)

    def _ensure_compiled(self):
        if self._compile_args is None:
            saved = getattr(self, "_saved_compile", None)
            if saved is None:
                self.compile()
            elif "auto" in saved:
                keras_config = keras.saving.deserialize_keras_object(saved["keras"])
                keras_config.pop("optimizer", None)
                self.compile(optimizer="auto", **keras_config, **saved["auto"])
            else:
                self.compile(**keras.saving.deserialize_keras_object(saved["keras"]))

    def _schedule_for(self, total_steps):
        self._ensure_compiled()
        if self._auto_optimizer is None:
            return
        learning_rate, warmup, decay = self._auto_optimizer
        optimizer = make_adamw(self, learning_rate, max(1, int(total_steps)), warmup, decay)
        super().compile(optimizer=optimizer, **self._compile_args)
        # Built before fit (BackupAndRestore restores into it; see build_for_fit).
        optimizer.build(self.trainable_variables)

    def get_compile_config(self):
        if self._compile_args is None:
            # Loaded and not compiled since: what it was saved with.
            return getattr(self, "_saved_compile", None)
        config = {"keras": super().get_compile_config()}
        if self._auto_optimizer is not None:
            # Each fit builds its own schedule: the optimizer is not restored,
            # its settings are (with the loss and metrics).
            learning_rate, warmup, decay = self._auto_optimizer
            config["auto"] = {
                "learning_rate": learning_rate,
                "warmup_fraction": warmup,
                "weight_decay": decay,
            }
        return config

    def compile_from_config(self, config):
        if "auto" in config:
            # Compiled at the first fit/evaluate, with the saved settings.
            self._saved_compile = config
            return
        self.compile(**keras.saving.deserialize_keras_object(config["keras"]))
        if self.built:
            self.optimizer.build(self.trainable_variables)
