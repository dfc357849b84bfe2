"""The rules every reader of a user's `--data` file shares: text decoding
(UTF-8, a byte-order mark dropped), CSV/TSV rows and JSON values with
errors naming the file and line, the checks on a row's columns, and the
names of split entries (`train`, `validation`/`dev`, `test`).
"""

from __future__ import annotations

import csv
import json
import pathlib
import sys

from zoo.datasets.corpora import decode_text
from zoo.utils.safe_files import check_regular, open_regular

SPLIT_FOLDER_HINT = (
    "or a folder with train/ and test/ (and/or validation/ or dev/) entries, each a folder "
    "of class sub-folders or a .csv/.tsv/.jsonl file"
)


# What a reader says when a data file is a FIFO, a device or a socket
# (reading one can block forever): it is refused before it is opened.
REGULAR_DATA = "give --data regular files (a pipe or device is not read)"


def _read_text(path):
    # A leading byte-order mark (Windows editors write one) is not text: left
    # in, it would be the first character of the first word or of the JSON.
    with open_regular(path, "rb", REGULAR_DATA) as f:
        return decode_text(f.read()).removeprefix("\ufeff")


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
    """`path` open for reading as UTF-8, a leading byte-order mark dropped;
    refused unless it is a regular file (checked before it is opened)."""
    check_regular(path, REGULAR_DATA)
    return open(path, encoding="utf-8-sig", newline=newline)


def _need(condition, path, message):
    if not condition:
        raise ValueError(f"{path}: {message}")


def _need_file(path, what, other_formats=()):
    """`path` a regular file (a folder, a FIFO or nothing: named); with
    `other_formats`, suffixes of formats the reader does not read, refused
    by name rather than misread (a JSONL row splits into whitespace columns
    as well as a CoNLL line does)."""
    if path.suffix.lower() in other_formats:
        raise ValueError(
            f"{path}: {what}, not {path.suffix.lower()}; give the file in that form "
            "(or check --task: classify and regress read CSV, TSV and JSONL)."
        )
    if path.is_dir():
        raise ValueError(
            f"{path}: is a folder; {what}, or a folder with `train` and `test` (and/or "
            "`validation` or `dev`) entries in that form."
        )
    if path.exists():
        check_regular(path, REGULAR_DATA)  # a FIFO, a socket or a device: named
    else:
        raise FileNotFoundError(f"{path}: no such file.")


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
