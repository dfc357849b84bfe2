"""Tagging data: CoNLL column files (word first, tag last; a blank line
between sentences; `-DOCSTART-` lines skipped), as `TaggedSentence`s.
"""

from __future__ import annotations

import dataclasses
import pathlib

from zoo.text.readers.files import _need, _need_file, _read_text
from zoo.text.tag_schemes import tag_scheme


@dataclasses.dataclass(frozen=True)
class TaggedSentence:
    words: tuple
    tags: tuple


def read_conll(path):
    """List of `TaggedSentence` from a CoNLL file: the first column is the
    word, the last the tag (BIO, BIOES or bare types, one scheme per file:
    `zoo.text.tag_schemes`); blank lines separate sentences."""
    path = pathlib.Path(path)
    _need_file(
        path,
        "tagging data is a CoNLL file (a WORD ... TAG line per word)",
        other_formats=(".json", ".jsonl", ".csv"),
    )
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
    try:
        tag_scheme(t for sentence in sentences for t in sentence.tags)
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None
    return sentences
