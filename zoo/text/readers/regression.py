"""Regression data (STS-style similarity): a CSV / TSV / JSONL file with
columns `text`, optional `text_b`, `score` (a number), as `ScoredText`s;
and the generated WordNet set of `zoo.datasets.wordnet_sts` in that form.
"""

from __future__ import annotations

import dataclasses
import pathlib

from zoo.datasets import wordnet_sts
from zoo.text.readers.files import (
    _check_scalars,
    _need,
    _need_file,
    delimited_rows,
    json_lines,
    open_text,
)

REGRESSION_SUFFIXES = (".csv", ".tsv", ".jsonl", ".ndjson", ".json")


@dataclasses.dataclass(frozen=True)
class ScoredText:
    """A text (or text pair) with a float target: regression, e.g. STS similarity."""

    text: str
    score: float
    text_b: str | None = None


# The largest target magnitude: the model trains in float32, where a score
# of 1e39 is inf and one of 1e20 squares past float32's range (the loss, and
# every metric, then NaN); 1e9 leaves room and float32's 7 digits.
MAX_SCORE = 1e9


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
    if abs(score) > MAX_SCORE:
        raise ValueError(
            f"{where}: `score` is {raw!r:.40}; targets train in float32, so give scores "
            f"within +-{MAX_SCORE:.0e} (rescale them, e.g. to thousands or millions)."
        )
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
