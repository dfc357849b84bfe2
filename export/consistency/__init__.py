"""What an artifact's model files say about themselves, checked against its
metadata.json before anything runs: the check that a manifest cannot make.

A manifest proves that no file changed since it was written; it cannot tell
whether the files agree with each other, because whoever edits a file can
write a new manifest. So every loader also re-derives from the model files
what they can tell, and refuses an artifact whose metadata.json says
otherwise, naming the field:

    .tflite     each file described in metadata.json `files` and no other;
                signature names; inputs (int32 [1, L] ids, or one string)
                and L against `sequence_lengths`; outputs against the task
                (classify: logits/probabilities [1, C]; tag: [1, L, C]; qa:
                start/end logits [1, L]; regress: score) and C against
                `labels`; token-embedding rows against `vocabulary_size`;
                size and operator counts; the artifact record the exporter
                embedded in the flatbuffer (below); the vocabulary and labels
                zipped into mediapipe.tflite
    SavedModel  signature names, inputs and outputs; the length the text
                signatures pad to against `sequence_lengths`; C against
                `labels`; assets/vocab.txt and assets/labels.txt against
                vocab.txt and `labels`; every variable read back with the
                checksum TensorFlow stored beside it; the embedded record

The record (`artifact_record`) holds the fields whose disagreement would
give silently wrong answers (task, labels, vocabulary size and sha256,
lower-casing). The exporters store it inside the model file itself: in a
`.tflite` as a flatbuffer `metadata` entry named `RECORD_NAME`, in a
SavedModel as a string variable (the `RECORD_COLLECTION` variable
collection). Editing metadata.json or vocab.txt then means rewriting the
model file too; artifacts exported before the record existed are checked
without it.
"""

from __future__ import annotations

import collections
import json
import mmap
import pathlib
import struct
import zipfile
import zlib

import flatbuffers
import numpy as np
import tensorflow as tf
from google.protobuf.message import DecodeError
from tensorflow.core.protobuf import saved_model_pb2

from export import manifest as mf
from export.mediapipe import LABELS_FILE, VOCABULARY_FILE, AlignedBuffer
from zoo.models import INPUT_NAMES
from zoo.text.tokenizer_record import is_byte_pair

try:
    from ai_edge_litert import schema_py_generated as tfl
except ImportError:  # the converter ships the same generated schema
    from tensorflow.lite.python import schema_py_generated as tfl

RECORD_NAME = "bert_zoo_record"
RECORD_COLLECTION = "bert_zoo_record"
RECORD_FORMAT = "bert-zoo-artifact-record"
# `tokenization` is absent from records and metadata written before the
# description existed: both read as None, and agree.
RECORD_FIELDS = (
    "task",
    "labels",
    "vocabulary_size",
    "vocabulary_sha256",
    "lowercase",
    "tokenization",
)
_MODEL_IDENTIFIER = b"TFL3"
# The largest vocab.txt / labels.txt read out of a MediaPipe file's zip.
_MAX_ASSOCIATED = 64 << 20
_INT32, _FLOAT32, _STRING = (
    tfl.TensorType.INT32,
    tfl.TensorType.FLOAT32,
    tfl.TensorType.STRING,
)
_TF_INT32, _TF_FLOAT32, _TF_STRING = (
    tf.int32.as_datatype_enum,
    tf.float32.as_datatype_enum,
    tf.string.as_datatype_enum,
)
_BUILTIN_NAMES = {
    v: k for k, v in vars(tfl.BuiltinOperator).items() if not k.startswith("_")
}


def artifact_record(meta) -> dict:
    """The record an exporter embeds in the model file: the metadata fields
    a disagreement in which would give silently wrong answers."""
    return {"format": RECORD_FORMAT, **{k: meta.get(k) for k in RECORD_FIELDS}}


def _refuse(directory, field, problem):
    raise mf.MetadataError(
        f"{pathlib.Path(directory) / mf.METADATA}: `{field}`: {problem}. metadata.json does "
        "not describe the model files beside it (a file was replaced or edited, and the "
        "manifest regenerated); refusing the artifact. Restore it from the original export "
        "or re-export it with `zoo export`."
    )


