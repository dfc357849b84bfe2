"""Phone artifacts: `.tflite` files for LiteRT, built-in ops only, validated.

    out = export_tflite(model, tokenizer, "exports/bbc_dyn",
                        quantization=Quantization("dynamic_int8"),
                        signatures=Signatures((64, 128, 256)),
                        validation=Validation(texts, labels))

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
  dense weights with dynamic activations and int4 token tables read by
  EMBEDDING_LOOKUP, by ai-edge-quantizer on the float32 file, no
  calibration: the smallest and fastest file).
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

The package, one job a module, bottom to top: `flatbuffer` (a `.tflite`
read back: its operators and weight buffers), `graphs` (the SavedModels the
converter reads: ids in per length, or text in), `quantization` (the modes,
the ops int8 keeps float, calibration feeds, int4 by ai-edge-quantizer),
`converter` (`convert`: built-in ops only, Flex refused), `files` (each
`.tflite` of the artifact with what metadata.json records of it) and
`artifact` (`Quantization`, the mode and calibration texts checked, and
`export_tflite`: checks, metadata, writing, validation). This
module re-exports their names; export.tflite never imports
export.saved_model.
"""

from __future__ import annotations

from export.manifest.metadata import QUANTIZATION_MODES
from export.tflite.artifact import Quantization, export_tflite
from export.tflite.converter import TFLiteConversionError, convert
from export.tflite.files import TEXT_MODEL_FILE, TEXT_OP_RESOLVER, mediapipe_skipped
from export.tflite.flatbuffer import op_list, schema_py_generated, weight_buffers
from export.tflite.graphs import (
    fast_bert_tokenizer,
    signature_name,
    write_phone_saved_model,
    write_text_saved_model,
)
from export.tflite.quantization import (
    CALIBRATED_MODES,
    INT8_FLOAT_OPS,
    LOSSY_MODES,
    MIN_REPRESENTATIVE_TEXTS,
    calibration_feeds,
    quantize_int4,
    representative_dataset,
)
from zoo.text.tokenizer import tokenize_texts

# The names importable from export.tflite, wherever in the package they
# live; schema_py_generated (the flatbuffer schema) and tokenize_texts (the
# ids every calibration and validation feed holds) are the tests' through
# `tflite.` too.
__all__ = [
    "CALIBRATED_MODES",
    "INT8_FLOAT_OPS",
    "LOSSY_MODES",
    "MIN_REPRESENTATIVE_TEXTS",
    "QUANTIZATION_MODES",
    "Quantization",
    "TEXT_MODEL_FILE",
    "TEXT_OP_RESOLVER",
    "TFLiteConversionError",
    "calibration_feeds",
    "convert",
    "export_tflite",
    "fast_bert_tokenizer",
    "mediapipe_skipped",
    "op_list",
    "quantize_int4",
    "representative_dataset",
    "schema_py_generated",
    "signature_name",
    "tokenize_texts",
    "weight_buffers",
    "write_phone_saved_model",
    "write_text_saved_model",
]
