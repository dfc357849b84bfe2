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
"""

from __future__ import annotations

import json
import numbers
import os
import pathlib
import re
import time

from zoo.models import DEFAULT_SEQUENCE_LENGTH, INPUT_NAMES, TASKS, input_contract, task_of
from zoo.text import description as td
from zoo.text.tokenizer import (
    read_vocabulary,
    vocabulary_casing_problem,
    vocabulary_sha256,
)
from zoo.text.tokenizer_record import (
    BYTE_PAIR,
    BYTE_PAIR_FILES,
    build_tokenizer,
    is_byte_pair,
    merges_sha256,
    record_fields,
    recorded_description,
    tokenizer_files,
    write_vocabulary,  # noqa: F401  (mf.write_vocabulary for the exporters)
)
from zoo.utils.atomic import atomic_file
from zoo.utils.file_record import (
    file_differences,
    malformed_entries,
    record_files,
    sha256_file,
)
from zoo.utils.jsonfile import JsonFileError, read_json_object
from zoo.utils.provenance import versions

MANIFEST = "manifest.json"
METADATA = "metadata.json"
VOCABULARY = "vocab.txt"
# A byte-level BPE (RoBERTa) artifact's tokenizer files (BYTE_PAIR_FILES) are
# in place of vocab.txt; metadata.json then says "tokenizer": "byte_pair" and
# records merges_sha256 (zoo.text.tokenizer_record, shared with model
# directories).
MANIFEST_FORMAT = "zoo-export-manifest"
METADATA_FORMAT = "zoo-export"
FORMAT_VERSION = 1  # manifest.json
# metadata.json. Version 2 names tasks as everywhere else ("classify", "tag",
# "qa"); version 1 wrote "classification", "token_classification",
# "question_answering", which `read_metadata` still reads.
METADATA_VERSION = 2
_VERSION_1_TASKS = {
    "classification": "classify",
    "token_classification": "tag",
    "question_answering": "qa",
}
ARTIFACT_KINDS = ("tflite", "saved_model", "tpu_saved_model")


class ManifestError(ValueError):
    """An artifact's files do not match its manifest.json (or it has none)."""


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
        return given
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
    return tokenizer


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


class MetadataError(ValueError):
    """metadata.json disagrees with itself or with the files beside it."""


def read_metadata(directory) -> dict:
    """metadata.json of an artifact, checked: format, the type of every field
    a loader relies on, and agreement with vocab.txt (size, sha256, casing).

    A relabelled or edited metadata.json with a regenerated manifest passes
    the manifest; these checks, and `validate_artifact`'s comparison with
    what was recorded at export, are what refuse it."""
    directory = pathlib.Path(directory)
    path = directory / METADATA
    if not path.is_file():
        raise FileNotFoundError(
            f"{directory}: no {METADATA}; not a zoo export artifact. Point at the directory "
            "`zoo export` wrote (for a SavedModel: BASE/NAME/VERSION)."
        )
    try:
        meta = read_json_object(path, "re-export the artifact with `zoo export`")
    except JsonFileError as e:
        raise MetadataError(str(e)) from None
    version = meta.get("format_version", 0)
    if (
        meta.get("format") != METADATA_FORMAT
        or not isinstance(version, int)
        or version > METADATA_VERSION
    ):
        raise MetadataError(
            f"{path}: format {meta.get('format')!r} version {meta.get('format_version')!r} is not "
            f"one this package reads ({METADATA_FORMAT!r} <= {METADATA_VERSION}); upgrade bert-zoo."
        )
    if version < 2:
        meta["task"] = _VERSION_1_TASKS.get(meta.get("task"), meta.get("task"))
    if meta.get("kind") == "tpu_saved_model" and isinstance(meta.get("tokenization"), str):
        # A TPU SavedModel written before the tokenization description named
        # its host-side tokenizer in `tokenization`, now `host_tokenization`.
        meta["host_tokenization"] = meta.pop("tokenization")
    graph = (directory / "saved_model.pb").is_file()
    if (meta.get("kind") == "tflite" and graph) or (
        meta.get("kind") in ("saved_model", "tpu_saved_model") and not graph
    ):
        raise MetadataError(
            f"{path}: `kind` is {meta.get('kind')!r} but the directory "
            f"{'holds a SavedModel (saved_model.pb)' if graph else 'has no saved_model.pb'}; "
            "metadata.json does not describe these files. Re-export the artifact."
        )
    check_metadata_fields(meta, path)
    check_vocabulary_file(meta, directory)
    if "input_contract" not in meta:
        # Written since issue 16; older artifacts get the same rules from
        # the encoder config they recorded.
        config = (meta.get("source_model") or {}).get("encoder_config") or {}
        segments = config.get("num_segments", 2)
        meta["input_contract"] = {
            "inputs": list(INPUT_NAMES),
            "dtype": "int32",
            "shape": "[batch, L], the same for all three inputs",
            "sequence_length": {"min": 1, "max": config.get("max_sequence_length", 512)},
            "token_ids": {"min": 0, "max": meta["vocabulary_size"] - 1},
            "segment_ids": {"min": 0, "max": segments - 1 if segments else 1},
            "padding_mask": {
                "values": [0, 1],
                "first_token_real": True,
                "real_tokens_first": True,
            },
        }
    return meta


