"""Text task models: `fit`, `evaluate` and `predict` on raw strings.

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

import keras
import numpy as np
import tensorflow as tf

from zoo.checkpoints import load_checkpoint, load_model_dir, save_model_dir
from zoo.checkpoints.model_dir import is_model_dir
from zoo.configs import DEFAULT_SEQUENCE_LENGTH
from zoo.models import TASK_MODELS, Classifier, QuestionAnswerer, TokenClassifier, task_of
from zoo.tasks import decode
from zoo.text import features as feats
from zoo.text.preprocessor import TextPreprocessor, split_text_input
from zoo.text.readers import QAExample, TaggedSentence, TextExample
from zoo.text.tokenizer import check_text
from zoo.train import data as task_data
from zoo.train.callbacks import EpochCounter
from zoo.train.finetune import evaluation_config, task_losses
from zoo.train.optimization import build_for_fit, make_adamw
from zoo.utils.numeric import softmax

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


def _describe(value):
    """`value` for an error message: its type and a short repr."""
    if isinstance(value, dict):
        return f"a dict with keys {sorted(map(str, value))[:6]}"
    if isinstance(value, tf.data.Dataset):
        return "a tf.data.Dataset"
    if value is None:
        return "None"
    return f"{type(value).__name__} {str(value)[:60]!r}"


def _text(value, where):
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
        raise TypeError(f"{where}: expected a str; received {_describe(value)}.")
    check_text(value, where)  # a lone surrogate, named here rather than by the tokenizer
    return value


def _texts(values, where):
    """A list of str from a str (a batch of one), a list, tuple, generator,
    numpy array or 1-D tf.string tensor of texts; errors name `where[i]`."""
    if isinstance(values, (str, bytes)):
        values = [values]
    if isinstance(values, tf.Tensor):
        values = values.numpy()
    if isinstance(values, (dict, tf.data.Dataset)) or values is None:
        raise TypeError(
            f"`{where}`: expected texts (a list or array of str); received "
            f"{_describe(values)}."
        )
    try:
        values = list(values)
    except TypeError:
        raise TypeError(
            f"`{where}`: expected texts (a list or array of str); received "
            f"{_describe(values)}."
        ) from None
    return [_text(v, f"{where}[{i}]") for i, v in enumerate(values)]


def _refuse(x, where, what, *, datasets=False):
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
        raise TypeError(f"`{where}`: received {_describe(x)}; pass {what}.{ids}")


def _from_dataset(dataset, where, *, labelled=True):
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
        _refuse(x, where, self._x_forms, datasets=True)
        if isinstance(x, tf.data.Dataset):
            if y is not None:
                raise ValueError(
                    f"`{where}`: a tf.data.Dataset carries its labels; do not pass y as well."
                )
            return _from_dataset(x, where)
        if isinstance(x, (str, bytes)):
            raise TypeError(
                f"`{where}`: received a single str ({x[:40]!r}); fit and evaluate take a "
                "list of examples, each with its target in `y`: wrap one in a list."
            )
        if y is None:
            raise ValueError(
                f"`{where}`: labels are missing; pass y (one per example), or a "
                "tf.data.Dataset of (text, label)."
            )
        y_name = "y" if where == "x" else f"{where} labels"
        if isinstance(y, (str, bytes, dict)):
            raise TypeError(
                f"`{y_name}`: received {_describe(y)}; give a list with one target per "
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
        16). No examples, `x` and `y` of other lengths, a bare str (wrap one
        example in a list), a dict of texts or None are refused naming the
        argument: nothing would be trained."""
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
            elif isinstance(validation_data, tf.data.Dataset):
                validation = self._dataset(
                    *self._split_xy(validation_data, None, "validation_data"),
                    batch_size,
                    where="validation_data",
                )
            else:
                if not (isinstance(validation_data, tuple) and len(validation_data) == 2):
                    raise ValueError(
                        "`validation_data`: expected (texts, labels) or a "
                        "tf.data.Dataset of (text, label)."
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
            inputs, batch_size=batch_size or PREDICT_BATCH_SIZE, verbose=0
        )

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

    @classmethod
    def _with_settings(cls, model, sequence_length=None, **settings):
        """A loaded text model with the settings `from_checkpoint` was given."""
        if sequence_length is not None:
            longest = model.encoder.max_sequence_length
            if sequence_length > longest:
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
            task = task_of(model)
            # A regressor has no text model yet: its id-level model and `zoo predict` serve it.
            other = (
                f"use the text model of its task ({TEXT_MODELS[task].__name__})"
                if task in TEXT_MODELS
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


def _default_length(encoder):
    """A new head's sequence length: the default, or less for an encoder
    that takes fewer tokens."""
    return min(DEFAULT_SEQUENCE_LENGTH, encoder.max_sequence_length)


def _y_name(where):
    """The name of the targets that go with `where` in errors."""
    return "y" if where == "x" else f"{where} (targets)"


def _nonempty(n, where):
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
            f"{who}: `labels` must be a list of label names; received {_describe(labels)}."
        )


