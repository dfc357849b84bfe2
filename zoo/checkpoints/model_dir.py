"""The project's own model directory: what `zoo convert`, `zoo finetune` and
`zoo distill` write and every command reads.

    DIR/model.keras       the whole Keras model (encoder + head), safe-mode loadable
    DIR/vocab.txt         the WordPiece vocabulary
    DIR/zoo_model.json    format version, model class, encoder config,
                          tokenizer settings, labels, and provenance
"""

from __future__ import annotations

import json
import pathlib
import warnings
import zipfile

import keras

# A model saved after `compile` carries its optimizer config, whose
# learning-rate schedule is ours: importing it registers it for Keras.
import zoo.utils.schedules  # noqa: F401
from zoo.models.encoder_task import with_dtype_policy
from zoo.text.tokenizer import (
    WordPieceTokenizer,
    read_vocabulary,
    vocabulary_sha256,
    vocabulary_text,
)
from zoo.utils.atomic import atomic_directory
from zoo.utils.jsonfile import read_json_object

FORMAT = "zoo-model"
FORMAT_VERSION = 1
MANIFEST = "zoo_model.json"


def is_model_dir(path) -> bool:
    return (pathlib.Path(path) / MANIFEST).is_file()


def save_model_dir(model, directory, tokenizer, *, extra=None, overwrite=True):
    """Atomically write `model` and `tokenizer` as a zoo model directory.

    The encoder is saved computing in float32 whatever policy `model` was
    trained under: a model directory is for export and serving, and a new
    training run applies its own `--mixed-precision` (see
    `zoo.with_dtype_policy`). Head layers follow the loading process's policy."""

    model = with_dtype_policy(model, "float32")
    encoder = getattr(model, "encoder", model)
    # A training-time subclass (zoo.train.distribute's multi-worker
    # overrides) names the class the directory holds: the model is saved as
    # that class, which loads anywhere.
    saved_class = getattr(type(model), "zoo_saved_class", type(model))
    meta = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "model_class": saved_class.__name__,
        "encoder_class": type(encoder).__name__,
        "encoder_config": encoder.config.to_dict(),
        "lowercase": bool(tokenizer.lowercase),
        # Checked on every load: a vocab.txt cut, extended or reordered after
        # saving would otherwise tokenize silently into other ids.
        "vocabulary_size": len(tokenizer.vocabulary),
        "vocabulary_sha256": vocabulary_sha256(tokenizer.vocabulary),
        "labels": getattr(model, "labels", None),
        "num_parameters": int(model.count_params()),
        **(extra or {}),
    }
    with atomic_directory(directory, overwrite=overwrite) as tmp:
        # Weights only, no optimizer state: a model directory is for serving,
        # export and new training runs (an interrupted run resumes from its
        # BackupAndRestore directory). AdamW's two moments would triple the file.
        optimizer = getattr(model, "optimizer", None)
        if optimizer is not None:
            model.optimizer = None
        trained_class = type(model)
        model.__class__ = saved_class
        try:
            model.save(tmp / "model.keras")
        finally:
            model.__class__ = trained_class
            if optimizer is not None:
                model.optimizer = optimizer
        (tmp / "vocab.txt").write_text(
            vocabulary_text(tokenizer.vocabulary), encoding="utf-8"
        )
        (tmp / MANIFEST).write_text(json.dumps(meta, indent=2) + "\n")
    return pathlib.Path(directory)


