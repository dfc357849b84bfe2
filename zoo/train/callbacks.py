"""Callbacks every training command shares (finetune, distill, pretrain)."""

from __future__ import annotations

import json
import pathlib
import time

import keras
import numpy as np
import tensorflow as tf

from zoo.checkpoints.model_dir import MANIFEST, save_model_dir
from zoo.train import metrics as task_metrics
from zoo.utils.atomic import atomic_file
from zoo.utils.jsonfile import read_json_object


class EpochCounter(keras.callbacks.Callback):
    """Publishes the current epoch to the input pipeline (for its shuffle),
    and starts every random generator of the model (dropout) at a state
    that depends only on its seed and the epoch: BackupAndRestore does not
    save generator states, so without this a resumed epoch would draw other
    dropout masks than the uninterrupted run."""

    def __init__(self, variable, offset=0, worker=0):
        super().__init__()
        self.variable = variable
        self.offset = int(offset)  # epochs trained by earlier fit calls on the same model
        # The worker's place in a multi-worker cluster: each worker draws its
        # own dropout masks for its share of the global batch (with one seed
        # they would all draw the same).
        self.worker = int(worker)
        self._seeds = None

    def _generators(self):
        for layer in self.model._flatten_layers():  # noqa: SLF001 - Keras's layer walk
            yield from getattr(layer, "_seed_generators", ())

    def on_train_begin(self, logs=None):
        # The seeds as built (from keras.utils.set_random_seed), before any
        # step moved the counters.
        self._seeds = [(g, int(g.state.numpy()[0])) for g in self._generators()]

    def on_epoch_begin(self, epoch, logs=None):
        epoch += self.offset
        self.variable.assign(epoch)
        for generator, seed in self._seeds or ():
            state = np.array(
                [(seed + 1_000_003 * epoch + 104_729 * self.worker) % 2**31, 0]
            )
            generator.state.assign(state.astype(generator.state.dtype))


class BestModelDirectory(keras.callbacks.Callback):
    """Atomically writes the model as a zoo model directory whenever
    `monitor` improves, and stops training once `patience` epochs have passed
    without improvement (Keras's EarlyStopping rule).

    The best value and its epoch are read back from the directory's
    zoo_model.json, so a resumed run compares with the best of the epochs
    before the kill and stops where the uninterrupted one would have (Keras's
    EarlyStopping keeps its count in memory and would start again from zero).
    Without validation data (no `monitor` in the logs) every epoch's model is
    written: the latest is the best known. `mode="max"` for a monitor where
    higher is better (a regressor's `val_spearman`).

    `select(model)` picks what to save from the trained model (a distiller
    saves its `.student`); default the model itself.
    """

    def __init__(
        self,
        directory,
        tokenizer,
        extra,
        monitor="val_loss",
        patience=None,
        verbose=0,
        select=None,
        write=True,
        mode="min",
    ):
        super().__init__()
        if mode not in ("min", "max"):
            raise ValueError(f"BestModelDirectory: mode={mode!r}; expected 'min' or 'max'.")
        # Compared as "lower is better": a "max" monitor is negated.
        self.sign = 1.0 if mode == "min" else -1.0
        # write=False: a multi-worker run's other workers follow the same
        # early-stopping rule (they must stop with the chief) but do not write.
        self.write = write
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
            best = (
                read_json_object(manifest, "re-create the model directory").get("best")
                or {}
            )
            value = best.get("value")
            if best.get("monitor", monitor) != monitor:
                value = None  # another quantity: not comparable with this run's
            self.best = np.inf if value is None else self.sign * float(value)
            self.best_epoch = int(best.get("epoch", 0))

    def _save(self, value):
        if not self.write:
            return
        extra = dict(
            self.extra,
            best={
                "monitor": self.monitor,
                "value": None if value is None else self.sign * value,
                "epoch": self.best_epoch,
            },
        )
        model = self.model if self.select is None else self.select(self.model)
        save_model_dir(model, self.directory, self.tokenizer, extra=extra)

    def on_epoch_end(self, epoch, logs=None):
        value = (logs or {}).get(self.monitor)
        if value is None:
            self.best_epoch = epoch + 1
            self._save(None)
            return
        if self.sign * value < self.best:
            self.best, self.best_epoch = self.sign * float(value), epoch + 1
            self._save(self.best)
        if self.patience is not None and epoch + 1 - self.best_epoch >= self.patience:
            self.model.stop_training = True
            if self.verbose:
                print(
                    f"\nEpoch {epoch + 1}: early stopping ({self.monitor} best "
                    f"{self.sign * self.best:.4f} at epoch {self.best_epoch}, patience "
                    f"{self.patience})"
                )


