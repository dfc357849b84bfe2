"""A `.tflite` artifact's files against its metadata.json: each file
described and no other, and each what `files[file]` and the artifact-wide
fields say (signatures, inputs, outputs, embedding rows, the embedded
record, the checks registered for the format or the file, such as
MediaPipe's files (`export.consistency.registry`), size and operators)."""

from __future__ import annotations

import pathlib

import numpy as np

from export.consistency.flatbuffer import tfl, tflite_facts
from export.consistency.record import _check_record
from export.consistency.refuse import ModelFileError, _refuse
from export.consistency.registry import file_checks
from zoo.models import INPUT_NAMES

_INT32, _FLOAT32, _STRING = (
    tfl.TensorType.INT32,
    tfl.TensorType.FLOAT32,
    tfl.TensorType.STRING,
)


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
    embedding rows, the embedded record, the registered checks (MediaPipe's
    files), then size and operators."""
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
    for check in file_checks("tflite", file):
        check(directory, meta, file)
    _check_size_and_operators(directory, file, info, facts)
    _check_quantization(directory, file, meta, facts)


# The stored number types each quantization leaves in a file (`present`
# must all be there, `absent` none), and whether its activations are int8.
_QUANTIZED_AS = {
    "float32": ((), ("FLOAT16", "INT8", "INT4"), False),
    "float16": (("FLOAT16",), ("INT8", "INT4"), False),
    "dynamic_int8": (("INT8",), ("FLOAT16", "INT4"), False),
    "int8": (("INT8",), ("FLOAT16", "INT4"), True),
    "int4": (("INT4",), ("INT8",), False),
}


def _check_quantization(directory, file, meta, facts):
    """metadata.json's `quantization` against the number types the file
    stores: the mode picks the thresholds `zoo validate` holds it to and the
    row a report shows, so a float file called int4 (or the reverse) is
    refused."""
    present, absent, int8_activations = _QUANTIZED_AS[meta["quantization"]]
    types = set(facts["weight_types"])
    # A fully integer file computes in int8 (42 int8 activations in a
    # 2-layer student); a dynamically quantized one has at most a stray one.
    integer = facts["int8_activations"] >= 8
    if (
        not set(present) <= types
        or types & set(absent)
        or ("INT8" in present and integer != int8_activations)
    ):
        _refuse(
            directory,
            "quantization",
            f"it says {meta['quantization']!r} but {file} stores {sorted(types)} numbers"
            + (" with int8 activations" if integer else ""),
        )


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
