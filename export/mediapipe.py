"""The MediaPipe-ready phone file: `mediapipe.tflite` beside `model.tflite`,
which MediaPipe Tasks' `TextClassifier` (Android `com.google.mediapipe:tasks-text`,
Python `mediapipe`) runs as it is, tokenizer included.

What MediaPipe's loader reads (its C++ sources: metadata_extractor,
bert_preprocessor_calculator, text_model_utils, zip_utils; each rule was
checked with a file MediaPipe 1.2.2 refused or ran):

- ONE subgraph: a file with several (our several-length `model.tflite`) is
  refused, so this file holds the primary length's subgraph only, cut from
  `model.tflite` with its weights untouched (no second conversion);
- TFLite Model Metadata: a `Model.metadata` entry "TFLITE_METADATA" whose
  buffer holds a `ModelMetadata` flatbuffer (identifier "M001") with, for
  subgraph 0, one tensor entry per input IN THE SUBGRAPH'S INPUT ORDER,
  named "ids", "mask" and "segment_ids" (matched by these names, not by the
  model's tensor names), a BertTokenizer input process unit whose vocabulary
  is an associated file, and one entry per output, each with the label file
  as TENSOR_AXIS_LABELS (one classification head per output: this file
  keeps the `probabilities` output only);
- the associated files (vocab.txt, labels.txt) as an uncompressed ZIP
  appended to the flatbuffer (MediaPipe opens the file as a zip and refuses
  compressed entries; the TFLite flatbuffer ignores trailing bytes).

The metadata schema (mediapipe/tasks/metadata/metadata_schema.fbs) has no
lower-casing field: MediaPipe lower-cases ASCII letters only and never
strips accents, so a cased model cannot be described and is refused here;
on uncased models its word pieces equal ours on real text (BUILD_NOTES).

The ~8 metadata tables are written with the `flatbuffers` builder by field
slot (a union takes two slots: its type byte, then the value); the model
flatbuffer is read and written with the LiteRT schema's object API. No
MediaPipe, tflite-support or generated metadata module is needed.

MediaPipe's own C++ BertTokenizer runs inside the Task, so the export
measures it: `export.validate.mediapipe_probes` runs `CLASSIFY` (below) in
MediaPipe's venv on zoo.text.probes and records its agreement with LiteRT
fed the project tokenizer's ids in validation.json.

Importing this module registers with `export.consistency.registry` the
check of the zipped vocab.txt and labels.txt against the artifact's
(`check_associated_files`) and the derived-file comparison
(`same_graph_as_source`); the generic loaders run both without importing it.
"""

from __future__ import annotations

import io
import mmap
import os
import pathlib
import zipfile
import zlib

import flatbuffers
import numpy as np

from export import manifest as mf
from export.consistency.flatbuffer import AlignedBuffer
from export.consistency.refuse import _refuse
from export.consistency.registry import register, register_source_graph
from zoo.text.tokenizer_record import is_byte_pair

try:
    from ai_edge_litert import schema_py_generated as tfl
except ImportError:  # the converter ships the same generated schema
    from tensorflow.lite.python import schema_py_generated as tfl

