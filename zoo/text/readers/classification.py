"""Classification data: a folder of class sub-folders of `.txt` files, or
a CSV / TSV / JSONL file with columns `text`, optional `text_b`, `label`,
as `TextExample`s.
"""

from __future__ import annotations

import dataclasses
import math
import pathlib

from zoo.text.readers.files import (
    SPLIT_FOLDER_HINT,
    SPLIT_NAMES,
    _check_scalars,
    _need,
    _read_text,
    delimited_rows,
    json_lines,
    open_text,
)

CLASSIFICATION_SUFFIXES = (".csv", ".tsv", ".jsonl", ".ndjson", ".json")


@dataclasses.dataclass(frozen=True)
class TextExample:
    text: str
    label: str | None  # None only where labels are optional (texts for export)
    text_b: str | None = None


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
        return _one_spelling(
            _read_delimited(path, "\t" if suffix == ".tsv" else ",", labelled), path
        )
    if suffix in (".jsonl", ".ndjson", ".json"):
        return _one_spelling(_read_jsonl(path, labelled), path)
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
    examples, empty = [], []
    for folder in classes:
        # .txt in any case (Windows tools write .TXT); every class folder
        # must give texts, or the class would vanish from the labels.
        files = sorted(f for f in folder.iterdir() if f.suffix.lower() == ".txt")
        texts = [t for t in (_read_text(f).strip() for f in files) if t]
        examples += [TextExample(t, folder.name) for t in texts]
        if not texts:
            empty.append(folder.name)
    _need(
        not empty or not examples,
        path,
        f"class folder(s) {empty[:8]} hold no non-empty .txt files, so their class(es) "
        "would be missing from the labels; add their texts or remove the folder(s).",
    )
    _need(
        examples,
        path,
        f"found no class sub-folders holding non-empty .txt files (sub-folders: "
        f"{[p.name for p in classes][:8]}){hint}; expected {path}/LABEL/*.txt, "
        f"{SPLIT_FOLDER_HINT}.",
    )
    return examples


def _label_key(label):
    """What two spellings of one class share: the label without surrounding
    spaces, and the whole number it names when it names one (1, 1.0, "1 ")."""
    label = label.strip()
    try:
        number = float(label)
    except ValueError:
        return label
    return int(number) if math.isfinite(number) and number.is_integer() else label


def _one_spelling(examples, path):
    """`examples`, unless two distinct labels name one class (`1` and `1.0`
    in JSON, `pos` and `pos ` in a CSV): they would train as two classes."""
    seen = {}
    for label in sorted({e.label for e in examples if e.label is not None}):
        other = seen.setdefault(_label_key(label), label)
        _need(
            other == label,
            path,
            f"labels {other!r:.40} and {label!r:.40} name the same class; give each class "
            "one spelling.",
        )
    return examples


def _row_example(row, where, labelled=True):
    needed = ("text", "label") if labelled else ("text",)
    if not isinstance(row, dict):
        raise ValueError(
            f"{where}: expected an object with {' and '.join(f'`{k}`' for k in needed)}; "
            f"got {row!r:.80}"
        )
    missing = [k for k in needed if row.get(k) is None]
    blank = [k for k in needed if isinstance(row.get(k), str) and not row[k].strip()]
    if blank and not missing:
        raise ValueError(
            f"{where}: {' and '.join(f'`{k}`' for k in blank)} "
            f"{'are' if len(blank) > 1 else 'is'} empty or only whitespace; every row "
            + (
                "needs a text and a label: fill the cell(s) or remove the row."
                if labelled
                else "needs a text: fill the cell or remove the row."
            )
        )
    missing += [k for k in blank if k not in missing]
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
