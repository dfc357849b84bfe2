"""Masked language modelling: the head layer and the model."""

import keras
from keras import ops

from zoo.configs import INPUT_NAMES
from zoo.layers.projection import Projection, check_gelu
from zoo.models.encoder_task import EncoderTask, as_float32, check_encoder, encoder_inputs


def tied_logits(x, embeddings):
    """`x` (B, P, D) against the (V, D) embedding table: (B, P, V) logits.

    One 2-D product with the table read transposed in place. Written as
    `ops.matmul(x, ops.transpose(embeddings))` the same logits cost 1.4-2x
    as much per training step on CPU: the transpose copies the V x D table
    on every call and the 3-D x 2-D product's gradient for the table is a
    batched product summed over the batch (bert_tiny pre-training step, B32
    x 10 predictions x 30,522 pieces; BUILD_NOTES.md, "Training and distribution").
    On JAX and PyTorch, whose compilers fold the transpose into the product,
    it is the plain `ops.matmul` form (issue #39)."""
    if keras.backend.backend() != "tensorflow":
        return ops.matmul(x, ops.transpose(embeddings))
    # TensorFlow-only branch (the backend is TensorFlow here, so it is loaded).
    import tensorflow as tf

    logits = tf.matmul(tf.reshape(x, (-1, x.shape[-1])), embeddings, transpose_b=True)
    leading = [d if d is not None else tf.shape(x)[i] for i, d in enumerate(x.shape[:-1])]
    return tf.reshape(logits, leading + [embeddings.shape[0]])


@keras.saving.register_keras_serializable(package="zoo")
class MaskedLMHead(keras.layers.Layer):
    """BERT's `cls/predictions`: gather the masked positions, dense + GELU +
    LayerNorm transform, then project onto the vocabulary with the token
    embedding matrix (tied weights, as in BERT) plus an output bias.

    `token_embedding` is the encoder's embedding layer; it is re-linked by the
    owning model on reload, so it is not part of this layer's config.
    `embedding_dim` is the transform's output width, the width of the token
    embedding (None: `hidden_dim`, as in BERT; ALBERT's head maps H -> E and
    decodes with its E-wide table). `activation` is the encoder's GELU form.

    Call args: `sequence_output [batch, seq, hidden]`, `masked_positions [batch, P]`.
    Returns: logits `[batch, P, vocabulary_size]` (compute dtype).
    """

    def __init__(
        self,
        vocabulary_size,
        hidden_dim,
        layer_norm_epsilon=1e-12,
        initializer_range=0.02,
        token_embedding=None,
        embedding_dim=None,
        activation="gelu",
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.vocabulary_size = vocabulary_size
        self.hidden_dim = hidden_dim
        self.embedding_dim = embedding_dim
        self.activation = activation
        width = embedding_dim or hidden_dim
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range
        self.token_embedding = token_embedding
        self.transform_dense = Projection(
            width,
            gelu=check_gelu(activation),
            kernel_initializer=keras.initializers.TruncatedNormal(stddev=initializer_range),
            dtype=self.dtype_policy,
            name="transform_dense",
        )
        self.transform_layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_epsilon, dtype=self.dtype_policy, name="transform_layer_norm"
        )

    def build(self, sequence_output_shape, masked_positions_shape=None):
        if self.token_embedding is None:
            raise ValueError(
                "MaskedLMHead needs `token_embedding` (the encoder's token "
                "embedding layer) to tie its output weights; build it through "
                "zoo.MaskedLM or zoo.Pretrainer, which pass it."
            )
        self.transform_dense.build(sequence_output_shape)
        width = self.embedding_dim or self.hidden_dim
        self.transform_layer_norm.build(tuple(sequence_output_shape[:-1]) + (width,))
        self.output_bias = self.add_weight(
            shape=(self.vocabulary_size,), initializer="zeros", name="output_bias"
        )
        self.built = True

    def call(self, sequence_output, masked_positions):
        positions = ops.cast(masked_positions, "int32")[:, :, None]
        x = ops.take_along_axis(sequence_output, positions, axis=1)  # (B, P, H)
        x = self.transform_dense(x)  # GELU applied inside
        x = self.transform_layer_norm(x)
        embeddings = ops.cast(self.token_embedding.embeddings, x.dtype)  # (V, H or E)
        logits = tied_logits(x, embeddings)
        return logits + ops.cast(self.output_bias, x.dtype)

    def compute_output_shape(self, sequence_output_shape, masked_positions_shape):
        return (sequence_output_shape[0], masked_positions_shape[1], self.vocabulary_size)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocabulary_size": self.vocabulary_size,
                "hidden_dim": self.hidden_dim,
                "layer_norm_epsilon": self.layer_norm_epsilon,
                "initializer_range": self.initializer_range,
                "embedding_dim": self.embedding_dim,
                "activation": self.activation,
            }
        )
        return config


def masked_lm_head_for(encoder):
    """The masked-LM head that fits `encoder`: BERT's (transform at H, decoder
    tied to the V x H table) or, for an ALBERT encoder, ALBERT's (dense
    H -> E, LayerNorm(E), decoder tied to the V x E table); the transform
    uses the encoder's GELU form."""
    config = encoder.config
    return MaskedLMHead(
        encoder.vocabulary_size,
        encoder.hidden_dim,
        layer_norm_epsilon=encoder.layer_norm_epsilon,
        initializer_range=encoder.initializer_range,
        token_embedding=encoder.token_embedding,
        embedding_dim=config.embedding_dim,
        activation=config.activation,
        dtype=encoder.dtype_policy,
        name="mlm_head",
    )


def masked_positions_input():
    return keras.Input(shape=(None,), dtype="int32", name="masked_positions")


@keras.saving.register_keras_serializable(package="zoo")
class MaskedLM(EncoderTask):
    """Encoder + masked-LM head. Extra input `masked_positions [batch, P]`.

    Outputs: `{"mlm_logits": float32 [batch, P, vocabulary_size]}`.
    """

    def __init__(self, encoder, **kwargs):
        check_encoder(encoder, "MaskedLM")
        self.encoder = encoder
        self.mlm_head = masked_lm_head_for(encoder)
        inputs = encoder_inputs()
        inputs["masked_positions"] = masked_positions_input()
        x = encoder({k: inputs[k] for k in INPUT_NAMES})
        logits = as_float32(self.mlm_head(x["sequence_output"], inputs["masked_positions"]))
        super().__init__(inputs=inputs, outputs={"mlm_logits": logits}, **kwargs)
