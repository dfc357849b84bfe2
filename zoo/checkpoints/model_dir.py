"""The project's own model directory: what `zoo convert`, `zoo finetune` and
`zoo distill` write and every command reads.

    DIR/model.keras       the whole Keras model (encoder + head), safe-mode loadable
    DIR/vocab.txt         the WordPiece vocabulary, or for a RoBERTa model
    DIR/vocab.json,       its byte-level BPE (`zoo_model.json` says
    DIR/merges.txt        "tokenizer": "byte_pair" and records merges_sha256)
    DIR/zoo_model.json    format version, model class, encoder config, the
                          tokenization description (`tokenization`, see
                          zoo.text.description), labels, provenance, and `files`:
                          the size and sha256 of every other file in DIR
    DIR/.zoo-output       the marker of a directory the project wrote

Loading checks the directory twice. Against its record: every file listed
(none added, none missing, none changed; no symbolic links). Against the
model itself: zoo_model.json's fields must say what model.keras holds
(class, encoder config, labels and their count, parameter count), what
vocab.txt holds (size, sha256, casing against `lowercase`), and settings
the model can take (`sequence_length` within the encoder's positions). A
field edited by hand, even with the record regenerated, is refused with
the field named, so `zoo predict` and `TextClassifier.from_checkpoint`
can never read one directory two ways. Directories written before the
record existed (format version 1) get the second check only.
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
from zoo.configs import EncoderConfig
from zoo.models import TASK_MODELS, task_of
from zoo.models.bert_encoder import ENCODER_CLASSES
from zoo.models.encoder_task import with_dtype_policy
from zoo.text import description as td
from zoo.text.description import DescriptionError
from zoo.text.features import MAX_WINDOWS
from zoo.text.tokenizer import (
    read_vocabulary,
    vocabulary_casing_problem,
    vocabulary_sha256,
)
from zoo.text.tokenizer_record import (
    BYTE_PAIR,
    build_tokenizer,
    is_byte_pair,
    merges_sha256,
    record_fields,
    recorded_description,
    tokenizer_files,
    write_tokenizer_files,
)
from zoo.utils.atomic import atomic_directory
from zoo.utils.budget import check_memory
from zoo.utils.file_record import file_differences, malformed_entries, record_files
from zoo.utils.jsonfile import MAX_DEPTH, json_depth, read_json_object

FORMAT = "zoo-model"
# Version 2 adds `files`, the record of every other file of the directory.
FORMAT_VERSION = 2
MANIFEST = "zoo_model.json"
# The tokenizer's fields (`tokenization`, `lowercase`, `tokenizer`: absent
# for WordPiece's vocab.txt, BYTE_PAIR for vocab.json + merges.txt) are
# zoo.text.tokenizer_record's, shared with the artifacts' metadata.json.
RUN_INFO = "args.json"
# A classifier's classes, at most: far above any real label set, far below
# a head that would not fit in memory.
MAX_LABELS = 1 << 20
# model.keras's config.json, at most (uncompressed): a zoo model's is ~1 kB;
# a zip member's declared size is checked before it is read.
KERAS_CONFIG_LIMIT = 16 << 20
# What model.keras may unpack to beyond its weights (HDF5's structure,
# config.json, metadata.json, a tokenizer's assets).
ARCHIVE_SLACK = 32 << 20


# The zoo's encoder classes, as model.keras names them (`zoo>BertEncoder`).
ENCODER_CLASS_NAMES = {cls.__name__ for cls in ENCODER_CLASSES.values()}


class ModelDirError(ValueError):
    """A model directory whose files disagree with its zoo_model.json."""


def is_model_dir(path) -> bool:
    return (pathlib.Path(path) / MANIFEST).is_file()


def save_model_dir(
    model, directory, tokenizer, *, extra=None, overwrite=True, run_info=None
):
    """Atomically write `model` and `tokenizer` as a zoo model directory.

    The encoder is saved computing in float32 whatever policy `model` was
    trained under: a model directory is for export and serving, and a new
    training run applies its own `--mixed-precision` (see
    `zoo.with_dtype_policy`). Head layers follow the loading process's policy.
    `run_info`: the command's args.json, written into the directory (and its
    record) when the directory is a command's output itself (`zoo convert`,
    `zoo prune`)."""

    record = record_fields(tokenizer)
    problem = (
        None
        if is_byte_pair(record)
        else vocabulary_casing_problem(tokenizer.vocabulary, record.get("lowercase", True))
    )
    if problem:
        # What a read of the directory would refuse: never written.
        raise ValueError(
            f"{directory}: the tokenizer does not fit its vocabulary: {problem}. Give the "
            "lowercase setting the checkpoint was trained with (zoo convert --lowercase "
            "or --cased)."
        )
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
        # The tokenization description and the vocabulary's size and sha256,
        # checked on every load: a vocab.txt cut, extended or reordered after
        # saving would otherwise tokenize silently into other ids.
        **record,
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
        write_tokenizer_files(tmp, tokenizer)
        if run_info is not None:
            (tmp / RUN_INFO).write_text(json.dumps(run_info, indent=2) + "\n")
        # Last: the record of every file written above.
        meta["files"] = record_files(tmp, skip={MANIFEST})
        (tmp / MANIFEST).write_text(json.dumps(meta, indent=2) + "\n")
    return pathlib.Path(directory)


def _refuse(path, field, problem, fix="Re-create the model directory"):
    raise ModelDirError(f"{path}: `{field}` {problem}. {fix}.")


def _is_int(value, low=None, high=None):
    return (
        isinstance(value, int)
        and not isinstance(value, bool)
        and (low is None or value >= low)
        and (high is None or value <= high)
    )


def _check_fields(meta, path):
    """The type and range of every field a reader relies on."""
    config = meta.get("encoder_config")
    if not isinstance(config, dict) or not isinstance(config.get("vocabulary_size"), int):
        _refuse(
            path,
            "encoder_config",
            f"is {config!r:.120}; expected the encoder's configuration (an object with "
            "vocabulary_size, num_layers, ...)",
        )
    try:
        check_memory(EncoderConfig.from_dict(config), path)
    except ValueError as e:  # a type, a range, an unknown field, or the memory limit
        _refuse(path, "encoder_config", f"is not a config this zoo builds: {e}")
    if not isinstance(meta.get("lowercase", True), bool):
        _refuse(path, "lowercase", f"is {meta['lowercase']!r:.40}; expected true or false")
    labels = meta.get("labels")
    if labels is not None and not (
        isinstance(labels, list)
        and 0 < len(labels) <= MAX_LABELS
        and all(isinstance(x, str) and x for x in labels)
        and len(set(labels)) == len(labels)
    ):
        _refuse(
            path,
            "labels",
            f"is {labels!r:.120}; expected a list of distinct label names, or null",
        )
    if meta.get("tokenizer", BYTE_PAIR) != BYTE_PAIR:
        _refuse(
            path,
            "tokenizer",
            f"is {meta['tokenizer']!r:.40}; expected {BYTE_PAIR!r} (vocab.json + "
            "merges.txt) or no field (WordPiece, vocab.txt)",
        )
    try:
        recorded_description(meta, path)
    except DescriptionError as e:
        raise ModelDirError(f"{e}. Re-create the model directory.") from None
    for field in ("model_class", "encoder_class"):
        if field in meta and not isinstance(meta[field], str):
            _refuse(path, field, f"is {meta[field]!r:.60}; expected a class name")
    if "task" in meta and meta["task"] not in (*TASK_MODELS, "pretrain"):
        _refuse(
            path, "task", f"is {meta['task']!r:.60}; expected one of {list(TASK_MODELS)}"
        )
    longest = config.get("max_sequence_length")
    for where, settings in (("", meta), ("finetune_config.", meta.get("finetune_config"))):
        if settings is None:
            continue
        if not isinstance(settings, dict):
            _refuse(path, where.rstrip("."), f"is {settings!r:.60}; expected an object")
        for field, low, high in (
            ("sequence_length", 3, longest if _is_int(longest) else None),
            ("max_windows", 1, MAX_WINDOWS),
            ("doc_stride", 1, None),
            ("max_answer_length", 1, None),
        ):
            value = settings.get(field)
            if value is not None and not _is_int(value, low, high):
                _refuse(
                    path,
                    where + field,
                    f"is {value!r:.40}; expected an integer in {low}.."
                    f"{high if high is not None else 'any'}"
                    + (
                        " (the encoder's max_sequence_length)"
                        if field == "sequence_length"
                        else ""
                    ),
                )


def read_model_dir_meta(directory) -> dict:
    """zoo_model.json of a model directory, checked: format, the fields every
    reader relies on, and the directory's files against its record."""
    directory = pathlib.Path(directory)
    path = directory / MANIFEST
    if not directory.is_dir():
        raise FileNotFoundError(
            f"{directory}: no such directory. Give a zoo model directory (made by "
            "`zoo convert SRC --out DIR`, `zoo finetune` or `zoo distill`)."
        )
    if path.is_symlink() or not path.is_file():
        raise FileNotFoundError(
            f"{directory}: not a zoo model directory (no {MANIFEST}). Create one "
            "with `zoo convert SRC --out DIR`, `zoo finetune` or `zoo distill`."
        )
    meta = read_json_object(path, "re-create the model directory (zoo convert / finetune)")
    version = meta.get("format_version")
    if meta.get("format") != FORMAT or not _is_int(version, 1, FORMAT_VERSION):
        raise ValueError(
            f"{path}: format {meta.get('format')!r} version "
            f"{meta.get('format_version')!r} is not one this zoo reads "
            f"({FORMAT!r} <= {FORMAT_VERSION}); upgrade the package."
        )
    _check_fields(meta, path)
    for name in ("model.keras", *tokenizer_files(meta)):
        if not (directory / name).is_file():
            raise FileNotFoundError(
                f"{directory}: zoo model directory is missing {name}; it was not "
                "written completely. Re-create it."
            )
    if version >= 2 or "files" in meta:
        # Version 1 had no record; a version-1 file that carries the field
        # anyway (`null` included) is checked as a record all the same, so
        # lowering the version cannot turn the check off.
        files = meta.get("files")
        if not isinstance(files, dict):
            _refuse(
                path,
                "files",
                f"is {files!r:.60}; expected the record of the directory's files",
            )
        malformed = malformed_entries(files, reserved=(MANIFEST,))
        if malformed:
            _refuse(path, "files", "has malformed entries: " + "; ".join(malformed))
        problems = file_differences(directory, files, skip={MANIFEST})
        if problems:
            raise ModelDirError(
                f"{directory}: {len(problems)} file(s) do not match the record in {MANIFEST} "
                f"(`files`): "
                + "; ".join(problems)
                + ". The model directory changed after it "
                "was written (an edit, a partial copy, a file added or removed); refusing to "
                "load it. Restore it, or re-create it (zoo convert / finetune / distill)."
            )
    return meta


