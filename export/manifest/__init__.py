"""What sits beside every exported artifact, and the check every loader runs first.

    ARTIFACT/vocab.txt       the WordPiece vocabulary, one token per line (id = line number)
    ARTIFACT/metadata.json   task, labels, sequence lengths, lower-casing, vocabulary
                             sha256, quantization, op lists, signatures, source model
    ARTIFACT/manifest.json   sha256 and size of every other file in the directory
    ARTIFACT/.zoo-output     the marker of a directory the project wrote

Why a manifest: a flipped byte in a `.tflite` or a SavedModel's weights file
does not always stop it from loading; it silently changes the outputs. Every
loader in `export/` runs `export.runtime.open_artifact` before touching a
model file: `verify_manifest` (every file listed, with its size and sha256;
a file the manifest does not list is refused too, or dropping an entry
would let a file change unchecked), `read_metadata` (the type of every
field), and `export.consistency.check_artifact` (metadata.json against what
the model files say themselves, which a regenerated manifest cannot hide).

    >>> write_manifest(artifact_dir)
    >>> verify_manifest(artifact_dir)          # raises ManifestError on any change

The package, one job a module, bottom to top: `files` (the artifact's file
names, manifest.json written and verified, JSON written atomically, the
published permissions), `tokenizer` (the tokenizer an artifact's files
describe, built once per artifact), `metadata` (metadata.json read and
checked) and `model_record` (what an exporter records from the model it
exports). This module re-exports their names: `from export import manifest
as mf` and `mf.NAME` is how the exporters and loaders use them.
"""

from __future__ import annotations

from export.manifest.files import (
    FORMAT_VERSION,
    MANIFEST,
    MANIFEST_FORMAT,
    METADATA,
    REPORT_NAME,
    VOCABULARY,
    ManifestError,
    make_readable,
    verify_manifest,
    write_json,
    write_manifest,
)
from export.manifest.metadata import (
    ARTIFACT_KINDS,
    KNOWN_FIELDS,
    MAX_SEQUENCE_LENGTH,
    MAX_VOCABULARY_SIZE,
    METADATA_FORMAT,
    METADATA_VERSION,
    MIN_SEQUENCE_LENGTH,
    MetadataError,
    check_metadata_fields,
    check_vocabulary_file,
    plain_name,
    read_metadata,
)
from export.manifest.model_record import (
    base_metadata,
    check_sequence_lengths,
    default_sequence_length,
    label_names,
    model_tokenizer,
    source_info,
)
from export.manifest.tokenizer import _TOKENIZERS, artifact_tokenizer
from zoo.text.tokenizer import vocabulary_sha256
from zoo.text.tokenizer_record import write_vocabulary
from zoo.utils.file_record import sha256_file

# The names importable from export.manifest, wherever in the package they
# live. write_vocabulary (vocab.txt's one writer), vocabulary_sha256 and
# sha256_file are the exporters' and loaders' through `mf.` too; _TOKENIZERS
# is the tokenizer cache a test empties.
__all__ = [
    "ARTIFACT_KINDS",
    "FORMAT_VERSION",
    "KNOWN_FIELDS",
    "MANIFEST",
    "MANIFEST_FORMAT",
    "MAX_SEQUENCE_LENGTH",
    "MAX_VOCABULARY_SIZE",
    "METADATA",
    "METADATA_FORMAT",
    "METADATA_VERSION",
    "MIN_SEQUENCE_LENGTH",
    "REPORT_NAME",
    "VOCABULARY",
    "_TOKENIZERS",
    "ManifestError",
    "MetadataError",
    "artifact_tokenizer",
    "base_metadata",
    "check_metadata_fields",
    "check_sequence_lengths",
    "check_vocabulary_file",
    "default_sequence_length",
    "label_names",
    "make_readable",
    "model_tokenizer",
    "plain_name",
    "read_metadata",
    "sha256_file",
    "source_info",
    "verify_manifest",
    "vocabulary_sha256",
    "write_json",
    "write_manifest",
    "write_vocabulary",
]
