"""`export_tflite`: the arguments checked (`Quantization`, the mode and its
calibration texts, is checked here, beside the mode tables; the other specs
come from export.specs), metadata.json prepared, the files written into a
temporary artifact directory, validated, then published atomically."""

from __future__ import annotations

import pathlib
import shutil
from dataclasses import dataclass
from typing import Any

from export import manifest as mf
from export.manifest.metadata import QUANTIZATION_MODES
from export.specs import Signatures, Validation, check_texts, checked_spec
from export.tflite.files import _tflite_files
from export.tflite.quantization import (
    CALIBRATED_MODES,
    MIN_REPRESENTATIVE_TEXTS,
    representative_dataset,
)
from export.validate import check_validation_texts, validate_new_artifact
from zoo.models import INPUT_NAMES, task_of
from zoo.text import description as td
from zoo.text.tokenizer import WordPieceTokenizer
from zoo.text.tokenizer_record import write_tokenizer_files
from zoo.utils.atomic import atomic_directory, atomic_file


@dataclass(frozen=True)
class Quantization:
    """How the `.tflite` files store and compute their numbers.

    mode: "float32", "float16", "dynamic_int8", "int8" or "int4"
        (`QUANTIZATION_MODES`).
    representative_texts: >= 100 real texts (or (text, text_b) pairs) that
        calibrate "int8" activation ranges; the other modes (int4 included:
        it stores no activation range) calibrate nothing and ignore them.
    """

    mode: str = "float32"
    representative_texts: Any = None

    def __post_init__(self):
        if self.mode not in QUANTIZATION_MODES:
            raise ValueError(
                f"Quantization.mode={self.mode!r}: choose one of "
                f"{', '.join(QUANTIZATION_MODES)}."
            )
        check_texts("Quantization", "representative_texts", self.representative_texts)
        self.calibration_texts()  # too few, or not texts, fails here

    def calibration_texts(self):
        """The texts that calibrate a full-integer mode (a list), or None for a
        mode that needs none; too few, or not texts, is an error."""
        if self.mode not in CALIBRATED_MODES:
            return None
        texts = [] if self.representative_texts is None else list(self.representative_texts)
        if len(texts) < MIN_REPRESENTATIVE_TEXTS or not all(
            isinstance(t, (str, tuple, list)) for t in texts
        ):
            raise ValueError(
                f"Quantization.mode={self.mode!r} calibrates activation ranges on real text: "
                f"pass at least {MIN_REPRESENTATIVE_TEXTS} str (or (text, text_b) pairs) in "
                f"Quantization.representative_texts (received {len(texts)}). "
                "Too few or synthetic texts give ranges that clip real inputs."
            )
        return texts


def export_tflite(
    model,
    tokenizer,
    out_dir,
    *,
    quantization=None,
    signatures=None,
    validation=None,
    source_dir=None,
    overwrite=True,
):
    """Convert `model` to a validated `.tflite` artifact directory `out_dir`.

    Args:
        model: a zoo `Classifier`, `TokenClassifier`, `QuestionAnswerer` or
            `Regressor`.
        tokenizer: the project `WordPieceTokenizer` it was trained with (None: a
            text model's own).
        out_dir: the artifact directory (replaced atomically when complete).
        quantization: a `Quantization`: the mode and its calibration texts
            (None: float32).
        signatures: a `Signatures` (export.specs): the lengths, one
            `serving_L{L}` signature each in one file (None: a text model's
            own length, else 128), and `text_in` (also `model_text.tflite`).
        validation: a `Validation` (export.specs): its texts (every file is
            re-loaded in LiteRT and compared with the Keras model; at least
            200, refused before anything is built; None: a load-and-run
            check on probe sentences only), labels,
            allow_degraded and workers.
        source_dir: the zoo model directory the model came from (recorded).
        overwrite: replace an existing `out_dir`.

    Returns: `out_dir` as a `pathlib.Path`.
    """
    quantization = checked_spec("export_tflite", "quantization", quantization, Quantization)
    signatures = checked_spec("export_tflite", "signatures", signatures, Signatures)
    validation = checked_spec("export_tflite", "validation", validation, Validation)
    check_validation_texts(validation, "export_tflite")
    task_of(model)  # a clear TypeError for anything but a zoo task model
    tokenizer = mf.model_tokenizer(model, tokenizer)
    text_in = signatures.text_in
    if text_in and not isinstance(tokenizer, WordPieceTokenizer):
        raise ValueError(
            f"Signatures.text_in=True: model_text.tflite tokenizes with tensorflow-text's "
            f"FastBertTokenizer (WordPiece); this model's tokenizer is a "
            f"{type(tokenizer).__name__}, which has no LiteRT kernels. Export without "
            "--text-in: model.tflite takes ids, and `zoo predict` / export.runtime "
            "tokenize on the host with the artifact's own tokenizer files."
        )
    quantize = quantization.mode
    lengths = _sequence_lengths(model, signatures.sequence_lengths)
    texts = quantization.calibration_texts()
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
            model, tokenizer, meta, quantize, representative, text_in, work
        )
        shutil.rmtree(work, ignore_errors=True)
        _write_artifact(tmp, files, meta, tokenizer)
        validate_new_artifact(tmp, model, tokenizer, validation)
    return out_dir


# The steps of `export_tflite`, in its order.


def _sequence_lengths(model, sequence_lengths):
    """The checked lengths (default: the model's own)."""
    if sequence_lengths is None:
        sequence_lengths = (mf.default_sequence_length(model),)
    return mf.check_sequence_lengths(sequence_lengths, model)


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


def _write_artifact(tmp, files, meta, tokenizer):
    """The files, vocab.txt and metadata.json (listing the files) into `tmp`."""
    for file, (data, _) in files.items():
        with atomic_file(tmp / file) as f:
            f.write(data)
    meta["files"] = {file: info for file, (_, info) in files.items()}
    write_tokenizer_files(tmp, tokenizer)
    mf.write_json(tmp / mf.METADATA, meta)


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
