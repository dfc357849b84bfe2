"""Phone artifacts: `.tflite` files for LiteRT, built-in ops only, validated.

    out = export_tflite(model, tokenizer, "exports/bbc_dyn", quantize="dynamic_int8",
                        sequence_lengths=(64, 128, 256), validation_texts=texts,
                        validation_labels=labels)

writes `out/`:

    model.tflite       signatures serving_L64, serving_L128, ... : inputs token_ids,
                       segment_ids, padding_mask int32 [1, L]; outputs logits (+ probabilities
                       for classifiers; start_logits/end_logits for QA; score [1] for
                       regressors), float32
    mediapipe.tflite   (uncased classifiers only; metadata.json `mediapipe` says why a
                       file has none) the primary length's subgraph of model.tflite
                       with its probabilities output, TFLite Model Metadata (BERT tokenizer,
                       labels) and vocab.txt + labels.txt inside: MediaPipe Tasks'
                       TextClassifier runs it as it is (export/mediapipe.py)
    model_text.tflite  (text_in=True) signature serving_text_L{L}: text [1] string -> the same
                       outputs + token_ids; needs tensorflow-text's TFLite ops at run time
    vocab.txt, metadata.json, manifest.json, validation.json

How, and why this way (docs/export.md; BUILD_NOTES.md, "Export formats and runtimes"):
- The model goes through `keras.export.ExportArchive` to a SavedModel and
  `TFLiteConverter.from_saved_model`; `from_keras_model` fails on Keras 3
  and `from_concrete_functions` leaves weights unfrozen (NaN outputs).
- `supported_ops=[TFLITE_BUILTINS]` only: Flex (SELECT_TF_OPS) kernels exist
  neither in the LiteRT Python interpreter nor in the stock Android runtime,
  so an op without a builtin kernel must fail the export, not the phone. The
  op list of every file is read back from its flatbuffer and recorded.
- Fixed `[1, L]` inputs: the LiteRT C API (the phone) failed on a dynamic
  batch. Several lengths live in one file as separate signatures over the
  same weight buffers (the converter shares a variable's frozen constant
  across signatures; `weights` in metadata.json records the measured
  duplicate bytes, and only per-length constants such as position-embedding
  slices differ). A phone then pads a short request to 64, not to 384.
- Outputs are a dict (a single output would be named `output_0`); callers
  feed inputs by name through the signature runner, since LiteRT lists
  signature inputs sorted alphabetically, not in model order.
- Modes: float32; float16 (weights, float32 compute); dynamic_int8 (int8
  weights, float activations); int8 (int8 weights AND activations in every
  dense layer and the embedding table, calibrated on >= 100 real texts;
  LayerNorm, softmax, GELU and the attention matmuls stay float: XNNPACK has
  no int8 kernels for them, and quantizing them split the graph into 25
  partitions run mostly by single-threaded reference kernels, 1.6x slower
  than dynamic_int8; id inputs and outputs stay int32/float32); int4 (int4
  dense weights with dynamic activations and an int8 embedding table, by
  ai-edge-quantizer on the float32 file: the smallest and fastest file).
  16x8 fails on int32 inputs and is not offered.

The text-in file tokenizes with tensorflow-text's `FastBertTokenizer`
(`lower_case_nfd_strip_accents`) and packs with dense ops (`combine_segments`
leaves a `RaggedGather` with no TFLite kernel). It is NOT the project
tokenizer: FastBertTokenizer's normalizer case-folds with NFKC (ﬁ, ①,
full-width letters, ß become other tokens), turns control characters into
spaces where the project tokenizer deletes them, keeps U+FFFD and private-use
characters, limits word length in UTF-8 bytes rather than characters, and
its Unicode tables differ on ~1,600 code points (zoo/text/tokenizer.py). On
plain text the ids agree; validation reports the fraction that agree
(`token_ids_match`) and compares numbers where they do. It takes one text
(no pairs) and needs `InterpreterWithCustomOps` with
`tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS` (on Android, the
tensorflow-text op resolver); metadata.json says so.
"""

from __future__ import annotations

import collections
import hashlib
import pathlib
import shutil
import warnings

import keras
import tensorflow as tf
import tensorflow_text as tft
from ai_edge_quantizer import qtyping
from ai_edge_quantizer import quantizer as aeq

