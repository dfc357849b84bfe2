"""Shared plumbing for models that put a head on an encoder."""

import keras

from zoo.models.bert_encoder import INPUT_NAMES


def encoder_inputs():
    """Fresh named int32 inputs matching the encoder's."""
    return {
        name: keras.Input(shape=(None,), dtype="int32", name=name) for name in INPUT_NAMES
    }


def check_encoder(encoder, who):
    from zoo.models.bert_encoder import BertEncoder

    if not isinstance(encoder, BertEncoder):
        raise TypeError(
            f"{who}: `encoder` must be a zoo BertEncoder or DistilBertEncoder; "
            f"received {type(encoder).__name__}. Build one with "
            "zoo.BertEncoder.from_preset(...) or zoo.load_checkpoint(...)."
        )


class EncoderTask(keras.Model):
    """Base for heads: stores the encoder under `self.encoder` and serializes
    it inside the task's config, so a `.keras` file holds the whole model and
    reloads as the same subclass."""

    def _task_config(self):
        return {}

    def get_config(self):
        return {
            "name": self.name,
            "trainable": self.trainable,
            "encoder": keras.saving.serialize_keras_object(self.encoder),
            **self._task_config(),
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["encoder"] = keras.saving.deserialize_keras_object(config["encoder"])
        return cls(**config)


def as_float32(x):
    # Under mixed_float16/bfloat16 the head computes in low precision; outputs
    # are float32 so losses, softmax and serving signatures stay exact.
    return keras.ops.cast(x, "float32")