def _check_record(directory, meta, record, where):
    if record is None:
        return
    if not isinstance(record, dict) or record.get("format") != RECORD_FORMAT:
        _refuse(directory, "record", f"{where} holds an unreadable artifact record")
    for field in RECORD_FIELDS:
        if record.get(field) != meta.get(field):
            _refuse(
                directory,
                field,
                f"metadata.json says {meta.get(field)!r:.80} but {where} was exported with "
                f"{record.get(field)!r:.80}",
            )


# --- .tflite --------------------------------------------------------------------------


def embed_tflite_record(content, record) -> bytes:
    """`content` (a `.tflite`) with `record` as its `RECORD_NAME` metadata
    entry (replacing an earlier one)."""
    model = tfl.ModelT.InitFromPackedBuf(bytearray(content), 0)
    for buffer in model.buffers or []:
        if (buffer.offset or 0) > 1:
            # Weights stored after the flatbuffer (ai-edge-quantizer's layout):
            # inline again, where the re-packed file holds them.
            buffer.data = np.frombuffer(content, np.uint8, buffer.size, buffer.offset)
            buffer.offset, buffer.size = 0, 0
    buffer = tfl.BufferT()
    buffer.data = np.frombuffer(json.dumps(record, sort_keys=True).encode(), np.uint8)
    model.buffers.append(buffer)
    entry = tfl.MetadataT()
    entry.name = RECORD_NAME
    entry.buffer = len(model.buffers) - 1
    model.metadata = [m for m in model.metadata or [] if _text(m.name) != RECORD_NAME]
    model.metadata.append(entry)
    model.buffers = [AlignedBuffer.of(b) for b in model.buffers]
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=_MODEL_IDENTIFIER)
    return bytes(builder.Output())


def _text(value):
    return value.decode() if isinstance(value, bytes) else value


def _buffer_bytes(model, data, index):
    buffer = model.Buffers(index)
    if buffer.DataLength():
        return buffer.DataAsNumpy().tobytes()
    if buffer.Size() > 1:
        return bytes(data[buffer.Offset() : buffer.Offset() + buffer.Size()])
    return b""


def _depends_on(graph, producers, tensor, inputs):
    """The signature inputs (by tensor index) `tensor` is computed from."""
    seen, stack, found = set(), [tensor], set()
    while stack:
        t = stack.pop()
        if t in seen:
            continue
        seen.add(t)
        if t in inputs:
            found.add(inputs[t])
        op = producers.get(t)
        if op is not None:
            stack.extend(int(i) for i in op.InputsAsNumpy() if i >= 0)
    return found


def tflite_facts(path) -> dict:
    """What a `.tflite` says about itself: `{"signatures": {name: {"inputs":
    {name: (type, shape)}, "outputs": {...}, "token_rows": rows of the
    embedding the token_ids gather reads, or None}}, "op_counts", "record",
    "associated": {name: text} of the zip MediaPipe files carry}`."""
    # Memory-mapped, read in place; numpy views into it may outlive this
    # call, so the map is closed by the garbage collector, not here.
    with open(path, "rb") as f:
        data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    if len(data) < 8 or data[4:8] != _MODEL_IDENTIFIER:
        raise ValueError("no TFL3 identifier")
    # The root table's offset (the first 4 bytes) must point inside the
    # file; the generated reader follows it without asking.
    root = struct.unpack_from("<I", data, 0)[0]
    if root + 4 > len(data):
        raise ValueError(
            f"its root table at byte {root:,} lies past its end ({len(data):,} bytes)"
        )
    try:
        return _facts(model=tfl.Model.GetRootAs(data, 0), data=data, path=path)
    except _FLATBUFFER_ERRORS as e:
        # The Python flatbuffers reader has no verifier: an offset past the
        # end (a truncated or edited file) surfaces as whichever of these
        # the read it reached raises.
        what = "a read past its end" if isinstance(e, struct.error) else type(e).__name__
        raise ValueError(f"{what}: {str(e)[:200]}") from None


# What reading a damaged flatbuffer raises (struct's unpack past the end,
# numpy's frombuffer, an index into a list built from the file, a name that
# is not UTF-8).
_FLATBUFFER_ERRORS = (struct.error, IndexError, ValueError, TypeError, OverflowError)


