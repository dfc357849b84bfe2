"""Raw pre-training text into documents: the text files `--data` names
(a file, a folder or a glob pattern), each read as UTF-8 and cut into
documents (blocks separated by blank lines) of sentences.
"""

from __future__ import annotations

import glob
import pathlib
import re

from zoo.datasets import corpora
from zoo.utils.safe_files import open_regular

TEXT_SUFFIXES = (".txt", ".text", ".md")


def split_sentences(text):
    """Sentences of a paragraph, whitespace folded (`corpora.split_sentences`:
    closing quotes stay with their sentence, titles such as "Mr." do not end one)."""
    return corpora.split_sentences(" ".join(text.split()))


def documents_from_text(text):
    """Documents are blocks separated by blank lines; sentences within."""
    blocks = re.split(r"\n\s*\n", text)
    docs = [split_sentences(b) for b in blocks]
    return [d for d in docs if d]


def read_documents(path):
    """Read raw text for pre-training into memory (`TextShards` streams it).

    `path` is a text file, a folder (searched recursively for .txt/.text/.md
    files) or a glob pattern, in sorted order. A file with blank-line-separated
    blocks gives one document per block; a file without blank lines is one
    document.
    """
    return [d for file in text_files(path) for d in documents_from_text(_read_text(file))]


def text_files(path):
    """The text files `--data` names: a file, a folder (searched recursively
    for .txt/.text/.md files) or a glob pattern such as `shards/*.txt`, in
    sorted order."""
    path = str(path)
    if any(c in path for c in "*?[") and not pathlib.Path(path).exists():
        files = sorted(
            pathlib.Path(p)
            for p in glob.glob(path, recursive=True)
            if pathlib.Path(p).is_file()
        )
        if not files:
            raise FileNotFoundError(f"--data {path}: the pattern matches no file.")
        return files
    root = pathlib.Path(path)
    if not root.exists():
        raise FileNotFoundError(f"--data {path}: no such file, folder or pattern.")
    if root.is_file():
        return [root]
    files = sorted(p for p in root.rglob("*") if p.suffix.lower() in TEXT_SUFFIXES)
    if not files:
        raise ValueError(
            f"--data {path}: no text files found (looked for {', '.join(TEXT_SUFFIXES)})."
        )
    return files


def _read_text(file):
    try:
        with open_regular(
            file, "r", "give --data regular text files", encoding="utf-8"
        ) as f:
            return f.read()
    except UnicodeDecodeError as e:
        raise ValueError(
            f"{file}: not UTF-8 text ({e}); convert it, e.g. `iconv -t utf-8`."
        ) from e
