"""`zoo.from_keras_hub`: a keras-hub text classifier as a `zoo.TextClassifier`
(raw strings in, as keras-hub's own `predict`), a backbone as
`(encoder, tokenizer)`.

    clf = zoo.from_keras_hub(keras_hub_classifier, labels=["neg", "pos"])
    clf.predict(["What an amazing movie!"])   # probabilities
    clf.save_model_dir("models/from_keras_hub")

The conversion itself is `zoo.checkpoints.keras_hub`; this module only wraps
its result in the text model, so it lives with the text models in
`zoo.tasks`, above the converter it calls (scripts/import_graph.py).
"""

from __future__ import annotations

import warnings

from zoo.checkpoints.keras_hub import read_keras_hub
from zoo.models import Classifier
from zoo.tasks.text_classifier import TextClassifier
from zoo.text.preprocessor import TextPreprocessor


def from_keras_hub(source, *, labels=None, tokenizer=None, lowercase=None):
    """A keras-hub model as zoo objects: a `*TextClassifier` (live, or a
    preset directory or name) becomes a `zoo.TextClassifier` with its trained
    head, tokenizer and sequence length; a `*Backbone` becomes
    `(encoder, tokenizer)`, as `zoo.load_checkpoint` returns.

    Args:
        source: a keras-hub `BertTextClassifier`, `DistilBertTextClassifier`,
            `AlbertTextClassifier` or their backbones; a `save_to_preset`
            directory; or a preset name (`keras_hub:NAME`, `kaggle://...`).
        labels: the class names, in output order (default: those a zoo
            export recorded in the preset, else "0".."N-1").
        tokenizer: a keras-hub tokenizer or preprocessor, for a backbone
            given without one.
        lowercase: override the tokenizer's casing.

    The tokenizer is keras-hub's rule (`WordPieceTokenizer(flavor=
    "keras_hub")` with the keras-hub tokenizer's settings), so `predict`
    gives keras-hub's answers on any text; a setting it cannot reproduce
    is refused by name. The conversion's notes (an overridden casing, a
    length cut to the backbone's) are issued as warnings.
    ALBERT's keras-hub tokenizer is SentencePiece, which zoo text models do
    not take: use `zoo.checkpoints.keras_hub.read_keras_hub` for its weights.
    """
    imported = read_keras_hub(
        source, labels=labels, tokenizer=tokenizer, lowercase=lowercase
    )
    for note in imported.notes:
        warnings.warn(f"from_keras_hub: {note}", stacklevel=2)
    if imported.tokenizer is None:
        raise ValueError(
            f"from_keras_hub({imported.source}): no WordPiece tokenizer ("
            + "; ".join(imported.notes)
            + "). For the converted weights alone: "
            "zoo.checkpoints.keras_hub.read_keras_hub(...).model."
        )
    head = imported.model
    if not isinstance(head, Classifier):
        return imported.encoder, imported.tokenizer
    text = TextClassifier(
        head.encoder,
        head.num_classes,
        TextPreprocessor(imported.tokenizer, imported.sequence_length),
        labels=head.labels,
        pooling=head.pooling,
        dropout=head.dropout,
        hidden_dim=head.hidden_dim,
    )
    text.set_weights(head.get_weights())
    return text