# The top-level fields of metadata.json the exporters write (every kind and
# version); any other is refused by name: a field no loader reads could
# still be honoured by a consumer, so the file says nothing we do not check.
KNOWN_FIELDS = frozenset(
    {
        # every kind (base_metadata, validate_artifact)
        "format", "format_version", "kind", "task", "labels", "lowercase",
        "tokenizer", "vocabulary_file", "merges_file", "merges_sha256",
        "vocabulary_size", "vocabulary_sha256", "input_contract", "special_tokens",
        "source_model", "created", "versions", "sequence_lengths",
        "validation_profile", "validated",
        # .tflite
        "quantization", "inputs", "outputs", "representative_texts", "files",
        "mediapipe", "tokenizer_runtimes",
        # SavedModel and TPU SavedModel
        "name", "version", "signatures", "latency_signature", "assets",
        "batch_size", "compute_dtype", "serving_default", "function_aliases", "xla",
        "host_tokenization",
        # every kind: the tokenization description (zoo.text.description)
        "tokenization",
    }
)  # fmt: skip
# sequence_lengths (and each file's or signature's length): ints in this
# range, each once, and no longer than the encoder's max_sequence_length when
# metadata.json records it. 3 is the shortest the exporters accept
# ([CLS] one token [SEP]); 8192 is above every BERT-family encoder's
# position table (512 for BERT, 4096 for the longest here) and keeps a
# [1, L] input and its L x L attention within a phone's memory.
MIN_SEQUENCE_LENGTH = 3
MAX_SEQUENCE_LENGTH = 8192
# vocabulary_size: at most the number of tokens zoo.text's readers accept.
MAX_VOCABULARY_SIZE = 1 << 24
# A file name inside the artifact: one plain path component.
_PLAIN_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")


def plain_name(value) -> bool:
    """Whether `value` names a file directly inside the artifact (no
    directory part, no `..`, not hidden)."""
    return (
        isinstance(value, str) and bool(_PLAIN_NAME.fullmatch(value)) and ".." not in value
    )


