"""`TextClassifier`: a `Classifier` that takes raw text (zoo.tasks.text_task)."""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf

from zoo.models import Classifier
from zoo.tasks import decode
from zoo.tasks.text_task import (
    TextTaskMixin,
    as_list,
    as_texts,
    dataset_lists,
    default_length,
    head_label_names,
    is_ids,
    labels_and_classes,
    positive_int,
    refuse_non_text,
    require_examples,
    targets_name,
)
from zoo.text.features import MAX_WINDOWS
from zoo.text.preprocessor import TextPreprocessor, split_text_input
from zoo.text.readers import TextExample
from zoo.train import data as task_data
from zoo.train.finetune import evaluation_config
from zoo.utils.numeric import softmax


@keras.saving.register_keras_serializable(package="zoo")
class TextClassifier(TextTaskMixin, Classifier):
    """A `Classifier` that takes raw text.

    Args:
        encoder: a zoo encoder.
        num_classes, labels: the classes (labels default to "0".."N-1").
            Targets are label names (str) or class indices (int); with
            names that read as numbers ("1", "2", "3"), other than the
            default "0".."N-1", an int target could be either and is
            refused: pass names (`[str(v) for v in y]`) or map indices
            (`[clf.labels[i] for i in y]`).
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
        num_classes, labels = labels_and_classes(num_classes, labels, "TextClassifier")
        for name, value, high in (
            ("max_windows", max_windows, MAX_WINDOWS),
            ("doc_stride", doc_stride, None),
        ):
            if (
                not isinstance(value, (int, np.integer))
                or isinstance(value, bool)
                or value < 1
                or (high is not None and value > high)
            ):
                raise ValueError(
                    f"TextClassifier: {name} must be an integer in 1.."
                    f"{high or 'any'}; received {value!r:.40}."
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
        cls._check_settings(
            sequence_length,
            num_classes=num_classes,
            max_windows=max_windows,
            doc_stride=doc_stride,
        )
        model, encoder, tokenizer, meta = cls._load(path, lowercase)
        if model is not None:
            names = head_label_names(
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
                hidden_dim=model.hidden_dim,
                seed=seed,
            )
            return cls._adopt(model, text)
        return cls(
            encoder,
            num_classes,
            TextPreprocessor(tokenizer, sequence_length or default_length(encoder)),
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
        a = as_texts(a, where)
        b = None if b is None else as_texts(b, f"{where} (text_b)")
        if b is not None and len(b) != len(a):
            raise ValueError(f"{where}: {len(a)} texts but {len(b)} second texts (text_b).")
        y_name = targets_name(where)
        y = _label_names(as_list(y, y_name), self.labels, y_name)
        if len(y) != len(a):
            raise ValueError(f"{where}: {len(a)} texts but {len(y)} labels.")
        require_examples(len(a), where)
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
        x, _ = self._tables(x, None, "x", targets=False)
        refuse_non_text(x, "x", self._x_forms, datasets=True)
        if isinstance(x, tf.data.Dataset):
            x, y = dataset_lists(x, "x", labelled=False)
            # An element (a, b) is (text, label), as fit reads it, whose label
            # predict ignores; a pair given as (text, text_b) would lose
            # text_b silently, so the labels must be this model's.
            for i, label in enumerate(y):
                try:
                    # Ignored labels: an int is not ambiguous here.
                    _label_names([label], self.labels, "label", ignored=True)
                except ValueError:
                    raise ValueError(
                        f"`x`: a tf.data.Dataset's (a, b) elements are read as (text, "
                        f"label), as fit reads them, but b of element {i} ({label!r:.40}) is "
                        f"not one of this model's labels {self.labels}. Give pairs as "
                        "((text, text_b),) or ((text, text_b), label) elements."
                    ) from None
        a, b = split_text_input(x)
        a = as_texts(a, "x")
        b = None if b is None else as_texts(b, "x (text_b)")
        if b is not None and len(b) != len(a):
            raise ValueError(f"`x`: {len(a)} texts but {len(b)} second texts (text_b).")
        return a, b

    def predict_logits(self, x, batch_size=None):
        """Logits `[N, C]` (float64) of texts (the forms of `predict`):
        windows averaged. No texts: an empty `[0, C]` array."""
        batch_size = positive_int(batch_size, "batch_size", None)
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
        tensor of str, a pandas Series, a DataFrame with a `text` (and
        `text_b`) column (a `label` column is ignored), pairs (a list of
        `(text, text_b)` or a `(texts, texts_b)` tuple), or a
        `tf.data.Dataset` of texts or of fit's
        `(text, label)` elements (labels ignored, as Keras's `predict`
        does). An empty list gives an empty `[0, num_classes]` array. On id
        dicts: the id-level model's `predict` (logits). Anything else (a dict
        of texts, None, numbers) is a TypeError naming `x`."""
        if is_ids(x):
            return self._predict_ids(x, batch_size, verbose, kwargs)
        return softmax(self.predict_logits(x, batch_size)).astype(np.float32)

    def predict_labels(self, x, batch_size=None):
        """The most probable label name of each text."""
        return [self.labels[i] for i in self.predict_logits(x, batch_size).argmax(-1)]

    def evaluate(
        self, x=None, y=None, batch_size=None, verbose="auto", return_dict=False, **kwargs
    ):
        """As `fit`'s forms. With `max_windows` > 1 a text is scored by its
        windows' mean logits (loss: cross-entropy of those, accuracy)."""
        batch_size = positive_int(batch_size, "batch_size", None)
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
            [self.labels.index(n) for n in _label_names(as_list(y, "y"), self.labels, "y")]
        )
        require_examples(len(y), "x")
        logits = self.predict_logits(x, batch_size)
        if len(logits) != len(y):
            raise ValueError(f"x: {len(logits)} texts but {len(y)} labels.")
        log_p = np.log(np.maximum(softmax(logits), 1e-300))
        result = {
            "loss": float(-log_p[np.arange(len(y)), y].mean()),
            "accuracy": float((logits.argmax(-1) == y).mean()),
        }
        return result if return_dict else [result["loss"], result["accuracy"]]


