"""Next-sentence prediction and the BERT-family pre-trainer: MLM plus
NSP (BERT), sentence-order prediction (ALBERT) and/or the span-boundary
objective (SpanBERT)."""

import keras

from zoo.configs import INPUT_NAMES
from zoo.models.encoder_task import EncoderTask, as_float32, check_encoder, encoder_inputs
from zoo.models.masked_lm import masked_lm_head_for, masked_positions_input
from zoo.models.span_boundary import span_boundary_head_for, span_position_inputs

SENTENCE_TASKS = ("nsp", "sop")


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


def _sop_classifier(encoder):
    # ALBERT's `sop_classifier`: a 2-way linear layer on the pooled output.
    return keras.layers.Dense(
        2,
        kernel_initializer=keras.initializers.TruncatedNormal(
            stddev=encoder.initializer_range
        ),
        dtype=encoder.dtype_policy,
        name="sop_classifier",
    )


def _require_pooler(encoder, who, task="next-sentence prediction"):
    if encoder.pooler_dense is None:
        raise ValueError(
            f"{who}: {task} reads the pooled output, but "
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
    """BERT-family pre-training: masked LM on `masked_positions` plus a
    sentence task on the pooled output and/or the span-boundary objective.

    `sentence_task`: "nsp" (BERT, the default; head `nsp_dense`, output
    `nsp_logits`, 0 = "is next"), "sop" (ALBERT; head `sop_classifier`,
    output `sop_logits`, 0 = in order, 1 = swapped) or None.
    `span_boundary=True` (SpanBERT) adds the inputs `span_left_positions`,
    `span_right_positions` `[batch, P]` and the output `sbo_logits
    [batch, P, vocab]` (`SpanBoundaryHead`, tied to the token embedding).

    Inputs: the encoder's three plus `masked_positions [batch, P]` (and the
    span inputs). Outputs, float32: `mlm_logits [batch, P, vocab]` and
    `nsp_logits`/`sop_logits [batch, 2]` and/or `sbo_logits`.
    """

    def __init__(self, encoder, sentence_task="nsp", span_boundary=False, **kwargs):
        check_encoder(encoder, "Pretrainer")
        if sentence_task not in (*SENTENCE_TASKS, None):
            raise ValueError(
                f"Pretrainer: sentence_task must be 'nsp', 'sop' or None; "
                f"received {sentence_task!r}."
            )
        if sentence_task is None and not span_boundary:
            raise ValueError(
                "Pretrainer: with no sentence task and no span boundary "
                "objective it is MLM alone; use zoo.MaskedLM."
            )
        if sentence_task == "sop":
            _require_pooler(encoder, "Pretrainer", "sentence-order prediction")
        elif sentence_task == "nsp":
            _require_pooler(encoder, "Pretrainer")
        self.encoder = encoder
        self.sentence_task = sentence_task
        self.span_boundary = bool(span_boundary)
        self.mlm_head = masked_lm_head_for(encoder)
        # Only BERT's own head is called nsp_dense: checkpoint names map it
        # onto `cls/seq_relationship`.
        self.nsp_dense = _nsp_dense(encoder) if sentence_task == "nsp" else None
        self.sop_classifier = _sop_classifier(encoder) if sentence_task == "sop" else None
        self.sbo_head = span_boundary_head_for(encoder) if span_boundary else None
        inputs = encoder_inputs()
        inputs["masked_positions"] = masked_positions_input()
        if span_boundary:
            inputs.update(span_position_inputs())
        out = encoder({k: inputs[k] for k in INPUT_NAMES})
        outputs = {
            "mlm_logits": as_float32(
                self.mlm_head(out["sequence_output"], inputs["masked_positions"])
            )
        }
        if self.nsp_dense is not None:
            outputs["nsp_logits"] = as_float32(self.nsp_dense(out["pooled_output"]))
        if self.sop_classifier is not None:
            outputs["sop_logits"] = as_float32(self.sop_classifier(out["pooled_output"]))
        if span_boundary:
            outputs["sbo_logits"] = as_float32(
                self.sbo_head(
                    out["sequence_output"],
                    inputs["masked_positions"],
                    inputs["span_left_positions"],
                    inputs["span_right_positions"],
                )
            )
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)

    def _task_config(self):
        return {"sentence_task": self.sentence_task, "span_boundary": self.span_boundary}
