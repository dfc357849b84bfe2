"""Readers for the data forms every `--data` takes.

- `bbc`: the installed BBC News corpus with the project's fixed split;
- classification: a folder of class sub-folders of `.txt` files, or a
  CSV / TSV / JSONL file with columns `text`, optional `text_b`, `label`;
- tagging: CoNLL column files (word first, tag last; blank line between
  sentences; `-DOCSTART-` lines skipped);
- span QA: SQuAD v1.1 / v2.0 JSON;
- regression (STS-style similarity): a CSV / TSV / JSONL file with columns
  `text`, optional `text_b`, `score` (a number), or `wordnet-sts` (the
  generated WordNet set of `zoo.datasets.wordnet_sts`, with its own split);
- a folder holding `train`, `validation` (or `dev`) and `test` entries (at
  least `train` and one other), each a file or folder in one of these forms:
  an explicit split.

`read_task_examples` is the one entry point: training (`zoo.train.data`)
applies its split rule to what it returns, export and validation
(`calibration_and_validation`, `validation_data`) theirs.

The package: one module a format (`classification`, `regression`, `conll`,
`squad`), `files` (the decoding, CSV/TSV, JSON and split-name rules they
share, also used by `zoo predict`); this module dispatches `--data` to them,
holds the texts export and validation run on, and re-exports their public
names.
"""

from __future__ import annotations

import dataclasses
import functools
import pathlib

from zoo.datasets.corpora import bbc_news_split
from zoo.text.readers.classification import (
    CLASSIFICATION_SUFFIXES,
    TextExample,
    read_classification,
)
from zoo.text.readers.conll import TaggedSentence, read_conll
from zoo.text.readers.files import (
    READ_COLUMNS,
    SPLIT_FOLDER_HINT,
    SPLIT_NAMES,
    delimited_rows,
    find_split_files,
    json_lines,
    json_value,
    open_text,
    utf8_error,
)
from zoo.text.readers.regression import (
    REGRESSION_SUFFIXES,
    ScoredText,
    read_regression,
    wordnet_sts_examples,
)
from zoo.text.readers.squad import QAExample, read_squad

# The names importable from zoo.text.readers, wherever in the package they live.
__all__ = [
    "BBC",
    "CALIBRATION_TEXTS",
    "CLASSIFICATION_SUFFIXES",
    "DATA_FORMS",
    "QAExample",
    "READ_COLUMNS",
    "REGRESSION_SUFFIXES",
    "SPLIT_FOLDER_HINT",
    "SPLIT_NAMES",
    "ScoredText",
    "TaggedSentence",
    "TaskExamples",
    "TextExample",
    "WORDNET_STS",
    "calibration_and_validation",
    "delimited_rows",
    "find_split_files",
    "json_lines",
    "json_value",
    "open_text",
    "read_classification",
    "read_conll",
    "read_data",
    "read_regression",
    "read_squad",
    "read_task_examples",
    "texts_and_labels",
    "utf8_error",
    "validation_data",
    "wordnet_sts_examples",
]

BBC = "bbc"
WORDNET_STS = "wordnet-sts"
# Texts an export calibrates its int8/int4 modes on (the first of a train split).
CALIBRATION_TEXTS = 200
# What `--data` may name, for help texts and for errors that have to say what to give.
DATA_FORMS = (
    "`bbc` (the installed BBC News corpus, with the project's fixed split); a folder of "
    "class sub-folders of .txt files (DATA/LABEL/*.txt); a .csv, .tsv or .jsonl file with "
    "columns `text`, optional `text_b`, `label` (regression: `score`, a number, instead of "
    "`label`); a CoNLL file (tagging); SQuAD v1.1/v2.0 JSON (QA); `wordnet-sts` (regression: "
    "WordNet definition pairs scored 0..5 by taxonomy similarity); or a folder with `train` and `test` (and/or `validation` or `dev`) "
    "entries, each a file or folder in one of those forms"
)


# --- one entry point for every --data -----------------------------------------------


