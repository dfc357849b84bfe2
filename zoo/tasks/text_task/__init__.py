"""What the text task models share: `fit`, `evaluate` and `predict` on raw
strings, over the id-level models they extend.

    clf = zoo.TextClassifier.from_checkpoint("models/minilm", labels=["neg", "pos"])
    clf.fit(train_texts, train_labels, epochs=2, validation_data=(val_texts, val_labels))
    clf.predict(["What an amazing movie!"])          # probabilities, float32 [N, 2]
    clf.predict_labels(["What an amazing movie!"])   # ["pos"]
    clf.save("clf.keras")                            # vocabulary inside; safe-mode load

Each is the id-level task model it extends (`TextClassifier` is a
`Classifier`, ...) with a `TextPreprocessor` attached: called on id dicts
it is exactly that model (exporters, `zoo.save_model_dir`, `zoo predict`
take it as one), and on text its `fit`/`evaluate`/`predict` run the same
host-side steps as `zoo finetune` and `zoo predict` (windows of long texts,
per-word tags, answer spans over context windows).

Training data is read into memory and tokenized as `zoo finetune` does
(same shuffle, by `seed` and epoch, same windows, dropout reseeded per
epoch), so one seed and recipe give the same model through either: call
`keras.utils.set_random_seed(seed)` before `from_checkpoint`, as
`zoo finetune --seed` does (it draws the new head's initial weights and the
dropout seeds); the model's `seed` orders the batches. A second `fit` call
continues the epoch count (other batches and dropout masks than the first). With `optimizer="auto"` (the default)
each `fit` call trains with AdamW under BERT's schedule (linear warmup over
10% of that call's steps, then linear decay to 0; no weight decay on
LayerNorm and biases), as `zoo finetune` does.

The package, one job a module: `inputs` (what `x` and `y` may be, read
into lists or refused by name), `labels` (label names, checked against a
fine-tuned head), `compiling`, `tables` (DataFrames and datasets for
fit/evaluate), `training` (fit/evaluate/predict on text or ids) and
`saving` (config, model directories, `from_checkpoint`'s steps) hold the
parts of `TextTaskMixin` (`task`), which gathers them. This module
re-exports their names.
"""

from __future__ import annotations

from zoo.tasks.text_task.inputs import (
    as_list,
    as_text,
    as_texts,
    dataset_lists,
    describe,
    frame_column,
    is_frame,
    is_ids,
    positive_int,
    refuse_non_text,
    require_examples,
    targets_name,
)
from zoo.tasks.text_task.labels import head_label_names, labels_and_classes
from zoo.tasks.text_task.saving import default_length
from zoo.tasks.text_task.task import TextTaskMixin
from zoo.tasks.text_task.training import DEFAULT_BATCH_SIZE, PREDICT_BATCH_SIZE

# The names importable from zoo.tasks.text_task, wherever in the package
# they live: what the text models and their tests import.
__all__ = [
    "DEFAULT_BATCH_SIZE",
    "PREDICT_BATCH_SIZE",
    "TextTaskMixin",
    "as_list",
    "as_text",
    "as_texts",
    "dataset_lists",
    "default_length",
    "describe",
    "frame_column",
    "head_label_names",
    "is_frame",
    "is_ids",
    "labels_and_classes",
    "positive_int",
    "refuse_non_text",
    "require_examples",
    "targets_name",
]
