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
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import json
import pathlib
import sys

from zoo.datasets import wordnet_sts
from zoo.datasets.corpora import bbc_news_split, decode_text

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
    # A leading byte-order mark (Windows editors write one) is not text: left
    # in, it would be the first character of the first word or of the JSON.
    return decode_text(pathlib.Path(path).read_bytes()).removeprefix("\ufeff")


# --- CSV/TSV rows and JSON values of user files -----------------------------------
#
# Shared by these readers and `zoo predict`/`zoo similarity --input`: every
# reader of a user's CSV, TSV or JSON gets the same rules and errors naming
# the file and line.

# The columns zoo reads: a header naming one of them twice is refused (a
# dict of the row would silently keep only the last).
READ_COLUMNS = ("text", "text_b", "label", "score", "question", "context")


def _lift_csv_field_limit():
    """Let csv read fields of any length, as .txt lines and JSON strings are.

    Python's csv refuses a field over 131,072 characters by default (an
    article or a long review can be longer). The limit is process-wide, with
    no per-reader setting; it is only ever raised here. The largest value
    is that of a C long (32 bits on Windows, where sys.maxsize overflows it)."""
    limit = sys.maxsize
    while csv.field_size_limit() < limit:
        try:
            csv.field_size_limit(limit)
        except OverflowError:
            limit //= 2


def _kind(delimiter):
    return "TSV" if delimiter == "\t" else "CSV"


def _quote_hint(delimiter):
    return (
        f'a {_kind(delimiter)} field that begins with a quote (") is a quoted field: it must end '
        f"with a quote followed by the delimiter or the line's end, and a quote inside it "
        f'is doubled (""). Quote such fields, or save the file as .jsonl.'
    )


def delimited_rows(handle, delimiter=",", *, where, at):
    """`(header, rows)` of a CSV/TSV file open as text (`newline=""`).

    `header` is the first row (empty for an empty file); `rows` yields
    `(line, {column: value})` for each non-blank row below it, streamed:
    `line` is the row's first line in the file, a column missing from a
    short row is None. `where` names the file and `at(line)` a line of it in
    errors. Refused with a ValueError naming the line: malformed quoting
    (csv's strict mode: an unclosed quote would otherwise swallow every row
    below it into one field), a row with more non-empty fields than the
    header has columns (an unquoted delimiter inside a text shifts the
    label), text that is not UTF-8, a header naming one of `READ_COLUMNS`
    twice. Fields may be of any length."""
    _lift_csv_field_limit()
    reader = csv.reader(handle, delimiter=delimiter, strict=True)

    def step():
        """`(first line of the row, row)`, `(None, None)` at the end."""
        first = reader.line_num + 1
        try:
            return first, next(reader)
        except StopIteration:
            return None, None
        except csv.Error as e:
            raise ValueError(
                f"{at(first)}: not valid {_kind(delimiter)} ({e}); {_quote_hint(delimiter)}"
            ) from None
        except UnicodeDecodeError:
            raise utf8_error(handle, where, at, reader.line_num) from None

    _, header = step()
    header = header or []
    repeated = sorted({c for c in header if c in READ_COLUMNS and header.count(c) > 1})
    if repeated:
        raise ValueError(
            f"{where}: the header names {', '.join(f'`{c}`' for c in repeated)} more "
            f"than once ({header}); name each column once."
        )

    def rows():
        while True:
            first, row = step()
            if row is None:
                return
            if not row:  # a blank line
                continue
            # A row's own line: its last line less the line breaks inside
            # its (quoted) fields; blank lines before it are not counted.
            line = reader.line_num - sum(field.count("\n") for field in row)
            extra = [field for field in row[len(header) :] if field.strip()]
            if extra:
                raise ValueError(
                    f"{at(line)}: {len(row)} fields, but the header names {len(header)} "
                    f"columns {header}; the extra {extra[0]!r:.40} suggests a "
                    f"{'tab' if _kind(delimiter) == 'TSV' else 'comma'} inside an unquoted "
                    f'field. Quote fields that hold the delimiter ("a, b").'
                )
            yield (
                line,
                {c: (row[i] if i < len(row) else None) for i, c in enumerate(header)},
            )

    return header, rows()


