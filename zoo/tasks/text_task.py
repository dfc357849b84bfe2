"""What the text task models share: `fit`, `evaluate` and `predict` on raw
strings, over the id-level models they extend.

    clf = zoo.TextClassifier.from_checkpoint("models/minilm", labels=["neg", "pos"])
    clf.fit(train_texts, train_labels, epochs=2, validation_data=(val_texts, val_labels))
    clf.predict(["What an amazing movie!"])          # probabilities, float32 [N, 2]
    clf.predict_labels(["What an amazing movie!"])   # ["pos"]
    clf.save("clf.keras")                            # vocabulary inside; safe-mode load

Each is the id-level task model it extends (`TextClassifier` is a
`Classifier`, ...) with a `TextPreprocessor` attached: called on id dicts
it is exactly that model (exporters, `zoo.save_model_dir`, `zoo predict`
take it as one), and on text its `fit`/`evaluate`/`predict` run the same
host-side steps as `zoo finetune` and `zoo predict` (windows of long texts,
per-word tags, answer spans over context windows).

Training data is read into memory and tokenized as `zoo finetune` does
(same shuffle, by `seed` and epoch, same windows, dropout reseeded per
epoch), so one seed and recipe give the same model through either: call
`keras.utils.set_random_seed(seed)` before `from_checkpoint`, as
`zoo finetune --seed` does (it draws the new head's initial weights and the
dropout seeds); the model's `seed` orders the batches. A second `fit` call
continues the epoch count (other batches and dropout masks than the first). With `optimizer="auto"` (the default)
each `fit` call trains with AdamW under BERT's schedule (linear warmup over
10% of that call's steps, then linear decay to 0; no weight decay on
LayerNorm and biases), as `zoo finetune` does.
"""

from __future__ import annotations

import sys

import keras
import numpy as np
import tensorflow as tf

from zoo.checkpoints import load_checkpoint, load_model_dir, save_model_dir
from zoo.checkpoints.model_dir import is_model_dir
from zoo.configs import DEFAULT_SEQUENCE_LENGTH
from zoo.models import ID_LEVEL_CLASS, TASK_MODELS, Classifier, task_of
from zoo.text.preprocessor import TextPreprocessor, check_lengths
from zoo.text.tokenizer import check_text
from zoo.train.callbacks import EpochCounter
from zoo.train.finetune import task_losses
from zoo.train.optimization import build_for_fit, make_adamw

DEFAULT_BATCH_SIZE = 16
PREDICT_BATCH_SIZE = 32


def is_ids(x):
    """True when `x` is already encoder input (a dict of id arrays, or a
    dataset yielding one): text models pass it to the id-level model."""
    if isinstance(x, dict):
        return "token_ids" in x
    if isinstance(x, tf.data.Dataset):
        spec = x.element_spec
        first = spec[0] if isinstance(spec, tuple) else spec
        return isinstance(first, dict) and "token_ids" in first
    return False


_REQUIRED = object()


def positive_int(value, name, default=_REQUIRED):
    """`value` as an int >= 1 (None: `default`, when one is given), or one
    TypeError (not an int: a bool, float or str is not taken, since Keras
    and TensorFlow then fail deep inside with their own errors) or
    ValueError (< 1) naming `name` and what was received."""
    if value is None and default is not _REQUIRED:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        hint = (
            f"; pass {value.strip()} (an int), not a str"
            if isinstance(value, str) and value.strip().isdigit()
            else ""
        )
        raise TypeError(
            f"`{name}` must be a positive int; received {describe(value)}{hint}."
        )
    if value < 1:
        raise ValueError(f"`{name}` must be a positive int (1 or more); received {value}.")
    return int(value)


def _pandas_type(value, name):
    """True when `value` is a pandas `name` ("DataFrame", "Series"). pandas
    is optional: a value can only be one if pandas is already imported, so
    it is looked up, never imported here."""
    pandas = sys.modules.get("pandas")
    return pandas is not None and isinstance(value, getattr(pandas, name))


def is_frame(value):
    return _pandas_type(value, "DataFrame")


def _column_names(frame):
    return list(frame.columns)


