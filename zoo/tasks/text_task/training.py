"""`fit`, `evaluate` and the id-level `predict` of the text models: text
tokenized and batched as `zoo finetune` does (shuffle by seed and epoch,
dropout reseeded per epoch), ids passed to the id-level model."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from zoo.tasks.text_task.inputs import describe, is_frame, is_ids, positive_int
from zoo.train.callbacks import EpochCounter
from zoo.train.optimization import build_for_fit

DEFAULT_BATCH_SIZE = 16
PREDICT_BATCH_SIZE = 32


class FitMixin:
    """fit/evaluate on text or on ids, and the id-level predict the text
    models' own `predict` runs."""

    # --- fit / evaluate / predict ----------------------------------------------------------

    def fit(
        self,
        x=None,
        y=None,
        batch_size=None,
        epochs=1,
        verbose="auto",
        callbacks=None,
        validation_data=None,
        shuffle=True,
        **kwargs,
    ):
        """`fit` on texts and labels (or on ids, as the id-level model).

        Text: `x` a list / numpy array of texts (pairs as a list of
        `(text, text_b)` or a `(texts, texts_b)` tuple), or a
        `tf.data.Dataset` of `(text, label)` (then no `y`);
        `validation_data` the same forms as a tuple `(x, y)` or a dataset.
        Batches are shuffled by `seed` and the epoch (default batch size
        16). A pandas DataFrame is read by its column names (`text`,
        optional `text_b`, targets in `label` or `labels` when `y` is not
        given; a tagger's targets in `tags`/`labels`, a question answerer's
        `question`, `context` and `answer`); other columns are refused
        naming them. No examples, `x` and `y` of other lengths, a bare str
        (wrap one example in a list), a dict of texts or None are refused
        naming the argument: nothing would be trained. `batch_size`,
        `epochs` and `steps_per_epoch` are positive ints (`initial_epoch`
        0 or more, below `epochs`)."""
        batch_size, epochs = _checked_fit_arguments(batch_size, epochs, kwargs)
        arguments = (x, y, batch_size, epochs, verbose, callbacks, validation_data, shuffle)
        if is_ids(x):
            return self._fit_ids(*arguments, kwargs)
        return self._fit_text(*arguments, kwargs)

    def _fit_text(
        self, x, y, batch_size, epochs, verbose, callbacks, validation_data, shuffle, kwargs
    ):
        """`fit` on texts: batches built, the optimizer sized, then Keras's `fit`."""
        for name in ("validation_split", "sample_weight", "class_weight"):
            if kwargs.get(name) is not None:
                raise ValueError(
                    f"fit on text: {name}= is not supported; pass "
                    "validation_data=(texts, labels) / weights on ids instead."
                )
        batch_size = batch_size or DEFAULT_BATCH_SIZE
        epoch = tf.Variable(0, dtype=tf.int64, trainable=False)
        train, steps = self._train_dataset(x, y, batch_size, shuffle, epoch, kwargs)
        validation = self._validation_dataset(validation_data, batch_size)
        self._schedule_for(steps * (epochs - kwargs.get("initial_epoch", 0)))
        if self._auto_optimizer is not None:
            build_for_fit(self, train.element_spec)  # the train step then traces once
        # Publishes the epoch to the shuffle and reseeds dropout per epoch,
        # as `zoo finetune` does (same seed, same batches, same masks); a
        # later fit call continues the epoch count (other batches, masks).
        callbacks = [EpochCounter(epoch, offset=self._epochs_done), *(callbacks or [])]
        history = super().fit(
            train,
            validation_data=validation,
            epochs=epochs,
            verbose=verbose,
            callbacks=callbacks,
            shuffle=False,
            **kwargs,
        )
        self._epochs_done += len(history.epoch)
        return history

    def _fit_ids(
        self, x, y, batch_size, epochs, verbose, callbacks, validation_data, shuffle, kwargs
    ):
        """`fit` on encoder ids: the optimizer sized to its steps, then Keras's `fit`."""
        steps = _count_steps(x, y, batch_size, kwargs.get("steps_per_epoch"))
        self._schedule_for(steps * (epochs - kwargs.get("initial_epoch", 0)))
        # A dataset brings its own order (Keras warns when asked to shuffle one).
        shuffle = shuffle and not isinstance(x, tf.data.Dataset)
        return super().fit(
            x,
            y,
            batch_size=batch_size,
            epochs=epochs,
            verbose=verbose,
            callbacks=callbacks,
            validation_data=validation_data,
            shuffle=shuffle,
            **kwargs,
        )

    def _train_dataset(self, x, y, batch_size, shuffle, epoch, kwargs):
        """Text `fit`'s training batches and steps per epoch (`steps_per_epoch` applied)."""
        train = self._dataset(
            *self._split_xy(x, y, "x"),
            batch_size,
            shuffle=bool(shuffle),
            epoch_variable=epoch,
        )
        steps = int(train.cardinality())
        if steps < 0:
            steps = sum(1 for _ in train)
        if kwargs.get("steps_per_epoch"):
            steps = min(steps, int(kwargs["steps_per_epoch"]))
            train = train.take(steps)
            kwargs.pop("steps_per_epoch")
        train = train.apply(tf.data.experimental.assert_cardinality(steps))
        return train, steps

    def _validation_dataset(self, validation_data, batch_size):
        """The validation batches of a text `fit` (None without `validation_data`)."""
        validation = None
        if validation_data is not None:
            if isinstance(validation_data, tf.data.Dataset) and is_ids(validation_data):
                validation = validation_data
            elif isinstance(validation_data, tf.data.Dataset) or is_frame(validation_data):
                validation = self._dataset(
                    *self._split_xy(validation_data, None, "validation_data"),
                    batch_size,
                    where="validation_data",
                )
            else:
                if not (isinstance(validation_data, tuple) and len(validation_data) == 2):
                    raise ValueError(
                        "`validation_data`: expected (texts, labels), a "
                        "tf.data.Dataset of (text, label) or a DataFrame with its "
                        f"targets' column; received {describe(validation_data)}."
                    )
                validation = self._dataset(
                    *self._split_xy(*validation_data, "validation_data"),
                    batch_size,
                    where="validation_data",
                )
        return validation

    def evaluate(
        self, x=None, y=None, batch_size=None, verbose="auto", return_dict=False, **kwargs
    ):
        """`evaluate` on texts and labels (or on ids). Text forms as `fit`,
        refused as there (no examples: no metrics to give)."""
        batch_size = positive_int(batch_size, "batch_size", None)
        self._ensure_compiled()
        if is_ids(x):
            return super().evaluate(
                x,
                y,
                batch_size=batch_size,
                verbose=verbose,
                return_dict=return_dict,
                **kwargs,
            )
        ds = self._dataset(*self._split_xy(x, y, "x"), batch_size or PREDICT_BATCH_SIZE)
        return super().evaluate(ds, verbose=verbose, return_dict=return_dict, **kwargs)

    def _run_ids(self, inputs, batch_size=None):
        return super().predict(
            inputs,
            batch_size=positive_int(batch_size, "batch_size", PREDICT_BATCH_SIZE),
            verbose=0,
        )

    def _predict_ids(self, x, batch_size, verbose, kwargs):
        """The id-level `predict` of encoder ids, `batch_size` checked (Keras
        takes 0 as its default and fails inside on -1, 1.5 or '8')."""
        batch_size = positive_int(batch_size, "batch_size", None)
        return super().predict(x, batch_size=batch_size, verbose=verbose, **kwargs)


