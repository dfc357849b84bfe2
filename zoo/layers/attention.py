"""Multi-head self-attention that also returns its attention probabilities."""

import math

import keras
from keras import ops

from zoo.layers.dropout import Dropout
from zoo.layers.projection import Projection


@keras.saving.register_keras_serializable(package="zoo")
class MultiHeadSelfAttention(keras.layers.Layer):
    """BERT's self-attention: query/key/value projections, scaled dot
    product over non-padding keys, output projection.

    The attention probabilities are returned too (distillation transfers
    them). Scores and softmax run in float32 under any mixed-precision policy:
    in float16 the masked -1e9 would overflow, and attention KL losses need
    accurate probabilities.

    Call args:
        x: `[batch, seq, hidden_dim]`.
        padding_mask: `[batch, seq]`, 1 for real tokens, 0 for padding.
    Returns: `(output [batch, seq, hidden_dim], probs [batch, heads, seq, seq])`.
    """

    def __init__(
        self,
        num_heads,
        hidden_dim,
        dropout=0.1,
        initializer_range=0.02,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if hidden_dim % num_heads:
            raise ValueError(
                f"hidden_dim={hidden_dim} is not divisible by num_heads={num_heads}; "
                "choose a hidden_dim that is a multiple of num_heads."
            )
        self.num_heads = num_heads
        self.hidden_dim = hidden_dim
        self.dropout = dropout
        self.initializer_range = initializer_range
        self.head_dim = hidden_dim // num_heads

        def dense(name):
            return Projection(
                hidden_dim,
                kernel_initializer=keras.initializers.TruncatedNormal(
                    stddev=initializer_range
                ),
                dtype=self.dtype_policy,
                name=name,
            )

        self.query_dense = dense("query")
        self.key_dense = dense("key")
        self.value_dense = dense("value")
        self.output_dense = dense("output")
        self.probs_dropout = Dropout(dropout, dtype=self.dtype_policy, name="probs_dropout")

    def build(self, x_shape, padding_mask_shape=None):
        for layer in (self.query_dense, self.key_dense, self.value_dense):
            layer.build(x_shape)
        self.output_dense.build(tuple(x_shape[:-1]) + (self.hidden_dim,))
        self.built = True

    def _split_heads(self, x):
        batch, seq = ops.shape(x)[0], ops.shape(x)[1]
        x = ops.reshape(x, (batch, seq, self.num_heads, self.head_dim))
        return ops.transpose(x, (0, 2, 1, 3))  # (B, heads, T, head_dim)

    def call(self, x, padding_mask=None, training=None):
        q = self._split_heads(self.query_dense(x))
        k = self._split_heads(self.key_dense(x))
        v = self._split_heads(self.value_dense(x))
        scores = ops.matmul(q, ops.transpose(k, (0, 1, 3, 2)))  # (B, heads, T, T)
        scores = ops.cast(scores, "float32") / math.sqrt(self.head_dim)
        if padding_mask is not None:
            keep = ops.greater(padding_mask, 0)[:, None, None, :]  # (B, 1, 1, T)
            scores = ops.where(keep, scores, -1e9)
        probs = ops.softmax(scores, axis=-1)
        dropped = self.probs_dropout(ops.cast(probs, v.dtype), training=training)
        context = ops.matmul(dropped, v)  # (B, heads, T, head_dim)
        context = ops.transpose(context, (0, 2, 1, 3))
        batch, seq = ops.shape(context)[0], ops.shape(context)[1]
        context = ops.reshape(context, (batch, seq, self.hidden_dim))
        return self.output_dense(context), probs

    def compute_output_shape(self, x_shape, padding_mask_shape=None):
        batch, seq = x_shape[0], x_shape[1]
        return tuple(x_shape), (batch, self.num_heads, seq, seq)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_heads": self.num_heads,
                "hidden_dim": self.hidden_dim,
                "dropout": self.dropout,
                "initializer_range": self.initializer_range,
            }
        )
        return config
