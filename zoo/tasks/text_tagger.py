"""`TextTagger`: a `TokenClassifier` that takes raw text (zoo.tasks.text_task)."""

from __future__ import annotations

import keras
import numpy as np

from zoo.models import TokenClassifier
from zoo.tasks import decode
from zoo.tasks.text_task import (
    TextTaskMixin,
    as_list,
    as_text,
    as_texts,
    default_length,
    head_label_names,
    is_ids,
    labels_and_classes,
    positive_int,
    refuse_non_text,
    require_examples,
    targets_name,
)
from zoo.text.preprocessor import TextPreprocessor
from zoo.text.readers import TaggedSentence
from zoo.train import data as task_data
from zoo.train.finetune import evaluation_config


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
        num_classes, labels = labels_and_classes(num_classes, labels, "TextTagger")
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
        cls._check_settings(sequence_length, num_classes=num_classes)
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
            TextPreprocessor(tokenizer, sequence_length or default_length(encoder)),
            labels=labels,
            dropout=dropout,
            seed=seed,
        )

    def _task_config(self):
        return {**super()._task_config(), **self._text_config()}

    _x_forms = "texts: a str or a list/tuple/numpy array of str (fit: also lists of words)"

    def _dataset(self, x, y, batch_size, *, shuffle=False, epoch_variable=None, where="x"):
        sentences = []
        y_name = targets_name(where)
        tags = as_list(y, y_name)
        words_of = as_list(x, where)
        if len(words_of) != len(tags):
            raise ValueError(f"{where}: {len(words_of)} texts but {len(tags)} tag lists.")
        require_examples(len(words_of), where)
        known = set(self.labels)
        for i, (words, row) in enumerate(zip(words_of, tags)):
            words = (
                as_text(words, f"{where}[{i}]").split()
                if isinstance(words, (str, bytes))
                else as_texts(words, f"{where}[{i}]")
            )
            # A bare str where the text's tag list goes: one tag, read as a
            # list of one only by chance of a one-word text.
            row = [as_text(t, f"{y_name}[{i}]") for t in as_list(row, f"{y_name}[{i}]")]
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

    # A DataFrame's targets: one tag list per row.
    _optional_columns = ()
    _target_columns = ("tags", "labels")

    def _words(self, x, batch_size):
        batch_size = positive_int(batch_size, "batch_size", None)
        x, _ = self._tables(x, None, "x", targets=False)
        refuse_non_text(x, "x", self._x_forms)
        texts = as_texts(x, "x")
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
            return self._predict_ids(x, batch_size, verbose, kwargs)
        return [w.astype(np.float32) for _, (_, w) in zip(*self._words(x, batch_size))]

    def predict_entities(self, x, batch_size=None):
        """Per text, its entities `[{"label", "text", "start", "end", "score"}]`
        (character offsets into the text, end exclusive)."""
        texts, words = self._words(x, batch_size)
        return [
            decode.entities(t, span, w, self.labels)["entities"]
            for t, (span, w) in zip(texts, words)
        ]
