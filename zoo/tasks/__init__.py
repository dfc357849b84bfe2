"""Text task models: the id-level heads with a preprocessor, taking raw
strings in `fit`, `evaluate` and `predict` (`zoo.TextClassifier`, ...),
and the host-side decoding they share with `zoo predict`."""

from zoo.tasks.text_models import (
    TEXT_MODELS,
    TextClassifier,
    TextQuestionAnswerer,
    TextTagger,
    is_ids,
)

__all__ = ["TEXT_MODELS", "TextClassifier", "TextQuestionAnswerer", "TextTagger", "is_ids"]
