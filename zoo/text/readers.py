"""Readers for the data forms every `--data` takes.

- `bbc`: the installed BBC News corpus with the project's fixed split;
- classification: a folder of class sub-folders of `.txt` files, or a
  CSV / TSV / JSONL file with columns `text`, optional `text_b`, `label`;
- tagging: CoNLL column files (word first, tag last; blank line between
  sentences; `-DOCSTART-` lines skipped);
- span QA: SQuAD v1.1 / v2.0 JSON;
- regression (STS-style similarity): a CSV / TSV / JSONL file with columns
  `text`, optional `text_b`, `score` (a number), or `wordnet-sts` (the
  generated WordNet set of `zoo.text.wordnet_sts`, with its own split);
- a folder holding `train`, `validation` (or `dev`) and `test` entries (at
  least `train` and one other), each a file or folder in one of these forms:
  an explicit split.

`read_task_examples` is the one entry point: training (`zoo.train.data`)
applies its split rule to what it returns, export and validation
(`calibration_and_validation`, `validation_data`) theirs.
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import json
import pathlib

from zoo.text import wordnet_sts
from zoo.text.corpora import bbc_news_split, decode_text

CLASSIFICATION_SUFFIXES = (".csv", ".tsv", ".jsonl", ".ndjson", ".json")
BBC = "bbc"
WORDNET_STS = "wordnet-sts"
REGRESSION_SUFFIXES = (".csv", ".tsv", ".jsonl", ".ndjson", ".json")
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
SPLIT_FOLDER_HINT = (
    "or a folder with train/ and test/ (and/or validation/ or dev/) entries, each a folder "
    "of class sub-folders or a .csv/.tsv/.jsonl file"
)


@dataclasses.dataclass(frozen=True)
class TextExample:
    text: str
    label: str | None  # None only where labels are optional (texts for export)
    text_b: str | None = None


@dataclasses.dataclass(frozen=True)
class ScoredText:
    """A text (or text pair) with a float target: regression, e.g. STS similarity."""

    text: str
    score: float
    text_b: str | None = None


@dataclasses.dataclass(frozen=True)
class TaggedSentence:
    words: tuple
    tags: tuple


@dataclasses.dataclass(frozen=True)
class QAExample:
    qid: str
    question: str
    context: str
    answers: tuple  # ((text, char_start), ...); empty when unanswerable
    is_impossible: bool = False


def _read_text(path):
    return decode_text(pathlib.Path(path).read_bytes())


def _need(condition, path, message):
    if not condition:
        raise ValueError(f"{path}: {message}")


def _need_file(path, what):
    if path.is_dir():
        raise ValueError(
            f"{path}: is a folder; {what}, or a folder with `train` and `test` (and/or "
            "`validation` or `dev`) entries in that form."
        )
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file.")


# --- classification ------------------------------------------------------------


def read_classification(path, *, labelled=True):
    """List of `TextExample` from a class-folder tree or a CSV/TSV/JSONL file.

    With `labelled=False` the `label` column may be missing or empty (the
    example's label is then None): texts to export and validate on."""
    path = pathlib.Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file or directory.")
    if path.is_dir():
        return _read_class_folders(path)
    suffix = path.suffix.lower()
    if suffix in (".csv", ".tsv"):
        return _read_delimited(path, "\t" if suffix == ".tsv" else ",", labelled)
    if suffix in (".jsonl", ".ndjson", ".json"):
        return _read_jsonl(path, labelled)
    raise ValueError(
        f"{path}: unsupported file type {suffix!r}; give one of "
        f"{', '.join(CLASSIFICATION_SUFFIXES)} with a `text` column (and `label`), a folder "
        f"of class sub-folders of .txt files, {SPLIT_FOLDER_HINT}."
    )


def _read_class_folders(path):
    classes = sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith("."))
    splits = [p.name for p in classes if p.name.lower() in SPLIT_NAMES]
    # A folder with only one split entry (say train/ alone) lands here, its
    # split read as a class: say what a split folder needs.
    hint = (
        f" ({', '.join(splits)} look(s) like a split: a split folder needs `train` and "
        "`test`, `validation` or `dev` entries)"
        if splits
        else ""
    )
    _need(
        classes,
        path,
        f"found no class sub-folders holding .txt files; expected {path}/LABEL/*.txt, "
        f"{SPLIT_FOLDER_HINT}.",
    )
    examples = []
    for folder in classes:
        files = sorted(folder.glob("*.txt"))
        for file in files:
            text = _read_text(file).strip()
            if text:
                examples.append(TextExample(text, folder.name))
    _need(
        examples,
        path,
        f"found no class sub-folders holding non-empty .txt files (sub-folders: "
        f"{[p.name for p in classes][:8]}){hint}; expected {path}/LABEL/*.txt, "
        f"{SPLIT_FOLDER_HINT}.",
    )
    return examples