def frame_column(frame, column, where, *, missing_as=_REQUIRED):
    """One column of a DataFrame as a list; missing values (NaN, None) are
    refused naming the column and rows (as a text they would be the str
    'nan', as a label an unknown one), or, where the column may lack a
    value (a question answerer's `answer`: no answer), read as
    `missing_as`."""
    values = frame[column]
    missing = values.isna()
    if missing_as is not _REQUIRED:
        return [missing_as if m else v for v, m in zip(values.tolist(), missing.tolist())]
    if bool(missing.any()):
        rows = list(frame.index[missing.to_numpy()][:5])
        raise ValueError(
            f"`{where}['{column}']`: {int(missing.sum())} missing values (NaN/None), in rows "
            f"{rows}{' ...' if int(missing.sum()) > 5 else ''}; drop them "
            "(frame.dropna()) or fill them in."
        )
    return values.tolist()


def describe(value):
    """`value` for an error message: its type and a short repr."""
    if isinstance(value, dict):
        return f"a dict with keys {sorted(map(str, value))[:6]}"
    if is_frame(value):
        return f"a DataFrame with columns {_column_names(value)[:10]}"
    if isinstance(value, np.ndarray) and value.ndim != 1:
        return f"a numpy array of shape {value.shape}"
    if isinstance(value, tf.data.Dataset):
        return "a tf.data.Dataset"
    if value is None:
        return "None"
    return f"{type(value).__name__} {str(value)[:60]!r}"


def as_text(value, where):
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ValueError(
                f"{where}: bytes that are not UTF-8 (byte {e.start}: {value[e.start : e.start + 1]!r}); "
                "decode the text yourself (e.g. errors='replace') and pass str."
            ) from None
    if isinstance(value, np.str_):
        return str(value)
    if not isinstance(value, str):
        raise TypeError(f"{where}: expected a str; received {describe(value)}.")
    check_text(value, where)  # a lone surrogate, named here rather than by the tokenizer
    return value


def as_texts(values, where):
    """A list of str from a str (a batch of one), a list, tuple, generator,
    numpy array or 1-D tf.string tensor of texts; errors name `where[i]`."""
    if isinstance(values, (str, bytes)):
        values = [values]
    if isinstance(values, tf.Tensor):
        values = values.numpy()
    if isinstance(values, np.ndarray) and values.ndim == 0:
        values = [values.item()]  # one text, as a bare str is
    if isinstance(values, np.ndarray) and values.ndim > 1:
        # Iterated, a 2-D array gives rows: each row would be read as one
        # text (an error at best), or pairs by accident of its width.
        raise TypeError(
            f"`{where}`: a numpy array or tensor of shape {tuple(values.shape)}; texts are "
            "1-D (one str per example). Pairs: a (texts, texts_b) tuple, e.g. "
            "(array[:, 0], array[:, 1])."
        )
    if isinstance(values, (dict, tf.data.Dataset)) or values is None or is_frame(values):
        raise TypeError(
            f"`{where}`: expected texts (a list or array of str); received "
            f"{describe(values)}."
        )
    try:
        values = list(values)
    except TypeError:
        raise TypeError(
            f"`{where}`: expected texts (a list or array of str); received "
            f"{describe(values)}."
        ) from None
    return [as_text(v, f"{where}[{i}]") for i, v in enumerate(values)]


def refuse_non_text(x, where, what, *, datasets=False):
    """TypeError naming `where` unless `x` may be text input: None, a dict
    (other than encoder ids, dispatched before) and, unless `datasets`, a
    tf.data.Dataset are refused; `what` says what to pass instead. (A dict
    iterates as its keys: without this, a dict of texts ran as one text per
    key.)"""
    if (
        x is None
        or isinstance(x, dict)
        or (isinstance(x, tf.data.Dataset) and not datasets)
    ):
        ids = (
            " A dict is taken only as encoder ids ('token_ids', 'segment_ids', "
            "'padding_mask')."
            if isinstance(x, dict)
            else ""
        )
        raise TypeError(f"`{where}`: received {describe(x)}; pass {what}.{ids}")