def _check_vocabulary(directory, meta, tokens, file="vocab.txt"):
    """vocab.txt (or vocab.json) against the embedding it feeds, the hash
    recorded at save and the casing `lowercase` claims."""
    rows = meta["encoder_config"]["vocabulary_size"]
    if len(tokens) != rows:
        raise ValueError(
            f"{directory / file} has {len(tokens):,} tokens but the model's token "
            f"embedding has {rows:,} rows (zoo_model.json encoder_config.vocabulary_size): "
            "it is not the vocabulary the model was trained with, and ids would point at "
            f"other tokens' embeddings. Restore the model directory's own {file}."
        )
    recorded = meta.get("vocabulary_sha256")
    if recorded is not None and vocabulary_sha256(tokens) != recorded:
        raise ValueError(
            f"{directory / file} changed since the model was saved (sha256 differs from "
            "zoo_model.json's vocabulary_sha256; same size, so lines were edited or "
            "reordered): words would map to other tokens' ids. Restore the model "
            f"directory's own {file}."
        )
    if file != "vocab.txt":
        return  # byte-level BPE: no casing to check
    problem = vocabulary_casing_problem(tokens, meta.get("lowercase", True))
    if problem:
        _refuse(directory / MANIFEST, "lowercase", f"does not fit vocab.txt: {problem}")


