"""metadata.json read and checked: its format and version (older versions
read as the current one), the type and range of every field a loader relies
on, and its agreement with the tokenizer files beside it.

A relabelled or edited metadata.json with a regenerated manifest passes the
manifest; these checks, and `export.consistency.check_artifact` (metadata.json
against what the model files say themselves), are what refuse it."""

from __future__ import annotations

import pathlib
import re

from export.manifest.files import METADATA, VOCABULARY, MetadataError
from export.manifest.tokenizer import artifact_tokenizer
from zoo.configs import EncoderConfig
from zoo.models import TASKS, contract_for
from zoo.text import description as td
from zoo.text.tokenizer import (
    read_vocabulary,
    vocabulary_casing_problem,
    vocabulary_sha256,
)
from zoo.text.tokenizer_record import (
    BYTE_PAIR,
    BYTE_PAIR_FILES,
    is_byte_pair,
    merges_sha256,
    recorded_description,
)
from zoo.utils.jsonfile import JsonFileError, read_json_object

METADATA_FORMAT = "zoo-export"
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
    # Absent in the first artifacts: read as version 1.
    version = meta.get("format_version", 1)
    if (
        meta.get("format") != METADATA_FORMAT
        or not _is_int(version, 1)
        or version > METADATA_VERSION
    ):
        raise MetadataError(
            f"{path}: format {meta.get('format')!r} version {meta.get('format_version')!r} is not "
            f"one this package reads ({METADATA_FORMAT!r} <= {METADATA_VERSION}); upgrade bert-zoo."
        )
    if version < 2 and isinstance(meta.get("task"), str):
        meta["task"] = _VERSION_1_TASKS.get(meta["task"], meta["task"])
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
        # the encoder config they recorded (typed by check_metadata_fields).
        config = (meta.get("source_model") or {}).get("encoder_config") or {}
        meta["input_contract"] = contract_for(
            meta["vocabulary_size"],
            config.get("max_sequence_length", 512),
            config.get("num_segments", 2),
        )
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
    _refuse_unknown_fields(meta, path)
    need = _needer(meta, path)
    _check_task_fields(meta, path, need)
    _check_vocabulary_fields(meta, need)
    _check_source_model(meta, need)
    _check_length_fields(meta, need)
    _check_runtime_fields(meta, need)
    _check_validation_fields(meta, need)


def _refuse_unknown_fields(meta, path):
    unknown = sorted(set(meta) - KNOWN_FIELDS)
    if unknown:
        raise MetadataError(
            f"{path}: unknown field{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(repr(k)[:60] for k in unknown[:5])}; no exporter writes "
            f"{'them' if len(unknown) > 1 else 'it'}, so metadata.json was edited. "
            "Re-export the artifact with `zoo export`."
        )


def _needer(meta, path):
    """`need(ok, field, expected)`: `MetadataError` naming `field`, what it
    holds and what is expected, unless `ok`."""

    def need(ok, field, expected):
        if not ok:
            raise MetadataError(
                f"{path}: `{field}` is {meta.get(field)!r:.120}; expected {expected}. The file "
                "was edited or damaged: re-export the artifact with `zoo export`."
            )

    return need


def _is_int(value, low=None):
    return (
        isinstance(value, int)
        and not isinstance(value, bool)
        and (low is None or value >= low)
    )


def _check_task_fields(meta, path, need):
    """task, kind, labels, and how the tokenizer is described."""
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


def _check_vocabulary_fields(meta, need):
    """The vocabulary's size, files, digest and special ids."""
    need(
        _is_int(meta.get("vocabulary_size"), 1)
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
            _is_int(special.get(k), 0) and special[k] < meta["vocabulary_size"]
            for k in ("cls", "sep", "pad", "unk")
        ),
        "special_tokens",
        "ids of cls, sep, pad and unk inside the vocabulary",
    )


def _check_length_fields(meta, need):
    """sequence_lengths, and each file's or signature's lengths among them,
    within the recorded encoder's maximum."""
    config = (meta.get("source_model") or {}).get("encoder_config") or {}
    longest = config.get("max_sequence_length") if isinstance(config, dict) else None
    longest = (
        min(longest, MAX_SEQUENCE_LENGTH) if _is_int(longest, 1) else MAX_SEQUENCE_LENGTH
    )
    span = f"{MIN_SEQUENCE_LENGTH}..{longest}"

    def is_length(x):
        return _is_int(x, MIN_SEQUENCE_LENGTH) and x <= longest

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
        served = {n for i in files.values() for n in i["sequence_lengths"]}
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
        served = {i["sequence_length"] for i in signatures.values()} - {None}
    need(
        lengths is None or set(lengths) == served,
        "sequence_lengths",
        f"the lengths the model files serve, {sorted(served)}",
    )


def _check_runtime_fields(meta, need):
    """Which runtimes reproduce the tokenizer, and the input contract."""
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
    if "input_contract" in meta:
        need(
            isinstance(contract, dict) and contract == _expected_contract(meta, contract),
            "input_contract",
            "the input contract of the recorded encoder (token ids 0..vocabulary_size - 1, "
            "int32, the segment, mask and length rules `zoo export` writes)",
        )