def dataset_lists(dataset, where, *, labelled=True):
    """`(x, y)` lists from a `tf.data.Dataset`, batched or not, of
    `(text, label)` or `((text, text_b), label)` elements; with
    `labelled=False` also of texts, `(text,)` or `((text, text_b),)` (`y`
    then holds the labels of the elements that have one)."""
    if int(dataset.cardinality()) == int(tf.data.INFINITE_CARDINALITY):
        raise ValueError(
            f"`{where}`: the tf.data.Dataset repeats forever; it is read into memory "
            "once, so pass it without .repeat() (fit: epochs= repeats it)."
        )
    forms = "(text, label) or ((text, text_b), label)" + ("" if labelled else " or texts")
    xs_a, xs_b, ys = [], [], []
    for element in dataset.as_numpy_iterator():
        if isinstance(element, tuple) and len(element) == 2:
            x, y = element
        elif not labelled and isinstance(element, tuple) and len(element) == 1:
            x, y = element[0], None
        elif not labelled and not isinstance(element, (tuple, dict)):
            x, y = element, None
        else:
            raise ValueError(
                f"`{where}`: a tf.data.Dataset must yield {forms}; one element is "
                f"{type(element).__name__} {str(element)[:80]}."
            )
        if isinstance(x, tuple) and len(x) != 2:
            raise ValueError(
                f"`{where}`: a tf.data.Dataset must yield {forms}; one text is a tuple of "
                f"{len(x)}."
            )
        a, b = x if isinstance(x, tuple) else (x, None)
        batched = isinstance(a, np.ndarray) and a.ndim == 1
        xs_a.extend(a if batched else [a])
        if b is not None:
            xs_b.extend(b if batched else [b])
        if y is not None:
            ys.extend(np.asarray(y).tolist() if batched else [np.asarray(y).item()])
    x = (xs_a, xs_b) if xs_b else xs_a
    return x, ys