from export import manifest as mf
from export import mediapipe
from export.consistency import artifact_record, embed_tflite_record
from export.runtime import MODEL_FILE
from export.validate import validate_new_artifact
from zoo.models import INPUT_NAMES, task_of
from zoo.text import description as td
from zoo.text.tokenizer import WordPieceTokenizer, tokenize_texts
from zoo.text.tokenizer_record import is_byte_pair, write_tokenizer_files
from zoo.utils.atomic import atomic_directory, atomic_file
from zoo.utils.native_log import filtered_stderr

try:
    from ai_edge_litert import schema_py_generated
except ImportError:  # the converter ships the same generated schema
    from tensorflow.lite.python import schema_py_generated

QUANTIZATION_MODES = ("float32", "float16", "dynamic_int8", "int8", "int4")
# Modes calibrated on representative texts.
CALIBRATED_MODES = ("int8", "int4")
# Ops kept float in int8 mode (names as the converter's debugger takes them):
# XNNPACK has no int8 kernel for them, or they compute the LayerNorm/softmax
# statistics that int8 would round away.
INT8_FLOAT_OPS = (
    "SOFTMAX",
    "GELU",
    "BATCH_MATMUL",
    "SQUARED_DIFFERENCE",
    "RSQRT",
    "MEAN",
    "ADD",
    "MUL",
    "SUB",
    "DIV",
    "MAXIMUM",
    "SELECT_V2",
    "SUM",
)
MIN_REPRESENTATIVE_TEXTS = 100
TEXT_MODEL_FILE = "model_text.tflite"
TEXT_OP_RESOLVER = (
    "tensorflow-text TFLite ops: Python ai_edge_litert.interpreter.InterpreterWithCustomOps("
    "custom_op_registerers=tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS); Android: "
    "register tensorflow-text's op resolver with the interpreter"
)


class TFLiteConversionError(RuntimeError):
    """The model cannot become a built-in-ops-only `.tflite`."""


# --- conversion ------------------------------------------------------------------------


def _phone_outputs(task, model, ids):
    out = {k: tf.cast(v, tf.float32) for k, v in model(ids, training=False).items()}
    if task == "classify":
        out["probabilities"] = tf.nn.softmax(out["logits"], axis=-1)
    return out


def signature_name(length, text=False):
    return f"serving_text_L{length}" if text else f"serving_L{length}"


def write_phone_saved_model(model, sequence_lengths, directory):
    """ExportArchive SavedModel with one `[1, L]` ids signature per length."""
    task = task_of(model)
    archive = keras.export.ExportArchive()
    # Variables used by the endpoints are tracked by add_endpoint; tracking the
    # model itself only adds a slow walk of every layer for lookup tables.
    for length in sequence_lengths:
        specs = {n: tf.TensorSpec([1, length], tf.int32, name=n) for n in INPUT_NAMES}
        archive.add_endpoint(
            signature_name(length),
            lambda ids: _phone_outputs(task, model, ids),
            input_signature=[specs],
        )
    archive.write_out(str(directory), verbose=False)


def fast_bert_tokenizer(tokenizer):
    """tensorflow-text's FastBertTokenizer on the project tokenizer's vocabulary.
    It implements BERT's rule only (one lowercase+strip switch, CJK always
    split); another description is refused by name."""
    flavor = getattr(tokenizer, "flavor", "bert")
    if flavor != "bert" or not getattr(tokenizer, "cjk", True):
        raise ValueError(
            "The text-in .tflite tokenizes with tensorflow-text's FastBertTokenizer (BERT's "
            "rule, CJK ideographs split); this tokenizer is "
            f"{td.summary(tokenizer.description)}. Export without --text-in and "
            "tokenize outside the model (model.tflite takes ids; metadata.json describes "
            "the tokenization)."
        )
    strip = (
        tokenizer.lowercase
        if tokenizer.strip_accents is None
        else bool(tokenizer.strip_accents)
    )
    if strip != tokenizer.lowercase:
        raise ValueError(
            "The text-in .tflite needs lowercase and strip_accents equal (FastBertTokenizer has "
            f"one switch, lower_case_nfd_strip_accents); the tokenizer has lowercase="
            f"{tokenizer.lowercase}, strip_accents={tokenizer.strip_accents}."
        )
    return tft.FastBertTokenizer(
        vocab=tokenizer.vocabulary,
        suffix_indicator="##",
        max_bytes_per_word=4 * tokenizer.max_chars_per_word,
        token_out_type=tf.int32,
        unknown_token=tokenizer.unk_token,
        lower_case_nfd_strip_accents=tokenizer.lowercase,
    )