def _head_labels(who, head_labels, head_classes, labels, num_classes):
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


def _labels_and_classes(num_classes, labels, who):
    if labels is not None:
        _check_label_list(labels, who)
    if labels is None:
        if num_classes is None:
            raise ValueError(
                f"{who}: give labels=[names] (or num_classes=N for labels '0'..'N-1')."
            )
        labels = [str(i) for i in range(int(num_classes))]
    labels = [str(label) for label in labels]
    if num_classes is not None and int(num_classes) != len(labels):
        raise ValueError(
            f"{who}: {len(labels)} labels given for num_classes={num_classes}."
        )
    if len(set(labels)) != len(labels) or len(labels) < 2:
        raise ValueError(f"{who}: labels must be >= 2 distinct names; received {labels}.")
    return len(labels), labels


def _label_names(values, labels, where):
    """Label names from names or class indices."""
    index = set(labels)
    names = []
    for i, value in enumerate(values):
        if isinstance(value, bytes):
            value = value.decode("utf-8")
        if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
            if not 0 <= value < len(labels):
                raise ValueError(
                    f"{where}[{i}]: class index {value} is outside 0..."
                    f"{len(labels) - 1} (labels {labels})."
                )
            value = labels[int(value)]
        value = str(value)
        if value not in index:
            raise ValueError(
                f"{where}[{i}]: label {value!r} is not one of this model's labels {labels}."
            )
        names.append(value)
    return names


# === classification =======================================================================