class TextTaskMixin:
    """What the text models share: the preprocessor, default compile, the
    text-or-ids dispatch of fit/evaluate/predict, config and loading."""

    def _init_text(self, preprocessor, seed):
        if not isinstance(preprocessor, TextPreprocessor):
            raise TypeError(
                f"{type(self).__name__}: `preprocessor` must be a zoo.TextPreprocessor; received "
                f"{type(preprocessor).__name__}. Use {type(self).__name__}.from_checkpoint(path) "
                "or zoo.TextPreprocessor(tokenizer, sequence_length=...)."
            )
        longest = self.encoder.max_sequence_length
        if preprocessor.sequence_length > longest:
            raise ValueError(
                f"{type(self).__name__}: the preprocessor packs {preprocessor.sequence_length} "
                f"tokens but the encoder takes at most {longest} (its max_sequence_length); "
                f"give sequence_length <= {longest} (long texts: max_windows)."
            )
        self.preprocessor = preprocessor
        self.seed = int(seed)
        self._epochs_done = 0  # earlier fit calls: the next one shuffles and drops on
        self._compile_args = (
            None  # set by `compile`; until then fit/evaluate compile with defaults
        )

    @property
    def tokenizer(self):
        return self.preprocessor.tokenizer

    @property
    def sequence_length(self):
        return self.preprocessor.sequence_length

    @property
    def task(self):
        return task_of(self)

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

    # --- data ----------------------------------------------------------------------------

    def _dataset(self, x, y, batch_size, *, shuffle=False, epoch_variable=None, where="x"):
        """Batches of `(ids, targets)` for fit/evaluate from text and labels."""
        raise NotImplementedError

    # What each model's fit/evaluate/predict take as `x`, for errors.
    _x_forms = "texts: a list of str"

    # The pandas DataFrame columns each model reads: those it needs, those
    # it may take, and its target columns (fit/evaluate read one of them
    # when y is not given; predict ignores them, as Keras ignores a
    # dataset's labels). One needed or optional column read gives a list,
    # two give a tuple of lists: the (texts, texts_b) form.
    _needed_columns = ("text",)
    _optional_columns = ("text_b",)
    _target_columns = ("label", "labels")
    _missing_target = {}  # frame_column's `missing_as` for the target column

    def _columns_help(self):
        optional = "".join(f", optional {c!r}" for c in self._optional_columns)
        targets = " or ".join(repr(c) for c in self._target_columns)
        return (
            f"{type(self).__name__} reads columns "
            f"{', '.join(repr(c) for c in self._needed_columns)}{optional}, and for fit/"
            f"evaluate the targets in {targets}"
        )

    def _tables(self, x, y, where, *, targets):
        """`(x, y)` with pandas read as the lists each model takes: a Series
        as a list of its values; a DataFrame by its column names
        (`_needed_columns`, `_optional_columns`, and with `targets`
        (fit/evaluate) `y` from a `_target_columns` column when y is not
        given). Iterated, a DataFrame gives its column names: any other
        columns, or a name missing, are refused naming the columns received
        and those expected. Everything else passes unchanged."""
        y_name = targets_name(where)
        if _pandas_type(y, "Series"):
            y = y.tolist()
        elif is_frame(y):
            if len(y.columns) != 1:
                raise TypeError(
                    f"`{y_name}`: a DataFrame with columns {_column_names(y)}; give one "
                    "target per example: a list, a Series or a one-column DataFrame."
                )
            y = frame_column(y, y.columns[0], y_name)
        if _pandas_type(x, "Series"):
            return x.tolist(), y
        if not is_frame(x):
            return x, y
        columns = _column_names(x)
        known = (*self._needed_columns, *self._optional_columns, *self._target_columns)
        unknown = [c for c in columns if c not in known]
        missing = [c for c in self._needed_columns if c not in columns]
        present = [c for c in self._target_columns if c in columns]
        problems = [f"no column {c!r}" for c in missing]
        if unknown:
            problems.append(f"columns {unknown} are not read")
        if len(set(map(str, columns))) != len(columns):
            problems.append("a column name twice")
        if problems:
            raise ValueError(
                f"`{where}`: a DataFrame with columns {columns}: {'; '.join(problems)}. "
                f"{self._columns_help()}; select or rename them, e.g. "
                f"frame[{list(self._needed_columns)}]."
            )
        if len(present) > 1:
            raise ValueError(
                f"`{where}`: a DataFrame with columns {columns} holds targets twice "
                f"({present}); keep one."
            )
        read = [c for c in (*self._needed_columns, *self._optional_columns) if c in columns]
        values = [frame_column(x, c, where) for c in read]
        if targets and present:
            if y is not None:
                raise ValueError(
                    f"`{where}`: the DataFrame has a target column {present[0]!r} and "
                    f"`{y_name}` is given as well; pass one of them."
                )
            y = frame_column(x, present[0], where, **self._missing_target)
        return (values[0] if len(values) == 1 else tuple(values)), y

    def _split_xy(self, x, y, where):
        """`(x, y)` for `_dataset` from fit/evaluate's `x` and `y`: a
        classifier's tf.data.Dataset is read into lists; `x` and `y` must be
        sequences (a bare str, a dict or None is refused, naming them)."""
        if isinstance(x, tf.data.Dataset) and not isinstance(self, Classifier):
            raise TypeError(
                f"`{where}`: {type(self).__name__} trains on lists (texts and one "
                "tag list per text / (question, context) pairs and answers); "
                "read the dataset into lists first."
            )
        x, y = self._tables(x, y, where, targets=True)
        refuse_non_text(x, where, self._x_forms, datasets=True)
        if isinstance(x, tf.data.Dataset):
            if y is not None:
                raise ValueError(
                    f"`{where}`: a tf.data.Dataset carries its labels; do not pass y as well."
                )
            return dataset_lists(x, where)
        if isinstance(x, (str, bytes)):
            raise TypeError(
                f"`{where}`: received a single str ({x[:40]!r}); fit and evaluate take a "
                "list of examples, each with its target in `y`: wrap one in a list."
            )
        if y is None:
            raise ValueError(
                f"`{where}`: labels are missing; pass y (one per example), a "
                "tf.data.Dataset of (text, label), or a DataFrame with a column "
                f"{' or '.join(repr(c) for c in self._target_columns)}."
            )
        y_name = "y" if where == "x" else f"{where} labels"
        if isinstance(y, (str, bytes, dict)):
            raise TypeError(
                f"`{y_name}`: received {describe(y)}; give a list with one target per "
                "example."
            )
        return x, y

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
        batch_size = positive_int(batch_size, "batch_size", None)
        epochs = positive_int(epochs, "epochs")
        if kwargs.get("steps_per_epoch") is not None:
            kwargs["steps_per_epoch"] = positive_int(
                kwargs["steps_per_epoch"], "steps_per_epoch"
            )
        initial = kwargs.get("initial_epoch", 0)
        if isinstance(initial, bool) or not isinstance(initial, (int, np.integer)):
            raise TypeError(
                f"`initial_epoch` must be an int; received {describe(initial)}."
            )
        if not 0 <= initial < epochs:
            raise ValueError(
                f"`initial_epoch`={initial} with epochs={epochs}: no epoch would run; "
                "epochs counts from 0, so give initial_epoch in 0..epochs-1."
            )
        if is_ids(x):
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
        for name in ("validation_split", "sample_weight", "class_weight"):
            if kwargs.get(name) is not None:
                raise ValueError(
                    f"fit on text: {name}= is not supported; pass "
                    "validation_data=(texts, labels) / weights on ids instead."
                )
        batch_size = batch_size or DEFAULT_BATCH_SIZE
        epoch = tf.Variable(0, dtype=tf.int64, trainable=False)
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

    # --- saving ----------------------------------------------------------------------------

    def _text_config(self):
        return {
            "preprocessor": keras.saving.serialize_keras_object(self.preprocessor),
            "seed": self.seed,
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config.get("preprocessor"), dict):
            config["preprocessor"] = keras.saving.deserialize_keras_object(
                config["preprocessor"]
            )
        return super().from_config(config)

    def _model_dir_extra(self):
        return {"task": self.task, "sequence_length": self.sequence_length}

    def save_model_dir(self, directory, *, overwrite=True):
        """Write this model as a zoo model directory (model.keras, vocab.txt,
        zoo_model.json): what `zoo export`, `zoo evaluate` and `zoo predict`
        take. Returns the directory."""
        save_model_dir(
            self,
            directory,
            self.tokenizer,
            extra=self._model_dir_extra(),
            overwrite=overwrite,
        )
        return directory

    @classmethod
    def _load(cls, path, lowercase):
        """`(id-level task model or None, encoder, tokenizer, meta)` of `path`."""
        if is_model_dir(path):
            model, tokenizer, meta = load_model_dir(path)
            if isinstance(model, tuple(TASK_MODELS.values())):
                return model, model.encoder, tokenizer, meta
            # an encoder, or a pre-training model: its encoder gets a new head
            return None, getattr(model, "encoder", model), tokenizer, meta
        encoder, tokenizer = load_checkpoint(path, lowercase=lowercase)
        return None, encoder, tokenizer, {}

    @staticmethod
    def _check_settings(sequence_length=None, **settings):
        """`from_checkpoint`'s numbers, before anything loads: `sequence_length`
        an int >= 3 (or bucket lengths), the others positive ints or None
        (0 would otherwise read as "not given" and take the default)."""
        if sequence_length is not None:
            check_lengths(sequence_length)
        for name, value in settings.items():
            positive_int(value, name, None)

    @classmethod
    def _with_settings(cls, model, sequence_length=None, **settings):
        """A loaded text model with the settings `from_checkpoint` was given."""
        if sequence_length is not None:
            longest = model.encoder.max_sequence_length
            if max(check_lengths(sequence_length)) > longest:
                raise ValueError(
                    f"sequence_length={sequence_length}: the encoder takes at most "
                    f"{longest} tokens."
                )
            model.preprocessor = TextPreprocessor(model.tokenizer, sequence_length)
        for name, value in settings.items():
            if value is not None:
                if (
                    not isinstance(value, (int, np.integer))
                    or isinstance(value, bool)
                    or (value < 1)
                ):
                    raise ValueError(
                        f"{name} must be a positive integer; received {value!r}."
                    )
                setattr(model, name, int(value))
        return model

    @classmethod
    def _adopt(cls, model, text_model):
        """`text_model` with the fine-tuned `model`'s weights (same layers)."""
        if not isinstance(model, cls._id_class):
            # The text model of the directory's task, by the id-level class it
            # extends (zoo.models.task); this module cannot import the text
            # models, which import it. A regressor has no text model yet: its
            # id-level model and `zoo predict` serve it.
            id_class = TASK_MODELS[task_of(model)].__name__
            text_class = {v: k for k, v in ID_LEVEL_CLASS.items()}.get(id_class)
            other = (
                f"use the text model of its task ({text_class})"
                if text_class
                else "load it with zoo.checkpoints.load_model_dir, or run `zoo predict`"
            )
            raise TypeError(
                f"{cls.__name__}.from_checkpoint: the model directory holds a "
                f"{type(model).__name__}, not a {cls._id_class.__name__}; {other}."
            )
        text_model.set_weights(model.get_weights())
        return text_model


