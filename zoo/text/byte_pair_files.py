"""The files of a byte-level BPE tokenizer, read and checked: vocab.json
(token -> id), merges.txt (one merge a line, best first) and the text of a
tokenizer.json, and the `vocabulary` and `merges` arguments of
`BytePairTokenizer` in any of their forms (a path, a dict, a list). Every
error names the file (and line) or the argument, what it holds and what to
pass instead."""

from __future__ import annotations

import json
import os

from zoo.text.vocabulary_file import MAX_VOCABULARY_TOKENS, read_tokenizer_file


def read_text(path, what):
    # A regular file of at most 64 MB (RoBERTa's vocab.json is 0.9 MB, its
    # tokenizer.json 1.4 MB): read_tokenizer_file says why.
    data = read_tokenizer_file(path, what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(
            f"{path}: not UTF-8 text (byte {e.start}); a {what} is UTF-8. Use the "
            "checkpoint's own file."
        ) from None


def read_vocab_json(path) -> dict:
    """`{token: id}` of a vocab.json."""
    try:
        vocab = json.loads(read_text(path, "vocab.json"))
    except json.JSONDecodeError as e:
        raise ValueError(
            f"{path}: not JSON ({e.msg} at line {e.lineno}); a vocab.json is one JSON "
            'object of token -> id, e.g. {"<s>": 0, ...}. Use the checkpoint\'s own file.'
        ) from None
    except RecursionError:
        raise ValueError(
            f"{path}: JSON nested too deep for Python's parser; a vocab.json is one flat "
            "object of token -> id. Use the checkpoint's own file."
        ) from None
    if not isinstance(vocab, dict):
        raise ValueError(
            f"{path}: holds a JSON {type(vocab).__name__}, not an object of token -> id; "
            "pass the checkpoint's vocab.json."
        )
    if len(vocab) > MAX_VOCABULARY_TOKENS:
        raise ValueError(
            f"{path}: {len(vocab):,} tokens, over the limit of {MAX_VOCABULARY_TOKENS:,}; "
            "pass the checkpoint's vocab.json."
        )
    return vocab


def read_merges_txt(path) -> list:
    """The merges of a merges.txt as `(left, right)` pairs, best first.

    As the reference reads it: lines starting with "#version" are skipped,
    every other line is two tokens separated by one space.
    """
    lines = read_text(path, "merges.txt").split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the final newline
    if len(lines) > MAX_VOCABULARY_TOKENS:
        # Each merge makes one token: no more merges than a vocabulary may hold.
        raise ValueError(
            f"{path}: {len(lines):,} lines, over the limit of {MAX_VOCABULARY_TOKENS:,} "
            "merges. Use the checkpoint's own merges.txt."
        )
    merges = []
    for number, line in enumerate(lines, 1):
        line = line.removesuffix("\r")
        if line.startswith("#version"):
            continue
        parts = line.split(" ")
        if len(parts) != 2 or not all(parts):
            raise ValueError(
                f"{path}, line {number}: {line[:80]!r} is not a merge; each line of a "
                'merges.txt is two tokens separated by one space ("Ġ t"). Use the '
                "checkpoint's own merges.txt."
            )
        merges.append((parts[0], parts[1]))
    return merges


def vocabulary_list(vocabulary):
    """`(tokens by id, description)` of a vocab.json path, a token -> id
    dict or a list of tokens (id = index)."""
    if isinstance(vocabulary, (str, os.PathLike)):
        source = f"file {os.fspath(vocabulary)!r}"
        vocabulary = read_vocab_json(vocabulary)
    elif isinstance(vocabulary, dict):
        source = f"dict of {len(vocabulary)} tokens"
    elif isinstance(vocabulary, (list, tuple)) and all(
        isinstance(t, str) for t in vocabulary
    ):
        tokens = list(vocabulary)
        first = {}
        for i, token in enumerate(tokens):
            if first.setdefault(token, i) != i:
                raise ValueError(
                    f"`vocabulary` lists {token!r} twice, as ids {first[token]} and {i}; "
                    "each token must appear once (id = position). Use the checkpoint's "
                    "own vocabulary."
                )
        return tokens, f"list of {len(tokens)} tokens"
    else:
        raise TypeError(
            "`vocabulary` must be the path of a vocab.json, a dict of token -> id, or a "
            f"list of str tokens (id = position); received a {type(vocabulary).__name__}."
        )
    bad = [(t, i) for t, i in vocabulary.items() if not isinstance(t, str)]
    bad += [
        (t, i)
        for t, i in vocabulary.items()
        if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < len(vocabulary)
    ]
    if bad:
        raise ValueError(
            f"`vocabulary` ({source}): token {bad[0][0]!r} has id {bad[0][1]!r}; ids must "
            f"be the ints 0 to {len(vocabulary) - 1}, each used once. Use the checkpoint's "
            "own vocab.json."
        )
    tokens = [None] * len(vocabulary)
    for token, i in vocabulary.items():
        if tokens[i] is not None:
            raise ValueError(
                f"`vocabulary` ({source}): tokens {tokens[i]!r} and {token!r} both have id "
                f"{i}; each id must be used once. Use the checkpoint's own vocab.json."
            )
        tokens[i] = token
    return tokens, source


def merge_list(merges):
    """`[(left, right)]` of a merges.txt path or a list of "left right"
    strings or of pairs."""
    if isinstance(merges, (str, os.PathLike)):
        return read_merges_txt(merges), f"file {os.fspath(merges)!r}"
    if not isinstance(merges, (list, tuple)):
        raise TypeError(
            "`merges` must be the path of a merges.txt, or a list of merges, each a "
            '"left right" string or a (left, right) pair, best first; received a '
            f"{type(merges).__name__}."
        )
    pairs = []
    for i, merge in enumerate(merges):
        if isinstance(merge, str):
            parts = merge.split(" ")
        elif isinstance(merge, (list, tuple)):
            parts = list(merge)
        else:
            parts = None
        if not (parts and len(parts) == 2 and all(isinstance(p, str) and p for p in parts)):
            raise ValueError(
                f'`merges[{i}]` is {merge!r:.80}; each merge is a "left right" string '
                "(two tokens, one space) or a (left, right) pair. Use the checkpoint's "
                "own merges.txt."
            )
        pairs.append((parts[0], parts[1]))
    return pairs, f"list of {len(pairs)} merges"