def check_metadata_fields(meta, path):
    """The type and range of every field a loader reads; `MetadataError`
    naming the field, what it holds and what is expected.

    Ranges: `sequence_lengths` a non-empty list of distinct ints in
    MIN_SEQUENCE_LENGTH..MAX_SEQUENCE_LENGTH (3..8192) and at most the
    recorded encoder's `max_sequence_length` (first = primary, as the
    exporter writes it; a .tflite file's and a SavedModel signature's
    lengths obey the same rule and are among them); `vocabulary_size`
    1..2**24; bools are not ints, floats are not ints. `vocabulary_file`,
    `merges_file`, `assets` and `files` name plain files inside the
    artifact, and the tokenizer files are exactly the ones the loaders read
    (vocab.txt, or vocab.json + merges.txt). Any top-level field not in
    KNOWN_FIELDS is refused by name."""
    unknown = sorted(set(meta) - KNOWN_FIELDS)
    if unknown:
        raise MetadataError(
            f"{path}: unknown field{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(repr(k)[:60] for k in unknown[:5])}; no exporter writes "
            f"{'them' if len(unknown) > 1 else 'it'}, so metadata.json was edited. "
            "Re-export the artifact with `zoo export`."
        )

    def need(ok, field, expected):
        if not ok:
            raise MetadataError(
                f"{path}: `{field}` is {meta.get(field)!r:.120}; expected {expected}. The file "
                "was edited or damaged: re-export the artifact with `zoo export`."
            )

    def is_int(value, low=None):
        return (
            isinstance(value, int)
            and not isinstance(value, bool)
            and (low is None or value >= low)
        )

    need(meta.get("task") in TASKS, "task", f"one of {list(TASKS)}")
    need(meta.get("kind") in ARTIFACT_KINDS, "kind", f"one of {list(ARTIFACT_KINDS)}")
    labels = meta.get("labels")
    if meta["task"] in ("qa", "regress"):
        need(labels is None, "labels", f"null (a {meta['task']} model has no labels)")
    else:
        need(
            isinstance(labels, list)
            and labels
            and all(
                isinstance(x, str) and x and "\n" not in x and "\r" not in x for x in labels
            ),
            "labels",
            "a non-empty list of label names (strings)",
        )
        need(len(set(labels)) == len(labels), "labels", "each label name once")
    need(isinstance(meta.get("lowercase"), bool), "lowercase", "true or false")
    need(
        meta.get("tokenizer", BYTE_PAIR) == BYTE_PAIR,
        "tokenizer",
        f"{BYTE_PAIR!r} (vocab.json + merges.txt) or absent (WordPiece vocab.txt)",
    )
    try:
        recorded_description(meta, path)
    except td.DescriptionError as e:
        raise MetadataError(f"{e}. Re-export the artifact with `zoo export`.") from None
    need(
        is_int(meta.get("vocabulary_size"), 1)
        and meta["vocabulary_size"] <= MAX_VOCABULARY_SIZE,
        "vocabulary_size",
        f"an integer in 1..{MAX_VOCABULARY_SIZE:,}",
    )
    _check_file_fields(meta, need)
    digest = meta.get("vocabulary_sha256")
    need(
        isinstance(digest, str) and len(digest) == 64,
        "vocabulary_sha256",
        "the sha256 of vocab.txt (64 hex digits)",
    )
    special = meta.get("special_tokens")
    need(
        isinstance(special, dict)
        and all(
            is_int(special.get(k), 0) and special[k] < meta["vocabulary_size"]
            for k in ("cls", "sep", "pad", "unk")
        ),
        "special_tokens",
        "ids of cls, sep, pad and unk inside the vocabulary",
    )
    config = (meta.get("source_model") or {}).get("encoder_config") or {}
    longest = config.get("max_sequence_length") if isinstance(config, dict) else None
    longest = (
        min(longest, MAX_SEQUENCE_LENGTH) if is_int(longest, 1) else MAX_SEQUENCE_LENGTH
    )
    span = f"{MIN_SEQUENCE_LENGTH}..{longest}"

    def is_length(x):
        return is_int(x, MIN_SEQUENCE_LENGTH) and x <= longest

    def are_lengths(values):
        return (
            isinstance(values, list)
            and values
            and all(is_length(x) for x in values)
            and len(set(values)) == len(values)
        )

    lengths = meta.get("sequence_lengths")
    if "sequence_lengths" in meta:
        need(
            are_lengths(lengths),
            "sequence_lengths",
            f"a non-empty list of distinct integers in {span} (the encoder's "
            "max_sequence_length), the primary length first",
        )
    if meta["kind"] == "tflite":
        files = meta.get("files")
        need(
            isinstance(files, dict)
            and files
            and all(
                plain_name(name)
                and name.endswith(".tflite")
                and isinstance(i, dict)
                and isinstance(i.get("signatures"), list)
                and all(isinstance(n, str) for n in i["signatures"])
                and are_lengths(i.get("sequence_lengths"))
                and len(i["signatures"]) == len(i["sequence_lengths"])
                and (lengths is None or set(i["sequence_lengths"]) <= set(lengths))
                for name, i in files.items()
            ),
            "files",
            "each .tflite file (a plain name inside the artifact) with its signatures "
            f"and their sequence lengths, distinct integers in {span} among "
            "`sequence_lengths`",
        )
    else:
        signatures = meta.get("signatures")
        need(
            isinstance(signatures, dict)
            and signatures
            and all(
                isinstance(i, dict)
                and (i.get("sequence_length") is None or is_length(i["sequence_length"]))
                for i in signatures.values()
            ),
            "signatures",
            f"the SavedModel's signatures, each sequence_length null or in {span}",
        )
    runtimes = meta.get("tokenizer_runtimes")
    if "tokenizer_runtimes" in meta:
        need(
            isinstance(runtimes, dict)
            and set(runtimes) <= {"zoo", "android_app"}
            and all(
                isinstance(v, str) and (v == "exact" or v.startswith("refused: "))
                for v in runtimes.values()
            ),
            "tokenizer_runtimes",
            "{runtime: 'exact' or 'refused: why'} for zoo and android_app",
        )
    contract = meta.get("input_contract")
    if contract is not None:
        need(
            isinstance(contract, dict)
            and isinstance(contract.get("token_ids"), dict)
            and contract["token_ids"].get("max") == meta["vocabulary_size"] - 1,
            "input_contract",
            f"token ids 0..{meta['vocabulary_size'] - 1} (vocabulary_size "
            "- 1) with the segment, mask and length rules",
        )


