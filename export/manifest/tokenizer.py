"""The tokenizer of an artifact: the one its tokenizer files and
metadata.json's tokenization describe, built once per artifact, or a
caller's own tokenizer checked against them."""

from __future__ import annotations

import json
import pathlib

from export.manifest.files import METADATA, MetadataError
from zoo.text import description as td
from zoo.text.tokenizer import vocabulary_sha256
from zoo.text.tokenizer_record import (
    build_tokenizer,
    recorded_description,
    tokenizer_files,
)

# Tokenizers rebuilt from artifacts, by what defines them: the directory,
# the recorded vocabulary and merges hashes (which read_metadata checked
# against the files) and the description. Opening an artifact, predicting
# with it and validating it build its tokenizer once.
_TOKENIZERS = {}
_TOKENIZERS_KEPT = 8


def artifact_tokenizer(directory, meta, given=None):
    """The tokenizer an artifact's files and metadata.json describe, built
    once per artifact; `given` (a caller's own tokenizer) instead, if it
    has the artifact's vocabulary and tokenization description."""
    directory = pathlib.Path(directory)
    desc = recorded_description(meta, directory / METADATA)
    if given is not None:
        if vocabulary_sha256(given.vocabulary) != meta["vocabulary_sha256"]:
            raise ValueError(
                f"{directory}: the tokenizer's vocabulary is not the one the artifact was "
                "exported with (sha256 differs from metadata.json); pass the model's own "
                "tokenizer."
            )
        if td.check(given.description) != desc:
            raise ValueError(
                f"{directory}: the tokenizer tokenizes as {td.summary(given.description)}, the "
                f"artifact as {td.summary(desc)} (metadata.json tokenization); pass the "
                "model's own tokenizer, or none."
            )
        return _check_special_ids(directory, meta, given)
    # The files' identity too: a file replaced after the first open is read
    # again (and checked again by read_metadata's callers).
    files = []
    for name in tokenizer_files(meta):
        try:
            st = (directory / name).stat()
        except OSError:
            st = None
        files.append(None if st is None else (st.st_ino, st.st_size, st.st_mtime_ns))
    key = (
        str(directory.resolve()),
        meta["vocabulary_sha256"],
        meta.get("merges_sha256"),
        json.dumps(desc, sort_keys=True),
        tuple(files),
    )
    tokenizer = _TOKENIZERS.get(key)
    if tokenizer is None:
        tokenizer = build_tokenizer(directory, desc)
        while len(_TOKENIZERS) >= _TOKENIZERS_KEPT:
            _TOKENIZERS.pop(next(iter(_TOKENIZERS)))
        _TOKENIZERS[key] = tokenizer
    return _check_special_ids(directory, meta, tokenizer)


def _check_special_ids(directory, meta, tokenizer):
    """`tokenizer`, once metadata.json's `special_tokens` are its own ids:
    the runners pack pairs with the recorded [SEP] id, so a swapped or moved
    id would build every input wrongly."""
    own = {k: int(getattr(tokenizer, f"{k}_id")) for k in ("cls", "sep", "pad", "unk")}
    if meta.get("special_tokens") != own:
        raise MetadataError(
            f"{directory / METADATA}: `special_tokens` is {meta.get('special_tokens')!r:.120} "
            f"but the artifact's tokenizer files give {own}; the file was edited. Re-export "
            "the artifact with `zoo export`."
        )
    return tokenizer
