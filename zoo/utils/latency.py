"""Batch-1 latency of a Keras model, the way the demo and the benchmarks
measure it (one warm-up call, then the median of `runs` calls), and the
wall time of each training step `fit` runs."""

from __future__ import annotations

import time

import keras
import numpy as np
import tensorflow as tf


class StepTimes(keras.callbacks.Callback):
    """The wall time (s) of every training step `fit` runs, in `times`."""

    def __init__(self):
        super().__init__()
        self.times = []

    def on_train_batch_begin(self, batch, logs=None):
        self._t0 = time.perf_counter()

    def on_train_batch_end(self, batch, logs=None):
        self.times.append(time.perf_counter() - self._t0)


def keras_latency_ms(model, length, runs=20):
    """Median batch-1 latency (ms) of a zoo task model in a `tf.function`, on
    `length` tokens, after one warm-up call."""
    x = {
        "token_ids": tf.ones((1, length), tf.int32),
        "segment_ids": tf.zeros((1, length), tf.int32),
        "padding_mask": tf.ones((1, length), tf.int32),
    }

    @tf.function(autograph=False)
    def fn(x):
        return model(x, training=False)

    fn(x)
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        out = fn(x)
        np.asarray(out["logits"])
        times.append(time.perf_counter() - t0)
    return 1000 * float(np.median(times))


def interleaved_latency_ms(calls, rounds=30, warmup=5):
    """Median time (ms) of each zero-argument callable in `calls` ({key: fn}),
    measured in rounds that call every one once in turn, so load from other
    processes falls on all of them alike; ratios between keys are the
    figures to read."""
    for fn in calls.values():
        for _ in range(warmup):
            fn()
    times = {key: [] for key in calls}
    for _ in range(rounds):
        for key, fn in calls.items():
            t0 = time.perf_counter()
            fn()
            times[key].append(time.perf_counter() - t0)
    return {key: 1000 * float(np.median(t)) for key, t in times.items()}