def write_text_saved_model(model, tokenizer, length, directory):
    """ExportArchive SavedModel whose signature takes one text and packs densely."""
    task = task_of(model)
    if task == "qa":
        raise ValueError(
            "text_in=True is for single-text models (classifiers, taggers); a QA model takes a "
            "question and a context: tokenize them in the app and use model.tflite."
        )
    fbt = fast_bert_tokenizer(tokenizer)
    cls_id, sep_id, pad_id = (
        int(tokenizer.cls_id),
        int(tokenizer.sep_id),
        int(tokenizer.pad_id),
    )

    def serve(text):
        pieces = fbt.tokenize(text).flat_values[: length - 2]  # (n,) for a batch of one
        n = tf.shape(pieces)[0]
        token_ids = tf.concat([[cls_id], pieces, [sep_id]], axis=0)
        token_ids = tf.reshape(
            tf.pad(token_ids, [[0, length - 2 - n]], constant_values=pad_id), [1, length]
        )
        # tf.where, not a bool cast: the TFLite converter trips on a cast bool
        # that feeds an embedding.
        padding_mask = tf.where(tf.range(length)[None, :] < n + 2, 1, 0)
        ids = {
            "token_ids": token_ids,
            "segment_ids": tf.zeros([1, length], tf.int32),
            "padding_mask": tf.cast(padding_mask, tf.int32),
        }
        return {**_phone_outputs(task, model, ids), "token_ids": token_ids}

    archive = keras.export.ExportArchive()
    # Variables used by the endpoints are tracked by add_endpoint; tracking the
    # model itself only adds a slow walk of every layer for lookup tables.
    archive.add_endpoint(
        signature_name(length, text=True),
        serve,
        input_signature=[tf.TensorSpec([1], tf.string, name="text")],
    )
    archive.write_out(str(directory), verbose=False)


def representative_dataset(tokenizer, texts, sequence_lengths):
    """Calibration generator for full-int8: `(signature, {input: int32 [1, L]})`,
    every text through the project tokenizer at every length."""

    texts = list(texts)

    def generate():
        for length in sequence_lengths:
            ids = tokenize_texts(tokenizer, texts, length)  # texts or (text, text_b) pairs
            for i in range(len(texts)):
                yield signature_name(length), {k: v[i : i + 1] for k, v in ids.items()}

    return generate


def convert(
    saved_model_dir, signature_keys, quantize, representative=None, allow_custom_ops=False
):
    """Convert with built-in ops only; bytes of the `.tflite`.

    `allow_custom_ops` admits tensorflow-text's registered TFLite kernels (the
    text-in file); a Flex op is refused either way.
    """
    if quantize not in QUANTIZATION_MODES or quantize == "int4":
        raise ValueError(
            f"quantize={quantize!r}: the converter takes one of "
            f"{', '.join(m for m in QUANTIZATION_MODES if m != 'int4')} (int4 is applied to "
            "the float32 file by `quantize_int4`)."
        )
    converter = tf.lite.TFLiteConverter.from_saved_model(
        str(saved_model_dir), signature_keys=list(signature_keys)
    )
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
    converter.allow_custom_ops = allow_custom_ops
    if quantize == "float16":
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
        converter.target_spec.supported_types = [tf.float16]
    elif quantize == "dynamic_int8":
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
    elif quantize == "int8":
        if representative is None:
            raise ValueError("quantize='int8' needs representative texts for calibration.")
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
        converter.representative_dataset = representative
    try:
        # The converter's absl log lines ignore TF_CPP_MIN_LOG_LEVEL; the
        # known-harmless ones are dropped, anything else still shows.
        with filtered_stderr():
            if quantize == "int8":
                # Dense layers and the embedding in int8 (weights and
                # activations), INT8_FLOAT_OPS in float (module docstring);
                # inputs stay int32 ids and outputs float32, so the app's
                # contract does not change.
                debugger = tf.lite.experimental.QuantizationDebugger(
                    converter=converter,
                    debug_options=tf.lite.experimental.QuantizationDebugOptions(
                        denylisted_ops=list(INT8_FLOAT_OPS)
                    ),
                )
                content = debugger.get_nondebug_quantized_model()
            else:
                content = converter.convert()
    except Exception as e:  # ConverterError: its text lists the offending ops
        message = str(e)
        hint = ""
        if (
            "Flex" in message
            or "not supported" in message
            or "custom op" in message.lower()
        ):
            hint = (
                " Some ops have no TFLite built-in kernel and would need Flex (SELECT_TF_OPS), "
                "which neither the LiteRT Python interpreter nor the stock Android runtime can "
                "run; the export refuses them. Rewrite those ops with built-in equivalents (e.g. "
                "tf.where instead of casting a bool that feeds an embedding; dense packing "
                "instead of ragged ops)."
            )
        raise TFLiteConversionError(
            f"TFLite conversion ({quantize}, built-in ops only) of {saved_model_dir} "
            f"failed.{hint}\nConverter said: {message[-3000:]}"
        ) from e
    ops = op_list(content)
    flex = [op for op in ops["custom"] if op.startswith("Flex")]
    if flex:
        raise TFLiteConversionError(
            f"The converted model holds Flex ops {flex}; refusing it."
        )
    if ops["custom"] and not allow_custom_ops:
        raise TFLiteConversionError(
            f"The converted model holds custom ops {ops['custom']} with no built-in kernel."
        )
    return content


