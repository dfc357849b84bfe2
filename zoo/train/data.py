"""Task data: read a path into train/validation/test splits and turn each
split into a `tf.data.Dataset` for `model.fit`."""

from __future__ import annotations

import dataclasses

import numpy as np
import tensorflow as tf

from zoo.configs import INPUT_NAMES
from zoo.datasets.splits import deduplicate, repeats, split_examples
from zoo.models.task import TASKS
from zoo.text import features as feats
from zoo.text.readers import read_task_examples


@dataclasses.dataclass
class TaskData:
    task: str
    splits: dict  # name -> list of examples
    labels: list | None  # class names / tags; None for QA and regression
    source: str
    split_rule: str


def _text_key(example):
    return (example.text, example.text_b)


# Per task: what makes two examples the same, and what they should agree on.
_REPEAT_RULES = {
    "classify": (_text_key, lambda e: e.label),
    "regress": (_text_key, lambda e: e.score),
    "tag": (lambda s: s.words, lambda s: s.tags),
    "qa": (lambda e: (e.question, e.context), lambda e: e.answers),
}


def example_key(task):
    """The function that gives a `task` example's text: two examples with
    the same key are the same example (repeats, and texts already in a
    split)."""
    return _REPEAT_RULES[task][0]


_TARGET_WORD = {"classify": "label", "regress": "score", "tag": "tagging", "qa": "answer"}


def load_task_data(path, task, *, training=True):
    """Read `path` for `task` into train/validation/test splits.

    `path` is any form `zoo.text.readers.read_task_examples` reads: `bbc`
    (the project's fixed BBC News split), a folder with `train` /
    `validation` (or `dev`) / `test` entries, or one file/folder in the
    task's format, which is de-duplicated and split by the fixed rule of
    `zoo.datasets.splits`. With `training` (the default) the train and
    validation splits must be there and varied enough to train on; data
    read only to be scored (`zoo evaluate`: two rows, one class) need not.
    """
    if task not in TASKS:
        raise ValueError(f"--task {task!r}: expected one of {', '.join(TASKS)}.")
    read = read_task_examples(path, task)
    rule = read.origin
    if read.splits is not None:
        splits = dict(read.splits)
        if not splits.get("validation") and splits.get("test"):
            # Selecting the best epoch or stopping early on the test split
            # would leak it into the reported score: carve validation out
            # of train instead.
            train = splits["train"]
            splits["validation"] = [e for i, e in enumerate(train) if i % 10 == 1]
            splits["train"] = [e for i, e in enumerate(train) if i % 10 != 1]
            rule += (
                "; no validation split given: train examples i%10==1 carved out as "
                "validation (model selection, early stopping); test only scored"
            )
        elif not splits.get("test"):
            rule += (
                "; no test split given: the reported metrics are on the validation "
                "split, which also selected the best epoch"
            )
    else:
        key, target = _REPEAT_RULES[task]
        dropped, disagreeing = repeats(read.examples, key, target)
        splits = split_examples(deduplicate(read.examples, key=key))
        rule = "de-duplicated, then i%5==0 test, i%10==1 validation, rest train"
        if dropped:
            # Said, not refused: real corpora repeat texts, and some label
            # them twice differently; the user learns how many went.
            rule += f"; {dropped} repeated example(s) dropped, the first of each kept"
            if disagreeing:
                rule += (
                    f" ({disagreeing} of them with another {_TARGET_WORD[task]} than "
                    "the first: check the data)"
                )
    source = read.source
    if not training:
        return TaskData(task, splits, None, source, rule)
    for name in ("train", "validation"):
        if not splits.get(name):
            raise ValueError(
                f"--data {path}: the {name} split is empty ({sum(map(len, splits.values()))} "
                "examples in all); give more examples, or train/validation/test files."
            )
    labels = None
    if task == "classify":
        labels = sorted({e.label for e in splits["train"]})
    elif task == "tag":
        labels = sorted({t for s in splits["train"] for t in s.tags})
    if labels is not None and len(labels) < 2:
        raise ValueError(
            f"--data {path}: found {len(labels)} label(s) {labels}; need >= 2."
        )
    if task == "regress" and len({e.score for e in splits["train"]}) < 2:
        raise ValueError(
            f"--data {path}: every train example has the score "
            f"{splits['train'][0].score}; a regression needs varied targets."
        )
    return TaskData(task, splits, labels, source, rule)


# --- datasets --------------------------------------------------------------------


def epoch_permutation(n, seed, epoch):
    """A permutation of range(n) that depends only on (seed, epoch): the
    shuffle of epoch k is the same whether or not training was resumed."""
    keys = tf.random.stateless_uniform(
        [n], tf.stack([tf.cast(seed, tf.int64), tf.cast(epoch, tf.int64)])
    )
    return tf.argsort(keys)


def shuffled_batches(tensors, batch_size, seed, epoch_variable, shuffle):
    n = len(next(iter(tf.nest.flatten(tensors))))
    if not shuffle:
        return tf.data.Dataset.from_tensor_slices(tensors).batch(batch_size)

    def one_epoch(_):
        order = epoch_permutation(n, seed, epoch_variable.read_value())
        picked = tf.nest.map_structure(lambda t: tf.gather(t, order), tensors)
        return tf.data.Dataset.from_tensor_slices(picked)

    return tf.data.Dataset.from_tensors(0).flat_map(one_epoch).batch(batch_size)


