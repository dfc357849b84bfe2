"""Token classification (tagging, e.g. NER) head."""

import keras

from zoo.layers.dropout import Dropout
from zoo.models.encoder_task import EncoderTask, as_float32, check_encoder, encoder_inputs


@keras.saving.register_keras_serializable(package="zoo")
class TokenClassifier(EncoderTask):
    """Encoder -> dropout -> dense `num_classes` on every token.

    Outputs: `{"logits": float32 [batch, seq, num_classes]}`. Word-piece
    alignment (first sub-token carries the label) is the data pipeline's job.
    """

    def __init__(self, encoder, num_classes, dropout=0.1, labels=None, **kwargs):
        check_encoder(encoder, "TokenClassifier")
        if labels is not None and len(labels) != num_classes:
            raise ValueError(
                f"TokenClassifier: {len(labels)} labels given for "
                f"num_classes={num_classes}; pass one name per class."
            )
        self.encoder = encoder
        self.output_dropout = Dropout(dropout, name="output_dropout")
        self.output_dense = keras.layers.Dense(
            num_classes,
            kernel_initializer=keras.initializers.TruncatedNormal(
                stddev=encoder.initializer_range
            ),
            dtype=encoder.dtype_policy,
            name="logits",
        )
        inputs = encoder_inputs()
        x = encoder(inputs)["sequence_output"]
        logits = as_float32(self.output_dense(self.output_dropout(x)))
        super().__init__(inputs=inputs, outputs={"logits": logits}, **kwargs)
        self.num_classes = num_classes
        self.dropout = dropout
        self.labels = list(labels) if labels is not None else None

    def _task_config(self):
        return {
            "num_classes": self.num_classes,
            "dropout": self.dropout,
            "labels": self.labels,
        }