FILE = "mediapipe.tflite"
VOCABULARY_FILE = "vocab.txt"
LABELS_FILE = "labels.txt"
# The largest vocab.txt / labels.txt read back out of a file's zip.
_MAX_ASSOCIATED = 64 << 20
OUTPUT = "probabilities"
MODEL_IDENTIFIER = b"TFL3"
METADATA_IDENTIFIER = b"M001"
METADATA_NAME = "TFLITE_METADATA"
# The features this metadata uses (input process units, the BERT tokenizer)
# came with metadata parser 1.1.0; MediaPipe 1.2 reads up to 1.5.0.
MIN_PARSER_VERSION = "1.1.0"
# Our input names -> the names MediaPipe's BERT preprocessor looks for.
MEDIAPIPE_INPUTS = {
    "token_ids": "ids",
    "segment_ids": "segment_ids",
    "padding_mask": "mask",
}
_DESCRIPTIONS = {
    "ids": "Word-piece ids of the text, [CLS] first.",
    "mask": "1 for real tokens, 0 for padding.",
    "segment_ids": "0 for the first text, 1 for the second of a pair.",
}
# metadata_schema.fbs enum and union values.
_FILE_TYPE = {"TENSOR_AXIS_LABELS": 2, "VOCABULARY": 5}
_FEATURE_PROPERTIES = 1  # union ContentProperties
_BERT_TOKENIZER_OPTIONS = 4  # union ProcessUnitOptions
# Why a byte-level BPE (RoBERTa) model gets no MediaPipe file. TFLite Model
# Metadata (tflite-support's metadata_schema.fbs) describes a text model's
# tokenizer with one of `union ProcessUnitOptions`: NormalizationOptions (1),
# ScoreCalibrationOptions (2), ScoreThresholdingOptions (3),
# BertTokenizerOptions (4: WordPiece, a vocab file), SentencePieceTokenizerOptions
# (5: a SentencePiece model) and RegexTokenizerOptions (6: a regex split and a
# vocab lookup, no subwords). None holds BPE merges or GPT-2's byte alphabet,
# and MediaPipe Tasks' TextClassifier builds its tokenizer from these only.
BYTE_PAIR_REFUSAL = (
    "MediaPipe's text tasks tokenize with what TFLite Model Metadata can describe: "
    "BertTokenizerOptions (WordPiece), SentencePieceTokenizerOptions or "
    "RegexTokenizerOptions (metadata_schema.fbs, union ProcessUnitOptions); none "
    "holds byte-level BPE merges (RoBERTa's vocab.json + merges.txt), so MediaPipe "
    "would tokenize this model's text into other ids than in training"
)


# MediaPipe Tasks lives in its own venv (`make mediapipe-venv`; it pins
# absl-py 2, the garden extra absl-py 1): the export runs its TextClassifier
# there, in one child process, on the probe set (export.validate).
PYTHON_ENV = "ZOO_MEDIAPIPE_PYTHON"
DEFAULT_PYTHON = pathlib.Path(__file__).resolve().parents[1] / ".venv-mediapipe/bin/python"
# Run by that interpreter as `python -c CLASSIFY MODEL TEXTS.json OUT.json`;
# imports nothing of the project. OUT.json: MediaPipe's version and, per
# text, the probability of every label in label order (max_results=-1).
CLASSIFY = """
import json, sys
import mediapipe
from mediapipe.tasks.python import text
from mediapipe.tasks.python.core.base_options import BaseOptions

model, texts_file, out_file = sys.argv[1:4]
with open(texts_file, encoding="utf-8") as f:
    texts = json.load(f)
options = text.TextClassifierOptions(
    base_options=BaseOptions(model_asset_path=model), max_results=-1
)
scores = []
with text.TextClassifier.create_from_options(options) as classifier:
    for t in texts:
        categories = classifier.classify(t).classifications[0].categories
        row = [0.0] * (1 + max(c.index for c in categories))
        for c in categories:
            row[c.index] = float(c.score)
        scores.append(row)
with open(out_file, "w", encoding="utf-8") as f:
    json.dump({"mediapipe": mediapipe.__version__, "scores": scores}, f)
"""


def mediapipe_python():
    """The interpreter of MediaPipe's venv ($ZOO_MEDIAPIPE_PYTHON, else the
    repository's .venv-mediapipe), or None when there is none."""
    path = pathlib.Path(os.environ.get(PYTHON_ENV) or DEFAULT_PYTHON)
    return path if path.is_file() else None


class MediaPipeExportError(ValueError):
    """The model cannot be described for MediaPipe's text classifier."""


