"""Readers for the fine-tuning formats users have.

- classification: a folder of class sub-folders of `.txt` files, or a
  CSV / TSV / JSONL file with columns `text`, optional `text_b`, `label`;
- tagging: CoNLL column files (word first, tag last; blank line between
  sentences; `-DOCSTART-` lines skipped);
- span QA: SQuAD v1.1 / v2.0 JSON.

A path that is a folder holding `train`, `validation` (or `dev`) and `test`
entries in one of these formats is read as an explicit split; otherwise
`splits.split_examples` makes the project's fixed split.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import pathlib

from zoo.text.corpora import bbc_news_split, decode_text

CLASSIFICATION_SUFFIXES = (".csv", ".tsv", ".jsonl", ".json")


@dataclasses.dataclass(frozen=True)
class TextExample:
    text: str
    label: str
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


# --- classification ------------------------------------------------------------


def read_classification(path):
    """List of `TextExample` from a class-folder tree or a CSV/TSV/JSONL file."""
    path = pathlib.Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file or directory.")
    if path.is_dir():
        return _read_class_folders(path)
    suffix = path.suffix.lower()
    if suffix in (".csv", ".tsv"):
        return _read_delimited(path, "\t" if suffix == ".tsv" else ",")
    if suffix in (".jsonl", ".json"):
        return _read_jsonl(path)
    raise ValueError(
        f"{path}: unsupported file type {suffix!r}; use a folder of class sub-folders "
        f"of .txt files or one of {', '.join(CLASSIFICATION_SUFFIXES)}."
    )


def _read_class_folders(path):
    classes = sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith("."))
    _need(classes, path, "expected one sub-folder per class holding .txt files; found none.")
    examples = []
    for folder in classes:
        files = sorted(folder.glob("*.txt"))
        for file in files:
            text = _read_text(file).strip()
            if text:
                examples.append(TextExample(text, folder.name))
    _need(examples, path, "the class sub-folders hold no non-empty .txt files.")
    return examples


def _row_example(row, where):
    if not isinstance(row, dict):
        raise ValueError(f"{where}: expected an object with `text` and `label`; got {row!r:.80}")
    missing = [k for k in ("text", "label") if row.get(k) in (None, "")]
    if missing:
        raise ValueError(
            f"{where}: missing {' and '.join(f'`{m}`' for m in missing)} "
            f"(columns present: {sorted(row)}); every row needs `text` and `label`, "
            "`text_b` is optional."
        )
    text_b = row.get("text_b") or None
    return TextExample(str(row["text"]), str(row["label"]), None if text_b is None else str(text_b))


def _read_delimited(path, delimiter):
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle, delimiter=delimiter)
        header = reader.fieldnames or []
        _need(
            "text" in header and "label" in header,
            path,
            f"header must name `text` and `label` columns (and optionally `text_b`); "
            f"found {header}.",
        )
        return [_row_example(row, f"{path}:{i + 2}") for i, row in enumerate(reader)]


def _read_jsonl(path):
    examples = []
    with open(path, encoding="utf-8") as handle:
        for i, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}:{i}: not valid JSON ({e.msg}).") from e
            examples.append(_row_example(row, f"{path}:{i}"))
    _need(examples, path, "no examples (expected one JSON object per line).")
    return examples


# --- CoNLL tagging -------------------------------------------------------------------


def read_conll(path):
    """List of `TaggedSentence` from a CoNLL file: the first column is the
    word, the last the tag (BIO / IOB2); blank lines separate sentences."""
    path = pathlib.Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file.")
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
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file.")
    try:
        data = json.loads(_read_text(path))
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not valid JSON ({e.msg} at line {e.lineno}).") from e
    _need(
        isinstance(data, dict) and isinstance(data.get("data"), list),
        path,
        "expected SQuAD JSON: {\"data\": [{\"paragraphs\": [{\"context\", \"qas\"}]}]}.",
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

SPLIT_NAMES = {"train": "train", "validation": "validation", "dev": "validation", "test": "test"}


def find_split_files(path):
    """{"train": p, "validation": p, "test": p} when `path` is a folder holding
    split entries (`train.jsonl`, `dev.json`, `test/` ...); else None."""
    path = pathlib.Path(path)
    if not path.is_dir():
        return None
    found = {}
    for entry in sorted(path.iterdir()):
        name = SPLIT_NAMES.get(entry.stem.lower()) if not entry.name.startswith(".") else None
        if name and name not in found:
            found[name] = entry
    return found if "train" in found and len(found) >= 2 else None


# --- texts for export calibration and validation ---------------------------------


def read_data(spec):
    """`(texts, labels)` from `spec`; `labels` is None when the data has none.

    `spec` is one of:
    - `"bbc"`: the project's fixed BBC News test split (426 articles);
    - a folder of class sub-folders of `.txt` files (label = folder name);
    - a `.csv` or `.jsonl` file with a `text` column, optional `label`, and
      optional `text_b` (then each text is a `(text, text_b)` pair).
    """
    if str(spec) == "bbc":
        pairs = bbc_news_split()["test"]
        return [t for t, _ in pairs], [label for _, label in pairs]
    path = pathlib.Path(spec)
    if not path.exists():
        raise FileNotFoundError(
            f"--data {spec}: no such file or folder. Give `bbc`, a folder of class sub-folders of "
            ".txt files, or a .csv/.jsonl file with `text` and `label` columns."
        )
    if path.is_dir():
        texts, labels = [], []
        for folder in sorted(p for p in path.iterdir() if p.is_dir()):
            for file in sorted(folder.glob("*.txt")):
                texts.append(decode_text(file.read_bytes()))
                labels.append(folder.name)
        if not texts:
            raise ValueError(
                f"--data {path}: found no class sub-folders holding .txt files (expected "
                f"{path}/LABEL/*.txt)."
            )
        return texts, labels
    suffix = path.suffix.lower()
    if suffix == ".csv":
        with open(path, encoding="utf-8", newline="") as f:
            rows = list(csv.DictReader(f))
    elif suffix in (".jsonl", ".ndjson"):
        rows = []
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except ValueError as e:
                    raise ValueError(
                        f"--data {path}: line {number} is not JSON ({e})."
                    ) from e
    else:
        raise ValueError(
            f"--data {path}: unsupported file type {suffix!r}; use .csv or .jsonl with a `text` "
            "column (and `label`), a folder of class sub-folders, or `bbc`."
        )
    if not rows or "text" not in rows[0]:
        found = sorted(rows[0]) if rows else "no rows"
        raise ValueError(f"--data {path}: needs a `text` column; found {found}.")
    pair = "text_b" in rows[0]
    texts = [(r["text"], r["text_b"]) if pair else r["text"] for r in rows]
    has_labels = all(r.get("label") not in (None, "") for r in rows)
    labels = [str(r["label"]) for r in rows] if has_labels else None
    return texts, labels


def calibration_and_validation(spec, calibration_size=200, min_validation=200):
    """Split `--data` into calibration texts and validation `(texts, labels)`.

    For `bbc` the calibration texts come from the train split and validation
    is the whole test split. For other data the last `calibration_size` texts
    calibrate and the rest validate, when at least `min_validation`
    remain; otherwise both use all texts (`overlap=True` in the note).
    """
    if str(spec) == "bbc":
        split = bbc_news_split()
        calibration = [t for t, _ in split["train"][:calibration_size]]
        texts, labels = read_data("bbc")
        return calibration, texts, labels, {"calibration": "bbc train", "overlap": False}
    texts, labels = read_data(spec)
    if len(texts) - calibration_size >= min_validation:
        cut = len(texts) - calibration_size
        calibration = texts[cut:]
        return (
            calibration,
            texts[:cut],
            None if labels is None else labels[:cut],
            {
                "calibration": f"last {calibration_size} texts of {spec}",
                "overlap": False,
            },
        )
    return (
        texts[:calibration_size],
        texts,
        labels,
        {"calibration": str(spec), "overlap": True},
    )