def _facts(model, data, path):
    codes = _operator_names(model)
    signatures = {}
    for i in range(model.SignatureDefsLength()):
        sig = model.SignatureDefs(i)
        signatures[_text(sig.SignatureKey())] = _signature_facts(model, sig, codes)
    return {
        "signatures": signatures,
        "op_counts": _op_counts(model, codes),
        "record": _embedded_record(model, data),
        "associated": _associated_files(path),
    }


def _operator_names(model):
    """The name of each operator code (builtin name, or the custom name)."""
    names = []
    for i in range(model.OperatorCodesLength()):
        code = model.OperatorCodes(i)
        if code.CustomCode() is not None:
            names.append(code.CustomCode().decode())
        else:
            # Codes above 127 live in builtin_code; older files use the
            # deprecated byte-sized field.
            number = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
            names.append(_BUILTIN_NAMES.get(number, f"BUILTIN_{number}"))
    return names


def _op_counts(model, codes):
    counts = collections.Counter()
    for s in range(model.SubgraphsLength()):
        graph = model.Subgraphs(s)
        for j in range(graph.OperatorsLength()):
            counts[codes[graph.Operators(j).OpcodeIndex()]] += 1
    return dict(sorted(counts.items()))


def _signature_facts(model, sig, codes):
    """Inputs and outputs (type, shape) of one signature, and the rows of
    the embedding table its token_ids are gathered from."""
    graph = model.Subgraphs(sig.SubgraphIndex())

    def describe(index):
        tensor = graph.Tensors(index)
        shape = [int(x) for x in tensor.ShapeAsNumpy()] if tensor.ShapeLength() else []
        return tensor.Type(), shape

    inputs = {
        sig.Inputs(j).TensorIndex(): _text(sig.Inputs(j).Name())
        for j in range(sig.InputsLength())
    }
    return {
        "inputs": {name: describe(index) for index, name in inputs.items()},
        "outputs": {
            _text(sig.Outputs(j).Name()): describe(sig.Outputs(j).TensorIndex())
            for j in range(sig.OutputsLength())
        },
        "token_rows": _token_rows(graph, codes, inputs),
    }


def _token_rows(graph, codes, inputs):
    """Rows of the table a GATHER reads with indices computed from the
    `token_ids` input: the token embedding (None if there is none)."""
    producers, gathers = {}, []
    for j in range(graph.OperatorsLength()):
        op = graph.Operators(j)
        for out in op.OutputsAsNumpy():
            producers[int(out)] = op
        if codes[op.OpcodeIndex()] in ("GATHER", "EMBEDDING_LOOKUP"):
            gathers.append(op)
    rows = None
    for op in gathers:
        params, indices = (int(x) for x in op.InputsAsNumpy()[:2])
        if "token_ids" in _depends_on(graph, producers, indices, inputs):
            shape = graph.Tensors(params).ShapeAsNumpy()
            rows = int(shape[0]) if len(shape) == 2 else rows
    return rows


def _embedded_record(model, data):
    """The artifact record the exporter stored in the file, None if it has
    none, "unreadable" if it does not parse."""
    for i in range(model.MetadataLength()):
        entry = model.Metadata(i)
        if _text(entry.Name()) == RECORD_NAME:
            try:
                return json.loads(_buffer_bytes(model, data, entry.Buffer()))
            except (ValueError, RecursionError):  # not JSON, or nested too deep
                return "unreadable"
    return None


def _associated_files(path):
    """The vocabulary and labels a MediaPipe file carries in the zip appended
    to it (`{}` when there is none). Only those two names are read, each up
    to `_MAX_ASSOCIATED` bytes: the zip is part of an untrusted file."""
    found = {}
    try:
        with zipfile.ZipFile(path) as archive:
            for info in archive.infolist():
                if info.filename in (VOCABULARY_FILE, LABELS_FILE):
                    if info.file_size > _MAX_ASSOCIATED:
                        found[info.filename] = None
                        continue
                    found[info.filename] = archive.read(info).decode("utf-8")
    except (
        zipfile.BadZipFile,
        UnicodeDecodeError,
        OSError,
        ValueError,
        EOFError,
        zlib.error,
        NotImplementedError,  # a compression method zipfile lacks
    ):
        return {}
    return found