def quantize_int4(content, calibration):
    """int4 mode from a float32 `.tflite` (`content`), by ai-edge-quantizer:
    int4 weights (per channel) in every dense layer with float activations
    quantized on the fly (XNNPACK's dynamic int4 kernels), and the token
    embedding table in int8. `calibration`: `{signature: [feed dicts]}` of
    real texts (the embedding's output range). Bytes of the new file."""
    ops = qtyping.TFLOperationName
    q = aeq.Quantizer(bytearray(content))
    q.add_dynamic_config(".*", ops.FULLY_CONNECTED, 4)
    q.update_quantization_recipe(
        ".*",
        ops.GATHER,
        qtyping.OpQuantizationConfig(
            activation_tensor_config=qtyping.TensorQuantizationConfig(
                num_bits=8, symmetric=False, granularity=qtyping.QuantGranularity.TENSORWISE
            ),
            weight_tensor_config=qtyping.TensorQuantizationConfig(
                num_bits=8, symmetric=True, granularity=qtyping.QuantGranularity.CHANNELWISE
            ),
            compute_precision=qtyping.ComputePrecision.INTEGER,
            explicit_dequantize=False,
        ),
    )
    with warnings.catch_warnings():
        # The quantizer runs LiteRT with experimental_preserve_all_tensors to
        # read every intermediate range (calibrating, then checking the ranges
        # cover the model), and LiteRT warns its caller that the mode is for
        # debugging: the quantizer's choice, nothing a user can act on.
        warnings.filterwarnings(
            "ignore", message=".*experimental_preserve_all_tensors", category=UserWarning
        )
        ranges = q.calibrate(calibration, num_threads=2) if q.need_calibration else None
        return bytes(q.quantize(ranges, enable_progress_report=False).quantized_model)


def calibration_feeds(tokenizer, texts, sequence_lengths):
    """`{signature: [one-text feeds]}` for ai-edge-quantizer's calibration."""
    feeds = {}
    for length in sequence_lengths:
        ids = tokenize_texts(tokenizer, texts, length)
        feeds[signature_name(length)] = [
            {k: v[i : i + 1] for k, v in ids.items()} for i in range(len(texts))
        ]
    return feeds


# --- reading a .tflite back ----------------------------------------------------------------


def op_list(content):
    """Operators a `.tflite` uses, read from its flatbuffer's operator codes.

    `{"builtin": [names], "custom": [names], "counts": {name: uses}}`; Flex ops
    show up as custom ops named `Flex...`.
    """
    schema = schema_py_generated
    model = schema.Model.GetRootAs(content, 0)
    names = {v: k for k, v in vars(schema.BuiltinOperator).items() if not k.startswith("_")}
    codes = []
    for i in range(model.OperatorCodesLength()):
        code = model.OperatorCodes(i)
        if code.CustomCode() is not None:
            codes.append(("custom", code.CustomCode().decode()))
        else:
            # Codes above 127 live in builtin_code; older files use the
            # deprecated byte-sized field.
            number = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
            codes.append(("builtin", names.get(number, f"BUILTIN_{number}")))
    counts = collections.Counter()
    for s in range(model.SubgraphsLength()):
        graph = model.Subgraphs(s)
        for j in range(graph.OperatorsLength()):
            counts[codes[graph.Operators(j).OpcodeIndex()][1]] += 1
    return {
        "builtin": sorted({n for kind, n in codes if kind == "builtin"}),
        "custom": sorted({n for kind, n in codes if kind == "custom"}),
        "counts": dict(sorted(counts.items())),
    }