def read_model_dir_meta(directory) -> dict:
    """zoo_model.json of a model directory, checked: format, the fields every
    reader relies on, and that model.keras and vocab.txt are there."""
    directory = pathlib.Path(directory)
    path = directory / MANIFEST
    if not directory.is_dir():
        raise FileNotFoundError(
            f"{directory}: no such directory. Give a zoo model directory (made by "
            "`zoo convert SRC --out DIR`, `zoo finetune` or `zoo distill`)."
        )
    if not path.is_file():
        raise FileNotFoundError(
            f"{directory}: not a zoo model directory (no {MANIFEST}). Create one "
            "with `zoo convert SRC --out DIR`, `zoo finetune` or `zoo distill`."
        )
    meta = read_json_object(path, "re-create the model directory (zoo convert / finetune)")
    if (
        meta.get("format") != FORMAT
        or not isinstance(meta.get("format_version"), int)
        or meta["format_version"] > FORMAT_VERSION
    ):
        raise ValueError(
            f"{path}: format {meta.get('format')!r} version "
            f"{meta.get('format_version')!r} is not one this zoo reads "
            f"({FORMAT!r} <= {FORMAT_VERSION}); upgrade the package."
        )
    config = meta.get("encoder_config")
    if not isinstance(config, dict) or not isinstance(config.get("vocabulary_size"), int):
        raise ValueError(
            f"{path}: `encoder_config` is {config!r}; expected the encoder's "
            "configuration (an object with vocabulary_size, num_layers, ...). "
            "Re-create the model directory."
        )
    if not isinstance(meta.get("lowercase", True), bool):
        raise ValueError(
            f"{path}: `lowercase` is {meta['lowercase']!r}; expected true or false."
        )
    labels = meta.get("labels")
    if labels is not None and not (
        isinstance(labels, list) and all(isinstance(x, str) for x in labels)
    ):
        raise ValueError(
            f"{path}: `labels` is {labels!r}; expected a list of label names or null."
        )
    for name in ("model.keras", "vocab.txt"):
        if not (directory / name).is_file():
            raise FileNotFoundError(
                f"{directory}: zoo model directory is missing {name}; it was not "
                "written completely. Re-create it."
            )
    return meta


def _check_vocabulary(directory, meta, tokens):
    """vocab.txt against the embedding it feeds and the hash recorded at save."""
    rows = meta["encoder_config"]["vocabulary_size"]
    if len(tokens) != rows:
        raise ValueError(
            f"{directory / 'vocab.txt'} has {len(tokens):,} tokens but the model's token "
            f"embedding has {rows:,} rows (zoo_model.json encoder_config.vocabulary_size): "
            "it is not the vocabulary the model was trained with, and ids would point at "
            "other tokens' embeddings. Restore the model directory's own vocab.txt."
        )
    recorded = meta.get("vocabulary_sha256")
    if recorded is not None and vocabulary_sha256(tokens) != recorded:
        raise ValueError(
            f"{directory / 'vocab.txt'} changed since the model was saved (sha256 differs from "
            "zoo_model.json's vocabulary_sha256; same size, so lines were edited or "
            "reordered): words would map to other tokens' ids. Restore the model "
            "directory's own vocab.txt."
        )


def load_model_dir(directory):
    """Return `(model, tokenizer, meta)` from a zoo model directory. The model
    loads in Keras's safe mode: no custom objects, no lambdas. vocab.txt must
    be the one saved with the model (size, and sha256 when recorded)."""
    directory = pathlib.Path(directory)
    meta = read_model_dir_meta(directory)
    tokens = read_vocabulary(directory / "vocab.txt")
    _check_vocabulary(directory, meta, tokens)
    with warnings.catch_warnings():
        # Saved without optimizer state (see save_model_dir): nothing to restore.
        warnings.filterwarnings("ignore", message="Skipping variable loading for optimizer")
        try:
            model = keras.saving.load_model(directory / "model.keras", safe_mode=True)
        except (zipfile.BadZipFile, OSError, ValueError, KeyError, TypeError) as e:
            raise ValueError(
                f"{directory / 'model.keras'}: cannot be loaded as a Keras model "
                f"({type(e).__name__}: {str(e)[:200]}); the file is damaged or not the one "
                "this directory was saved with. Re-create the model directory."
            ) from None
    encoder = getattr(model, "encoder", model)
    if getattr(encoder, "vocabulary_size", len(tokens)) != len(tokens):
        raise ValueError(
            f"{directory / 'model.keras'}: its token embedding has {encoder.vocabulary_size:,} "
            f"rows but vocab.txt has {len(tokens):,} tokens; the directory mixes two models. "
            "Re-create it."
        )
    carried = getattr(getattr(model, "preprocessor", None), "tokenizer", None)
    if carried is not None and carried.vocabulary != tokens:
        raise ValueError(
            f"{directory / 'model.keras'}: the text model's own vocabulary "
            f"({carried.vocabulary_size:,} tokens) differs from vocab.txt; the directory mixes "
            "two models. Re-create it (TextClassifier.save_model_dir)."
        )
    tokenizer = WordPieceTokenizer(tokens, lowercase=meta.get("lowercase", True))
    return model, tokenizer, meta