def _expected_outputs(task, info, num_labels, length):
    """`{output: shape}` a `.tflite` signature must have (None: any)."""
    if task == "classify":
        names = info.get("outputs") or ["logits", "probabilities"]
        return {n: [1, num_labels] for n in names}
    if task == "tag":
        return {"logits": [1, length, num_labels]}
    if task == "qa":
        return {"start_logits": [1, length], "end_logits": [1, length]}
    return {"score": None}


def check_tflite_file(directory, meta, file):
    """Refuse `file` of a `.tflite` artifact unless it is what metadata.json's
    `files[file]` and the artifact-wide fields say (see the module doc). The
    most specific disagreement is named first: signatures, inputs, outputs,
    embedding rows, the embedded record, MediaPipe's files, then size and
    operators."""
    directory = pathlib.Path(directory)
    info = meta["files"][file]
    facts = _read_tflite(directory, file)
    names = list(info["signatures"])
    if sorted(names) != sorted(facts["signatures"]):
        _refuse(
            directory,
            "files",
            f"{file} has signatures {sorted(facts['signatures'])}, metadata.json lists "
            f"{names} (signature names)",
        )
    for name, length in zip(names, info["sequence_lengths"]):
        where = f"{file}:{name}"
        sig = facts["signatures"][name]
        _check_tflite_inputs(
            directory, where, sig["inputs"], info.get("input", "ids"), length
        )
        _check_tflite_outputs(directory, where, sig["outputs"], meta, info, length)
        _check_token_rows(directory, file, sig["token_rows"], meta)
    _check_record(directory, meta, facts["record"], file)
    _check_associated_files(directory, file, facts["associated"], meta)
    _check_size_and_operators(directory, file, info, facts)


class ModelFileError(ValueError):
    """A model file of an artifact (a `.tflite`, `saved_model.pb`) that its
    runtime cannot parse: truncated, or not that kind of file."""


def _read_tflite(directory, file):
    path = directory / file
    if not path.is_file():
        _refuse(directory, "files", f"it describes {file}, which is not in the artifact")
    try:
        return tflite_facts(path)
    except (ValueError, OSError) as e:
        raise ModelFileError(
            f"{path}: not a valid TFLite flatbuffer ({e}); the file is truncated or damaged "
            "(its manifest entry was regenerated, or it never matched). Restore it from the "
            "original export or re-export the artifact with `zoo export`."
        ) from None


def _check_tflite_inputs(directory, where, inputs, kind, length):
    """One text (input: text), or the three int32 [1, L] id inputs."""
    if kind == "text":
        if not (
            set(inputs) <= {"text", "text_b"}
            and "text" in inputs
            and all(t == _STRING for t, _ in inputs.values())
        ):
            _refuse(
                directory,
                "input",
                f"{where} takes {sorted(inputs)}, not text (input: text)",
            )
        return
    if sorted(inputs) != sorted(INPUT_NAMES):
        _refuse(
            directory,
            "input",
            f"{where} takes {sorted(inputs)}, not the ids {list(INPUT_NAMES)} (input: {kind})",
        )
    for input_name, (dtype, shape) in inputs.items():
        if dtype != _INT32 or len(shape) != 2 or shape[0] != 1:
            _refuse(directory, "input", f"{where} {input_name} is not int32 [1, L]")
        if shape[1] != length:
            _refuse(
                directory,
                "sequence_lengths",
                f"{where} takes {shape[1]} tokens, metadata.json says {length} "
                "(sequence_length)",
            )


def _check_tflite_outputs(directory, where, outputs, meta, info, length):
    """The outputs the task needs, float32, shaped for the task, one class
    per label."""
    task, labels = meta["task"], meta.get("labels")
    expected = _expected_outputs(task, info, len(labels or []), length)
    if set(expected) - set(outputs):
        _refuse(
            directory,
            "task",
            f"{where} has outputs {sorted(outputs)}; a {task} artifact's file needs "
            f"{sorted(expected)} (task {task!r})",
        )
    for output, shape in expected.items():
        dtype, actual = outputs[output]
        if dtype != _FLOAT32:
            _refuse(directory, "task", f"{where} output {output} is not float32")
        if shape is None:
            if int(np.prod(actual or [1])) != 1:
                _refuse(
                    directory,
                    "task",
                    f"{where} output {output} has shape {actual}, not one score (task {task!r})",
                )
            continue
        if len(actual) != len(shape) or actual[:-1] != shape[:-1]:
            _refuse(
                directory,
                "task",
                f"{where} output {output} has shape {actual}; a {task} model's is {shape} "
                f"(task {task!r}, sequence_length {length})",
            )
        if labels is not None and actual[-1] != len(labels):
            _refuse(
                directory,
                "labels",
                f"{len(labels)} label names for {where}'s {actual[-1]} classes",
            )


