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

import keras

# A model saved after `compile` carries its optimizer config, whose
# learning-rate schedule is ours: importing it registers it for Keras.
import zoo.utils.schedules  # noqa: F401
from zoo.models.encoder_task import with_dtype_policy
from zoo.text.tokenizer import WordPieceTokenizer
from zoo.utils.atomic import atomic_directory

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
    meta = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "model_class": type(model).__name__,
        "encoder_class": type(encoder).__name__,
        "encoder_config": encoder.config.to_dict(),
        "lowercase": bool(tokenizer.lowercase),
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
        try:
            model.save(tmp / "model.keras")
        finally:
            if optimizer is not None:
                model.optimizer = optimizer
        (tmp / "vocab.txt").write_text(
            "\n".join(tokenizer.vocabulary) + "\n", encoding="utf-8"
        )
        (tmp / MANIFEST).write_text(json.dumps(meta, indent=2) + "\n")
    return pathlib.Path(directory)


def read_model_dir_meta(directory) -> dict:
    path = pathlib.Path(directory) / MANIFEST
    if not path.is_file():
        raise FileNotFoundError(
            f"{directory}: not a zoo model directory (no {MANIFEST}). Create one "
            "with `zoo convert SRC --out DIR`, `zoo finetune` or `zoo distill`."
        )
    meta = json.loads(path.read_text())
    if meta.get("format") != FORMAT or meta.get("format_version", 0) > FORMAT_VERSION:
        raise ValueError(
            f"{path}: format {meta.get('format')!r} version "
            f"{meta.get('format_version')!r} is not one this zoo reads "
            f"({FORMAT!r} <= {FORMAT_VERSION}); upgrade the package."
        )
    for name in ("model.keras", "vocab.txt"):
        if not (pathlib.Path(directory) / name).is_file():
            raise FileNotFoundError(
                f"{directory}: zoo model directory is missing {name}; it was not "
                "written completely. Re-create it."
            )
    return meta


def load_model_dir(directory):
    """Return `(model, tokenizer, meta)` from a zoo model directory. The model
    loads in Keras's safe mode: no custom objects, no lambdas."""

    directory = pathlib.Path(directory)
    meta = read_model_dir_meta(directory)

    with warnings.catch_warnings():
        # Saved without optimizer state (see save_model_dir): nothing to restore.
        warnings.filterwarnings("ignore", message="Skipping variable loading for optimizer")
        model = keras.saving.load_model(directory / "model.keras", safe_mode=True)
    tokenizer = WordPieceTokenizer(
        str(directory / "vocab.txt"), lowercase=meta.get("lowercase", True)
    )
    return model, tokenizer, meta
