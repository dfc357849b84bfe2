"""What sits beside every exported artifact, and the check every loader runs first.

    ARTIFACT/vocab.txt       the WordPiece vocabulary, one token per line (id = line number)
    ARTIFACT/metadata.json   task, labels, sequence lengths, lower-casing, vocabulary
                             sha256, quantization, op lists, signatures, source model
    ARTIFACT/manifest.json   sha256 and size of every other file in the directory

Why a manifest: a flipped byte in a `.tflite` or a SavedModel's weights file
does not always stop it from loading; it silently changes the outputs. Every
loader in `export/` calls `verify_manifest` before touching a model file, so a
changed file fails with a `ManifestError` that names it.

    >>> write_manifest(artifact_dir)
    >>> verify_manifest(artifact_dir)          # raises ManifestError on any change
"""

from __future__ import annotations

import hashlib
import json
import numbers
import os
import pathlib
import time

from zoo.models import task_of
from zoo.utils.atomic import atomic_file
from zoo.utils.provenance import versions

MANIFEST = "manifest.json"
METADATA = "metadata.json"
VOCABULARY = "vocab.txt"
MANIFEST_FORMAT = "zoo-export-manifest"
METADATA_FORMAT = "zoo-export"
FORMAT_VERSION = 1  # manifest.json
# metadata.json. Version 2 names tasks as everywhere else ("classify", "tag",
# "qa"); version 1 wrote "classification", "token_classification",
# "question_answering", which `read_metadata` still reads.
METADATA_VERSION = 2
_VERSION_1_TASKS = {"classification": "classify", "token_classification": "tag",
                    "question_answering": "qa"}
_CHUNK = 1 << 20


class ManifestError(ValueError):
    """An artifact's files do not match its manifest.json (or it has none)."""