def _expected_contract(meta, contract):
    """The contract `zoo export` writes for this artifact's encoder: from
    `source_model.encoder_config` when recorded, else from the contract's own
    length and segment bounds (which must then be integers)."""
    encoder = _encoder_config(meta)
    if encoder is not None:
        longest, segments = encoder.max_sequence_length, encoder.num_segments
    else:
        longest = (contract.get("sequence_length") or {}).get("max")
        top = (contract.get("segment_ids") or {}).get("max")
        if not (_is_int(longest, 1) and _is_int(top, 0)):
            return None
        segments = top + 1
    return contract_for(meta["vocabulary_size"], longest, segments)


# validation_profile: the profile the exporters derive from the kind (a
# .tflite file's quantization, a TPU SavedModel's compute dtype);
# export.validate.limits holds each one's thresholds.
QUANTIZATION_MODES = ("float32", "float16", "dynamic_int8", "int8", "int4")
_HEX64 = re.compile(r"[0-9a-f]{64}")


def _expected_profile(meta):
    if meta["kind"] == "tflite":
        return meta.get("quantization")
    if meta["kind"] == "saved_model":
        return "saved_model"
    return f"tpu_{meta.get('compute_dtype')}"


def _check_validation_fields(meta, need):
    """quantization, validation_profile (derived from them, never chosen:
    a profile picks the thresholds `zoo validate` holds the file to), the
    answers recorded at export (`validated`), and the SavedModel's name,
    version and latency signature."""
    if meta["kind"] == "tflite":
        need(
            meta.get("quantization") in QUANTIZATION_MODES,
            "quantization",
            f"one of {list(QUANTIZATION_MODES)}",
        )
    if meta["kind"] == "tpu_saved_model":
        need(
            meta.get("compute_dtype") in ("float32", "bfloat16"),
            "compute_dtype",
            "'float32' or 'bfloat16'",
        )
    expected = _expected_profile(meta)
    need(
        meta.get("validation_profile") == expected,
        "validation_profile",
        f"{expected!r}, the profile a {meta['kind']} artifact"
        + (f" quantized as {expected!r}" if meta["kind"] == "tflite" else "")
        + " is validated under",
    )
    validated = meta.get("validated")
    need(
        validated is None
        or (
            isinstance(validated, dict)
            and _is_int(validated.get("texts"), 0)
            and all(
                isinstance(validated.get(k), str) and _HEX64.fullmatch(validated[k])
                for k in ("texts_sha256", "predicted_labels_sha256")
            )
            and (
                validated.get("labels") is None
                or (
                    isinstance(validated["labels"], list)
                    and all(isinstance(x, str) for x in validated["labels"])
                )
            )
            and isinstance(validated.get("signature"), str)
            and (
                validated.get("accuracy") is None
                or (
                    isinstance(validated["accuracy"], float)
                    and 0.0 <= validated["accuracy"] <= 1.0
                )
            )
        ),
        "validated",
        "null or the answers recorded at export: texts (a count), texts_sha256, labels "
        "(names), signature, predicted_labels_sha256 and accuracy (0..1 or null)",
    )
    if meta["kind"] != "tflite":
        need(isinstance(meta.get("name"), str), "name", "the model's name (a string)")
        need(
            _is_int(meta.get("version"), 1),
            "version",
            "the model's version (an integer >= 1)",
        )
        need(
            meta.get("latency_signature") in meta["signatures"],
            "latency_signature",
            f"one of the signatures {sorted(meta['signatures'])[:8]}",
        )


def _encoder_config(meta):
    """`source_model.encoder_config` as the `EncoderConfig` it describes, or
    None when it is absent or not a config this zoo builds."""
    config = (meta.get("source_model") or {}).get("encoder_config")
    if not isinstance(config, dict):
        return None
    try:
        return EncoderConfig.from_dict(config)
    except (TypeError, ValueError):
        return None


def _check_source_model(meta, need):
    """The model the artifact was exported from: its classes, its encoder's
    configuration (a config this zoo builds, of the artifact's vocabulary)
    and where it was (path and model.keras digest), each typed."""
    if "source_model" not in meta:  # artifacts written before it was recorded
        return
    source = meta["source_model"]
    expected = (
        "an object with class, encoder_class, encoder_config (the encoder's configuration, "
        "of the artifact's vocabulary_size) and optionally num_parameters, path and "
        "model_keras_sha256"
    )
    need(isinstance(source, dict), "source_model", expected)
    encoder = _encoder_config(meta)
    need(
        all(isinstance(source.get(k), str) for k in ("class", "encoder_class"))
        and encoder is not None
        and encoder.vocabulary_size == meta["vocabulary_size"]
        and (source.get("num_parameters") is None or _is_int(source["num_parameters"], 1))
        and (source.get("path") is None or isinstance(source["path"], str))
        and (
            source.get("model_keras_sha256") is None
            or (
                isinstance(source["model_keras_sha256"], str)
                and _HEX64.fullmatch(source["model_keras_sha256"])
            )
        ),
        "source_model",
        expected,
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