class HistoryFile(keras.callbacks.Callback):
    """OUT/history.json, written after every epoch and merged by epoch number
    with what an interrupted run wrote: a resumed run keeps the epochs before
    the kill (Keras's `History` holds only this process's epochs) and the
    training time adds up over both.

        {"epochs": [1, 2, 3], "history": {"loss": [...], "val_loss": [...]},
         "epoch_seconds": [...], "seconds": total}
    """

    def __init__(self, path):
        super().__init__()
        self.path = pathlib.Path(path)
        self.rows = {}  # epoch (1-based) -> {"logs": {...}, "seconds": s}
        if self.path.is_file():
            old = read_json_object(self.path, "remove it (or pass --force) to start over")
            for i, epoch in enumerate(old.get("epochs", [])):
                logs = {k: v[i] for k, v in old.get("history", {}).items() if i < len(v)}
                seconds = old.get("epoch_seconds", [])
                self.rows[int(epoch)] = {
                    "logs": logs,
                    "seconds": seconds[i] if i < len(seconds) else None,
                }
        self._started = None

    def on_epoch_begin(self, epoch, logs=None):
        self._started = time.time()

    def on_epoch_end(self, epoch, logs=None):
        seconds = None if self._started is None else time.time() - self._started
        self.rows[epoch + 1] = {
            "logs": {k: float(v) for k, v in (logs or {}).items()},
            "seconds": seconds,
        }
        self.write()

    def summary(self) -> dict:
        epochs = sorted(self.rows)
        keys = sorted({k for row in self.rows.values() for k in row["logs"]})
        seconds = [self.rows[e]["seconds"] for e in epochs]
        return {
            "epochs": epochs,
            "history": {k: [self.rows[e]["logs"].get(k) for e in epochs] for k in keys},
            "epoch_seconds": [None if s is None else round(s, 2) for s in seconds],
            "seconds": round(sum(s for s in seconds if s is not None), 1),
        }

    def write(self):
        with atomic_file(self.path, "w") as f:
            json.dump(self.summary(), f, indent=2)


class Throughput(keras.callbacks.Callback):
    """Adds each epoch's training speed to its logs (and so to history.json):
    `examples_per_second` and `tokens_per_second` of the whole run (every
    replica of every worker: the global batch), and
    `worker_examples_per_second`, this worker's share. The clock runs from
    the epoch's start to its last training step (validation excluded).
    Tokens are the real (non-padding) tokens of the batches, counted by
    `count_tokens` on the global batches the input pipeline yields.

        throughput = Throughput(global_batch_size=32, num_workers=2)
        model.fit(throughput.count_tokens(train), callbacks=[throughput, history])

    Put it before the callbacks that record the logs."""

    def __init__(self, global_batch_size, num_workers=1):
        super().__init__()
        self.global_batch_size = int(global_batch_size)
        self.num_workers = int(num_workers)
        self.tokens = tf.Variable(0, dtype=tf.int64, trainable=False)
        self._started = self._last = None
        self._steps = 0

    def count_tokens(self, dataset):
        """`dataset` (of `(inputs, ...)` batches with a `padding_mask`),
        adding each batch's real tokens to the counter as it is read."""
        counter = self.tokens

        def count(*batch):
            mask = batch[0]["padding_mask"]
            with tf.control_dependencies(
                [counter.assign_add(tf.reduce_sum(tf.cast(mask, tf.int64)))]
            ):
                return tf.nest.map_structure(tf.identity, batch)

        return dataset.map(count)

    def on_epoch_begin(self, epoch, logs=None):
        self.tokens.assign(0)
        self._started = self._last = time.perf_counter()
        self._steps = 0

    def on_train_batch_end(self, batch, logs=None):
        self._steps += 1
        self._last = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        if logs is None or not self._steps:
            return
        seconds = max(self._last - self._started, 1e-9)
        examples = self._steps * self.global_batch_size
        logs["examples_per_second"] = examples / seconds
        logs["worker_examples_per_second"] = examples / self.num_workers / seconds
        logs["tokens_per_second"] = int(self.tokens.numpy()) / seconds


class ValidationCorrelation(keras.callbacks.Callback):
    """Adds `val_pearson` and `val_spearman` of a regression head's `score`
    output on `dataset` (batches of `(inputs, {"score": target})`) to each
    epoch's logs, and so to history.json. Correlations are over the whole
    split (Spearman needs every prediction's rank), so they are computed on
    the host after the epoch rather than as a streaming Keras metric. Put it
    before the callbacks that record or select on the logs."""

    def __init__(self, dataset):
        super().__init__()
        self.dataset = dataset
        self.targets = np.concatenate([y["score"].numpy() for _, y in dataset])

    def on_epoch_end(self, epoch, logs=None):
        if logs is None:
            return
        predicted = self.model.predict(self.dataset.map(lambda x, y: x), verbose=0)["score"]
        logs["val_pearson"] = task_metrics.pearson(self.targets, predicted)
        logs["val_spearman"] = task_metrics.spearman(self.targets, predicted)
