"""Sequence regression head: one float score per text or text pair (STS-style
sentence-pair similarity)."""

import keras

from zoo.layers.dropout import Dropout
from zoo.models.classifier import pool, resolve_pooling
from zoo.models.encoder_task import EncoderTask, as_float32, check_encoder, encoder_inputs


@keras.saving.register_keras_serializable(package="zoo")
class Regressor(EncoderTask):
    """Encoder -> pooled representation -> dropout -> dense 1 -> `score`.

    The same pooling choices as `Classifier` (`"pooled"`, `"cls"`, `"mean"`,
    `"auto"`); trained with mean squared error against a float target (for
    STS-style data a similarity on 0..5). The score is not squashed: a
    linear output keeps MSE's gradient alive at the ends of the scale.

    Args:
        encoder: a `BertEncoder` or `DistilBertEncoder`.
        pooling: see `Classifier`.
        dropout: before the output layer.

    Outputs: `{"score": float32 [batch]}`.
    """

    def __init__(self, encoder, pooling="auto", dropout=0.1, **kwargs):
        check_encoder(encoder, "Regressor")
        resolved = resolve_pooling(encoder, pooling, "Regressor")
        # === Layers ===
        self.encoder = encoder
        self.output_dropout = Dropout(dropout, name="output_dropout")
        self.output_dense = keras.layers.Dense(
            1,
            kernel_initializer=keras.initializers.TruncatedNormal(
                stddev=encoder.initializer_range
            ),
            dtype=encoder.dtype_policy,
            name="score",
        )
        # === Functional model ===
        inputs = encoder_inputs()
        x = pool(encoder(inputs), inputs["padding_mask"], resolved)
        # (B, 1) -> (B,): one score per example, the shape of the targets.
        score = as_float32(keras.ops.squeeze(self.output_dense(self.output_dropout(x)), -1))
        super().__init__(inputs=inputs, outputs={"score": score}, **kwargs)
        # === Config ===
        self.pooling = pooling
        self.dropout = dropout
        # No label names: exporters and model directories read `labels` from
        # every task model.
        self.labels = None

    def _task_config(self):
        return {"pooling": self.pooling, "dropout": self.dropout}