def _plain(value):
    """`value` as JSON would give it back (tuples as lists)."""
    return json.loads(json.dumps(value))


def _check_against_model(directory, meta, model, desc=None):
    """zoo_model.json's fields against what model.keras holds."""
    path = directory / MANIFEST
    encoder = getattr(model, "encoder", model)

    def differs(field, recorded, actual):
        _refuse(
            path,
            field,
            f"is {recorded!r:.160} but model.keras holds {actual!r:.160}: zoo_model.json was "
            "edited, or model.keras replaced, after the directory was written",
        )

    if meta.get("model_class") not in (None, type(model).__name__):
        differs("model_class", meta["model_class"], type(model).__name__)
    if meta.get("encoder_class") not in (None, type(encoder).__name__):
        differs("encoder_class", meta["encoder_class"], type(encoder).__name__)
    config = _plain(encoder.config.to_dict()) if hasattr(encoder, "config") else None
    if config is not None and _plain(meta["encoder_config"]) != config:
        changed = sorted(
            k
            for k in set(config) | set(meta["encoder_config"])
            if config.get(k) != meta["encoder_config"].get(k)
        )
        differs(
            "encoder_config",
            {k: meta["encoder_config"].get(k) for k in changed},
            {k: config.get(k) for k in changed},
        )
    num_classes = getattr(model, "num_classes", None)
    labels = meta.get("labels")
    if labels is not None and num_classes is not None and len(labels) != num_classes:
        differs("labels", f"{len(labels)} names", f"a head of {num_classes} classes")
    own = getattr(model, "labels", None)
    if own is not None and labels != list(own):
        differs("labels", labels, list(own))
    if (
        meta.get("num_parameters") is not None
        and meta["num_parameters"] != model.count_params()
    ):
        differs("num_parameters", meta["num_parameters"], model.count_params())
    if "task" in meta:
        # A task model records its task; `zoo pretrain` records "pretrain"
        # on a model with no task head.
        is_task_model = isinstance(model, tuple(TASK_MODELS.values()))
        actual = task_of(model) if is_task_model else "pretrain"
        if meta["task"] != actual:
            differs("task", meta["task"], actual)
    preprocessor = getattr(model, "preprocessor", None)
    if preprocessor is not None:
        length = meta.get("sequence_length")
        if (
            length is not None
            and getattr(preprocessor, "sequence_length", length) != length
        ):
            differs("sequence_length", length, preprocessor.sequence_length)
        lowercase = getattr(preprocessor.tokenizer, "lowercase", None)
        if lowercase is not None and bool(lowercase) != meta.get("lowercase", True):
            differs("lowercase", meta.get("lowercase", True), bool(lowercase))
        recorded = recorded_description(meta, path) if desc is None else desc
        if td.check(preprocessor.tokenizer.description) != recorded:
            differs("tokenization", recorded, preprocessor.tokenizer.description)