class _Builder:
    """ModelMetadata tables, children before parents (flatbuffers builds bottom-up)."""

    def __init__(self):
        self.b = flatbuffers.Builder(1024)

    def string(self, text):
        return None if text is None else self.b.CreateString(text)

    def vector(self, offsets):
        self.b.StartVector(4, len(offsets), 4)
        for offset in reversed(offsets):
            self.b.PrependUOffsetTRelative(offset)
        return self.b.EndVector()

    def table(self, slots, fields):
        """`fields`: (slot, kind, value) with kind "offset", "int8" or "uint8"."""
        self.b.StartObject(slots)
        for slot, kind, value in fields:
            if value is None:
                continue
            if kind == "offset":
                self.b.PrependUOffsetTRelativeSlot(slot, value, 0)
            elif kind == "int8":
                self.b.PrependInt8Slot(slot, value, 0)
            else:
                self.b.PrependUint8Slot(slot, value, 0)
        return self.b.EndObject()

    def associated_file(self, name, kind, description):
        # table AssociatedFile { name, description, type:byte, locale, version }
        name, description = self.string(name), self.string(description)
        return self.table(
            5,
            [
                (0, "offset", name),
                (1, "offset", description),
                (2, "int8", _FILE_TYPE[kind]),
            ],
        )

    def tensor(self, name, description, files=(), stats=None):
        # table TensorMetadata { name, description, dimension_names, content,
        #                        process_units, stats, associated_files }
        name, description = self.string(name), self.string(description)
        self.b.StartObject(0)  # table FeatureProperties {}
        properties = self.b.EndObject()
        # table Content { content_properties (union: type, value), range }
        content = self.table(
            3, [(0, "uint8", _FEATURE_PROPERTIES), (1, "offset", properties)]
        )
        stats_offset = None
        if stats is not None:  # table Stats { max:[float], min:[float] }
            high = self.b.CreateNumpyVector(np.asarray([stats[1]], "<f4"))
            low = self.b.CreateNumpyVector(np.asarray([stats[0]], "<f4"))
            stats_offset = self.table(2, [(0, "offset", high), (1, "offset", low)])
        files = self.vector(list(files)) if files else None
        return self.table(
            7,
            [
                (0, "offset", name),
                (1, "offset", description),
                (3, "offset", content),
                (5, "offset", stats_offset),
                (6, "offset", files),
            ],
        )

    def bert_tokenizer(self):
        # table BertTokenizerOptions { vocab_file:[AssociatedFile] }
        # table ProcessUnit { options (union ProcessUnitOptions: type, value) }
        vocabulary = self.associated_file(
            VOCABULARY_FILE, "VOCABULARY", "WordPiece vocabulary, one token per line."
        )
        options = self.table(1, [(0, "offset", self.vector([vocabulary]))])
        return self.table(
            2, [(0, "uint8", _BERT_TOKENIZER_OPTIONS), (1, "offset", options)]
        )


def model_metadata(input_names, *, name, description, version):
    """ModelMetadata bytes of a BERT text classifier with one `probabilities`
    output; `input_names` are MediaPipe's names in the subgraph's input order."""
    m = _Builder()
    inputs = [m.tensor(n, _DESCRIPTIONS[n]) for n in input_names]
    labels = m.associated_file(LABELS_FILE, "TENSOR_AXIS_LABELS", "One label per class.")
    output = m.tensor(
        OUTPUT, "Probability of each label.", files=[labels], stats=(0.0, 1.0)
    )
    units = [m.bert_tokenizer()]
    inputs, outputs, units = m.vector(inputs), m.vector([output]), m.vector(units)
    # table SubGraphMetadata { name, description, input_tensor_metadata,
    #   output_tensor_metadata, associated_files, input_process_units, ... (10 slots) }
    subgraph = m.table(
        10, [(2, "offset", inputs), (3, "offset", outputs), (5, "offset", units)]
    )
    strings = [m.string(s) for s in (name, description, version, MIN_PARSER_VERSION)]
    subgraphs = m.vector([subgraph])
    # table ModelMetadata { name, description, version, subgraph_metadata, author,
    #                       license, associated_files, min_parser_version }
    root = m.table(
        8,
        [
            (0, "offset", strings[0]),
            (1, "offset", strings[1]),
            (2, "offset", strings[2]),
            (3, "offset", subgraphs),
            (7, "offset", strings[3]),
        ],
    )
    m.b.Finish(root, file_identifier=METADATA_IDENTIFIER)
    return bytes(m.b.Output())