@keras.saving.register_keras_serializable(package="zoo")
class TextClassifier(TextTaskMixin, Classifier):
    """A `Classifier` that takes raw text.

    Args:
        encoder: a zoo encoder.
        num_classes, labels: the classes (labels default to "0".."N-1").
        preprocessor: a `TextPreprocessor` (the encoder's own tokenizer).
        max_windows: texts longer than the sequence are cut into up to this
            many windows (stepping `doc_stride` pieces); `fit` trains on every
            window with the text's label, `predict`/`evaluate` average the
            windows' logits (`zoo finetune --max-windows`). 1 truncates.
        doc_stride: pieces between consecutive window starts.
        pooling, dropout: as `Classifier`.
        seed: the shuffle of each epoch's batches.
    """

    _id_class = Classifier

    def __init__(
        self,
        encoder,
        num_classes=None,
        preprocessor=None,
        labels=None,
        max_windows=1,
        doc_stride=128,
        pooling="auto",
        dropout=0.1,
        seed=0,
        **kwargs,
    ):
        num_classes, labels = _labels_and_classes(num_classes, labels, "TextClassifier")
        for name, value in (("max_windows", max_windows), ("doc_stride", doc_stride)):
            if (
                not isinstance(value, (int, np.integer))
                or isinstance(value, bool)
                or value < 1
            ):
                raise ValueError(
                    f"TextClassifier: {name} must be a positive integer; "
                    f"received {value!r}."
                )
        super().__init__(
            encoder, num_classes, pooling=pooling, dropout=dropout, labels=labels, **kwargs
        )
        self.max_windows = int(max_windows)
        self.doc_stride = int(doc_stride)
        self._init_text(preprocessor, seed)

    @classmethod
    def from_checkpoint(
        cls,
        path,
        *,
        num_classes=None,
        labels=None,
        sequence_length=None,
        max_windows=None,
        doc_stride=None,
        pooling="auto",
        dropout=0.1,
        seed=0,
        lowercase=None,
    ):
        """A `TextClassifier` on the checkpoint at `path` (any format
        `zoo.load_checkpoint` reads), with a new head for `labels` (or
        `num_classes`); or, for a zoo model directory of a fine-tuned
        classifier, that classifier with its labels, length and windows.

        For a fine-tuned classifier, `labels` may name a head saved without
        names (or with the default "0".."N-1"), one name per output in
        output order; `labels` or `num_classes` that contradict the head
        (another count, other or reordered names) are a ValueError naming
        both. A new head's `sequence_length` defaults to 128, or the
        encoder's maximum when that is less."""
        model, encoder, tokenizer, meta = cls._load(path, lowercase)
        if model is not None:
            names = _head_labels(
                f"{cls.__name__}.from_checkpoint({path})",
                model.labels,
                model.num_classes,
                labels,
                num_classes,
            )
            if isinstance(model, cls):
                model.labels = names
                return cls._with_settings(
                    model,
                    sequence_length,
                    max_windows=max_windows,
                    doc_stride=doc_stride,
                    seed=seed or None,
                )
            config = evaluation_config(meta, sequence_length, max_windows)
            text = cls(
                encoder,
                model.num_classes,
                TextPreprocessor(tokenizer, config.sequence_length),
                labels=names,
                max_windows=config.max_windows,
                doc_stride=doc_stride or config.doc_stride,
                pooling=model.pooling,
                dropout=model.dropout,
                seed=seed,
            )
            return cls._adopt(model, text)
        return cls(
            encoder,
            num_classes,
            TextPreprocessor(tokenizer, sequence_length or _default_length(encoder)),
            labels=labels,
            max_windows=max_windows or 1,
            doc_stride=doc_stride or 128,
            pooling=pooling,
            dropout=dropout,
            seed=seed,
        )

    def _task_config(self):
        return {
            **super()._task_config(),
            **self._text_config(),
            "max_windows": self.max_windows,
            "doc_stride": self.doc_stride,
        }

    def _model_dir_extra(self):
        return {
            **super()._model_dir_extra(),
            "finetune_config": {
                "max_windows": self.max_windows,
                "doc_stride": self.doc_stride,
                "sequence_length": self.sequence_length,
            },
        }

    def _dataset(self, x, y, batch_size, *, shuffle=False, epoch_variable=None, where="x"):
        a, b = split_text_input(x)
        a = _texts(a, where)
        b = None if b is None else _texts(b, f"{where} (text_b)")
        if b is not None and len(b) != len(a):
            raise ValueError(f"{where}: {len(a)} texts but {len(b)} second texts (text_b).")
        y_name = _y_name(where)
        y = _label_names(_as_list(y, y_name), self.labels, y_name)
        if len(y) != len(a):
            raise ValueError(f"{where}: {len(a)} texts but {len(y)} labels.")
        _nonempty(len(a), where)
        examples = [
            TextExample(t, label, None if b is None else b[i])
            for i, (t, label) in enumerate(zip(a, y))
        ]
        common = dict(seed=self.seed, epoch_variable=epoch_variable, shuffle=shuffle)
        if self.max_windows > 1 or len(self.preprocessor.lengths) == 1:
            return task_data.classification_dataset(
                examples,
                self.labels,
                self.tokenizer,
                self.sequence_length,
                batch_size,
                max_windows=self.max_windows,
                doc_stride=self.doc_stride,
                **common,
            )
        # Bucketed lengths: each batch through the preprocessor.
        index = {name: i for i, name in enumerate(self.labels)}
        tensors = {
            "text": np.array(a, dtype=object),
            "label": np.array([index[label] for label in y], np.int32),
        }
        if b is not None:
            tensors["text_b"] = np.array(b, dtype=object)
        ds = task_data.shuffled_batches(
            tensors, batch_size, self.seed, epoch_variable, shuffle
        )
        pre = self.preprocessor
        return ds.map(
            lambda t: (pre(t["text"], t.get("text_b")), {"logits": t["label"]}),
            num_parallel_calls=tf.data.AUTOTUNE,
        ).prefetch(tf.data.AUTOTUNE)

    _x_forms = (
        "texts: a str, a list/tuple/numpy array/tf.string tensor of str, pairs as a "
        "list of (text, text_b) or a (texts, texts_b) tuple, or a tf.data.Dataset of "
        "texts or (text, label)"
    )

    def _predict_texts(self, x):
        """`(texts, texts_b or None)` of what predict takes (`_x_forms`)."""
        _refuse(x, "x", self._x_forms, datasets=True)
        if isinstance(x, tf.data.Dataset):
            x, y = _from_dataset(x, "x", labelled=False)
            # An element (a, b) is (text, label), as fit reads it, whose label
            # predict ignores; a pair given as (text, text_b) would lose
            # text_b silently, so the labels must be this model's.
            for i, label in enumerate(y):
                try:
                    _label_names([label], self.labels, "label")
                except ValueError:
                    raise ValueError(
                        f"`x`: a tf.data.Dataset's (a, b) elements are read as (text, "
                        f"label), as fit reads them, but b of element {i} ({label!r:.40}) is "
                        f"not one of this model's labels {self.labels}. Give pairs as "
                        "((text, text_b),) or ((text, text_b), label) elements."
                    ) from None
        a, b = split_text_input(x)
        a = _texts(a, "x")
        b = None if b is None else _texts(b, "x (text_b)")
        if b is not None and len(b) != len(a):
            raise ValueError(f"`x`: {len(a)} texts but {len(b)} second texts (text_b).")
        return a, b

    def predict_logits(self, x, batch_size=None):
        """Logits `[N, C]` (float64) of texts (the forms of `predict`):
        windows averaged. No texts: an empty `[0, C]` array."""
        a, b = self._predict_texts(x)
        if not a:
            return np.zeros((0, self.num_classes))
        logits, _ = decode.classify_logits(
            a,
            b,
            self.tokenizer,
            self.sequence_length,
            lambda ids: self._run_ids(ids, batch_size),
            max_windows=self.max_windows,
            doc_stride=self.doc_stride,
        )
        return logits

    def predict(self, x, batch_size=None, verbose="auto", **kwargs):
        """Class probabilities, float32 `[N, num_classes]`, of texts: a str (a
        batch of one), a list, tuple, generator, numpy array or tf.string
        tensor of str, pairs (a list of `(text, text_b)` or a `(texts,
        texts_b)` tuple), or a `tf.data.Dataset` of texts or of fit's
        `(text, label)` elements (labels ignored, as Keras's `predict`
        does). An empty list gives an empty `[0, num_classes]` array. On id
        dicts: the id-level model's `predict` (logits). Anything else (a dict
        of texts, None, numbers) is a TypeError naming `x`."""
        if is_ids(x):
            return super().predict(x, batch_size=batch_size, verbose=verbose, **kwargs)
        return softmax(self.predict_logits(x, batch_size)).astype(np.float32)

    def predict_labels(self, x, batch_size=None):
        """The most probable label name of each text."""
        return [self.labels[i] for i in self.predict_logits(x, batch_size).argmax(-1)]

    def evaluate(
        self, x=None, y=None, batch_size=None, verbose="auto", return_dict=False, **kwargs
    ):
        """As `fit`'s forms. With `max_windows` > 1 a text is scored by its
        windows' mean logits (loss: cross-entropy of those, accuracy)."""
        if is_ids(x) or self.max_windows == 1:
            return super().evaluate(
                x,
                y,
                batch_size=batch_size,
                verbose=verbose,
                return_dict=return_dict,
                **kwargs,
            )
        x, y = self._split_xy(x, y, "x")
        y = np.array(
            [self.labels.index(n) for n in _label_names(_as_list(y, "y"), self.labels, "y")]
        )
        _nonempty(len(y), "x")
        logits = self.predict_logits(x, batch_size)
        if len(logits) != len(y):
            raise ValueError(f"x: {len(logits)} texts but {len(y)} labels.")
        log_p = np.log(np.maximum(softmax(logits), 1e-300))
        result = {
            "loss": float(-log_p[np.arange(len(y)), y].mean()),
            "accuracy": float((logits.argmax(-1) == y).mean()),
        }
        return result if return_dict else [result["loss"], result["accuracy"]]