def _check_keras_archive(directory, meta):
    """model.keras read as data before Keras builds it: its config.json
    (bounded, parsed) must describe the encoder zoo_model.json records (which
    `_check_fields` typed, ranged and budgeted), its heads' class count the
    labels, and its weights file must be large enough to hold those weights.
    So a model.keras whose config claims 10**9 layers, or differs from the
    record, is refused before a layer exists."""
    path = directory / "model.keras"
    record = meta["encoder_config"]

    def refuse(problem):
        raise ModelDirError(f"{path}: {problem}. Re-create the model directory.")

    try:
        with zipfile.ZipFile(path) as archive:
            members = {info.filename: info for info in archive.infolist()}
            info = members.get("config.json")
            if info is None:
                refuse("no config.json inside (not a Keras 3 .keras file)")
            if info.file_size > KERAS_CONFIG_LIMIT:
                refuse(
                    f"its config.json is {info.file_size:,} bytes (a zoo model's is about "
                    f"1 kB; the limit is {KERAS_CONFIG_LIMIT:,})"
                )
            text = archive.read(info).decode("utf-8")
            weights = members.get("model.weights.h5")
            weight_bytes = weights.file_size if weights is not None else 0
            # What Keras will extract: the sizes the archive declares, which a
            # zip bomb (a few MB of zeros declaring gigabytes) inflates.
            unpacked = sum(member.file_size for member in members.values())
    except (zipfile.BadZipFile, OSError, UnicodeDecodeError, RuntimeError) as e:
        refuse(f"cannot be read as a Keras archive ({type(e).__name__}: {str(e)[:120]})")
    # Nesting counted before parsing (zoo.utils.jsonfile), as for every JSON file.
    if json_depth(text) > MAX_DEPTH:
        refuse(
            f"its config.json nests more than {MAX_DEPTH} levels (a zoo model's nests 4)"
        )
    try:
        config = json.loads(text)
    except ValueError as e:
        refuse(f"its config.json is not JSON this zoo wrote ({str(e)[:120]})")
    encoders, heads = [], []
    pending = [config]
    while pending:
        node = pending.pop()
        if isinstance(node, dict):
            name = node.get("registered_name")
            if isinstance(name, str) and name.removeprefix("zoo>") in ENCODER_CLASS_NAMES:
                encoders.append(node.get("config"))
            if "num_classes" in node:
                heads.append(node["num_classes"])
            pending.extend(node.values())
        elif isinstance(node, list):
            pending.extend(node)
    if len(encoders) != 1 or not isinstance(encoders[0], dict):
        refuse(f"its config.json holds {len(encoders)} zoo encoders, expected 1")
    for field, recorded in record.items():
        if field == "family":
            continue
        if field in ("embedding_dim", "num_groups") and record.get("family") != "albert":
            continue
        if field not in encoders[0]:
            # A field the class fixes (DistilBertEncoder's num_segments=0) is not
            # in its config; the loaded model is compared in full afterwards.
            continue
        if _plain(encoders[0].get(field)) != _plain(recorded):
            _refuse(
                directory / MANIFEST,
                f"encoder_config.{field}",
                f"is {recorded!r:.60} but model.keras's config says "
                f"{encoders[0].get(field)!r:.60}: zoo_model.json was edited, or model.keras "
                "replaced, after the directory was written",
            )
    labels = meta.get("labels")
    for count in heads:
        if not _is_int(count, 1, MAX_LABELS) or (
            labels is not None and count != len(labels)
        ):
            _refuse(
                directory / MANIFEST,
                "labels",
                f"names {len(labels) if labels is not None else 'no'} classes but model.keras's "
                f"head has num_classes={count!r:.40}",
            )
    needed = EncoderConfig.from_dict(record).num_parameters() * 4
    # At least 2 bytes a weight (float32 as saved; bfloat16 at the least).
    if weight_bytes < needed // 2:
        refuse(
            f"its weights file holds {weight_bytes:,} bytes, less than the {needed // 2:,} "
            "that the recorded encoder's weights need at 2 bytes each"
        )
    # The encoder's weights, a head (at most a second encoder's worth: a
    # masked-LM head is about one vocabulary table) and HDF5's overhead.
    allowed = 2 * needed + ARCHIVE_SLACK
    if unpacked > allowed:
        refuse(
            f"it unpacks to {unpacked:,} bytes, more than the {allowed:,} a model of the "
            "recorded encoder_config can need (twice its float32 weights and "
            f"{ARCHIVE_SLACK >> 20} MB): not the archive this directory was saved with"
        )