def weight_buffers(content):
    """Constant-buffer bytes of a `.tflite` and how many of them are duplicates.

    The evidence that several signatures share one copy of the weights:
    `duplicate_bytes` counts bytes in buffers whose content equals another
    buffer's (a second copy of a weight would show up here).
    """
    schema = schema_py_generated
    model = schema.Model.GetRootAs(content, 0)
    seen = {}
    total = duplicate = 0
    for i in range(model.BuffersLength()):
        buffer = model.Buffers(i)
        if buffer.DataLength():
            data = buffer.DataAsNumpy().tobytes()
        elif buffer.Size() > 1:  # stored outside the flatbuffer (large models)
            data = bytes(content[buffer.Offset() : buffer.Offset() + buffer.Size()])
        else:
            continue
        total += len(data)
        digest = hashlib.sha256(data).digest()
        if digest in seen and len(data) >= 1024:
            duplicate += len(data)
        seen.setdefault(digest, i)
    return {"constant_bytes": total, "duplicate_bytes": duplicate}


# --- export ---------------------------------------------------------------------------------


def _file_info(content, signatures, lengths, input_kind, runtime):
    ops = op_list(content)
    return {
        "signatures": signatures,
        "sequence_lengths": lengths,
        "input": input_kind,
        "ops": ops["builtin"] + ops["custom"],
        "op_counts": ops["counts"],
        "custom_ops": ops["custom"],
        "runtime": runtime,
        "size": len(content),
        "weights": weight_buffers(content),
    }


def export_tflite(
    model,
    tokenizer,
    out_dir,
    quantize="float32",
    sequence_lengths=None,
    representative_texts=None,
    validation_texts=None,
    validation_labels=None,
    allow_degraded=False,
    *,
    text_in=False,
    source_dir=None,
    overwrite=True,
    validation_workers=None,
):
    """Convert `model` to a validated `.tflite` artifact directory `out_dir`.

    Args:
        model: a zoo `Classifier`, `TokenClassifier`, `QuestionAnswerer` or
            `Regressor`.
        tokenizer: the project `WordPieceTokenizer` it was trained with (None: a
            text model's own).
        out_dir: the artifact directory (replaced atomically when complete).
        quantize: "float32", "float16", "dynamic_int8", "int8" or "int4".
        sequence_lengths: one `serving_L{L}` signature per length, in one file
            (default: a text model's own length, else 128).
        representative_texts: >= 100 real texts for "int8"/"int4" calibration.
        validation_texts: >= 200 real texts; every file is re-loaded in LiteRT
            and compared with the Keras model (`validate_artifact`). None:
            load-and-run check on probe sentences only.
        validation_labels: optional gold labels for the accuracy delta.
        allow_degraded: publish and record a threshold miss instead of raising
            `ExportValidationError`.
        text_in: also write `model_text.tflite` (FastBertTokenizer inside;
            needs tensorflow-text's TFLite ops), at the first length.
        source_dir: the zoo model directory the model came from (recorded).
        overwrite: replace an existing `out_dir`.
        validation_workers: 1-thread LiteRT interpreters validating each file
            in parallel after its latency calls (None: one per available core;
            each holds a copy of the weights). The outputs do not depend on it.

    Returns: `out_dir` as a `pathlib.Path`.
    """

    task_of(model)  # a clear TypeError for anything but a zoo task model
    tokenizer = mf.model_tokenizer(model, tokenizer)
    if text_in and not isinstance(tokenizer, WordPieceTokenizer):
        raise ValueError(
            f"text_in=True: model_text.tflite tokenizes with tensorflow-text's "
            f"FastBertTokenizer (WordPiece); this model's tokenizer is a "
            f"{type(tokenizer).__name__}, which has no LiteRT kernels. Export without "
            "--text-in: model.tflite takes ids, and `zoo predict` / export.runtime "
            "tokenize on the host with the artifact's own tokenizer files."
        )
    lengths = _sequence_lengths(model, quantize, sequence_lengths)
    texts = _calibration_texts(quantize, representative_texts)
    representative = None
    if texts is not None:
        representative = representative_dataset(tokenizer, texts, lengths)
    out_dir = pathlib.Path(out_dir)
    meta = _metadata(model, tokenizer, source_dir, quantize, lengths, texts)
    with atomic_directory(out_dir, overwrite=overwrite) as tmp:
        # Scratch space inside the temporary artifact directory: a killed
        # export leaves one stale directory, which the next export removes.
        work = tmp / ".work"
        files = _tflite_files(
            model, tokenizer, meta, quantize, representative, texts, text_in, work
        )
        shutil.rmtree(work, ignore_errors=True)
        _write_artifact(tmp, files, meta, tokenizer)
        validate_new_artifact(
            tmp,
            model,
            validation_texts,
            validation_labels,
            tokenizer,
            allow_degraded,
            workers=validation_workers,
        )
    return out_dir