def _row_example(row, where, labelled=True):
    needed = ("text", "label") if labelled else ("text",)
    if not isinstance(row, dict):
        raise ValueError(
            f"{where}: expected an object with {' and '.join(f'`{k}`' for k in needed)}; "
            f"got {row!r:.80}"
        )
    missing = [k for k in needed if row.get(k) in (None, "")]
    if missing:
        raise ValueError(
            f"{where}: missing {' and '.join(f'`{m}`' for m in missing)} "
            f"(columns present: {sorted(row)}); "
            + (
                "every row needs `text` and `label`, `text_b` is optional."
                if labelled
                else "every row needs `text`; `label` and `text_b` are optional."
            )
        )
    text_b = row.get("text_b") or None
    label = row.get("label")
    label = None if label in (None, "") else str(label)
    return TextExample(str(row["text"]), label, None if text_b is None else str(text_b))


def _read_delimited(path, delimiter, labelled=True):
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle, delimiter=delimiter)
        header = reader.fieldnames or []
        _need(
            "text" in header and ("label" in header or not labelled),
            path,
            (
                "header must name `text` and `label` columns (and optionally `text_b`); "
                if labelled
                else "header must name a `text` column (and optionally `text_b`, `label`); "
            )
            + f"found {header}.",
        )
        examples = [
            _row_example(row, f"{path}:{i + 2}", labelled) for i, row in enumerate(reader)
        ]
    _need(examples, path, "no rows below the header.")
    return examples


def _read_jsonl(path, labelled=True):
    examples = []
    with open(path, encoding="utf-8") as handle:
        for i, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}:{i}: not valid JSON ({e.msg}).") from e
            examples.append(_row_example(row, f"{path}:{i}", labelled))
    _need(examples, path, "no examples (expected one JSON object per line).")
    return examples


# --- regression ------------------------------------------------------------------------


def _scored_example(row, where):
    if not isinstance(row, dict):
        raise ValueError(
            f"{where}: expected an object with `text` and `score`; got {row!r:.80}"
        )
    missing = [k for k in ("text", "score") if row.get(k) in (None, "")]
    if missing:
        raise ValueError(
            f"{where}: missing {' and '.join(f'`{m}`' for m in missing)} (columns present: "
            f"{sorted(k for k in row if k is not None)}); every row needs `text` and `score` (a "
            "number), `text_b` is optional."
        )
    raw = row["score"]
    try:
        if isinstance(raw, bool):
            raise ValueError
        score = float(raw)
    except (TypeError, ValueError):
        raise ValueError(
            f"{where}: `score` is {raw!r:.40}, not a number; give the target as a "
            "number (e.g. 3.8)."
        ) from None
    if score != score or score in (float("inf"), float("-inf")):
        raise ValueError(f"{where}: `score` is {raw!r}; give a finite number.")
    text_b = row.get("text_b") or None
    return ScoredText(str(row["text"]), score, None if text_b is None else str(text_b))


def read_regression(path):
    """List of `ScoredText` from a CSV / TSV / JSONL file with `text`, optional
    `text_b` and `score` (a number: the target, e.g. an STS similarity 0..5).
    A missing or non-numeric score is an error naming the line."""
    path = pathlib.Path(path)
    _need_file(
        path,
        "regression data is a .csv/.tsv/.jsonl file with `text`, optional "
        "`text_b`, and `score`",
    )
    suffix = path.suffix.lower()
    examples = []
    if suffix in (".csv", ".tsv"):
        with open(path, newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle, delimiter="\t" if suffix == ".tsv" else ",")
            header = reader.fieldnames or []
            _need(
                "text" in header and "score" in header,
                path,
                f"header must name `text` and `score` columns (and optionally `text_b`); "
                f"found {header}.",
            )
            examples = [
                _scored_example(row, f"{path}:{i + 2}") for i, row in enumerate(reader)
            ]
    elif suffix in (".jsonl", ".ndjson", ".json"):
        with open(path, encoding="utf-8") as handle:
            for i, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as e:
                    raise ValueError(f"{path}:{i}: not valid JSON ({e.msg}).") from e
                examples.append(_scored_example(row, f"{path}:{i}"))
    else:
        raise ValueError(
            f"{path}: unsupported file type {suffix!r} for regression; give one of "
            f"{', '.join(REGRESSION_SUFFIXES)} with `text`, optional `text_b`, and `score`, "
            "or a folder with train and test (and/or validation) files in that form."
        )
    _need(examples, path, "no examples (expected rows with `text` and `score`).")
    return examples