def _text(value):
    return value.decode() if isinstance(value, bytes) else value


def _one_signature(content, signature):
    """The model with `signature`'s subgraph as its only one, and only the
    `probabilities` output; buffers of the dropped subgraphs are emptied."""
    model = tfl.ModelT.InitFromPackedBuf(bytearray(content), 0)
    for buffer in model.buffers or []:
        if (buffer.offset or 0) > 1:
            # Stored after the flatbuffer (ai-edge-quantizer writes weights this
            # way): bring the bytes back inline, where the packed file holds them.
            buffer.data = np.frombuffer(content, np.uint8, buffer.size, buffer.offset)
            buffer.offset, buffer.size = 0, 0
    signatures = {_text(s.signatureKey): s for s in model.signatureDefs or []}
    if signature not in signatures:
        raise MediaPipeExportError(
            f"no signature {signature!r}; the file has {sorted(signatures)}."
        )
    sig = signatures[signature]
    graph = model.subgraphs[sig.subgraphIndex]
    outputs = {_text(t.name): t for t in sig.outputs}
    if OUTPUT not in outputs:
        raise MediaPipeExportError(
            f"signature {signature!r} has no {OUTPUT!r} output "
            f"({sorted(outputs)}); MediaPipe needs a classifier's."
        )
    sig.outputs = [outputs[OUTPUT]]
    graph.outputs = [outputs[OUTPUT].tensorIndex]
    model.subgraphs = [graph]
    sig.subgraphIndex = 0
    model.signatureDefs = [sig]
    # The kept subgraph's tensors, and the metadata entries (the runtime
    # version, the converter's record, the zoo's artifact record).
    used = {t.buffer for t in graph.tensors} | {m.buffer for m in model.metadata or []}
    for i, buffer in enumerate(model.buffers):
        if i and i not in used:
            buffer.data = None
    return model, sig


def mediapipe_classifier(
    content,
    signature,
    vocabulary,
    labels,
    *,
    lowercase,
    name="bert-zoo text classifier",
    version="1",
):
    """Bytes of a MediaPipe TextClassifier file from a converted `.tflite`
    (`content`): `signature`'s subgraph, its `probabilities` output,
    TFLite Model Metadata, and vocab.txt + labels.txt appended as a zip."""
    if lowercase is None:  # a byte-level BPE tokenizer (RoBERTa) has no such flag
        raise MediaPipeExportError(f"{BYTE_PAIR_REFUSAL}.")
    if not lowercase:
        raise MediaPipeExportError(
            "MediaPipe's BERT tokenizer lower-cases every text and its metadata cannot say "
            "otherwise, so a cased model would see other word pieces than in training; "
            "only uncased (lowercase=True) models get a MediaPipe file."
        )
    empty = [i for i, t in enumerate(vocabulary) if not t.strip()]
    if empty:
        raise MediaPipeExportError(
            f"vocabulary lines {empty[:5]} are empty or blank; MediaPipe skips such lines, "
            "which would shift every later id."
        )
    model, sig = _one_signature(content, signature)
    graph = model.subgraphs[0]
    names = {t.tensorIndex: _text(t.name) for t in sig.inputs}
    inputs = []
    for index in graph.inputs:
        tensor = graph.tensors[index]
        if (
            tensor.type != tfl.TensorType.INT32
            or len(tensor.shape) != 2
            or tensor.shape[0] != 1
        ):
            raise MediaPipeExportError(f"input {names[index]!r} is not int32 [1, L].")
        inputs.append(MEDIAPIPE_INPUTS[names[index]])
    if sorted(inputs) != sorted(MEDIAPIPE_INPUTS.values()):
        raise MediaPipeExportError(
            f"MediaPipe's BERT path needs token_ids, segment_ids and "
            f"padding_mask; the signature takes {sorted(names.values())}."
        )
    output = graph.tensors[graph.outputs[0]]
    if output.type != tfl.TensorType.FLOAT32 or list(output.shape) != [1, len(labels)]:
        raise MediaPipeExportError(
            f"the {OUTPUT!r} output is not float32 [1, {len(labels)}]."
        )
    metadata = model_metadata(
        inputs,
        name=name,
        version=version,
        description=f"Classifies a text into {len(labels)} labels.",
    )
    buffer = tfl.BufferT()
    buffer.data = np.frombuffer(metadata, dtype=np.uint8)
    model.buffers.append(buffer)
    entry = tfl.MetadataT()
    entry.name = METADATA_NAME
    entry.buffer = len(model.buffers) - 1
    model.metadata = [m for m in model.metadata or [] if _text(m.name) != METADATA_NAME]
    model.metadata.append(entry)
    model.buffers = [AlignedBuffer.of(b) for b in model.buffers]
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=MODEL_IDENTIFIER)
    out = io.BytesIO(bytes(builder.Output()))
    out.seek(0, io.SEEK_END)
    with zipfile.ZipFile(out, mode="a", compression=zipfile.ZIP_STORED) as archive:
        for file, lines in ((VOCABULARY_FILE, vocabulary), (LABELS_FILE, labels)):
            archive.writestr(
                zipfile.ZipInfo(file, date_time=(1980, 1, 1, 0, 0, 0)),
                ("\n".join(lines) + "\n").encode("utf-8"),
            )
    return out.getvalue()


