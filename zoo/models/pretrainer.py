"""Next-sentence prediction and the BERT pre-trainer (MLM + NSP)."""

import keras

from zoo.configs import INPUT_NAMES
from zoo.models.encoder_task import EncoderTask, as_float32, check_encoder, encoder_inputs
from zoo.models.masked_lm import masked_lm_head_for, masked_positions_input


def _nsp_dense(encoder):
    # BERT's `cls/seq_relationship`: a 2-way linear layer on the pooled output.
    return keras.layers.Dense(
        2,
        kernel_initializer=keras.initializers.TruncatedNormal(
            stddev=encoder.initializer_range
        ),
        dtype=encoder.dtype_policy,
        name="nsp_dense",
    )


def _require_pooler(encoder, who):
    if encoder.pooler_dense is None:
        raise ValueError(
            f"{who}: next-sentence prediction reads the pooled output, but "
            f"{type(encoder).__name__} has no pooler. Use a BertEncoder, or "
            "zoo.MaskedLM for MLM-only pre-training (the DistilBERT recipe)."
        )


@keras.saving.register_keras_serializable(package="zoo")
class NextSentencePredictor(EncoderTask):
    """Encoder + NSP head: is segment B the continuation of segment A?

    Outputs: `{"nsp_logits": float32 [batch, 2]}` (index 0 = "is next", as in
    BERT's checkpoints).
    """

    def __init__(self, encoder, **kwargs):
        check_encoder(encoder, "NextSentencePredictor")
        _require_pooler(encoder, "NextSentencePredictor")
        self.encoder = encoder
        self.nsp_dense = _nsp_dense(encoder)
        inputs = encoder_inputs()
        pooled = encoder(inputs)["pooled_output"]
        super().__init__(
            inputs=inputs,
            outputs={"nsp_logits": as_float32(self.nsp_dense(pooled))},
            **kwargs,
        )


@keras.saving.register_keras_serializable(package="zoo")
class Pretrainer(EncoderTask):
    """BERT pre-training: masked LM on `masked_positions` plus NSP.

    Inputs: the encoder's three plus `masked_positions [batch, P]`.
    Outputs: `{"mlm_logits": [batch, P, vocab], "nsp_logits": [batch, 2]}`, float32.
    """

    def __init__(self, encoder, **kwargs):
        check_encoder(encoder, "Pretrainer")
        _require_pooler(encoder, "Pretrainer")
        self.encoder = encoder
        self.mlm_head = masked_lm_head_for(encoder)
        self.nsp_dense = _nsp_dense(encoder)
        inputs = encoder_inputs()
        inputs["masked_positions"] = masked_positions_input()
        out = encoder({k: inputs[k] for k in INPUT_NAMES})
        mlm = self.mlm_head(out["sequence_output"], inputs["masked_positions"])
        nsp = self.nsp_dense(out["pooled_output"])
        super().__init__(
            inputs=inputs,
            outputs={"mlm_logits": as_float32(mlm), "nsp_logits": as_float32(nsp)},
            **kwargs,
        )