def _as_list(values, where):
    """A list of targets (labels, tag lists, answers) from a list, tuple,
    array or 1-D tensor; a bare str, a dict or a non-sequence is refused
    naming `where` (iterating it would make one target per character/key)."""
    if isinstance(values, tf.Tensor):
        values = values.numpy()
    if isinstance(values, (str, bytes, dict)) or values is None:
        raise TypeError(
            f"`{where}`: expected a list (one item per example); received "
            f"{_describe(values)}."
        )
    try:
        return list(values)
    except TypeError:
        raise TypeError(
            f"`{where}`: expected a list (one item per example); received "
            f"{_describe(values)}."
        ) from None


# === tagging ==============================================================================


@keras.saving.register_keras_serializable(package="zoo")
class TextTagger(TextTaskMixin, TokenClassifier):
    """A `TokenClassifier` that takes raw text: one tag per whitespace word
    (its first word piece), entities as character spans.

    `fit(x, y)`: `x` texts (split at whitespace) or lists of words, `y` one
    list of tag names per text (BIO tags, e.g. B-PER, I-PER, O).
    `predict(texts)`: per text a float32 `[words, tags]` array of
    probabilities; `predict_entities(texts)`: per text a list of
    `{"label", "text", "start", "end", "score"}`.
    """

    _id_class = TokenClassifier

    def __init__(
        self,
        encoder,
        num_classes=None,
        preprocessor=None,
        labels=None,
        dropout=0.1,
        seed=0,
        **kwargs,
    ):
        num_classes, labels = _labels_and_classes(num_classes, labels, "TextTagger")
        super().__init__(encoder, num_classes, dropout=dropout, labels=labels, **kwargs)
        self._init_text(preprocessor, seed)

    @classmethod
    def from_checkpoint(
        cls,
        path,
        *,
        labels=None,
        num_classes=None,
        sequence_length=None,
        dropout=0.1,
        seed=0,
        lowercase=None,
    ):
        """As `TextClassifier.from_checkpoint`, for tags (`labels`: the tag
        names, checked against a fine-tuned head's the same way)."""
        model, encoder, tokenizer, meta = cls._load(path, lowercase)
        if model is not None:
            names = _head_labels(
                f"{cls.__name__}.from_checkpoint({path})",
                model.labels,
                model.num_classes,
                labels,
                num_classes,
            )
            if isinstance(model, cls):
                model.labels = names
                return cls._with_settings(model, sequence_length, seed=seed or None)
            config = evaluation_config(meta, sequence_length)
            text = cls(
                encoder,
                model.num_classes,
                TextPreprocessor(tokenizer, config.sequence_length),
                labels=names,
                dropout=model.dropout,
                seed=seed,
            )
            return cls._adopt(model, text)
        return cls(
            encoder,
            num_classes,
            TextPreprocessor(tokenizer, sequence_length or _default_length(encoder)),
            labels=labels,
            dropout=dropout,
            seed=seed,
        )

    def _task_config(self):
        return {**super()._task_config(), **self._text_config()}

    _x_forms = "texts: a str or a list/tuple/numpy array of str (fit: also lists of words)"

    def _dataset(self, x, y, batch_size, *, shuffle=False, epoch_variable=None, where="x"):
        sentences = []
        y_name = _y_name(where)
        tags = _as_list(y, y_name)
        words_of = _as_list(x, where)
        if len(words_of) != len(tags):
            raise ValueError(f"{where}: {len(words_of)} texts but {len(tags)} tag lists.")
        _nonempty(len(words_of), where)
        known = set(self.labels)
        for i, (words, row) in enumerate(zip(words_of, tags)):
            words = (
                _text(words, f"{where}[{i}]").split()
                if isinstance(words, (str, bytes))
                else _texts(words, f"{where}[{i}]")
            )
            # A bare str where the text's tag list goes: one tag, read as a
            # list of one only by chance of a one-word text.
            row = [_text(t, f"{y_name}[{i}]") for t in _as_list(row, f"{y_name}[{i}]")]
            if len(row) != len(words):
                raise ValueError(
                    f"{y_name}[{i}]: {len(row)} tags for {len(words)} words; give one tag "
                    "per whitespace-separated word."
                )
            unknown = sorted(set(row) - known)
            if unknown:
                raise ValueError(
                    f"{y_name}[{i}]: tags {unknown} are not among this model's labels "
                    f"{self.labels}."
                )
            sentences.append(TaggedSentence(tuple(words), tuple(row)))
        return task_data.tagging_dataset(
            sentences,
            self.labels,
            self.tokenizer,
            self.sequence_length,
            batch_size,
            seed=self.seed,
            epoch_variable=epoch_variable,
            shuffle=shuffle,
        )

    def _words(self, x, batch_size):
        _refuse(x, "x", self._x_forms)
        texts = _texts(x, "x")
        if not texts:
            return [], []
        return texts, decode.tag_words(
            texts,
            self.tokenizer,
            self.labels,
            self.sequence_length,
            lambda ids: self._run_ids(ids, batch_size),
        )

    def predict(self, x, batch_size=None, verbose="auto", **kwargs):
        """Per text, float32 `[words, tags]` probabilities (a word cut off by
        the sequence: NaN), of a str (a batch of one) or a list, tuple,
        generator, numpy array or tf.string tensor of str; an empty list gives
        `[]`. On id dicts: the id-level `predict` (logits). Anything else (a
        dict of texts, a tf.data.Dataset, None, numbers) is a TypeError
        naming `x`."""
        if is_ids(x):
            return super().predict(x, batch_size=batch_size, verbose=verbose, **kwargs)
        return [w.astype(np.float32) for _, (_, w) in zip(*self._words(x, batch_size))]

    def predict_entities(self, x, batch_size=None):
        """Per text, its entities `[{"label", "text", "start", "end", "score"}]`
        (character offsets into the text, end exclusive)."""
        texts, words = self._words(x, batch_size)
        return [
            decode.entities(t, span, w, self.labels)["entities"]
            for t, (span, w) in zip(texts, words)
        ]


