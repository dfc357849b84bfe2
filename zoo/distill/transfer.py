"""Unlabelled texts for `zoo distill --unlabelled`: the transfer set.

Distillation needs no labels for the soft-target and hidden-state terms:
the teacher supplies the targets (Hinton et al. 2015 call the texts they
are computed on the transfer set). A small labelled set gives a student
few texts to learn the teacher's behaviour from; unlabelled texts of the
same kind give it more. They join the training split: each one is trained
on with every term but the hard loss (it has no label, marked -1 in the
batches, `zoo.distill.losses.hard_loss`).

A text that is also in the data's train, validation or test split is
dropped (and counted): the student would otherwise be trained on the
teacher's outputs for the very texts it is selected and scored on.
"""

from __future__ import annotations

import dataclasses
import pathlib

from zoo.text.readers.classification import read_classification
from zoo.utils.safe_files import check_regular

UNLABELLED_FORMS = ".csv, .tsv or .jsonl file with a `text` column (optional `text_b`)"
SUFFIXES = (".csv", ".tsv", ".jsonl", ".ndjson")


@dataclasses.dataclass
class TransferSet:
    """The unlabelled texts kept, and what was dropped on the way."""

    examples: list  # TextExample, label None
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


def check_unlabelled_use(path, mode, task):
    """--unlabelled with the run's mode and the teacher's task: refused by
    name where it has no meaning."""
    if path is None:
        return
    if mode != "task":
        raise ValueError(
            f"--unlabelled {path}: --mode general reads unlabelled text already (its "
            "--data); --unlabelled adds texts to a task's training split (--mode task)."
        )
    if task != "classify":
        raise ValueError(
            f"--unlabelled {path}: the teacher is a {task} model; unlabelled texts are "
            "taken for classification teachers only. Drop --unlabelled."
        )


def read_transfer_set(path, splits):
    """The texts of `path` (UNLABELLED_FORMS; a `label` column is not read)
    that are in none of `splits` (the task data's train, validation and
    test), each once. Refuses a file whose text pairs do not match the
    data's, and one with no text left."""
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
    seen = {(e.text, e.text_b) for split in splits.values() for e in split}
    kept, keys, repeated, in_data = [], set(), 0, 0
    for row in rows:
        key = (row.text, row.text_b)
        if key in keys:
            repeated += 1
        elif key in seen:
            in_data += 1
        else:
            keys.add(key)
            kept.append(dataclasses.replace(row, label=None))
    if not kept:
        raise ValueError(
            f"--unlabelled {path}: all {len(rows)} texts are repeats or already in --data's "
            "train, validation or test split; give texts the data does not hold."
        )
    data_pairs = any(e.text_b for split in splits.values() for e in split)
    file_pairs = any(e.text_b for e in kept)
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
    return TransferSet(kept, len(rows), repeated, in_data)