def _integer_like(name):
    try:
        int(name)
    except ValueError:
        return False
    return True


def _label_names(values, labels, where, *, ignored=False):
    """Label names from names or class indices (ints). Where some label
    names read as integers ("1", "2", "3"; not the default "0".."N-1", where
    both readings agree), an int target could be either, so int targets are
    refused naming both readings (unless `ignored`: labels predict
    ignores); names (str) are always read as names. Unknown names are
    refused naming all of them, indices out of range naming the range."""
    known = set(labels)
    digit_names = [n for n in labels if _integer_like(n)]
    defaults = [str(i) for i in range(len(labels))]
    names, unknown = [], {}
    for i, value in enumerate(values):
        if isinstance(value, bytes):
            value = value.decode("utf-8")
        if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
            if digit_names and labels != defaults and not ignored:
                as_index = (
                    f"class index {value} (label {labels[value]!r})"
                    if 0 <= value < len(labels)
                    else f"class index {value} (outside 0...{len(labels) - 1})"
                )
                as_name = (
                    f"label {str(value)!r}"
                    if str(value) in known
                    else f"label {str(value)!r} (none such)"
                )
                raise ValueError(
                    f"{where}[{i}] = {value}: an int target with labels {labels} (names "
                    f"that read as numbers) is ambiguous: {as_index}, or {as_name}. Pass "
                    "the targets as label names (str): [str(v) for v in y] when they "
                    "are the names, [model.labels[v] for v in y] when they are class "
                    "indices."
                )
            if ignored and str(value) in known:
                value = str(value)  # either reading names a label: predict ignores it
            elif not 0 <= value < len(labels):
                raise ValueError(
                    f"{where}[{i}]: class index {value} is outside 0..."
                    f"{len(labels) - 1} (labels {labels})."
                )
            else:
                value = labels[int(value)]
        value = str(value)
        if value not in known:
            unknown.setdefault(value, i)
        names.append(value)
    if unknown:
        first = next(iter(unknown.values()))
        shown = list(unknown)[:10]
        raise ValueError(
            f"{where}[{first}]: label {shown[0]!r} is not one of this model's labels "
            f"{labels}"
            + (
                f"; {len(unknown)} unknown labels in all: {shown}"
                f"{' ...' if len(unknown) > 10 else ''}"
                if len(unknown) > 1
                else ""
            )
            + "."
        )
    return names
