"""Text task models: the id-level heads with a preprocessor, taking raw
strings in `fit`, `evaluate` and `predict` (`zoo.TextClassifier`, ...),
and the host-side decoding they share with `zoo predict`.

One public class per module, over the behaviour they share
(`zoo.tasks.text_task`): `text_classifier`, `text_tagger`,
`text_question_answerer`; `decode` turns logits into labels, tags and
answer spans; `keras_hub_text` wraps `zoo.checkpoints.keras_hub`'s import
of a keras-hub classifier in a `TextClassifier` (`zoo.from_keras_hub`).
"""

from zoo.tasks.text_classifier import TextClassifier
from zoo.tasks.text_question_answerer import TextQuestionAnswerer
from zoo.tasks.text_tagger import TextTagger
from zoo.tasks.text_task import is_ids

# The text model of each task (`zoo finetune --task`); a regressor has none yet.
TEXT_MODELS = {"classify": TextClassifier, "tag": TextTagger, "qa": TextQuestionAnswerer}

__all__ = ["TEXT_MODELS", "TextClassifier", "TextQuestionAnswerer", "TextTagger", "is_ids"]
