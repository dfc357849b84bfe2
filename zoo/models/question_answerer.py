"""Span question answering head (SQuAD style)."""

import keras

from zoo.models.encoder_task import EncoderTask, as_float32, check_encoder, encoder_inputs


@keras.saving.register_keras_serializable(package="zoo")
class QuestionAnswerer(EncoderTask):
    """Encoder -> dense 2 on every token, split into start and end logits.

    Input is `[CLS] question [SEP] context [SEP]`. Outputs
    `{"start_logits": float32 [batch, seq], "end_logits": float32 [batch, seq]}`;
    padding positions are set to -1e4 so neither softmax nor n-best decoding
    can pick them.
    """

    def __init__(self, encoder, **kwargs):
        check_encoder(encoder, "QuestionAnswerer")
        self.encoder = encoder
        self.span_dense = keras.layers.Dense(
            2,
            kernel_initializer=keras.initializers.TruncatedNormal(
                stddev=encoder.initializer_range
            ),
            dtype=encoder.dtype_policy,
            name="span_logits",
        )
        inputs = encoder_inputs()
        x = encoder(inputs)["sequence_output"]
        logits = as_float32(self.span_dense(x))  # (B, T, 2)
        keep = keras.ops.greater(inputs["padding_mask"], 0)
        start = keras.ops.where(keep, logits[:, :, 0], -1e4)
        end = keras.ops.where(keep, logits[:, :, 1], -1e4)
        super().__init__(
            inputs=inputs, outputs={"start_logits": start, "end_logits": end}, **kwargs
        )