def _count_steps(x, y, batch_size, steps_per_epoch):
    if steps_per_epoch:
        return int(steps_per_epoch)
    if isinstance(x, tf.data.Dataset):
        n = int(x.cardinality())
        return n if n > 0 else sum(1 for _ in x)
    n = len(x["token_ids"])
    return -(-n // (batch_size or 32))


def default_length(encoder):
    """A new head's sequence length: the default, or less for an encoder
    that takes fewer tokens."""
    return min(DEFAULT_SEQUENCE_LENGTH, encoder.max_sequence_length)


def targets_name(where):
    """The name of the targets that go with `where` in errors."""
    return "y" if where == "x" else f"{where} (targets)"


def require_examples(n, where):
    """ValueError naming `where` when it holds no examples: fit would run no
    step and return a History, evaluate return no metrics."""
    if n == 0:
        raise ValueError(
            f"`{where}` is empty (0 examples); fit and evaluate need at least one "
            "example with its target."
        )


def _check_label_list(labels, who):
    if isinstance(labels, (str, bytes, dict)) or not hasattr(labels, "__iter__"):
        raise TypeError(
            f"{who}: `labels` must be a list of label names; received {describe(labels)}."
        )


def head_label_names(who, head_labels, head_classes, labels, num_classes):
    """The label names of a fine-tuned head with `head_classes` outputs named
    `head_labels` (None: not named), given from_checkpoint's `labels` and
    `num_classes`. Names are honoured where they only name the outputs (a
    head without names, or with the default "0".."N-1", and as many names
    as outputs); refused where they would contradict the head: another
    count, other or reordered names (the head's outputs stay in its order,
    so a reordered list would mislabel every answer)."""
    head = list(head_labels) if head_labels is not None else None
    described = head if head is not None else f"{head_classes} unnamed classes"
    if num_classes is not None and int(num_classes) != head_classes:
        raise ValueError(
            f"{who}: num_classes={num_classes}, but the checkpoint's fine-tuned head has "
            f"{head_classes} classes ({described}); leave num_classes out, or fine-tune a "
            "new head from the checkpoint's encoder."
        )
    if labels is None:
        return head
    _check_label_list(labels, who)
    labels = [str(label) for label in labels]
    if len(labels) != head_classes:
        raise ValueError(
            f"{who}: labels={labels} names {len(labels)} classes, but the checkpoint's "
            f"fine-tuned head has {head_classes} ({described}); leave labels out, or "
            "fine-tune a new head for these labels from the checkpoint's encoder."
        )
    defaults = [str(i) for i in range(head_classes)]
    if head is not None and head != defaults:
        if labels != head:
            raise ValueError(
                f"{who}: labels={labels} differ from the fine-tuned head's labels {head}: "
                "its outputs are in that order, so other names would mislabel its answers. "
                "Leave labels out (the head's own names are used), or fine-tune a new head "
                "for these labels from the checkpoint's encoder."
            )
    elif labels != defaults and sorted(labels) == sorted(defaults):
        raise ValueError(
            f"{who}: labels={labels} reorder the head's unnamed classes {defaults} (output "
            "i is class 'i'); give names in output order that are not class numbers, or "
            "leave labels out."
        )
    return labels


def labels_and_classes(num_classes, labels, who):
    if labels is not None:
        _check_label_list(labels, who)
    if labels is None:
        if num_classes is None:
            raise ValueError(
                f"{who}: give labels=[names] (or num_classes=N for labels '0'..'N-1')."
            )
        labels = [str(i) for i in range(positive_int(num_classes, "num_classes"))]
    labels = [str(label) for label in labels]
    if num_classes is not None and positive_int(num_classes, "num_classes") != len(labels):
        raise ValueError(
            f"{who}: {len(labels)} labels given for num_classes={num_classes}."
        )
    if len(set(labels)) != len(labels) or len(labels) < 2:
        raise ValueError(f"{who}: labels must be >= 2 distinct names; received {labels}.")
    return len(labels), labels


def as_list(values, where):
    """A list of targets (labels, tag lists, answers) from a list, tuple,
    array or 1-D tensor; a bare str, a dict or a non-sequence is refused
    naming `where` (iterating it would make one target per character/key)."""
    if isinstance(values, tf.Tensor):
        values = values.numpy()
    if isinstance(values, (str, bytes, dict)) or values is None or is_frame(values):
        # A DataFrame iterates over its column names, not its rows.
        raise TypeError(
            f"`{where}`: expected a list (one item per example); received "
            f"{describe(values)}."
        )
    try:
        return list(values)
    except TypeError:
        raise TypeError(
            f"`{where}`: expected a list (one item per example); received "
            f"{describe(values)}."
        ) from None