# === question answering ===================================================================


QA_FORMS = (
    "(question, context) pairs: a list of (question, context), a (questions, "
    "contexts) tuple, one (question, context) tuple of two str, or a list of dicts "
    "with 'question' and 'context'"
)


def _qa_pairs(x, where):
    """`(questions, contexts)` lists of what a question answerer takes
    (`QA_FORMS`); an empty list gives two empty lists."""
    _refuse(x, where, QA_FORMS)
    if isinstance(x, (list, tuple)) and len(x) == 0:
        return [], []
    if isinstance(x, list) and isinstance(x[0], dict):
        questions, contexts = [], []
        for i, r in enumerate(x):
            if not (isinstance(r, dict) and "question" in r and "context" in r):
                raise ValueError(
                    f"{where}[{i}]: received {_describe(r)}; each item of a list of dicts "
                    "needs 'question' and 'context'."
                )
            questions.append(_text(r["question"], f"{where}[{i}]['question']"))
            contexts.append(_text(r["context"], f"{where}[{i}]['context']"))
        return questions, contexts
    a, b = split_text_input(x)
    if b is None:
        raise ValueError(
            f"`{where}`: a question answerer takes {QA_FORMS}; received {_describe(x)}."
        )
    a, b = _texts(a, where), _texts(b, f"{where} (contexts)")
    if len(a) != len(b):
        raise ValueError(f"{where}: {len(a)} questions but {len(b)} contexts.")
    return a, b


