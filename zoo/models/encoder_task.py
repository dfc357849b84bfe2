"""`EncoderTask`, the base of every head on an encoder, and the plumbing
heads share (named inputs, float32 outputs, dtype policies)."""

import contextlib

import keras

from zoo.models.backend_compat import setattr_before_init
from zoo.models.bert_encoder import INPUT_NAMES, BertEncoder


def encoder_inputs():
    """Fresh named int32 inputs matching the encoder's."""
    return {
        name: keras.Input(shape=(None,), dtype="int32", name=name) for name in INPUT_NAMES
    }


def check_encoder(encoder, who):
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

    __setattr__ = setattr_before_init  # heads are set before __init__ (PyTorch)

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


@contextlib.contextmanager
def dtype_policy_scope(policy):
    """Run a block under Keras's global dtype `policy` (None: leave it), and
    restore the previous global policy afterwards."""
    previous = keras.config.dtype_policy()
    if policy:
        keras.config.set_dtype_policy(policy)
    try:
        yield
    finally:
        keras.config.set_dtype_policy(previous)


def with_dtype_policy(model, policy):
    """A copy of a zoo encoder or task model whose encoder computes under
    `policy` ("float32", "mixed_float16", "mixed_bfloat16"), with the same
    (float32) weights. Returns `model` itself when it already does."""
    encoder = getattr(model, "encoder", model)
    check_encoder(encoder, "with_dtype_policy")
    policy = keras.dtype_policies.get(policy)
    if encoder.compute_policy.name == policy.name:
        return model
    config = model.get_config()
    target = config["encoder"]["config"] if "encoder" in config else config
    target["dtype"] = keras.saving.serialize_keras_object(policy)
    clone = type(model).from_config(config)
    clone.set_weights(model.get_weights())
    return clone


def as_float32(x):
    # Under mixed_float16/bfloat16 the head computes in low precision; outputs
    # are float32 so losses, softmax and serving signatures stay exact.
    return keras.ops.cast(x, "float32")