def classification_dataset(
    examples,
    labels,
    tokenizer,
    sequence_length,
    batch_size,
    *,
    seed=0,
    epoch_variable=None,
    shuffle=False,
    max_windows=1,
    doc_stride=None,
    unlabelled=(),
):
    """Batches of `(features, {"logits": label})`. With `max_windows` > 1 a
    text longer than the sequence gives up to that many windows (stepping
    `doc_stride` pieces, `features.text_windows`), each an example with the
    text's label; otherwise texts are truncated by the tokenizer.
    `unlabelled` examples (`zoo distill --unlabelled`) join `examples` with
    the label -1, which only distillation's losses read (as no label)."""
    index = {name: i for i, name in enumerate(labels)}
    unknown = sorted({e.label for e in examples} - set(index))
    if unknown:
        raise ValueError(f"labels {unknown} are not among the training labels {labels}.")
    if unlabelled and max_windows > 1:
        raise ValueError("unlabelled texts are read in one window (max_windows=1).")
    index[None] = -1
    examples = [*examples, *unlabelled]
    if max_windows > 1:
        return _windowed_classification(
            examples,
            index,
            tokenizer,
            sequence_length,
            batch_size,
            seed,
            epoch_variable,
            shuffle,
            max_windows,
            doc_stride or sequence_length - 2,
        )
    tensors = {
        "text": np.array([e.text for e in examples], dtype=object),
        "label": np.array([index[e.label] for e in examples], np.int32),
    }
    pairs = any(e.text_b for e in examples)
    if pairs:
        tensors["text_b"] = np.array([e.text_b or "" for e in examples], dtype=object)
    ds = shuffled_batches(tensors, batch_size, seed, epoch_variable, shuffle)

    def encode(batch):
        x = tokenizer(
            batch["text"], text_b=batch.get("text_b"), sequence_length=sequence_length
        )
        return x, {"logits": batch["label"]}

    return ds.map(encode, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)


def _windowed_classification(
    examples,
    index,
    tokenizer,
    sequence_length,
    batch_size,
    seed,
    epoch_variable,
    shuffle,
    max_windows,
    doc_stride,
):
    if any(e.text_b for e in examples):
        raise ValueError(
            f"max_windows={max_windows}: windows split one long text; this data has text "
            "pairs (text_b). Use max_windows=1 (pairs are truncated longest-first)."
        )
    windows = feats.text_windows(
        [e.text for e in examples], tokenizer, sequence_length, doc_stride, max_windows
    )
    tensors = dict(windows.inputs)
    tensors["label"] = np.array([index[e.label] for e in examples], np.int32)[
        windows.example_index
    ]
    ds = shuffled_batches(tensors, batch_size, seed, epoch_variable, shuffle)

    def split(b):
        x = {k: b[k] for k in INPUT_NAMES}
        return x, {"logits": b["label"]}

    return ds.map(split).prefetch(tf.data.AUTOTUNE)


def regression_dataset(
    examples,
    tokenizer,
    sequence_length,
    batch_size,
    *,
    seed=0,
    epoch_variable=None,
    shuffle=False,
):
    """Batches of `(features, {"score": float32 target})` from `ScoredText`s;
    pairs take the tokenizer's truncating packer (longest first)."""
    tensors = {
        "text": np.array([e.text for e in examples], dtype=object),
        "score": np.array([e.score for e in examples], np.float32),
    }
    if any(e.text_b for e in examples):
        tensors["text_b"] = np.array([e.text_b or "" for e in examples], dtype=object)
    ds = shuffled_batches(tensors, batch_size, seed, epoch_variable, shuffle)

    def encode(batch):
        x = tokenizer(
            batch["text"], text_b=batch.get("text_b"), sequence_length=sequence_length
        )
        return x, {"score": batch["score"]}

    return ds.map(encode, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)


def tagging_dataset(
    sentences,
    labels,
    tokenizer,
    sequence_length,
    batch_size,
    *,
    seed=0,
    epoch_variable=None,
    shuffle=False,
):
    tag_to_id = {t: i for i, t in enumerate(labels)}
    inputs, tags, _ = feats.tagging_features(
        sentences, tokenizer, tag_to_id, sequence_length
    )
    tensors = dict(inputs)
    tensors["labels"] = np.maximum(tags, 0)
    tensors["weights"] = (tags >= 0).astype(np.float32)
    ds = shuffled_batches(tensors, batch_size, seed, epoch_variable, shuffle)

    def split(b):
        x = {k: b[k] for k in INPUT_NAMES}
        return x, {"logits": b["labels"]}, {"logits": b["weights"]}

    return ds.map(split).prefetch(tf.data.AUTOTUNE)


def qa_dataset(features, batch_size, *, seed=0, epoch_variable=None, shuffle=False):
    tensors = dict(features.inputs)
    tensors["start"] = features.start_positions
    tensors["end"] = features.end_positions
    ds = shuffled_batches(tensors, batch_size, seed, epoch_variable, shuffle)

    def split(b):
        x = {k: b[k] for k in INPUT_NAMES}
        return x, {"start_logits": b["start"], "end_logits": b["end"]}

    return ds.map(split).prefetch(tf.data.AUTOTUNE)
