"""One BERT encoder block (post-LayerNorm, GELU)."""

import keras

from zoo.layers.attention import MultiHeadSelfAttention
from zoo.layers.dropout import Dropout
from zoo.layers.projection import GELU_FORMS, Projection, check_gelu, gelu

__all__ = ["GELU_FORMS", "TransformerEncoderBlock", "gelu"]


@keras.saving.register_keras_serializable(package="zoo")
class TransformerEncoderBlock(keras.layers.Layer):
    """Self-attention and feed-forward sublayers, each followed by dropout,
    a residual connection and LayerNorm (post-LN, as in BERT).

    `activation="gelu"` is the exact erf form (`approximate=False`), which is
    what BERT's and MiniLM's checkpoints were trained with; `"gelu_tanh"` is
    the tanh approximation ALBERT v2's were trained with (HF's "gelu_new").
    The two differ by ~1e-3, so each checkpoint needs its own for parity.

    Call args:
        x: `[batch, seq, hidden_dim]`; padding_mask: `[batch, seq]`.
    Returns: `(output [batch, seq, hidden_dim], attention_probs [batch, heads, seq, seq])`.
    """

    def __init__(
        self,
        num_heads,
        hidden_dim,
        intermediate_dim,
        dropout=0.1,
        layer_norm_epsilon=1e-12,
        initializer_range=0.02,
        activation="gelu",
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.activation = activation
        self.num_heads = num_heads
        self.hidden_dim = hidden_dim
        self.intermediate_dim = intermediate_dim
        self.dropout = dropout
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range

        def init():
            return keras.initializers.TruncatedNormal(stddev=initializer_range)

        policy = self.dtype_policy
        self.attention = MultiHeadSelfAttention(
            num_heads,
            hidden_dim,
            dropout=dropout,
            initializer_range=initializer_range,
            dtype=policy,
            name="attention",
        )
        self.attention_dropout = Dropout(dropout, dtype=policy, name="attention_dropout")
        self.attention_layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_epsilon, dtype=policy, name="attention_layer_norm"
        )
        # GELU inside the projection: one fused product + bias + GELU kernel.
        self.intermediate_dense = Projection(
            intermediate_dim,
            gelu=check_gelu(activation),
            kernel_initializer=init(),
            dtype=policy,
            name="intermediate_dense",
        )
        self.output_dense = Projection(
            hidden_dim, kernel_initializer=init(), dtype=policy, name="output_dense"
        )
        self.output_dropout = Dropout(dropout, dtype=policy, name="output_dropout")
        self.output_layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_epsilon, dtype=policy, name="output_layer_norm"
        )

    def build(self, x_shape, padding_mask_shape=None):
        self.attention.build(x_shape)
        self.attention_layer_norm.build(x_shape)
        self.intermediate_dense.build(x_shape)
        self.output_dense.build(tuple(x_shape[:-1]) + (self.intermediate_dim,))
        self.output_layer_norm.build(x_shape)
        self.built = True

    def call(self, x, padding_mask=None, training=None):
        attended, probs = self.attention(x, padding_mask=padding_mask, training=training)
        x = self.attention_layer_norm(
            x + self.attention_dropout(attended, training=training)
        )
        h = self.intermediate_dense(x, training=training)  # GELU applied inside
        h = self.output_dropout(self.output_dense(h), training=training)
        return self.output_layer_norm(x + h), probs

    def compute_output_shape(self, x_shape, padding_mask_shape=None):
        return self.attention.compute_output_shape(x_shape)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_heads": self.num_heads,
                "hidden_dim": self.hidden_dim,
                "intermediate_dim": self.intermediate_dim,
                "dropout": self.dropout,
                "layer_norm_epsilon": self.layer_norm_epsilon,
                "initializer_range": self.initializer_range,
                "activation": self.activation,
            }
        )
        return config