def sha256_file(path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def vocabulary_sha256(tokens) -> str:
    """sha256 of the vocabulary as `vocab.txt` stores it (tokens joined by "\\n", final "\\n")."""
    return hashlib.sha256(_vocabulary_text(tokens).encode("utf-8")).hexdigest()


def _vocabulary_text(tokens):
    tokens = list(tokens)
    bad = [i for i, t in enumerate(tokens) if "\n" in t or "\r" in t]
    if bad:
        raise ValueError(
            f"Vocabulary tokens {bad[:5]} contain a line break; vocab.txt holds one token per "
            "line, so such a vocabulary cannot be exported. Fix the vocabulary."
        )
    return "\n".join(tokens) + "\n"


def write_vocabulary(directory, tokens) -> pathlib.Path:
    path = pathlib.Path(directory) / VOCABULARY
    with atomic_file(path, "w") as f:
        f.write(_vocabulary_text(tokens))
    return path


def write_json(path, data) -> pathlib.Path:
    path = pathlib.Path(path)
    with atomic_file(path, "w") as f:
        json.dump(data, f, indent=2, sort_keys=False)
        f.write("\n")
    return path


def read_json(path) -> dict:
    return json.loads(pathlib.Path(path).read_text(encoding="utf-8"))


def _files(directory):
    directory = pathlib.Path(directory)
    for path in sorted(directory.rglob("*")):
        if path.is_file() and path.relative_to(directory).as_posix() != MANIFEST:
            yield path.relative_to(directory).as_posix(), path


def write_manifest(directory) -> dict:
    """Hash every file under `directory` (except manifest.json) into manifest.json."""
    files = {
        name: {"sha256": sha256_file(path), "size": path.stat().st_size}
        for name, path in _files(directory)
    }
    manifest = {
        "format": MANIFEST_FORMAT,
        "format_version": FORMAT_VERSION,
        "algorithm": "sha256",
        "files": files,
    }
    write_json(pathlib.Path(directory) / MANIFEST, manifest)
    return manifest


def verify_manifest(directory) -> dict:
    """Check every file listed in manifest.json; return the manifest.

    Raises `ManifestError` listing each file that is missing, has another
    size or another sha256. Files the manifest does not list are ignored
    (a README added by hand is not a reason to refuse a model).
    """
    directory = pathlib.Path(directory)
    path = directory / MANIFEST
    if not path.is_file():
        raise ManifestError(
            f"{directory}: no {MANIFEST}, so its files cannot be checked. It is not a complete "
            "zoo export (or was copied without it); re-export it with `zoo export`."
        )
    try:
        manifest = read_json(path)
    except (OSError, ValueError) as e:
        raise ManifestError(f"{path}: unreadable ({e}); re-export the artifact.") from e
    if manifest.get("format") != MANIFEST_FORMAT or not isinstance(
        manifest.get("files"), dict
    ):
        raise ManifestError(
            f"{path}: not a zoo export manifest (format {manifest.get('format')!r})."
        )
    problems = []
    for name, entry in manifest["files"].items():
        file = directory / name
        if not file.is_file():
            problems.append(f"{name}: missing")
            continue
        size = file.stat().st_size
        if size != entry["size"]:
            problems.append(f"{name}: size {size} bytes, manifest says {entry['size']}")
            continue
        digest = sha256_file(file)
        if digest != entry["sha256"]:
            problems.append(
                f"{name}: sha256 {digest[:16]}..., manifest says {entry['sha256'][:16]}..."
            )
    if problems:
        raise ManifestError(
            f"{directory}: {len(problems)} file(s) do not match {MANIFEST}: "
            + "; ".join(problems)
            + ". The artifact changed after export (disk corruption, a partial copy or an edit) "
            "and would give different outputs; refusing to load it. Restore it from the original "
            "export or re-export with `zoo export`."
        )
    return manifest


def make_readable(directory):
    """Give an assembled artifact ordinary permissions before it is published.

    Temporary directories and files are created private (0700/0600); a model
    server running as another user must be able to read the published copy.
    """
    umask = os.umask(0)
    os.umask(umask)
    directory = pathlib.Path(directory)
    os.chmod(directory, 0o777 & ~umask)
    for path in directory.rglob("*"):
        os.chmod(path, (0o777 if path.is_dir() else 0o666) & ~umask)


def read_metadata(directory) -> dict:
    path = pathlib.Path(directory) / METADATA
    if not path.is_file():
        raise FileNotFoundError(
            f"{directory}: no {METADATA}; not a zoo export artifact. Point at the directory "
            "`zoo export` wrote (for a SavedModel: BASE/NAME/VERSION)."
        )
    meta = read_json(path)
    if (
        meta.get("format") != METADATA_FORMAT
        or meta.get("format_version", 0) > METADATA_VERSION
    ):
        raise ValueError(
            f"{path}: format {meta.get('format')!r} version {meta.get('format_version')!r} is not "
            f"one this package reads ({METADATA_FORMAT!r} <= {METADATA_VERSION}); upgrade bert-zoo."
        )
    if meta.get("format_version", 1) < 2:
        meta["task"] = _VERSION_1_TASKS.get(meta.get("task"), meta.get("task"))
    return meta


def label_names(model) -> list[str] | None:
    """The model's label names, or "0".."n-1" when it has none; None for QA."""
    if task_of(model) == "qa":
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
    return {
        "format": METADATA_FORMAT,
        "format_version": METADATA_VERSION,
        "kind": kind,
        "task": task_of(model),
        "labels": label_names(model),
        "lowercase": bool(tokenizer.lowercase),
        "vocabulary_file": VOCABULARY,
        "vocabulary_size": len(tokens),
        "vocabulary_sha256": vocabulary_sha256(tokens),
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
    """Distinct ints in 3..max_sequence_length; the first is the primary length."""
    if isinstance(sequence_lengths, numbers.Integral):
        sequence_lengths = (sequence_lengths,)
    lengths = [int(x) for x in sequence_lengths]
    encoder = getattr(model, "encoder", model)
    bad = [x for x in lengths if x < 3 or x > encoder.max_sequence_length]
    if not lengths or bad or len(set(lengths)) != len(lengths):
        raise ValueError(
            f"sequence_lengths={list(sequence_lengths)}: need distinct ints in 3.."
            f"{encoder.max_sequence_length} (the encoder's max_sequence_length); the first is "
            "the primary length validation runs every text through."
        )
    return lengths