def _checked_fit_arguments(batch_size, epochs, kwargs):
    """`fit`'s batch size, epochs, steps per epoch and initial epoch, checked."""
    batch_size = positive_int(batch_size, "batch_size", None)
    epochs = positive_int(epochs, "epochs")
    if kwargs.get("steps_per_epoch") is not None:
        kwargs["steps_per_epoch"] = positive_int(
            kwargs["steps_per_epoch"], "steps_per_epoch"
        )
    initial = kwargs.get("initial_epoch", 0)
    if isinstance(initial, bool) or not isinstance(initial, (int, np.integer)):
        raise TypeError(f"`initial_epoch` must be an int; received {describe(initial)}.")
    if not 0 <= initial < epochs:
        raise ValueError(
            f"`initial_epoch`={initial} with epochs={epochs}: no epoch would run; "
            "epochs counts from 0, so give initial_epoch in 0..epochs-1."
        )
    return batch_size, epochs


def _count_steps(x, y, batch_size, steps_per_epoch):
    if steps_per_epoch:
        return int(steps_per_epoch)
    if isinstance(x, tf.data.Dataset):
        n = int(x.cardinality())
        return n if n > 0 else sum(1 for _ in x)
    n = len(x["token_ids"])
    return -(-n // (batch_size or 32))