def _same(a, b):
    """Deep equality of two object-API values (tables, vectors, scalars)."""
    if hasattr(a, "__dict__") or hasattr(b, "__dict__"):
        return (
            type(a) is type(b)
            and vars(a).keys() == vars(b).keys()
            and all(_same(v, vars(b)[k]) for k, v in vars(a).items())
        )
    if isinstance(a, (list, tuple, np.ndarray)) or isinstance(b, (list, tuple, np.ndarray)):
        if a is None or b is None or len(a) != len(b):
            return a is None and b is None
        return all(_same(x, y) for x, y in zip(a, b))
    return a == b


def _buffer_span(model, index):
    """(start, length) of buffer `index`'s bytes in the file: inline, or
    stored after the flatbuffer at an offset (as ai-edge-quantizer writes
    large weights)."""
    buffer = model.Buffers(index)
    if (buffer.Offset() or 0) > 1:
        return buffer.Offset(), buffer.Size()
    if buffer.DataIsNone():
        return 0, 0
    table = buffer._tab
    return table.Vector(table.Offset(4)), buffer.DataLength()


def _same_bytes(data, span, other_data, other_span):
    """Whether two buffers hold the same bytes; their pages are released
    from both mappings afterwards, so comparing a large model's weights
    does not grow this process's resident memory by the file sizes."""
    if span[1] != other_span[1]:
        return False
    same = np.array_equal(
        np.frombuffer(data, np.uint8, span[1], span[0]),
        np.frombuffer(other_data, np.uint8, *other_span[::-1]),
    )
    for mapping, (start, length) in ((data, span), (other_data, other_span)):
        if length >= mmap.PAGESIZE and hasattr(mapping, "madvise"):
            first = start - start % mmap.PAGESIZE
            mapping.madvise(mmap.MADV_DONTNEED, first, start + length - first)
    return same


def _open(path):
    with open(path, "rb") as f:
        data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    return tfl.Model.GetRootAs(data, 0), data


def _signature_graph(model, signature):
    for i in range(model.SignatureDefsLength()):
        sig = model.SignatureDefs(i)
        if _text(sig.SignatureKey()) == signature:
            inputs = {
                _text(sig.Inputs(j).Name()): sig.Inputs(j).TensorIndex()
                for j in range(sig.InputsLength())
            }
            outputs = {
                _text(sig.Outputs(j).Name()): sig.Outputs(j).TensorIndex()
                for j in range(sig.OutputsLength())
            }
            return model.Subgraphs(sig.SubgraphIndex()), inputs, outputs
    return None