def _check_token_rows(directory, file, rows, meta):
    if rows is not None and rows != meta["vocabulary_size"]:
        _refuse(
            directory,
            "vocabulary_size",
            f"{file}'s token embedding has {rows:,} rows but vocab.txt and metadata.json have "
            f"{meta['vocabulary_size']:,} word pieces: the model was trained with another "
            "vocabulary",
        )


def _check_associated_files(directory, file, associated, meta):
    """The vocab.txt and labels.txt a MediaPipe file carries (what MediaPipe
    tokenizes with and names its answers by) against the artifact's."""
    if is_byte_pair(meta):
        if associated:
            _refuse(
                directory,
                "tokenizer",
                f"{file} carries MediaPipe files ({sorted(associated)}) but the artifact "
                "tokenizes with byte-level BPE, which MediaPipe cannot",
            )
        return
    expected = {
        VOCABULARY_FILE: (
            "vocabulary_sha256",
            (directory / mf.VOCABULARY).read_text("utf-8"),
        ),
        LABELS_FILE: ("labels", "\n".join(meta.get("labels") or []) + "\n"),
    }
    for asset, (field, text) in expected.items():
        if asset not in associated:
            continue
        carried = associated[asset]
        if carried is None or carried.splitlines() != text.splitlines():
            _refuse(
                directory,
                field,
                f"the {asset} inside {file} (what MediaPipe reads) differs from the "
                f"artifact's {'vocab.txt' if asset == VOCABULARY_FILE else 'labels'}",
            )


def _check_size_and_operators(directory, file, info, facts):
    size = (directory / file).stat().st_size
    if info.get("size") is not None and info["size"] != size:
        _refuse(
            directory,
            "files",
            f"{file} is {size:,} bytes, metadata.json says {info['size']:,}",
        )
    if info.get("op_counts") is not None and info["op_counts"] != facts["op_counts"]:
        _refuse(
            directory, "files", f"{file}'s operators are not the ones metadata.json lists"
        )


def check_tflite_artifact(directory, meta):
    """Every `.tflite` of the artifact is described in `files`, and each
    described file is what it says (`check_tflite_file`)."""
    directory = pathlib.Path(directory)
    present = sorted(p.name for p in directory.glob("*.tflite"))
    undescribed = [name for name in present if name not in meta["files"]]
    if undescribed:
        _refuse(directory, "files", f"{undescribed} are not described in metadata.json")
    for file in meta["files"]:
        check_tflite_file(directory, meta, file)


# --- SavedModel -----------------------------------------------------------------------


def saved_model_signatures(directory) -> dict:
    """`{signature: {"inputs": {name: (dtype, shape)}, "outputs": {...}}}`
    read from `saved_model.pb` (dtype as TensorFlow's enum, -1 for an
    unknown dimension)."""
    proto = saved_model_pb2.SavedModel()
    proto.ParseFromString((pathlib.Path(directory) / "saved_model.pb").read_bytes())
    if len(proto.meta_graphs) != 1:
        raise ValueError(f"{len(proto.meta_graphs)} MetaGraphs (the exporter writes one)")

    def describe(tensors):
        return {
            k: (v.dtype, [int(d.size) for d in v.tensor_shape.dim])
            for k, v in tensors.items()
        }

    return {
        name: {"inputs": describe(sig.inputs), "outputs": describe(sig.outputs)}
        for name, sig in proto.meta_graphs[0].signature_def.items()
        if not name.startswith("__")
    }