def json_value(text, where):
    """`json.loads(text)`, or a ValueError naming `where` when `text` is not
    JSON, or is JSON nested deeper than Python's parser recurses (a
    RecursionError otherwise: no row or SQuAD file is nested that deep)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        position = f" at line {e.lineno}" if e.lineno > 1 else ""
        raise ValueError(f"{where}: not valid JSON ({e.msg}{position}).") from None
    except RecursionError:
        raise ValueError(
            f"{where}: JSON nested too deeply to read (arrays or objects more than "
            f"~{sys.getrecursionlimit()} levels inside each other); zoo's data has no "
            "such nesting: check what wrote the file."
        ) from None


def json_lines(handle, *, where, at):
    """`(line, value)` of each non-blank line of a JSON-lines file open as
    text, streamed; errors name `at(line)` (`where`: the file)."""
    n = 0
    try:
        for n, line in enumerate(handle, 1):
            if line.strip():
                yield n, json_value(line, at(n))
    except UnicodeDecodeError:
        raise utf8_error(handle, where, at, n) from None


def utf8_error(handle, where, at, lines_read):
    """The ValueError for a text file (open as `handle`) that is not UTF-8,
    naming the line of the first bad byte. Text is decoded in blocks ahead
    of the line being read, so the line is found again in the file's bytes;
    when that cannot be read (or is over 256 MB), the error says after
    which line it came."""
    try:
        path = pathlib.Path(handle.name)
        if path.stat().st_size > 256 << 20:
            raise OSError("too large to read again")
        raw = path.read_bytes()
        raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        return ValueError(
            f"{at(line)}: not UTF-8 text (byte {e.start}, {raw[e.start : e.start + 1]!r}); "
            "save the file as UTF-8."
        )
    except (AttributeError, TypeError, OSError):
        pass
    return ValueError(
        f"{where}: not UTF-8 text (after line {lines_read}); save the file as UTF-8."
    )


def open_text(path, newline=None):
    """`path` open for reading as UTF-8, a leading byte-order mark dropped."""
    return open(path, encoding="utf-8-sig", newline=newline)


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
    _check_scalars(row, ("text", "text_b", "label"), where)
    text_b = row.get("text_b") or None
    label = row.get("label")
    label = None if label in (None, "") else str(label)
    return TextExample(str(row["text"]), label, None if text_b is None else str(text_b))


def _check_scalars(row, columns, where):
    """Refuse a JSON list or object where a text, a label or a score goes:
    str() of it would make a text or a label nobody wrote."""
    for column in columns:
        value = row.get(column)
        if isinstance(value, (list, dict)):
            raise ValueError(
                f"{where}: `{column}` is a JSON {type(value).__name__} ({json.dumps(value)[:60]}); "
                f"give `{column}` as a string."
            )


def _read_delimited(path, delimiter, labelled=True):
    with open_text(path, newline="") as handle:
        header, rows = delimited_rows(
            handle, delimiter, where=path, at=lambda n: f"{path}:{n}"
        )
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
        examples = [_row_example(row, f"{path}:{n}", labelled) for n, row in rows]
    _need(examples, path, "no rows below the header.")
    return examples


def _read_jsonl(path, labelled=True):
    with open_text(path) as handle:
        examples = [
            _row_example(row, f"{path}:{n}", labelled)
            for n, row in json_lines(handle, where=path, at=lambda n: f"{path}:{n}")
        ]
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
            f"{sorted(row)}); every row needs `text` and `score` (a number), `text_b` is "
            "optional."
        )
    _check_scalars(row, ("text", "text_b", "score"), where)
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
        with open_text(path, newline="") as handle:
            header, rows = delimited_rows(
                handle,
                "\t" if suffix == ".tsv" else ",",
                where=path,
                at=lambda n: f"{path}:{n}",
            )
            _need(
                "text" in header and "score" in header,
                path,
                f"header must name `text` and `score` columns (and optionally `text_b`); "
                f"found {header}.",
            )
            examples = [_scored_example(row, f"{path}:{n}") for n, row in rows]
    elif suffix in (".jsonl", ".ndjson", ".json"):
        with open_text(path) as handle:
            examples = [
                _scored_example(row, f"{path}:{n}")
                for n, row in json_lines(handle, where=path, at=lambda n: f"{path}:{n}")
            ]
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
    """List of `QAExample` from SQuAD v1.1 or v2.0 JSON. A part of the file
    not in SQuAD's shape is an error naming the file and the question (or
    the article and paragraph)."""
    path = pathlib.Path(path)
    _need_file(path, "QA data is a SQuAD JSON file")
    data = json_value(_read_text(path), path)
    shape = 'expected SQuAD JSON: {"data": [{"paragraphs": [{"context", "qas"}]}]}'
    _need(
        isinstance(data, dict) and isinstance(data.get("data"), list),
        path,
        f"{shape}.",
    )

    def need_list(value, where):
        _need(
            isinstance(value, list),
            path,
            f"{where} is {type(value).__name__} {json.dumps(value)[:40]}, not a list; {shape}.",
        )
        return value

    def need_dict(value, where):
        _need(
            isinstance(value, dict),
            path,
            f"{where} is {type(value).__name__} {json.dumps(value)[:40]}, not an object; "
            f"{shape}.",
        )
        return value

    examples = []
    for a, article in enumerate(data["data"]):
        article = need_dict(article, f"data[{a}]")
        for p, paragraph in enumerate(
            need_list(article.get("paragraphs", []), f"data[{a}].paragraphs")
        ):
            where = f"data[{a}].paragraphs[{p}]"
            paragraph = need_dict(paragraph, where)
            context = paragraph.get("context")
            _need(
                isinstance(context, str),
                path,
                f"{where}: `context` is {json.dumps(context)[:40]}; every paragraph needs "
                "its context as a string.",
            )
            for q, qa in enumerate(need_list(paragraph.get("qas", []), f"{where}.qas")):
                qa = need_dict(qa, f"{where}.qas[{q}]")
                examples.append(_squad_question(qa, context, path, f"{where}.qas[{q}]"))
    _need(examples, path, "no questions found.")
    return examples


def _squad_question(qa, context, path, where):
    """One `QAExample` of a SQuAD `qas` entry, checked."""
    qid = qa.get("id")
    _need(
        isinstance(qid, (str, int)) and not isinstance(qid, bool) and str(qid) != "",
        path,
        f"{where}: the question has no `id` (found {json.dumps(qid)[:40]}); every "
        "question needs a unique id.",
    )
    name = f"question {qid!r}"
    _need(
        isinstance(qa.get("question"), str),
        path,
        f"{name}: `question` is {json.dumps(qa.get('question'))[:40]}, not a string.",
    )
    impossible = bool(qa.get("is_impossible", False))
    raw_answers = qa.get("answers", [])
    _need(
        isinstance(raw_answers, list),
        path,
        f"{name}: `answers` is {json.dumps(raw_answers)[:40]}, not a list of "
        '{"text", "answer_start"}.',
    )
    answers = []
    for answer in raw_answers:
        text = answer.get("text") if isinstance(answer, dict) else None
        start = answer.get("answer_start") if isinstance(answer, dict) else None
        _need(
            isinstance(text, str),
            path,
            f'{name}: an answer is {json.dumps(answer)[:60]}; expected {{"text": '
            '"...", "answer_start": N}.',
        )
        try:
            if isinstance(start, (bool, float)) or start is None:
                raise ValueError
            start = int(start)
        except (TypeError, ValueError):
            raise ValueError(
                f"{path}: {name}: answer {text!r} has answer_start {json.dumps(start)[:20]}; "
                "give the character offset of the answer in its context (an integer)."
            ) from None
        _need(
            start >= 0 and context[start : start + len(text)] == text,
            path,
            f"{name}: answer {text!r} is not at answer_start={start} of its context.",
        )
        answers.append((text, start))
    _need(
        answers or impossible,
        path,
        f"{name} has no answers and is not is_impossible.",
    )
    return QAExample(str(qid), qa["question"], context, tuple(answers), impossible)


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