def wordnet_sts_examples(sizes=None, seed=wordnet_sts.SEED):
    """`wordnet_sts.wordnet_sts_splits` as `{split: [ScoredText]}`."""
    return {
        name: [ScoredText(e["text"], e["score"], e["text_b"]) for e in examples]
        for name, examples in wordnet_sts.wordnet_sts_splits(sizes, seed).items()
    }


# --- CoNLL tagging -------------------------------------------------------------------


def read_conll(path):
    """List of `TaggedSentence` from a CoNLL file: the first column is the
    word, the last the tag (BIO / IOB2); blank lines separate sentences."""
    path = pathlib.Path(path)
    _need_file(path, "tagging data is a CoNLL file")
    sentences, words, tags = [], [], []
    for number, line in enumerate(_read_text(path).splitlines(), 1):
        parts = line.split()
        if not parts:
            if words:
                sentences.append(TaggedSentence(tuple(words), tuple(tags)))
                words, tags = [], []
            continue
        if parts[0] == "-DOCSTART-":
            continue
        _need(
            len(parts) >= 2,
            f"{path}:{number}",
            f"expected `WORD ... TAG` columns; found {line!r}.",
        )
        words.append(parts[0])
        tags.append(parts[-1])
    if words:
        sentences.append(TaggedSentence(tuple(words), tuple(tags)))
    _need(sentences, path, "no sentences found.")
    return sentences


# --- SQuAD ---------------------------------------------------------------------


def read_squad(path):
    """List of `QAExample` from SQuAD v1.1 or v2.0 JSON."""
    path = pathlib.Path(path)
    _need_file(path, "QA data is a SQuAD JSON file")
    try:
        data = json.loads(_read_text(path))
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not valid JSON ({e.msg} at line {e.lineno}).") from e
    _need(
        isinstance(data, dict) and isinstance(data.get("data"), list),
        path,
        'expected SQuAD JSON: {"data": [{"paragraphs": [{"context", "qas"}]}]}.',
    )
    examples = []
    for article in data["data"]:
        for paragraph in article.get("paragraphs", []):
            context = paragraph["context"]
            for qa in paragraph.get("qas", []):
                impossible = bool(qa.get("is_impossible", False))
                answers = tuple(
                    (a["text"], int(a["answer_start"])) for a in qa.get("answers", [])
                )
                for text, start in answers:
                    _need(
                        context[start : start + len(text)] == text,
                        path,
                        f"question {qa.get('id')!r}: answer {text!r} is not at "
                        f"answer_start={start} of its context.",
                    )
                _need(
                    answers or impossible,
                    path,
                    f"question {qa.get('id')!r} has no answers and is not is_impossible.",
                )
                examples.append(
                    QAExample(str(qa["id"]), qa["question"], context, answers, impossible)
                )
    _need(examples, path, "no questions found.")
    return examples


# --- explicit splits ---------------------------------------------------------------------

SPLIT_NAMES = {
    "train": "train",
    "validation": "validation",
    "dev": "validation",
    "test": "test",
}


def find_split_files(path):
    """{"train": p, "validation": p, "test": p} when `path` is a folder holding
    split entries (`train.jsonl`, `dev.json`, `test/` ...); else None."""
    path = pathlib.Path(path)
    if not path.is_dir():
        return None
    found = {}
    for entry in sorted(path.iterdir()):
        name = (
            SPLIT_NAMES.get(entry.stem.lower()) if not entry.name.startswith(".") else None
        )
        if name and name not in found:
            found[name] = entry
    return found if "train" in found and len(found) >= 2 else None


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
            "i%5==0 test, i%10==1 validation (zoo.text.wordnet_sts, seed 0)",
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
