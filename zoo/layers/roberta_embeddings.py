"""RoBERTa input embeddings: BERT's, with positions counted past the padding id."""

import keras
from keras import ops

from zoo.layers.embeddings import BertEmbeddings


@keras.saving.register_keras_serializable(package="zoo")
class RobertaEmbeddings(BertEmbeddings):
    """`BertEmbeddings` with RoBERTa's position ids.

    Real tokens take positions `padding_idx + 1, padding_idx + 2, ...` and
    padding takes `padding_idx`, as HF's `create_position_ids_from_input_ids`
    computes them (`cumsum(mask) * mask + padding_idx`). The position table
    therefore has `max_sequence_length + padding_idx + 1` rows (514 for
    RoBERTa's 512 tokens); `max_sequence_length` is the longest input.

    The mask is the encoder's `padding_mask` (1 = real token); without one it
    is `token_ids != padding_idx`, HF's rule. With padding last (the zoo's
    tokenizers) the two agree.

    Call args:
        token_ids: int tensor `[batch, seq]`.
        segment_ids: int tensor `[batch, seq]` (RoBERTa has one type: 0).
        padding_mask: int tensor `[batch, seq]`, 1 for a real token.
    Returns: float tensor `[batch, seq, hidden_dim]`.
    """

    def __init__(
        self,
        vocabulary_size,
        hidden_dim,
        max_sequence_length=512,
        num_segments=1,
        dropout=0.1,
        layer_norm_epsilon=1e-5,
        initializer_range=0.02,
        padding_idx=1,
        **kwargs,
    ):
        super().__init__(
            vocabulary_size,
            hidden_dim,
            max_sequence_length=max_sequence_length + padding_idx + 1,
            num_segments=num_segments,
            dropout=dropout,
            layer_norm_epsilon=layer_norm_epsilon,
            initializer_range=initializer_range,
            **kwargs,
        )
        self.max_sequence_length = max_sequence_length
        self.padding_idx = padding_idx

    def call(self, token_ids, segment_ids=None, padding_mask=None, training=None):
        if padding_mask is None:
            padding_mask = ops.not_equal(token_ids, self.padding_idx)
        mask = ops.cast(padding_mask, "int32")
        positions = ops.cumsum(mask, axis=1) * mask + self.padding_idx
        x = self.token_embedding(token_ids)
        x = x + ops.cast(self.position_embedding(positions), x.dtype)
        if self.segment_embedding is not None:
            if segment_ids is None:
                segment_ids = ops.zeros_like(token_ids)
            x = x + self.segment_embedding(segment_ids)
        x = self.layer_norm(x)
        return self.dropout_layer(x, training=training)

    def build(self, token_ids_shape, segment_ids_shape=None, padding_mask_shape=None):
        super().build(token_ids_shape, segment_ids_shape)

    def compute_output_shape(
        self, token_ids_shape, segment_ids_shape=None, padding_mask_shape=None
    ):
        return tuple(token_ids_shape) + (self.hidden_dim,)

    def get_config(self):
        config = super().get_config()
        config["padding_idx"] = self.padding_idx
        return config