@keras.saving.register_keras_serializable(package="zoo")
class TextQuestionAnswerer(TextTaskMixin, QuestionAnswerer):
    """A `QuestionAnswerer` that takes raw (question, context) pairs.

    `fit(x, y)`: `x` pairs, `y` per pair the answer: a dict
    `{"text", "answer_start"}` (SQuAD's character offset), or the answer
    text (its first occurrence in the context), or "" / None when the
    context holds no answer. `predict(pairs)`: per pair
    `{"answer", "start", "end", "score"}` (character offsets into the
    context; `score` the span's probability), over the context's windows.
    """

    _id_class = QuestionAnswerer

    def __init__(
        self,
        encoder,
        preprocessor=None,
        doc_stride=128,
        max_answer_length=30,
        seed=0,
        **kwargs,
    ):
        super().__init__(encoder, **kwargs)
        self.doc_stride = int(doc_stride)
        self.max_answer_length = int(max_answer_length)
        self._init_text(preprocessor, seed)

    @classmethod
    def from_checkpoint(
        cls,
        path,
        *,
        sequence_length=None,
        doc_stride=None,
        max_answer_length=None,
        seed=0,
        lowercase=None,
    ):
        """As `TextClassifier.from_checkpoint`, for span QA (default length 384)."""
        model, encoder, tokenizer, meta = cls._load(path, lowercase)
        if model is not None:
            if isinstance(model, cls):
                return cls._with_settings(
                    model,
                    sequence_length,
                    doc_stride=doc_stride,
                    max_answer_length=max_answer_length,
                    seed=seed or None,
                )
            config = evaluation_config(meta, sequence_length)
            text = cls(
                encoder,
                TextPreprocessor(tokenizer, config.sequence_length),
                doc_stride=doc_stride or config.doc_stride,
                max_answer_length=max_answer_length or config.max_answer_length,
                seed=seed,
            )
            return cls._adopt(model, text)
        length = sequence_length or min(384, encoder.max_sequence_length)
        return cls(
            encoder,
            TextPreprocessor(tokenizer, length),
            doc_stride=doc_stride or 128,
            max_answer_length=max_answer_length or 30,
            seed=seed,
        )

    def _task_config(self):
        return {
            **super()._task_config(),
            **self._text_config(),
            "doc_stride": self.doc_stride,
            "max_answer_length": self.max_answer_length,
        }

    def _model_dir_extra(self):
        return {
            **super()._model_dir_extra(),
            "finetune_config": {
                "doc_stride": self.doc_stride,
                "max_answer_length": self.max_answer_length,
                "sequence_length": self.sequence_length,
            },
        }

    _x_forms = QA_FORMS

    def _dataset(self, x, y, batch_size, *, shuffle=False, epoch_variable=None, where="x"):
        questions, contexts = _qa_pairs(x, where)
        answers = _as_list(y, _y_name(where))
        if len(answers) != len(questions):
            raise ValueError(f"{where}: {len(questions)} pairs but {len(answers)} answers.")
        _nonempty(len(questions), where)
        examples = []
        for i, (q, c, answer) in enumerate(zip(questions, contexts, answers)):
            if isinstance(answer, dict) and isinstance(answer.get("text"), bytes):
                answer = {**answer, "text": answer["text"].decode("utf-8")}
            if isinstance(answer, bytes):
                answer = answer.decode("utf-8")
            if (
                answer is None
                or answer == ""
                or (isinstance(answer, dict) and answer.get("text") in (None, ""))
            ):
                examples.append(QAExample(str(i), q, c, (), is_impossible=True))
                continue
            if isinstance(answer, dict):
                text, start = answer.get("text"), answer.get("answer_start")
            else:
                text, start = _text(answer, f"y[{i}]"), None
            if not isinstance(text, str):
                raise TypeError(
                    f"y[{i}]: the answer's text is {_describe(text)}; give a str."
                )
            if start is None:
                start = c.find(text)
            if not isinstance(start, (int, np.integer)) or isinstance(start, bool):
                raise TypeError(
                    f"y[{i}]: answer_start is {_describe(start)}; give the answer's "
                    "character offset in its context (an int), or leave it out."
                )
            if c[start : start + len(text)] != text or start < 0:
                raise ValueError(
                    f"y[{i}]: answer {text!r} (start {start}) is not in its "
                    "context; give the answer text as it appears there."
                )
            examples.append(QAExample(str(i), q, c, ((text, int(start)),)))
        features = feats.qa_features(
            examples, self.tokenizer, self.sequence_length, self.doc_stride
        )
        return task_data.qa_dataset(
            features,
            batch_size,
            seed=self.seed,
            epoch_variable=epoch_variable,
            shuffle=shuffle,
        )

    def predict(self, x, batch_size=None, verbose="auto", **kwargs):
        """Per pair `{"answer", "start", "end", "score"}` of (question,
        context) pairs (`QA_FORMS`); an empty list gives `[]`. On id dicts: the
        id-level `predict` (start/end logits). Anything else (a dict of
        columns, a tf.data.Dataset, None, a list of str) is an error naming
        `x`."""
        if is_ids(x):
            return super().predict(x, batch_size=batch_size, verbose=verbose, **kwargs)
        questions, contexts = _qa_pairs(x, "x")
        if not questions:
            return []
        return decode.answer_spans(
            questions,
            contexts,
            self.tokenizer,
            self.sequence_length,
            lambda ids: self._run_ids(ids, batch_size),
            doc_stride=self.doc_stride,
            max_answer_length=self.max_answer_length,
        )

    def predict_answers(self, x, batch_size=None):
        """The answer text of each pair ("" when no span fits)."""
        return [a["answer"] for a in self.predict(x, batch_size)]


TEXT_MODELS = {"classify": TextClassifier, "tag": TextTagger, "qa": TextQuestionAnswerer}
