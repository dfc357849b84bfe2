"""The artifact's `.tflite` files, each with what metadata.json records of
it: model.tflite (ids in, every length), mediapipe.tflite (uncased
classifiers) and model_text.tflite (the tokenizer inside), or why a file
is not written."""

from __future__ import annotations

from export import manifest as mf
from export import mediapipe
from export.consistency import artifact_record, embed_tflite_record
from export.runtime import MODEL_FILE
from export.tflite.converter import convert
from export.tflite.flatbuffer import op_list, weight_buffers
from export.tflite.graphs import (
    signature_name,
    write_phone_saved_model,
    write_text_saved_model,
)
from export.tflite.quantization import LOSSY_MODES, quantize_int4
from zoo.models import task_of
from zoo.text.tokenizer_record import is_byte_pair

TEXT_MODEL_FILE = "model_text.tflite"
TEXT_OP_RESOLVER = (
    "tensorflow-text TFLite ops: Python ai_edge_litert.interpreter.InterpreterWithCustomOps("
    "custom_op_registerers=tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS); Android: "
    "register tensorflow-text's op resolver with the interpreter"
)


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


def _tflite_files(model, tokenizer, meta, quantize, representative, text_in, work):
    """{file name: (content, file info)}: model.tflite, mediapipe.tflite for
    a lower-casing classifier (else `meta` records why not), and with
    `text_in` model_text.tflite; `work` is their scratch directory."""
    task, lengths = task_of(model), meta["sequence_lengths"]
    content, signatures = _ids_model(
        model, lengths, quantize, representative, work / "phone"
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


def _ids_model(model, lengths, quantize, representative, work):
    """(model.tflite's content, its signatures): the ids-in phone graph, one
    signature per length, converted in `quantize` mode."""
    write_phone_saved_model(model, lengths, work)
    signatures = [signature_name(n) for n in lengths]
    if quantize == "int4":
        content = quantize_int4(convert(work, signatures, "float32"))
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
    # Full-int8 calibration would need string inputs, and int4's table
    # rewrite expects the ids-in graph; the text-in file takes int8 weights
    # instead (recorded as its mode).
    text_mode = "dynamic_int8" if quantize in LOSSY_MODES else quantize
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
        "Unicode input (see export/tflite/__init__.py)"
    )
    return text_content, info


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
