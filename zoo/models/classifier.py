"""Sequence classification head."""

import keras

from zoo.layers.dropout import Dropout
from zoo.layers.projection import dense_on_rows
from zoo.models.bert_encoder import padding_mean
from zoo.models.encoder_task import EncoderTask, as_float32, check_encoder, encoder_inputs

POOLING_MODES = ("auto", "pooled", "cls", "mean")


def resolve_pooling(encoder, pooling, who):
    """`pooling` checked against `encoder`, with "auto" made concrete:
    "pooled" when the encoder has a pooler, else "cls"."""
    if pooling not in POOLING_MODES:
        raise ValueError(f"{who}: pooling={pooling!r} is not one of {POOLING_MODES}.")
    resolved = pooling
    if pooling == "auto":
        resolved = "pooled" if encoder.pooler_dense is not None else "cls"
    if resolved == "pooled" and encoder.pooler_dense is None:
        raise ValueError(
            f"{who}: pooling='pooled' needs an encoder with a pooler, but "
            f"{type(encoder).__name__} has none; use pooling='cls' or 'mean'."
        )
    return resolved


def pool(outputs, padding_mask, resolved):
    """One vector per example from the encoder's outputs (a resolved mode)."""
    if resolved == "pooled":
        return outputs["pooled_output"]
    if resolved == "cls":
        return outputs["sequence_output"][:, 0, :]
    return padding_mean(outputs["sequence_output"], padding_mask)


@keras.saving.register_keras_serializable(package="zoo")
class Classifier(EncoderTask):
    """Encoder -> pooled representation [-> dense ReLU `hidden_dim`] -> dropout
    -> dense `num_classes`.

    Args:
        encoder: a `BertEncoder` or `DistilBertEncoder`.
        num_classes: number of labels.
        pooling: `"pooled"` (BERT's tanh pooler on [CLS]), `"cls"` (the raw
            [CLS] vector), `"mean"` (mean over real tokens, what
            sentence-transformers checkpoints such as all-MiniLM-L6-v2 were
            trained with), or `"auto"`: `"pooled"` when the encoder has a
            pooler, else `"cls"`.
        labels: optional label names, kept in the config for exporters.
        hidden_dim: None (no hidden layer), or the width of a ReLU dense
            layer between pooling and dropout: the "pre-classifier" of
            DistilBERT's classifier (HF `DistilBertForSequenceClassification`,
            keras-hub `DistilBertTextClassifier`, whose argument has the same
            name), so those heads convert exactly
            (`zoo.checkpoints.keras_hub`).

    Outputs: `{"logits": float32 [batch, num_classes]}`.
    """

    def __init__(
        self,
        encoder,
        num_classes,
        pooling="auto",
        dropout=0.1,
        labels=None,
        hidden_dim=None,
        **kwargs,
    ):
        check_encoder(encoder, "Classifier")
        resolved = resolve_pooling(encoder, pooling, "Classifier")
        if labels is not None and len(labels) != num_classes:
            raise ValueError(
                f"Classifier: {len(labels)} labels given for num_classes={num_classes}; "
                "pass one name per class."
            )
        if hidden_dim is not None and (
            not isinstance(hidden_dim, int)
            or isinstance(hidden_dim, bool)
            or hidden_dim < 1
        ):
            raise ValueError(
                f"Classifier: hidden_dim={hidden_dim!r}; expected a positive int (the width "
                "of the ReLU layer before the logits) or None for no hidden layer."
            )
        initializer = keras.initializers.TruncatedNormal(stddev=encoder.initializer_range)
        # === Layers ===
        self.encoder = encoder
        self.hidden_dense = None
        if hidden_dim is not None:
            self.hidden_dense = keras.layers.Dense(
                hidden_dim,
                activation="relu",
                kernel_initializer=initializer,
                dtype=encoder.dtype_policy,
                name="hidden",
            )
        self.output_dropout = Dropout(dropout, name="output_dropout")
        self.output_dense = keras.layers.Dense(
            num_classes,
            kernel_initializer=initializer,
            dtype=encoder.dtype_policy,
            name="logits",
        )
        # === Functional model ===
        inputs = encoder_inputs()
        x = pool(encoder(inputs), inputs["padding_mask"], resolved)
        logits = as_float32(self.classify(x))
        super().__init__(inputs=inputs, outputs={"logits": logits}, **kwargs)
        # === Config ===
        self.num_classes = num_classes
        self.pooling = pooling
        self.dropout = dropout
        self.labels = list(labels) if labels is not None else None
        self.hidden_dim = hidden_dim

    def classify(self, pooled):
        """Logits from the pooled vector, through this head's layers (the
        distiller re-applies the head to an encoder's outputs with it)."""
        x = (
            pooled
            if self.hidden_dense is None
            else dense_on_rows(self.hidden_dense, pooled)
        )
        return self.output_dense(self.output_dropout(x))

    def _task_config(self):
        return {
            "num_classes": self.num_classes,
            "pooling": self.pooling,
            "dropout": self.dropout,
            "labels": self.labels,
            "hidden_dim": self.hidden_dim,
        }