def load_model_dir(directory):
    """Return `(model, tokenizer, meta)` from a zoo model directory. The model
    loads in Keras's safe mode: no custom objects, no lambdas. The directory's
    files must match their record, and zoo_model.json what model.keras and
    vocab.txt hold (see the module doc)."""
    directory = pathlib.Path(directory)
    meta = read_model_dir_meta(directory)
    desc = recorded_description(meta, directory / MANIFEST)
    if is_byte_pair(meta):
        tokenizer = _byte_pair_tokenizer(directory, meta, desc)
        tokens = tokenizer.vocabulary
    else:
        tokens = read_vocabulary(directory / "vocab.txt")
        _check_vocabulary(directory, meta, tokens)
        tokenizer = None
    _check_keras_archive(directory, meta)
    with warnings.catch_warnings():
        # Saved without optimizer state (see save_model_dir): nothing to restore.
        warnings.filterwarnings("ignore", message="Skipping variable loading for optimizer")
        try:
            model = keras.saving.load_model(directory / "model.keras", safe_mode=True)
        except (
            zipfile.BadZipFile,
            OSError,
            ValueError,
            KeyError,
            TypeError,
            RecursionError,  # a config.json nested too deep for Python's parser
        ) as e:
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
    _check_against_model(directory, meta, model, desc)
    if carried is not None:
        # A text model's own tokenizer, which _check_against_model held to
        # the record: the one tokenizer of this directory, built once.
        return model, carried, meta
    if tokenizer is None:
        tokenizer = build_tokenizer(directory, desc, tokens)
    return model, tokenizer, meta


def _byte_pair_tokenizer(directory, meta, desc):
    """vocab.json + merges.txt, checked against zoo_model.json like vocab.txt."""
    if meta.get("lowercase", False):
        _refuse(
            directory / MANIFEST,
            "lowercase",
            "is true for a byte-level BPE tokenizer, which keeps case",
        )
    tokenizer = build_tokenizer(directory, desc)
    _check_vocabulary(directory, meta, tokenizer.vocabulary, file="vocab.json")
    if meta.get("merges_sha256") != merges_sha256(tokenizer.merges):
        raise ValueError(
            f"{directory / 'merges.txt'} changed since the model was saved (sha256 differs "
            "from zoo_model.json's merges_sha256): text would split into other tokens "
            "than in training. Restore the model directory's own merges.txt."
        )
    return tokenizer