def read_variables(directory):
    """Every variable of a SavedModel, read back (TensorFlow checks each one
    against the checksum it stored). Returns `(record or None, shapes)`:
    the embedded artifact record and `{variable: shape}`."""
    prefix = str(pathlib.Path(directory) / "variables" / "variables")
    reader = tf.train.load_checkpoint(prefix)
    shapes = reader.get_variable_to_shape_map()
    record = None
    for name in shapes:
        value = reader.get_tensor(name)
        if name.startswith(RECORD_COLLECTION + "/"):
            record = json.loads(bytes(value).decode("utf-8"))
    return record, shapes


def check_saved_model_artifact(directory, meta):
    """Refuse a (TPU) SavedModel version whose metadata.json does not describe
    its graph, assets and variables (see the module doc)."""
    directory = pathlib.Path(directory)
    signatures = _graph_signatures(directory, meta)
    primary = meta.get("sequence_lengths", [None])[0]
    for name, info in meta["signatures"].items():
        sig = signatures[name]
        _check_signature_inputs(directory, name, sig, info)
        _check_padding(directory, name, sig, info, primary)
        if info.get("role", "predict") == "predict":
            _check_task_outputs(directory, name, sig, meta)
    _check_assets(directory, meta)
    record, shapes = _read_variables_intact(directory)
    _check_record(directory, meta, record, "the SavedModel's variables")
    _check_embedding_table(directory, meta, shapes)


def _graph_signatures(directory, meta):
    """saved_model.pb's signatures, which must be the ones metadata.json lists."""
    try:
        signatures = saved_model_signatures(directory)
    except (OSError, ValueError, DecodeError, RecursionError) as e:
        raise ModelFileError(
            f"{pathlib.Path(directory) / 'saved_model.pb'}: not a valid SavedModel "
            f"({type(e).__name__}: {str(e).strip()[:200]}); the file is truncated or damaged. "
            "Restore it from the original export or re-export the artifact with `zoo export`."
        ) from None
    # A TPU model also serves its first bucket as serving_default.
    expected = set(meta["signatures"]) | (
        {"serving_default"} if meta.get("serving_default") in meta["signatures"] else set()
    )
    if sorted(signatures) != sorted(expected):
        _refuse(
            directory,
            "signatures",
            f"saved_model.pb has {sorted(signatures)}, metadata.json lists "
            f"{sorted(meta['signatures'])}",
        )
    return signatures


def _check_signature_inputs(directory, name, sig, info):
    kind = info.get("input")
    dtypes = {dtype for dtype, _ in sig["inputs"].values()}
    if kind in ("text", "text_pair") and dtypes != {_TF_STRING}:
        _refuse(directory, "signatures", f"{name} does not take text (input: {kind})")
    if kind == "ids" and (
        sorted(sig["inputs"]) != sorted(INPUT_NAMES) or dtypes != {_TF_INT32}
    ):
        _refuse(directory, "signatures", f"{name} does not take int32 ids (input: ids)")
    for output in info.get("outputs") or []:
        if output not in sig["outputs"]:
            _refuse(directory, "signatures", f"{name} has no output {output!r}")


def _check_padding(directory, name, sig, info, primary):
    """The length a text signature pads to (its id outputs' static width)
    against the signature's recorded length and the artifact's primary one."""
    fixed = info.get("sequence_length")
    for output, (_dtype, shape) in sig["outputs"].items():
        if output not in ("token_ids", "segment_ids", "padding_mask") or len(shape) != 2:
            continue
        width = shape[1]
        if width == -1:
            continue
        if fixed is not None and width != fixed:
            _refuse(
                directory,
                "sequence_lengths",
                f"{name} pads to {width} tokens, metadata.json says {fixed} (sequence_length)",
            )
        if primary is not None and info.get("input") == "text" and width != primary:
            _refuse(
                directory,
                "sequence_lengths",
                f"{name} pads to {width} tokens, metadata.json's sequence_lengths say "
                f"{primary} (sequence_length)",
            )


_TASK_OUTPUTS = {
    "classify": ("logits",),
    "tag": ("logits",),
    "qa": ("start_logits", "end_logits"),
    "regress": ("score",),
}


