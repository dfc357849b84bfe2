"""What a model directory's `zoo_model.json` and an artifact's
`metadata.json` say about their tokenizer, and the tokenizer they rebuild
from it: the one place that knows which files a tokenizer kind writes and
how a record names it.

A record holds the tokenization description (`zoo.text.description`,
field `"tokenization"`) beside the older fields readers and the Android
app already know: `lowercase`, `tokenizer` ("byte_pair" for vocab.json +
merges.txt, absent for WordPiece's vocab.txt), `merges_sha256`,
`vocabulary_size`, `vocabulary_sha256`. The description decides how text
is tokenized; the older fields must agree with it. A record written before
the description existed is read as BERT's rule with its `lowercase` (what
those writers did)."""

from __future__ import annotations

import hashlib
import pathlib

from zoo.text import description as td
from zoo.text.byte_pair_tokenizer import BytePairTokenizer
from zoo.text.tokenizer import WordPieceTokenizer, vocabulary_sha256, vocabulary_text
from zoo.utils.atomic import atomic_file

BYTE_PAIR = "byte_pair"
WORDPIECE_FILES = ("vocab.txt",)
BYTE_PAIR_FILES = ("vocab.json", "merges.txt")


def is_byte_pair(meta) -> bool:
    """Whether a record (zoo_model.json, metadata.json) describes a
    byte-level BPE tokenizer (vocab.json + merges.txt) rather than WordPiece
    (vocab.txt). `recorded_description` holds the two fields that say so to
    agreement."""
    return meta.get("tokenizer") == BYTE_PAIR


def tokenizer_files(meta) -> tuple:
    return BYTE_PAIR_FILES if is_byte_pair(meta) else WORDPIECE_FILES


def merges_sha256(merges) -> str:
    """sha256 of the merges (`BytePairTokenizer.merges`: "left right"
    strings), one a line."""
    text = "".join(f"{merge}\n" for merge in merges)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def record_fields(tokenizer) -> dict:
    """The tokenizer's fields of a record."""
    byte_pair = isinstance(tokenizer, BytePairTokenizer)
    fields = {"tokenization": tokenizer.description, "lowercase": bool(tokenizer.lowercase)}
    if byte_pair:
        fields.update(tokenizer=BYTE_PAIR, merges_sha256=merges_sha256(tokenizer.merges))
    fields.update(
        vocabulary_size=len(tokenizer.vocabulary),
        vocabulary_sha256=vocabulary_sha256(tokenizer.vocabulary),
    )
    return fields


def write_tokenizer_files(directory, tokenizer):
    """vocab.txt, or vocab.json + merges.txt, into `directory`."""
    if isinstance(tokenizer, BytePairTokenizer):
        tokenizer.write_files(pathlib.Path(directory))
    else:
        write_vocabulary(directory, tokenizer.vocabulary)


def write_vocabulary(directory, tokens) -> pathlib.Path:
    """`tokens` as `directory`/vocab.txt, one a line, written atomically."""
    path = pathlib.Path(directory) / WORDPIECE_FILES[0]
    with atomic_file(path, "w") as f:
        f.write(vocabulary_text(tokens))
    return path


def recorded_description(meta, path) -> dict:
    """The record's tokenization description, typed (`zoo.text.description.check`)
    and held to agreement with `lowercase` and `tokenizer`; for a record
    older than the description, the one its writer used. Raises
    `DescriptionError` naming `path` and the field."""
    byte_pair = is_byte_pair(meta)
    if "tokenization" not in meta:
        if byte_pair:
            return td.byte_pair()
        return td.wordpiece(lowercase=meta.get("lowercase", True))
    desc = td.check(meta["tokenization"], f"{path}: tokenization")
    model = desc["model"]["type"]
    if byte_pair != (model == "BPE"):
        raise td.DescriptionError(
            f"{path}: `tokenizer` is {meta.get('tokenizer')!r} but tokenization.model.type is "
            f"{model!r}; the record was edited. Re-create it."
        )
    if model == "WordPiece":
        lowercase = td.wordpiece_arguments(desc)["lowercase"]
    elif model == "BPE":
        lowercase = False
    else:
        raise td.DescriptionError(
            f"{path}: tokenization.model.type is {model!r}; model directories and artifacts "
            "hold WordPiece (vocab.txt) or byte-level BPE (vocab.json + merges.txt) tokenizers"
        )
    if "lowercase" in meta and meta["lowercase"] != lowercase:
        raise td.DescriptionError(
            f"{path}: `lowercase` is {meta['lowercase']!r} but the tokenization description "
            f"{'lowercases' if lowercase else 'keeps case'}; the record was edited. Re-create it."
        )
    return desc


def build_tokenizer(directory, desc, tokens=None):
    """The tokenizer `desc` describes, from the files in `directory` (vocab.txt's
    `tokens`, already read and checked by the caller, or vocab.json +
    merges.txt)."""
    directory = pathlib.Path(directory)
    if desc["model"]["type"] == "BPE":
        post = desc["post_processor"]
        return BytePairTokenizer(
            directory / "vocab.json",
            directory / "merges.txt",
            add_prefix_space=desc["pre_tokenizer"]["add_prefix_space"],
            cls_token=post["cls"],
            sep_token=post["sep"],
            pad_token=post.get("pad", "<pad>"),
            unk_token=desc["model"]["unk_token"],
            mask_token=post.get("mask", "<mask>"),
        )
    if tokens is None:
        tokens = str(directory / "vocab.txt")
    return WordPieceTokenizer.from_description(tokens, desc)
