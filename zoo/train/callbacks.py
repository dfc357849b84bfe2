"""Callbacks every training command shares (finetune, distill, pretrain)."""

from __future__ import annotations

import json
import pathlib

import keras
import numpy as np

from zoo.checkpoints.model_dir import MANIFEST, save_model_dir


class EpochCounter(keras.callbacks.Callback):
    """Publishes the current epoch to the input pipeline (for its shuffle)."""

    def __init__(self, variable):
        super().__init__()
        self.variable = variable

    def on_epoch_begin(self, epoch, logs=None):
        self.variable.assign(epoch)


class BestModelDirectory(keras.callbacks.Callback):
    """Atomically writes the model as a zoo model directory whenever
    `monitor` improves, and stops training once `patience` epochs have passed
    without improvement (Keras's EarlyStopping rule).

    The best value and its epoch are read back from the directory's
    zoo_model.json, so a resumed run compares with the best of the epochs
    before the kill and stops where the uninterrupted one would have (Keras's
    EarlyStopping keeps its count in memory and would start again from zero).
    Without validation data (no `monitor` in the logs) every epoch's model is
    written: the latest is the best known.

    `select(model)` picks what to save from the trained model (a distiller
    saves its `.student`); default the model itself.
    """

    def __init__(self, directory, tokenizer, extra, monitor="val_loss", patience=None,
                 verbose=0, select=None):
        super().__init__()
        self.directory = pathlib.Path(directory)
        self.tokenizer = tokenizer
        self.extra = extra
        self.monitor = monitor
        self.patience = patience
        self.verbose = verbose
        self.select = select
        self.best, self.best_epoch = np.inf, 0
        manifest = self.directory / MANIFEST
        if manifest.is_file():
            best = json.loads(manifest.read_text()).get("best", {})
            value = best.get("value")
            self.best = np.inf if value is None else float(value)
            self.best_epoch = int(best.get("epoch", 0))

    def _save(self, value):
        extra = dict(self.extra, best={"monitor": self.monitor, "value": value,
                                       "epoch": self.best_epoch})
        model = self.model if self.select is None else self.select(self.model)
        save_model_dir(model, self.directory, self.tokenizer, extra=extra)

    def on_epoch_end(self, epoch, logs=None):
        value = (logs or {}).get(self.monitor)
        if value is None:
            self.best_epoch = epoch + 1
            self._save(None)
            return
        if value < self.best:
            self.best, self.best_epoch = float(value), epoch + 1
            self._save(self.best)
        if self.patience is not None and epoch + 1 - self.best_epoch >= self.patience:
            self.model.stop_training = True
            if self.verbose:
                print(f"\nEpoch {epoch + 1}: early stopping ({self.monitor} best "
                      f"{self.best:.4f} at epoch {self.best_epoch}, patience {self.patience})")
