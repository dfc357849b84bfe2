"""zoo: BERT-family encoders in Keras 3, with real checkpoints, training,
distillation and edge export.

    encoder, tokenizer = zoo.load_checkpoint(path)
    batch = tokenizer(["first text", "second"], sequence_length=128)
    out = encoder(batch)
    zoo.BertEncoder.from_preset("bert_base")
"""

import os

# Quiet TensorFlow's C++ start-up banner unless the user asked for it.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

from zoo.configs import PRESETS, EncoderConfig, get_preset  # noqa: E402
from zoo.models import (  # noqa: E402
    BertEncoder,
    Classifier,
    DistilBertEncoder,
    MaskedLM,
    MaskedLMHead,
    NextSentencePredictor,
    Pretrainer,
    QuestionAnswerer,
    TokenClassifier,
    with_dtype_policy,
)

__version__ = "0.1.0"


def load_checkpoint(path, **kwargs):
    """Load an encoder and its tokenizer from an HF BertModel directory, a
    google-research TF1 checkpoint, or a zoo model directory."""
    from zoo.checkpoints import load_checkpoint as _load

    return _load(path, **kwargs)


__all__ = [
    "PRESETS",
    "BertEncoder",
    "Classifier",
    "DistilBertEncoder",
    "EncoderConfig",
    "MaskedLM",
    "MaskedLMHead",
    "NextSentencePredictor",
    "Pretrainer",
    "QuestionAnswerer",
    "TokenClassifier",
    "get_preset",
    "load_checkpoint",
    "with_dtype_policy",
]
