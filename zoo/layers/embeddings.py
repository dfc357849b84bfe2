"""BERT input embeddings: token + position (+ segment), LayerNorm, dropout."""

import keras
from keras import ops

from zoo.layers.dropout import Dropout


@keras.saving.register_keras_serializable(package="zoo")
class BertEmbeddings(keras.layers.Layer):
    """Sums learned token, absolute position and (optional) segment embeddings.

    `num_segments=0` drops the segment table (DistilBERT); `segment_ids` is
    then accepted and ignored so every encoder takes the same three inputs.

    Call args:
        token_ids: int tensor `[batch, seq]`.
        segment_ids: int tensor `[batch, seq]`.
    Returns: float tensor `[batch, seq, hidden_dim]`.
    """

    def __init__(
        self,
        vocabulary_size,
        hidden_dim,
        max_sequence_length=512,
        num_segments=2,
        dropout=0.1,
        layer_norm_epsilon=1e-12,
        initializer_range=0.02,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.vocabulary_size = vocabulary_size
        self.hidden_dim = hidden_dim
        self.max_sequence_length = max_sequence_length
        self.num_segments = num_segments
        self.dropout = dropout
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range

        def init():
            return keras.initializers.TruncatedNormal(stddev=initializer_range)

        self.token_embedding = keras.layers.Embedding(
            vocabulary_size,
            hidden_dim,
            embeddings_initializer=init(),
            dtype=self.dtype_policy,
            name="token_embedding",
        )
        self.position_embedding = keras.layers.Embedding(
            max_sequence_length,
            hidden_dim,
            embeddings_initializer=init(),
            dtype=self.dtype_policy,
            name="position_embedding",
        )
        self.segment_embedding = None
        if num_segments:
            self.segment_embedding = keras.layers.Embedding(
                num_segments,
                hidden_dim,
                embeddings_initializer=init(),
                dtype=self.dtype_policy,
                name="segment_embedding",
            )
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_epsilon, dtype=self.dtype_policy, name="layer_norm"
        )
        self.dropout_layer = Dropout(dropout, dtype=self.dtype_policy, name="dropout")

    def build(self, token_ids_shape, segment_ids_shape=None):
        self.token_embedding.build(token_ids_shape)
        self.position_embedding.build((None,))
        if self.segment_embedding is not None:
            self.segment_embedding.build(token_ids_shape)
        self.layer_norm.build(tuple(token_ids_shape) + (self.hidden_dim,))
        self.built = True

    def call(self, token_ids, segment_ids=None, training=None):
        x = self.token_embedding(token_ids)
        # Positions are 0..seq-1 for every row; a slice of the table, not a
        # gather, so a fixed-length TFLite signature folds it to a constant.
        seq_len = ops.shape(token_ids)[1]
        table = self.position_embedding.embeddings
        if keras.backend.backend() == "jax":
            # Keras's JAX `ops.slice` passes a variable to `lax.dynamic_slice`
            # unconverted, which JAX >= 0.8 refuses outside `jit` (issue #39).
            table = ops.convert_to_tensor(table)
        positions = ops.slice(table, (0, 0), (seq_len, self.hidden_dim))
        x = x + ops.cast(positions, x.dtype)[None, :, :]
        if self.segment_embedding is not None:
            if segment_ids is None:
                segment_ids = ops.zeros_like(token_ids)
            x = x + self.segment_embedding(segment_ids)
        x = self.layer_norm(x)
        return self.dropout_layer(x, training=training)

    def compute_output_shape(self, token_ids_shape, segment_ids_shape=None):
        return tuple(token_ids_shape) + (self.hidden_dim,)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocabulary_size": self.vocabulary_size,
                "hidden_dim": self.hidden_dim,
                "max_sequence_length": self.max_sequence_length,
                "num_segments": self.num_segments,
                "dropout": self.dropout,
                "layer_norm_epsilon": self.layer_norm_epsilon,
                "initializer_range": self.initializer_range,
            }
        )
        return config
