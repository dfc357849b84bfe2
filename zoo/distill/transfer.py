"""Unlabelled texts for `zoo distill --unlabelled`: the transfer set.

Distillation needs no labels for the soft-target and hidden-state terms:
the teacher supplies the targets (Hinton et al. 2015 call the texts they
are computed on the transfer set). A small labelled set gives a student
few texts to learn the teacher's behaviour from; unlabelled texts of the
same kind give it more. They join the training split: each one is trained
on with every term but the hard loss (it has no label: -1 in the batches,
or a sample weight of 0 at every token, `zoo.distill.losses.hard_loss`).

What a row is depends on the teacher's task, as `zoo predict` reads it:
- classify: `text` (and `text_b` where the data has pairs);
- tag: `text`, split into words at whitespace;
- qa: `text` is the question, `text_b` the context.

A text that is also in the data's train, validation or test split is
dropped (and counted): the student would otherwise be trained on the
teacher's outputs for the very texts it is selected and scored on.
"""

from __future__ import annotations

import dataclasses
import pathlib

from zoo.text.readers.classification import read_classification
from zoo.text.readers.conll import TaggedSentence
from zoo.text.readers.squad import QAExample
from zoo.train.data import example_key
from zoo.utils.safe_files import check_regular

UNLABELLED_FORMS = ".csv, .tsv or .jsonl file with a `text` column (optional `text_b`)"
SUFFIXES = (".csv", ".tsv", ".jsonl", ".ndjson")


@dataclasses.dataclass
class TransferSet:
    """The unlabelled texts kept, and what was dropped on the way."""

    # TextExample (label None), TaggedSentence (tags None) or QAExample
    # (answers None): the task's example without its label.
    examples: list
    read: int
    repeated: int  # the same text (and text_b) twice in the file
    in_data: int  # also in the data's train, validation or test split

    def record(self, path):
        """What OUT/metrics.json and the run's log say about it."""
        return {
            "file": str(path),
            "texts_read": self.read,
            "texts_used": len(self.examples),
            "dropped_repeats": self.repeated,
            "dropped_in_data": self.in_data,
        }


def check_unlabelled_use(path, mode):
    """--unlabelled with the run's mode: refused by name where it has no
    meaning (every task a teacher can have takes it)."""
    if path is not None and mode != "task":
        raise ValueError(
            f"--unlabelled {path}: --mode general reads unlabelled text already (its "
            "--data); --unlabelled adds texts to a task's training split (--mode task)."
        )


def read_transfer_set(path, splits, task="classify"):
    """The texts of `path` (UNLABELLED_FORMS; a `label` column is not read)
    that are in none of `splits` (the task data's train, validation and
    test), each once, as examples of `task` without labels. Refuses a file
    whose text pairs do not match the task's or the data's, and one with
    no text left."""
    path = pathlib.Path(path)
    if path.suffix.lower() not in SUFFIXES:
        raise ValueError(
            f"--unlabelled {path}: expected a {UNLABELLED_FORMS}, not "
            f"{path.suffix.lower() or 'a file without a suffix'!r}."
        )
    if not path.exists():
        raise FileNotFoundError(f"--unlabelled {path}: no such file.")
    try:
        check_regular(path, "--unlabelled takes a regular file")
        rows = read_classification(path, labelled=False)
    except (ValueError, OSError) as e:
        raise ValueError(f"--unlabelled: {e}") from None
    _check_pairs(path, rows, splits, task)
    as_example, key_of = _UNLABELLED_EXAMPLE[task], example_key(task)
    seen = {key_of(e) for split in splits.values() for e in split}
    kept, keys, repeated, in_data = [], set(), 0, 0
    for row in rows:
        example = as_example(row, len(kept))
        key = key_of(example)
        if key in keys:
            repeated += 1
        elif key in seen:
            in_data += 1
        else:
            keys.add(key)
            kept.append(example)
    if not kept:
        raise ValueError(
            f"--unlabelled {path}: all {len(rows)} texts are repeats or already in --data's "
            "train, validation or test split; give texts the data does not hold."
        )
    return TransferSet(kept, len(rows), repeated, in_data)


def _text_example(row, index):
    return dataclasses.replace(row, label=None)


def _tagged_sentence(row, index):
    # The words `zoo predict` tags: whitespace-separated (str.split is the
    # rule of zoo.tasks.decode.word_spans).
    words = tuple(row.text.split())
    return TaggedSentence(words, (None,) * len(words))


def _question(row, index):
    return QAExample(f"unlabelled-{index}", row.text, row.text_b, None)


_UNLABELLED_EXAMPLE = {
    "classify": _text_example,
    "tag": _tagged_sentence,
    "qa": _question,
}


def _check_pairs(path, rows, splits, task):
    """`text_b` where the task and the data read one, and nowhere else."""
    file_pairs = any(r.text_b for r in rows)
    if task == "tag":
        if file_pairs:
            raise ValueError(
                f"--unlabelled {path}: a tagger reads one text and these rows have "
                "`text_b`; drop the `text_b` column."
            )
        return
    if task == "qa":
        missing = sum(1 for r in rows if not r.text_b)
        if missing:
            raise ValueError(
                f"--unlabelled {path}: the teacher answers questions; {missing} of "
                f"{len(rows)} rows have no `text_b` (each row is a question in `text` "
                "and its context in `text_b`)."
            )
        return
    data_pairs = any(e.text_b for split in splits.values() for e in split)
    if data_pairs != file_pairs:
        raise ValueError(
            f"--unlabelled {path}: "
            + (
                "the data's examples are text pairs and these rows have no `text_b`; "
                "give each row its `text_b`."
                if data_pairs
                else "these rows have `text_b` and the data's examples are single texts; "
                "drop the `text_b` column."
            )
        )