def _check_file_fields(meta, need):
    """The fields that name files: the tokenizer's, exactly the names the
    loaders read (a consumer honouring another name would read a file no
    check covered); `assets`, plain names (checked against assets/ by
    export.consistency)."""
    byte_pair = is_byte_pair(meta)
    expected = {"vocabulary_file": "vocab.json" if byte_pair else VOCABULARY}
    if byte_pair:
        expected["merges_file"] = "merges.txt"
    elif "merges_file" in meta:
        need(False, "merges_file", "absent (a WordPiece artifact has no merges)")
    for field, name in expected.items():
        if field in meta:  # absent in artifacts written before it was recorded
            need(
                meta[field] == name,
                field,
                f"{name!r}, the file beside metadata.json that the loaders read",
            )
    if "assets" in meta:
        assets = meta["assets"]
        need(
            assets is None
            or (isinstance(assets, list) and all(plain_name(a) for a in assets)),
            "assets",
            "a list of plain file names in assets/",
        )


def _check_byte_pair_files(meta, directory):
    directory = pathlib.Path(directory)
    missing = [f for f in BYTE_PAIR_FILES if not (directory / f).is_file()]
    if missing:
        raise MetadataError(
            f"{directory}: no {' or '.join(missing)}; the artifact is incomplete. "
            "Re-export it with `zoo export`."
        )
    tokenizer = artifact_tokenizer(directory, meta)
    if tokenizer.vocabulary_size != meta["vocabulary_size"]:
        raise MetadataError(
            f"{directory / METADATA}: vocabulary_size is {meta['vocabulary_size']:,} but "
            f"vocab.json has {tokenizer.vocabulary_size:,} tokens; re-export the artifact."
        )
    if vocabulary_sha256(tokenizer.vocabulary) != meta["vocabulary_sha256"]:
        raise MetadataError(
            f"{directory / 'vocab.json'}: not the vocabulary the artifact was exported with "
            "(sha256 differs from metadata.json); re-export the artifact."
        )
    if merges_sha256(tokenizer.merges) != meta.get("merges_sha256"):
        raise MetadataError(
            f"{directory / 'merges.txt'}: not the merges the artifact was exported with "
            "(sha256 differs from metadata.json's merges_sha256); re-export the artifact."
        )


def check_vocabulary_file(meta, directory):
    """vocab.txt (or vocab.json + merges.txt) beside the artifact against
    metadata.json."""
    if is_byte_pair(meta):
        return _check_byte_pair_files(meta, directory)
    path = pathlib.Path(directory) / VOCABULARY
    if not path.is_file():
        raise MetadataError(
            f"{directory}: no {VOCABULARY}; the artifact is incomplete. "
            "Re-export it with `zoo export`."
        )
    tokens = read_vocabulary(path)
    if len(tokens) != meta["vocabulary_size"]:
        raise MetadataError(
            f"{directory / METADATA}: vocabulary_size is {meta['vocabulary_size']:,} but "
            f"{VOCABULARY} has {len(tokens):,} tokens; re-export the artifact."
        )
    if vocabulary_sha256(tokens) != meta["vocabulary_sha256"]:
        raise MetadataError(
            f"{directory / VOCABULARY}: not the vocabulary the artifact was exported with "
            "(sha256 differs from metadata.json); re-export the artifact."
        )
    problem = vocabulary_casing_problem(tokens, meta["lowercase"])
    if problem:
        raise MetadataError(f"{directory / METADATA}: {problem}. Re-export the artifact.")


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
