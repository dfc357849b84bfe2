"""Saving and loading the text models: their config (preprocessor, seed),
zoo model directories, and `from_checkpoint`'s loading, settings and
adoption of a fine-tuned id-level model's weights."""

from __future__ import annotations

import keras
import numpy as np

from zoo.checkpoints import load_checkpoint, load_model_dir, save_model_dir
from zoo.checkpoints.model_dir import is_model_dir
from zoo.configs import DEFAULT_SEQUENCE_LENGTH
from zoo.models import ID_LEVEL_CLASS, TASK_MODELS, task_of
from zoo.tasks.text_task.inputs import positive_int
from zoo.text.preprocessor import TextPreprocessor, check_lengths


class SavingMixin:
    """Config, model directories and `from_checkpoint`'s loading steps."""

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


def default_length(encoder):
    """A new head's sequence length: the default, or less for an encoder
    that takes fewer tokens."""
    return min(DEFAULT_SEQUENCE_LENGTH, encoder.max_sequence_length)