# The steps of `export_tflite`, in its order.


def _sequence_lengths(model, quantize, sequence_lengths):
    """The checked lengths (default: the model's own), once `quantize` is a mode."""
    if sequence_lengths is None:
        sequence_lengths = (mf.default_sequence_length(model),)
    if quantize not in QUANTIZATION_MODES:
        raise ValueError(
            f"quantize={quantize!r}: choose one of {', '.join(QUANTIZATION_MODES)}."
        )
    return mf.check_sequence_lengths(sequence_lengths, model)


def _calibration_texts(quantize, representative_texts):
    """The texts that calibrate a full-integer mode (a list), or None for a
    mode that needs none; too few, or not texts, is an error."""
    if quantize not in CALIBRATED_MODES:
        return None
    texts = [] if representative_texts is None else list(representative_texts)
    if len(texts) < MIN_REPRESENTATIVE_TEXTS or not all(
        isinstance(t, (str, tuple, list)) for t in texts
    ):
        raise ValueError(
            f"quantize={quantize!r} calibrates activation ranges on real text: pass at least "
            f"{MIN_REPRESENTATIVE_TEXTS} str (or (text, text_b) pairs) in representative_texts "
            f"(received {len(texts)}). "
            "Too few or synthetic texts give ranges that clip real inputs."
        )
    return texts


def _metadata(model, tokenizer, source_dir, quantize, lengths, calibration_texts):
    """metadata.json, but for the files (added once they are written)."""
    meta = mf.base_metadata(
        model, tokenizer, kind="tflite", source=mf.source_info(model, source_dir)
    )
    meta.update(
        quantization=quantize,
        sequence_lengths=lengths,
        validation_profile=quantize,
        inputs={n: "int32 [1, L]" for n in INPUT_NAMES},
        outputs=_output_names(task_of(model)),
        representative_texts=None if calibration_texts is None else len(calibration_texts),
        # Which runtimes tokenize as the model's source did; the app refuses
        # the others by name when it opens the file.
        tokenizer_runtimes=td.runtimes(meta["tokenization"]),
    )
    return meta


def _tflite_files(model, tokenizer, meta, quantize, representative, texts, text_in, work):
    """{file name: (content, file info)}: model.tflite, mediapipe.tflite for
    a lower-casing classifier (else `meta` records why not), and with
    `text_in` model_text.tflite; `work` is their scratch directory."""
    task, lengths = task_of(model), meta["sequence_lengths"]
    content, signatures = _ids_model(
        model, tokenizer, lengths, quantize, representative, texts, work / "phone"
    )
    # What the file says it is, inside the file: loaders check
    # metadata.json against it (export/consistency.py).
    record = artifact_record(meta)
    content = embed_tflite_record(content, record)
    files = {
        MODEL_FILE: (
            content,
            _file_info(content, signatures, lengths, "ids", "LiteRT built-in ops only"),
        )
    }
    byte_pair = is_byte_pair(meta)
    if task == "classify" and tokenizer.lowercase and not byte_pair:
        files[mediapipe.FILE] = _mediapipe_file(
            model, tokenizer, content, signatures, lengths
        )
    else:
        meta["mediapipe"] = mediapipe_skipped(task, tokenizer.lowercase, byte_pair)
    if text_in:
        files[TEXT_MODEL_FILE] = _text_in_file(
            model, tokenizer, lengths[0], quantize, record, work / "text"
        )
    return files


