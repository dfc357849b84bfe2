"""What an exporter records from the model it exports: the tokenizer it
exports with, the label names, where the model came from, the fields every
artifact's metadata.json shares, and the sequence lengths it accepts."""

from __future__ import annotations

import numbers
import pathlib
import time

from export.manifest.files import VOCABULARY
from export.manifest.metadata import (
    MAX_SEQUENCE_LENGTH,
    METADATA_FORMAT,
    METADATA_VERSION,
    MIN_SEQUENCE_LENGTH,
)
from zoo.models import DEFAULT_SEQUENCE_LENGTH, input_contract, task_of
from zoo.text.tokenizer import vocabulary_casing_problem
from zoo.text.tokenizer_record import is_byte_pair, record_fields
from zoo.utils.file_record import sha256_file
from zoo.utils.provenance import versions


def model_tokenizer(model, tokenizer):
    """The tokenizer to export `model` with: `tokenizer`, or, when it is None,
    the one a text model (`zoo.TextClassifier`, ...) carries in its
    preprocessor."""
    if tokenizer is not None:
        return tokenizer
    preprocessor = getattr(model, "preprocessor", None)
    if preprocessor is None:
        raise ValueError(
            f"tokenizer=None: a {type(model).__name__} carries no tokenizer; pass the "
            "WordPieceTokenizer it was trained with (zoo.load_checkpoint returns it), or export "
            "a text model (zoo.TextClassifier, TextTagger, TextQuestionAnswerer)."
        )
    return preprocessor.tokenizer


def default_sequence_length(model) -> int:
    """A text model's own length; the project default for an id-level one."""
    from_preprocessor = getattr(
        getattr(model, "preprocessor", None), "sequence_length", None
    )
    return int(from_preprocessor or DEFAULT_SEQUENCE_LENGTH)


def label_names(model) -> list[str] | None:
    """The model's label names, or "0".."n-1" when it has none; None for QA
    and regression (no classes)."""
    if task_of(model) in ("qa", "regress"):
        return None
    labels = getattr(model, "labels", None)
    if labels is None:
        return [str(i) for i in range(model.num_classes)]
    labels = [str(label) for label in labels]
    bad = [label for label in labels if "\n" in label or "\r" in label or label == ""]
    if bad:
        raise ValueError(
            f"Label names {bad!r} are empty or contain a line break; labels are exported one "
            "per line. Rename them."
        )
    return labels


def source_info(model, source_dir) -> dict:
    """Where an exported model came from: its zoo model directory and the
    sha256 of its model.keras, so a later `zoo validate` can find it again
    and tell whether it changed."""
    info = {}
    if source_dir is not None:
        source_dir = pathlib.Path(source_dir).resolve()
        info["path"] = str(source_dir)
        if (source_dir / "model.keras").is_file():
            info["model_keras_sha256"] = sha256_file(source_dir / "model.keras")
    return info


def base_metadata(model, tokenizer, *, kind, source=None) -> dict:
    """The fields every artifact's metadata.json shares."""
    encoder = getattr(model, "encoder", model)
    tokens = tokenizer.vocabulary
    fields = record_fields(tokenizer)
    byte_pair = is_byte_pair(fields)
    problem = None if byte_pair else vocabulary_casing_problem(tokens, tokenizer.lowercase)
    if problem:
        raise ValueError(
            f"The tokenizer does not fit its vocabulary: {problem}. Build it "
            "with the lowercase setting the checkpoint was trained with."
        )
    return {
        "format": METADATA_FORMAT,
        "format_version": METADATA_VERSION,
        "kind": kind,
        "task": task_of(model),
        "labels": label_names(model),
        # tokenization (the description every runtime implements or
        # refuses), lowercase, tokenizer, merges_sha256, vocabulary_size/sha256
        **fields,
        **(
            {"vocabulary_file": "vocab.json", "merges_file": "merges.txt"}
            if byte_pair
            else {"vocabulary_file": VOCABULARY}
        ),
        "input_contract": input_contract(model),
        "special_tokens": {
            "cls": int(tokenizer.cls_id),
            "sep": int(tokenizer.sep_id),
            "pad": int(tokenizer.pad_id),
            "unk": int(tokenizer.unk_id),
        },
        "source_model": {
            "class": type(model).__name__,
            "encoder_class": type(encoder).__name__,
            "encoder_config": encoder.config.to_dict(),
            "num_parameters": int(model.count_params()),
            **(source or {}),
        },
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "versions": versions(),
    }


def check_sequence_lengths(sequence_lengths, model):
    """Distinct ints in 3..min(max_sequence_length, 8192); the first is the primary length."""
    if isinstance(sequence_lengths, numbers.Integral):
        sequence_lengths = (sequence_lengths,)
    lengths = [int(x) for x in sequence_lengths]
    encoder = getattr(model, "encoder", model)
    # The bounds read_metadata holds every artifact to (MIN/MAX_SEQUENCE_LENGTH).
    longest = min(encoder.max_sequence_length, MAX_SEQUENCE_LENGTH)
    bad = [x for x in lengths if x < MIN_SEQUENCE_LENGTH or x > longest]
    if not lengths or bad or len(set(lengths)) != len(lengths):
        raise ValueError(
            f"sequence_lengths={list(sequence_lengths)}: need distinct ints in "
            f"{MIN_SEQUENCE_LENGTH}..{longest} (the encoder's max_sequence_length, at most "
            f"{MAX_SEQUENCE_LENGTH}); the first is the primary length validation runs every "
            "text through."
        )
    return lengths
