"""Per-step training curves for `model.fit`, saved as JSON beside a run.

Keras reports, after each batch, the running mean of every metric since the
epoch began. `StepCurve` turns those back into the value of each step
(k * mean_k - (k - 1) * mean_{k-1}) and adds the epoch-end validation
figures, so a plot shows what each step did rather than a smoothed mean
that resets every epoch.
"""

from __future__ import annotations

import json
import pathlib

import keras

from zoo.utils.atomic import atomic_file


class StepCurve(keras.callbacks.Callback):
    """Write `{"steps": [...], "epochs": [...]}` to `path` after every epoch.

    `steps` rows hold `step` (global), `epoch` and each training metric of
    that step; `epochs` rows hold the epoch-end logs (incl. `val_*`). A run
    resumed by `BackupAndRestore` keeps the rows of the epochs it finished.
    """

    def __init__(self, path):
        super().__init__()
        self.path = pathlib.Path(path)
        self.steps, self.epochs = [], []
        if self.path.is_file():
            saved = json.loads(self.path.read_text(encoding="utf-8"))
            self.steps, self.epochs = saved.get("steps", []), saved.get("epochs", [])

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch
        self._means = {}
        self.steps = [r for r in self.steps if r["epoch"] < epoch]
        self.epochs = [r for r in self.epochs if r["epoch"] < epoch]

    def on_train_batch_end(self, batch, logs=None):
        k = batch + 1
        row = {
            "step": (self.steps[-1]["step"] + 1) if self.steps else 1,
            "epoch": self._epoch,
        }
        for key, value in (logs or {}).items():
            try:
                mean = float(value)
            except (TypeError, ValueError):
                continue
            row[key] = k * mean - (k - 1) * self._means.get(key, 0.0)
            self._means[key] = mean
        self.steps.append(row)

    def on_epoch_end(self, epoch, logs=None):
        row = {"epoch": epoch, "step": self.steps[-1]["step"] if self.steps else 0}
        for key, value in (logs or {}).items():
            try:
                row[key] = float(value)
            except (TypeError, ValueError):
                continue
        self.epochs.append(row)
        with atomic_file(self.path, "w") as f:
            json.dump({"steps": self.steps, "epochs": self.epochs}, f)
