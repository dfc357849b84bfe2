"""The exporters' grouped arguments: small frozen specs, each checked when it
is built, so a wrong value fails where it is written with the field's name,
what it received and what to pass instead.

    export_saved_model(model, tokenizer, "serving", serving=ServingVersion("bbc"),
                       validation=Validation(texts, labels))
    export_tpu_saved_model(model, tokenizer, "serving", serving=ServingVersion("bbc_tpu"),
                           buckets=TpuBuckets((128, 256), batch_size=8))
    export_tflite(model, tokenizer, "exports/bbc", signatures=Signatures((64, 128)),
                  validation=Validation(texts, labels, allow_degraded=True))

`Validation` is every exporter's; `ServingVersion` is where a SavedModel goes
in a TF Serving base; `TpuBuckets` are the TPU SavedModel's shapes;
`Signatures` are what a `.tflite` artifact serves. (`Quantization` lives in
export.tflite, beside the modes it checks.) Checks that need the model (a
length over the encoder's maximum) stay with the exporter. Nothing here
imports from export/: the specs sit below every exporter.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

# A TF Serving model name: a directory and a URL path component.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
COMPUTE_DTYPES = ("float32", "bfloat16")


def _is_int(value):
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _check_bool(spec, field, value):
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(
            f"{spec}.{field} must be True or False; received {value!r} "
            f"({type(value).__name__})."
        )


def checked_spec(function, field, value, spec):
    """`value`, a `spec` instance, or `spec()` (its defaults) for None; a loose
    value (a mode string, a list of texts) is refused with the way to write
    it."""
    if value is None:
        return spec()
    if not isinstance(value, spec):
        raise TypeError(
            f"{function}({field}=...) takes a {spec.__name__}; received "
            f"{type(value).__name__}: pass {field}={spec.__name__}(...)."
        )
    return value


def check_texts(spec, field, texts):
    """None, or a collection of texts; one str (a frequent slip) is refused."""
    if texts is None:
        return
    if isinstance(texts, (str, bytes)):
        raise TypeError(
            f"{spec}.{field} received one str ({texts[:40]!r}...); pass a list of texts "
            "(or of (text, text_b) pairs)."
        )
    if not hasattr(texts, "__len__") or not hasattr(texts, "__iter__"):
        raise TypeError(
            f"{spec}.{field} must be a list of texts (or of (text, text_b) pairs); received "
            f"a {type(texts).__name__}: pass list(...) of it."
        )


def check_lengths(spec, field, lengths):
    """`lengths` as a tuple of ints (one int: a one-length tuple). The range
    and the model's maximum are the exporter's check
    (`manifest.check_sequence_lengths`)."""
    if _is_int(lengths):
        lengths = (lengths,)
    if isinstance(lengths, (str, bytes)) or not hasattr(lengths, "__iter__"):
        raise TypeError(
            f"{spec}.{field} must be a sequence of ints, e.g. (128,); received {lengths!r}."
        )
    lengths = tuple(lengths)
    if not lengths or not all(_is_int(n) for n in lengths):
        raise ValueError(
            f"{spec}.{field} must hold one or more ints, e.g. (64, 128); received {lengths!r}."
        )
    return tuple(int(n) for n in lengths)


@dataclass(frozen=True)
class Validation:
    """How an exporter validates the artifact before publishing it.

    texts: >= 200 real texts ((question, context) pairs for QA); every file is
        re-loaded in its runtime and compared with the Keras model. None: a
        load-and-run check on probe sentences only (a warning says so).
    labels: optional gold labels (one per text) for the accuracy delta.
    allow_degraded: publish and record a threshold miss instead of raising
        `ExportValidationError`.
    workers: `.tflite` only: 1-thread LiteRT interpreters validating each
        file in parallel (None: one per available core). The outputs do not
        depend on it.
    """

    texts: Any = None
    labels: Any = None
    allow_degraded: bool = False
    workers: int | None = None

    def __post_init__(self):
        check_texts("Validation", "texts", self.texts)
        if self.labels is not None:
            if self.texts is None:
                raise ValueError(
                    "Validation.labels were given without texts: pass the texts they label "
                    "as Validation(texts=..., labels=...)."
                )
            if isinstance(self.labels, (str, bytes)) or not hasattr(self.labels, "__len__"):
                raise TypeError(
                    f"Validation.labels must be a list (one label per text); received "
                    f"{type(self.labels).__name__}."
                )
            if len(self.labels) != len(self.texts):
                raise ValueError(
                    f"Validation.labels holds {len(self.labels)} labels for "
                    f"{len(self.texts)} texts: pass one label per text."
                )
        _check_bool("Validation", "allow_degraded", self.allow_degraded)
        if self.workers is not None and (not _is_int(self.workers) or self.workers < 1):
            raise ValueError(
                f"Validation.workers must be a positive int or None (one per core); "
                f"received {self.workers!r}."
            )


@dataclass(frozen=True)
class ServingVersion:
    """Where a SavedModel goes in a TF Serving base: `BASE/name/version/`.

    name: the model name in models.config and the REST URL.
    version: a positive int; None = 1 + the highest existing one.
    overwrite: replace an existing `name/version` (and the serving files the
        exporter wrote before); without it a conflict is refused before the
        version is built.
    """

    name: str = "model"
    version: int | None = None
    overwrite: bool = False

    def __post_init__(self):
        if not isinstance(self.name, str) or not _NAME.fullmatch(self.name):
            raise ValueError(
                f"ServingVersion(name={self.name!r}): use letters, digits, '_', '.', '-' "
                "(it is a directory and a URL path component)."
            )
        if self.version is not None and (not _is_int(self.version) or self.version < 1):
            raise ValueError(
                f"ServingVersion.version must be a positive integer (or None: the next "
                f"one); received {self.version!r}."
            )
        _check_bool("ServingVersion", "overwrite", self.overwrite)


@dataclass(frozen=True)
class TpuBuckets:
    """The TPU SavedModel's fixed shapes and compute precision.

    sequence_lengths: one `serve_ids_L{L}` endpoint per length, inputs
        `[batch_size, L]` (the first is `serving_default`).
    batch_size: the rows of every call (the host pads a batch to it).
    compute_dtype: "float32", or "bfloat16" (mixed_bfloat16; outputs stay
        float32).
    """

    sequence_lengths: tuple = (128, 256, 512)
    batch_size: int = 8
    compute_dtype: str = "float32"

    def __post_init__(self):
        lengths = check_lengths("TpuBuckets", "sequence_lengths", self.sequence_lengths)
        object.__setattr__(self, "sequence_lengths", lengths)
        if not _is_int(self.batch_size) or self.batch_size < 1:
            raise ValueError(
                f"TpuBuckets.batch_size must be a positive int; received {self.batch_size!r}."
            )
        if self.compute_dtype not in COMPUTE_DTYPES:
            raise ValueError(
                f"TpuBuckets.compute_dtype must be 'float32' or 'bfloat16'; received "
                f"{self.compute_dtype!r}."
            )


@dataclass(frozen=True)
class Signatures:
    """What a `.tflite` artifact serves.

    sequence_lengths: one `serving_L{L}` signature per length in
        model.tflite (None: a text model's own length, else 128).
    text_in: also write `model_text.tflite` (FastBertTokenizer inside;
        needs tensorflow-text's TFLite ops), at the first length.
    """

    sequence_lengths: tuple | None = None
    text_in: bool = False

    def __post_init__(self):
        if self.sequence_lengths is not None:
            lengths = check_lengths("Signatures", "sequence_lengths", self.sequence_lengths)
            object.__setattr__(self, "sequence_lengths", lengths)
        _check_bool("Signatures", "text_in", self.text_in)