def same_graph_as_source(artifact_dir, meta, file):
    """`(source_file, signature)` when `file` (mediapipe.tflite) computes
    exactly what the signature metadata.json names as its source
    (`derived_from`) computes, else None: its one signature takes the same
    inputs and returns some of the same outputs, and its subgraph holds the
    source subgraph's operators (codes, versions, options, wiring) and
    tensors (names, types, shapes, quantization, weight bytes), in order.

    The validator then runs the file on a sample of the texts only, requires
    outputs bit-identical to the source's there, and takes the source's
    outputs for the rest (export/runtime/litert_run.py). Both files are memory-mapped:
    the weights are compared in place, not copied."""
    derived = meta["files"].get(file, {}).get("derived_from")
    if not derived:
        return None
    try:
        ours, our_data = _open(pathlib.Path(artifact_dir) / file)
        theirs, their_data = _open(pathlib.Path(artifact_dir) / derived["file"])
        mine = _signature_graph(ours, derived["signature"])
        source = _signature_graph(theirs, derived["signature"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if mine is None or source is None or ours.SubgraphsLength() != 1:
        return None
    (graph, inputs, outputs), (other, source_inputs, source_outputs) = mine, source
    if inputs != source_inputs or not outputs.items() <= source_outputs.items():
        return None
    if list(graph.InputsAsNumpy()) != list(other.InputsAsNumpy()) or not set(
        graph.OutputsAsNumpy()
    ) <= set(other.OutputsAsNumpy()):
        return None
    if (
        graph.TensorsLength() != other.TensorsLength()
        or graph.OperatorsLength() != other.OperatorsLength()
    ):
        return None
    for i in range(graph.TensorsLength()):
        a, b = graph.Tensors(i), other.Tensors(i)
        ta, tb = tfl.TensorT.InitFromObj(a), tfl.TensorT.InitFromObj(b)
        ta.buffer = tb.buffer = None
        if not _same(ta, tb) or not _same_bytes(
            our_data,
            _buffer_span(ours, a.Buffer()),
            their_data,
            _buffer_span(theirs, b.Buffer()),
        ):
            return None
    for i in range(graph.OperatorsLength()):
        a, b = graph.Operators(i), other.Operators(i)
        codes = (
            tfl.OperatorCodeT.InitFromObj(ours.OperatorCodes(a.OpcodeIndex())),
            tfl.OperatorCodeT.InitFromObj(theirs.OperatorCodes(b.OpcodeIndex())),
        )
        oa, ob = tfl.OperatorT.InitFromObj(a), tfl.OperatorT.InitFromObj(b)
        oa.opcodeIndex = ob.opcodeIndex = None
        if not _same(*codes) or not _same(oa, ob):
            return None
    return derived["file"], derived["signature"]


# --- the checks every loader runs (export.consistency.registry) ----------------------


def associated_files(path):
    """The vocabulary and labels a MediaPipe file carries in the zip appended
    to it (`{}` when there is none). Only those two names are read, each up
    to `_MAX_ASSOCIATED` bytes (None above): the zip is part of an untrusted
    file."""
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


def check_associated_files(directory, meta, file):
    """Refuse the artifact unless the vocab.txt and labels.txt that `file`
    carries (what MediaPipe tokenizes with and names its answers by; any
    `.tflite` may carry them, MediaPipe reads whichever file it is given)
    are the artifact's; a byte-level BPE artifact carries none."""
    associated = associated_files(pathlib.Path(directory) / file)
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
            (pathlib.Path(directory) / mf.VOCABULARY).read_text("utf-8"),
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


# Registered on import; export/__init__.py imports this module, so every
# loader of the package runs them.
register("tflite", check_associated_files)
register_source_graph(FILE, same_graph_as_source)