def _ids_model(model, tokenizer, lengths, quantize, representative, texts, work):
    """(model.tflite's content, its signatures): the ids-in phone graph, one
    signature per length, converted in `quantize` mode."""
    write_phone_saved_model(model, lengths, work)
    signatures = [signature_name(n) for n in lengths]
    if quantize == "int4":
        content = quantize_int4(
            convert(work, signatures, "float32"),
            calibration_feeds(tokenizer, texts, lengths),
        )
    else:
        content = convert(work, signatures, quantize, representative)
    return content, signatures


def _mediapipe_file(model, tokenizer, content, signatures, lengths):
    """(content, file info) of mediapipe.tflite: the same weights, cut to the
    primary length's subgraph, the file MediaPipe Tasks' TextClassifier runs
    as it is (export/mediapipe.py)."""
    labels = mf.label_names(model)
    mp = mediapipe.mediapipe_classifier(
        content,
        signatures[0],
        tokenizer.vocabulary,
        labels,
        lowercase=tokenizer.lowercase,
    )
    info = _file_info(
        mp,
        signatures[:1],
        lengths[:1],
        "ids",
        "LiteRT built-in ops only; MediaPipe Tasks TextClassifier",
    )
    info["outputs"] = [mediapipe.OUTPUT]
    info["associated_files"] = [mediapipe.VOCABULARY_FILE, mediapipe.LABELS_FILE]
    # The validator compares its graph with this source's and runs it
    # on a sample of the texts (export/runtime.py, run_tflite).
    info["derived_from"] = {"file": MODEL_FILE, "signature": signatures[0]}
    return mp, info


def _text_in_file(model, tokenizer, length, quantize, record, work):
    """(content, file info) of model_text.tflite: the tokenizer inside, at
    the primary length."""
    write_text_saved_model(model, tokenizer, length, work)
    # Full-int8 calibration would need string inputs; the text-in
    # file takes int8 weights instead (recorded as its mode).
    text_mode = "dynamic_int8" if quantize in CALIBRATED_MODES else quantize
    text_signature = [signature_name(length, text=True)]
    text_content = embed_tflite_record(
        convert(work, text_signature, text_mode, allow_custom_ops=True),
        record,
    )
    info = _file_info(text_content, text_signature, [length], "text", TEXT_OP_RESOLVER)
    info["quantization"] = text_mode
    info["tokenizer"] = (
        "FastBertTokenizer(lower_case_nfd_strip_accents="
        f"{bool(tokenizer.lowercase)}); differs from the project tokenizer on some "
        "Unicode input (see export/tflite.py)"
    )
    return text_content, info


def _write_artifact(tmp, files, meta, tokenizer):
    """The files, vocab.txt and metadata.json (listing the files) into `tmp`."""
    for file, (data, _) in files.items():
        with atomic_file(tmp / file) as f:
            f.write(data)
    meta["files"] = {file: info for file, (_, info) in files.items()}
    write_tokenizer_files(tmp, tokenizer)
    mf.write_json(tmp / mf.METADATA, meta)


def mediapipe_skipped(task, lowercase, byte_pair=False):
    """Why an artifact holds no `mediapipe.tflite` (recorded in metadata.json
    and printed with the validation report; not an error)."""
    if byte_pair:
        return f"not written: {mediapipe.BYTE_PAIR_REFUSAL}. Use {MODEL_FILE}."
    if task != "classify":
        return (
            f"not written: MediaPipe Tasks' TextClassifier takes classifiers only (one "
            f"[1, N] probabilities output with a label file); this is a {task} model. Use "
            f"{MODEL_FILE} with the LiteRT interpreter."
        )
    return (
        "not written: MediaPipe's BertTokenizer always lower-cases and this model's "
        f"vocabulary is cased (lowercase={lowercase}). Use {MODEL_FILE}."
    )


def _output_names(task):
    if task == "regress":
        return {"score": "float32 [1]"}
    if task == "classify":
        return {
            "logits": "float32 [1, num_classes]",
            "probabilities": "float32 [1, num_classes]",
        }
    if task == "tag":
        return {"logits": "float32 [1, L, num_classes]"}
    return {"start_logits": "float32 [1, L]", "end_logits": "float32 [1, L]"}