def _check_task_outputs(directory, name, sig, meta):
    """A predicting signature has its task's outputs, with one class per label."""
    task, labels = meta["task"], meta.get("labels")
    wanted = _TASK_OUTPUTS[task]
    if any(o not in sig["outputs"] for o in wanted):
        _refuse(
            directory,
            "task",
            f"{name} has outputs {sorted(sig['outputs'])}; a {task} model's include "
            f"{list(wanted)} (task {task!r})",
        )
    if task not in ("classify", "tag"):
        return
    _dtype, shape = sig["outputs"]["logits"]
    rank = 2 if task == "classify" else 3
    if len(shape) != rank:
        _refuse(
            directory,
            "task",
            f"{name}'s logits have shape {shape}; a {task} model's have rank {rank} "
            f"(task {task!r})",
        )
    if labels is not None and shape[-1] != len(labels):
        _refuse(
            directory,
            "labels",
            f"{len(labels)} label names for {name}'s {shape[-1]} classes",
        )


def _check_assets(directory, meta):
    """assets/ (the files the graph reads: its vocabulary and label names)
    against metadata.json and vocab.txt."""
    assets = directory / "assets"
    if meta.get("assets") is not None:
        present = sorted(p.name for p in assets.iterdir()) if assets.is_dir() else []
        if present != sorted(meta["assets"]):
            _refuse(
                directory,
                "assets",
                f"assets/ holds {present}, metadata.json lists {meta['assets']}",
            )
    if (assets / mf.VOCABULARY).is_file():
        graph_vocabulary = (assets / mf.VOCABULARY).read_text(encoding="utf-8").splitlines()
        if is_byte_pair(meta):  # the tokens' names, against vocab.json
            own, file = mf.artifact_tokenizer(directory, meta).vocabulary, "vocab.json"
        else:
            own = (directory / mf.VOCABULARY).read_text(encoding="utf-8").splitlines()
            file = mf.VOCABULARY
        if graph_vocabulary != own:
            _refuse(
                directory,
                "vocabulary_sha256",
                "assets/vocab.txt (the vocabulary the graph tokenizes with) differs from "
                f"{file}",
            )
    if (assets / LABELS_FILE).is_file():
        graph_labels = (assets / LABELS_FILE).read_text(encoding="utf-8").splitlines()
        if graph_labels != (meta.get("labels") or []):
            _refuse(
                directory,
                "labels",
                f"assets/labels.txt (the label names the graph answers with) holds "
                f"{graph_labels[:8]}, metadata.json {meta.get('labels')}",
            )


def _read_variables_intact(directory):
    try:
        return read_variables(directory)
    except (tf.errors.OpError, ValueError, IndexError, OSError, RecursionError) as e:
        first = str(getattr(e, "message", e)).strip().splitlines()[0][:300]
        _refuse(
            directory,
            "variables",
            "the SavedModel's variables (variables/variables.index and "
            f"variables.data-*) cannot be read back intact ({type(e).__name__}: "
            f"{first})",
        )


def _check_embedding_table(directory, meta, shapes):
    """Some variable of the embedding's width has `vocabulary_size` rows (a
    weak check, for artifacts without the embedded record)."""
    config = (meta.get("source_model") or {}).get("encoder_config") or {}
    width = config.get("embedding_dim") or config.get("hidden_dim")
    if not isinstance(width, int):
        return
    tables = [list(s) for s in shapes.values() if len(s) == 2 and s[1] == width]
    if tables and [meta["vocabulary_size"], width] not in tables:
        rows = sorted({t[0] for t in tables})
        _refuse(
            directory,
            "vocabulary_size",
            f"no embedding among the SavedModel's variables has {meta['vocabulary_size']:,} "
            f"rows (tables of width {width} have {rows} rows): the model was trained with "
            "another vocabulary",
        )


def check_artifact(directory, meta):
    """`check_tflite_artifact` or `check_saved_model_artifact`, by `kind`;
    also that the kind matches the files (a `.tflite` directory, or one with
    saved_model.pb)."""
    directory = pathlib.Path(directory)
    has_graph = (directory / "saved_model.pb").is_file()
    if meta["kind"] == "tflite":
        if has_graph or not any(directory.glob("*.tflite")):
            _refuse(
                directory,
                "kind",
                "it says tflite but the directory holds a SavedModel or no .tflite file",
            )
        check_tflite_artifact(directory, meta)
    else:
        if not has_graph:
            _refuse(
                directory, "kind", f"it says {meta['kind']} but there is no saved_model.pb"
            )
        check_saved_model_artifact(directory, meta)