@dataclasses.dataclass(frozen=True)
class TaskExamples:
    """What `--data` holds, before any command's split rule."""

    source: str  # `bbc` or the path given
    splits: dict | None  # split name -> examples, when the data brings its own split
    examples: list | None  # every example, when it does not
    origin: str  # where the splits come from, for the printed split rule


def _texts_or(read):
    """`read` for a file of task examples, except that a .csv/.tsv/.jsonl of
    text rows (`text`, optional `text_b`) is read as texts: what a tagger
    or QA model is exported and validated on when there is no CoNLL/SQuAD."""

    def read_texts_or_task(path):
        suffix = pathlib.Path(path).suffix.lower()
        if suffix in (".csv", ".tsv", ".jsonl", ".ndjson") or (
            suffix == ".json" and read is not read_squad
        ):
            return read_classification(path, labelled=False)
        return read(path)

    return read_texts_or_task


def _reader(task, labelled):
    # Keyed by the task names of zoo.models.task (one floor up).
    readers = {
        "classify": read_classification,
        "tag": read_conll,
        "qa": read_squad,
        "regress": read_regression,
    }
    if task not in readers:
        raise ValueError(f"task {task!r}: expected one of {', '.join(readers)}.")
    read = readers[task]
    if labelled:
        return read
    if task in ("classify", "regress"):
        # Texts to export and validate on: the score column is not needed.
        return functools.partial(read_classification, labelled=False)
    return _texts_or(read)


def read_task_examples(spec, task="classify", *, labelled=True):
    """Read `--data` for `task` ("classify", "tag", "qa", "regress") as `TaskExamples`.

    `spec` is `bbc`, one file/folder in the task's form, or a folder of
    split entries (`find_split_files`) each in that form. With
    `labelled=False` (texts to export and validate on) labels are optional,
    and a tagger's or QA model's data may also be text rows (`text`,
    optional `text_b`) in a .csv/.tsv/.jsonl file.
    """
    read = _reader(task, labelled)
    if str(spec) == WORDNET_STS:
        if task != "regress":
            raise ValueError(
                f"--data {WORDNET_STS} is a regression set (scored text pairs); "
                f"it goes with --task regress, not {task}."
            )
        splits = wordnet_sts_examples()
        if not labelled:
            splits = {
                k: [TextExample(e.text, None, e.text_b) for e in v]
                for k, v in splits.items()
            }
        return TaskExamples(
            WORDNET_STS,
            splits,
            None,
            "WordNet noun-definition pairs scored 5 x Wu-Palmer similarity, synsets split "
            "i%5==0 test, i%10==1 validation (zoo.datasets.wordnet_sts, seed 0)",
        )
    if str(spec) == BBC:
        if task != "classify":
            raise ValueError(
                f"--data bbc is a classification corpus (BBC News); a {task} model needs "
                f"{ {'tag': 'CoNLL', 'qa': 'SQuAD'}.get(task, 'scored text-pair') } data (for "
                "`zoo finetune`, "
                "--data bbc goes with --task classify)."
            )
        raw = bbc_news_split()
        return TaskExamples(
            BBC,
            {k: [TextExample(t, y) for t, y in v] for k, v in raw.items()},
            None,
            "BBC News, de-duplicated; i%5==0 test, i%10==1 validation (corpora.bbc_news_split)",
        )
    path = pathlib.Path(spec)
    if not path.exists():
        raise FileNotFoundError(
            f"--data {spec}: no such file or folder. Give {DATA_FORMS}."
        )
    explicit = find_split_files(path)
    if explicit is not None:
        return TaskExamples(
            str(spec),
            {name: read(p) for name, p in explicit.items()},
            None,
            f"explicit files: {', '.join(f'{k}={v.name}' for k, v in explicit.items())}",
        )
    return TaskExamples(
        str(spec), None, read(path), "one file/folder without its own split"
    )


# --- texts for export calibration and validation ---------------------------------


