"""The DistilBERT-style student encoder."""

import keras

from zoo.models.bert_encoder import BertEncoder


@keras.saving.register_keras_serializable(package="zoo")
class DistilBertEncoder(BertEncoder):
    """BERT without segment embeddings and without a pooler (DistilBERT).

    It takes the same three inputs as `BertEncoder` so exporters, the
    tokenizer and the Android app see one interface; `segment_ids` is
    accepted and ignored. Outputs a dict with `sequence_output` only.
    """

    _family = "distilbert"

    def __init__(
        self,
        vocabulary_size,
        num_layers,
        num_heads,
        hidden_dim,
        intermediate_dim,
        max_sequence_length=512,
        dropout=0.1,
        layer_norm_epsilon=1e-12,
        initializer_range=0.02,
        activation="gelu",
        dtype=None,
        **kwargs,
    ):
        kwargs.pop("num_segments", None)
        super().__init__(
            vocabulary_size,
            num_layers,
            num_heads,
            hidden_dim,
            intermediate_dim,
            max_sequence_length=max_sequence_length,
            num_segments=0,
            dropout=dropout,
            layer_norm_epsilon=layer_norm_epsilon,
            initializer_range=initializer_range,
            activation=activation,
            dtype=dtype,
            **kwargs,
        )

    def get_config(self):
        config = super().get_config()
        config.pop("num_segments")
        return config
