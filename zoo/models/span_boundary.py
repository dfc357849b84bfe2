"""SpanBERT's span-boundary objective (SBO) head.

Each token x_i of a masked span (s..e) is predicted from the encoder's
outputs at the two tokens just outside the span, x_{s-1} and x_{e+1}, and
a learned embedding of its position in the span, p_{i-s+1} (Joshi et al.
2020, eq. 1-2):

    h0 = [x_{s-1}; x_{e+1}; p_{i-s+1}]
    h1 = LayerNorm(GeLU(W1 h0))
    y  = LayerNorm(GeLU(W2 h1))

and y is scored against the vocabulary through the tied token embedding
plus an output bias, as the MLM head does. The position embedding has
`max_span_length` rows (SpanBERT: spans of at most 10 words); a span of
10 words with `##` pieces can be longer in tokens, and its tokens past the
last row share that row. Its width is `hidden_dim` (SpanBERT's large model
used 200; ours keeps one width so the head has no extra size to choose).
"""

import keras
from keras import ops

from zoo.models.masked_lm import tied_logits


@keras.saving.register_keras_serializable(package="zoo")
class SpanBoundaryHead(keras.layers.Layer):
    """Call args: `sequence_output [batch, seq, hidden]`, `masked_positions`,
    `span_left_positions`, `span_right_positions` (int `[batch, P]`; the
    positions just before and after each masked position's span).
    Returns: logits `[batch, P, vocabulary_size]` (compute dtype).

    `token_embedding` is the encoder's embedding layer, re-linked by the
    owning model on reload (not part of the config)."""

    def __init__(
        self,
        vocabulary_size,
        hidden_dim,
        max_span_length=10,
        layer_norm_epsilon=1e-12,
        initializer_range=0.02,
        token_embedding=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.vocabulary_size = vocabulary_size
        self.hidden_dim = hidden_dim
        self.max_span_length = max_span_length
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range
        self.token_embedding = token_embedding
        init = keras.initializers.TruncatedNormal(stddev=initializer_range)
        self.position_embedding = keras.layers.Embedding(
            max_span_length,
            hidden_dim,
            embeddings_initializer=init,
            dtype=self.dtype_policy,
            name="position_embedding",
        )
        self.dense_1 = keras.layers.Dense(
            hidden_dim, kernel_initializer=init, dtype=self.dtype_policy, name="dense_1"
        )
        self.layer_norm_1 = keras.layers.LayerNormalization(
            epsilon=layer_norm_epsilon, dtype=self.dtype_policy, name="layer_norm_1"
        )
        self.dense_2 = keras.layers.Dense(
            hidden_dim, kernel_initializer=init, dtype=self.dtype_policy, name="dense_2"
        )
        self.layer_norm_2 = keras.layers.LayerNormalization(
            epsilon=layer_norm_epsilon, dtype=self.dtype_policy, name="layer_norm_2"
        )

    def build(self, sequence_output_shape, *position_shapes):
        if self.token_embedding is None:
            raise ValueError(
                "SpanBoundaryHead needs `token_embedding` (the encoder's token embedding "
                "layer) to tie its output weights; build it through zoo.Pretrainer("
                "..., span_boundary=True), which passes it."
            )
        batch = sequence_output_shape[0]
        self.position_embedding.build((batch, None))
        self.dense_1.build((batch, None, 3 * self.hidden_dim))
        self.layer_norm_1.build((batch, None, self.hidden_dim))
        self.dense_2.build((batch, None, self.hidden_dim))
        self.layer_norm_2.build((batch, None, self.hidden_dim))
        self.output_bias = self.add_weight(
            shape=(self.vocabulary_size,), initializer="zeros", name="output_bias"
        )
        self.built = True

    def call(
        self, sequence_output, masked_positions, span_left_positions, span_right_positions
    ):
        def gather(positions):
            index = ops.cast(positions, "int32")[:, :, None]
            return ops.take_along_axis(sequence_output, index, axis=1)  # (B, P, H)

        # Position in the span: 0 for its first token (p_1 in the paper).
        offset = (
            ops.cast(masked_positions, "int32") - ops.cast(span_left_positions, "int32") - 1
        )
        offset = ops.clip(offset, 0, self.max_span_length - 1)
        h = ops.concatenate(
            [
                gather(span_left_positions),
                gather(span_right_positions),
                self.position_embedding(offset),
            ],
            axis=-1,
        )  # (B, P, 3H)
        h = self.layer_norm_1(keras.activations.gelu(self.dense_1(h), approximate=False))
        h = self.layer_norm_2(keras.activations.gelu(self.dense_2(h), approximate=False))
        embeddings = ops.cast(self.token_embedding.embeddings, h.dtype)  # (V, H)
        return tied_logits(h, embeddings) + ops.cast(self.output_bias, h.dtype)

    def compute_output_shape(self, sequence_output_shape, masked_positions_shape, *_):
        return (sequence_output_shape[0], masked_positions_shape[1], self.vocabulary_size)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocabulary_size": self.vocabulary_size,
                "hidden_dim": self.hidden_dim,
                "max_span_length": self.max_span_length,
                "layer_norm_epsilon": self.layer_norm_epsilon,
                "initializer_range": self.initializer_range,
            }
        )
        return config


def span_boundary_head_for(encoder, max_span_length=10):
    return SpanBoundaryHead(
        encoder.vocabulary_size,
        encoder.hidden_dim,
        max_span_length=max_span_length,
        layer_norm_epsilon=encoder.layer_norm_epsilon,
        initializer_range=encoder.initializer_range,
        token_embedding=encoder.token_embedding,
        dtype=encoder.dtype_policy,
        name="sbo_head",
    )


def span_position_inputs():
    return {
        name: keras.Input(shape=(None,), dtype="int32", name=name)
        for name in ("span_left_positions", "span_right_positions")
    }