def texts_and_labels(examples, task="classify"):
    """`(texts, labels)` an exported artifact runs on: a text or a
    `(text, text_b)` pair per example (QA: `(question, context)`; tagging:
    the sentence's words joined by spaces). `labels` (class names) is None
    unless the task is classification and every example has one."""
    if examples and isinstance(examples[0], TaggedSentence):
        return [" ".join(s.words) for s in examples], None
    if examples and isinstance(examples[0], QAExample):
        return [(e.question, e.context) for e in examples], None
    pairs = any(e.text_b is not None for e in examples)
    texts = [(e.text, e.text_b or "") if pairs else e.text for e in examples]
    labelled = task == "classify" and all(e.label is not None for e in examples)
    return texts, [e.label for e in examples] if labelled else None


def _held_out(data):
    """The split an artifact is validated on: test, else validation."""
    return "test" if data.splits.get("test") else "validation"


def validation_data(spec, task="classify"):
    """`(texts, labels, description)` that `zoo validate` runs an artifact on.

    Data with its own split (`bbc`, a train/test folder): its test split
    (validation when there is no test), the texts `zoo export` validated
    on. Other data: every text. `labels` is None when the data has none.
    """
    data = read_task_examples(spec, task, labelled=False)
    if data.splits is not None:
        held = _held_out(data)
        texts, labels = texts_and_labels(data.splits[held], task)
        return texts, labels, f"the {held} split of {data.source} ({len(texts)} texts)"
    texts, labels = texts_and_labels(data.examples, task)
    return texts, labels, f"all {len(texts)} texts of {data.source} (no split of its own)"


def read_data(spec, task="classify"):
    """`(texts, labels)` of `validation_data`: for `bbc` the fixed BBC News
    test split (426 articles); `labels` is None when the data has none."""
    texts, labels, _ = validation_data(spec, task)
    return texts, labels


def calibration_and_validation(
    spec, calibration_size=CALIBRATION_TEXTS, min_validation=200, task="classify"
):
    """Split `--data` into calibration texts and validation `(texts, labels)`.

    Returns `(calibration, texts, labels, note)`; `note["calibration"]` and
    `note["validation"]` say which split or texts each is, `note["overlap"]`
    whether they share texts.

    Data with its own split (`bbc`, a folder with train/ and test/ entries):
    the first `calibration_size` texts of the train split calibrate and the
    test split (validation when there is no test) validates. Other data:
    the last `calibration_size` texts calibrate and the rest validate, when
    at least `min_validation` remain; otherwise the first
    `calibration_size` calibrate and all validate (`overlap=True`).
    """
    data = read_task_examples(spec, task, labelled=False)
    if data.splits is not None:
        train = data.splits["train"]
        calibration, _ = texts_and_labels(train[:calibration_size], task)
        held = _held_out(data)
        texts, labels = texts_and_labels(data.splits[held], task)
        return (
            calibration,
            texts,
            labels,
            {
                "calibration": f"the train split of {data.source} (first {len(calibration)} of "
                f"{len(train)} texts)",
                "validation": f"the {held} split of {data.source} ({len(texts)} texts)",
                "overlap": False,
            },
        )
    texts, labels = texts_and_labels(data.examples, task)
    if len(texts) - calibration_size >= min_validation:
        cut = len(texts) - calibration_size
        return (
            texts[cut:],
            texts[:cut],
            None if labels is None else labels[:cut],
            {
                "calibration": f"the last {calibration_size} of {len(texts)} texts of "
                f"{data.source} (no split of its own)",
                "validation": f"the first {cut} texts of {data.source}",
                "overlap": False,
            },
        )
    return (
        texts[:calibration_size],
        texts,
        labels,
        {
            "calibration": f"the first {min(calibration_size, len(texts))} of {len(texts)} texts "
            f"of {data.source} (no split of its own)",
            "validation": f"all {len(texts)} texts of {data.source} (too few to hold "
            f"{calibration_size} out: calibration and validation overlap)",
            "overlap": True,
        },
    )
