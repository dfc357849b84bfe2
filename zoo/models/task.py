"""Task identity: which fine-tuning task a model does, under one name used
everywhere (`zoo finetune --task`, zoo_model.json, metadata.json, the
Android app).

    classify   Classifier          one label per text (or text pair)
    tag        TokenClassifier     one tag per word (NER-style)
    qa         QuestionAnswerer    an answer span in a context
    regress    Regressor           one float score per text (or text pair)
"""

from __future__ import annotations

from zoo.models.classifier import Classifier
from zoo.models.question_answerer import QuestionAnswerer
from zoo.models.regressor import Regressor
from zoo.models.token_classifier import TokenClassifier

TASK_MODELS = {
    "classify": Classifier,
    "tag": TokenClassifier,
    "qa": QuestionAnswerer,
    "regress": Regressor,
}
TASKS = tuple(TASK_MODELS)
# The text models (zoo.tasks) by the id-level class they extend: what a model
# directory's "model_class" means to readers that only look at the name.
ID_LEVEL_CLASS = {
    "TextClassifier": "Classifier",
    "TextTagger": "TokenClassifier",
    "TextQuestionAnswerer": "QuestionAnswerer",
}


class NotATaskModelError(TypeError):
    """A model without a task head where a fine-tuned task model is needed."""


def task_of(model) -> str:
    """`"classify"`, `"tag"`, `"qa"` or `"regress"` for a zoo task model."""
    for task, cls in TASK_MODELS.items():
        if isinstance(model, cls):
            return task
    raise NotATaskModelError(
        f"{type(model).__name__} is not a fine-tuned task model (Classifier, "
        "TokenClassifier, QuestionAnswerer or Regressor). Put a head on the encoder (e.g. "
        "zoo.Classifier(encoder, num_classes=..., labels=[...])) or fine-tune it with "
        "`zoo finetune` first."
    )


def check_task(task) -> str:
    """`task` itself when it is one of `TASKS`; a ValueError naming them otherwise."""
    if task not in TASK_MODELS:
        raise ValueError(f"--task {task!r}: expected one of {', '.join(TASKS)}.")
    return task
