"""The files of an artifact and the manifest that records them: their names,
manifest.json written and verified (every file listed with its size and
sha256), JSON files written atomically, and the permissions of a published
artifact.

Why a manifest: a flipped byte in a `.tflite` or a SavedModel's weights file
does not always stop it from loading; it silently changes the outputs.
`verify_manifest` refuses any file that changed, is missing or is not listed.
"""

from __future__ import annotations

import json
import os
import pathlib
import re

from zoo.utils.atomic import atomic_file
from zoo.utils.file_record import (
    file_differences,
    malformed_entries,
    record_files,
)
from zoo.utils.jsonfile import read_json_object

MANIFEST = "manifest.json"
METADATA = "metadata.json"
VOCABULARY = "vocab.txt"


class MetadataError(ValueError):
    """metadata.json disagrees with itself or with the files beside it."""


# A byte-level BPE (RoBERTa) artifact's tokenizer files (BYTE_PAIR_FILES) are
# in place of vocab.txt; metadata.json then says "tokenizer": "byte_pair" and
# records merges_sha256 (zoo.text.tokenizer_record, shared with model
# directories).
MANIFEST_FORMAT = "zoo-export-manifest"
FORMAT_VERSION = 1  # manifest.json


class ManifestError(ValueError):
    """An artifact's files do not match its manifest.json (or it has none)."""


def write_json(path, data) -> pathlib.Path:
    path = pathlib.Path(path)
    with atomic_file(path, "w") as f:
        json.dump(data, f, indent=2, sort_keys=False)
        f.write("\n")
    return path


# `zoo validate`'s reports (validation-YYYYMMDDTHHMMSS.json), written into an
# artifact after export: the only files a manifest need not list. No loader
# reads them.
REPORT_NAME = re.compile(r"validation-\d{8}T\d{6}(?:-\d+)?\.json")


def write_manifest(directory) -> dict:
    """Hash every file under `directory` (except manifest.json) into manifest.json."""
    manifest = {
        "format": MANIFEST_FORMAT,
        "format_version": FORMAT_VERSION,
        "algorithm": "sha256",
        "files": record_files(directory, skip={MANIFEST}),
    }
    write_json(pathlib.Path(directory) / MANIFEST, manifest)
    return manifest


def verify_manifest(directory) -> dict:
    """Check an artifact against its manifest.json; return the manifest.

    The manifest must list every file of the directory, each with its size
    and sha256: a file it does not list is refused like a changed one
    (otherwise removing a file's entry would let that file change
    unchecked), except `zoo validate`'s reports (`REPORT_NAME`), which no
    loader reads. Entries are type-checked; symbolic links are refused.
    Raises `ManifestError` listing each file that is missing, unlisted, a
    link, or has another size or sha256.
    """
    directory = pathlib.Path(directory)
    path = directory / MANIFEST
    if path.is_symlink() or not path.is_file():
        raise ManifestError(
            f"{directory}: no {MANIFEST}, so its files cannot be checked. It is not a complete "
            "zoo export (or was copied without it); re-export it with `zoo export`."
        )
    try:
        manifest = read_json_object(path, "re-export the artifact")
    except (OSError, ValueError) as e:
        raise ManifestError(f"{path}: unreadable ({e}); re-export the artifact.") from e
    if manifest.get("format") != MANIFEST_FORMAT or not isinstance(
        manifest.get("files"), dict
    ):
        raise ManifestError(
            f"{path}: not a zoo export manifest (format {manifest.get('format')!r})."
        )
    malformed = malformed_entries(manifest["files"], reserved=(MANIFEST,))
    if malformed:
        raise ManifestError(
            f"{path}: {len(malformed)} malformed entr{'y' if len(malformed) == 1 else 'ies'}: "
            + "; ".join(malformed)
            + ". The manifest was edited or damaged; restore the artifact from the original "
            "export or re-export it with `zoo export`."
        )
    problems = file_differences(
        directory, manifest["files"], skip={MANIFEST}, unlisted_ok=REPORT_NAME.fullmatch
    )
    if problems:
        raise ManifestError(
            f"{directory}: {len(problems)} file(s) do not match {MANIFEST}: "
            + "; ".join(problems)
            + ". The artifact changed after export (disk corruption, a partial copy, an "
            "edit, or a file added or removed) and could give other outputs; refusing to "
            "load it. Restore it from the original export or re-export with `zoo export`."
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
