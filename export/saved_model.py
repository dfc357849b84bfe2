"""SavedModels for TF Serving (text in) and for TPU serving (ids in, XLA).

    path = export_saved_model(model, tokenizer, "serving", serving=ServingVersion("bbc"),
                              validation=Validation(texts))   # -> serving/bbc/1/

Text-in SavedModel (`export_saved_model`), written with
`keras.export.ExportArchive` (a plain `tf.saved_model.save` of a module holding
a Keras 3 model fails in the TF1 session loader that TF Serving uses):

    serving_default   text [B] string                 -> logits, probabilities, label
                      (QA: text = question, text_b = context -> start_logits,
                      end_logits, answer_start, answer_end, answer, answer_score;
                      tagging: logits, probabilities, label [B, L], tokens [B, L];
                      regression: score [B] float32)
    serve_text_pair   text, text_b [B] string         -> as serving_default (classifiers, taggers,
                                                         regressors)
    serve_ids         token_ids, segment_ids, padding_mask int32 [B, T] -> model outputs
    tokenize          text (, text_b)                 -> token_ids, segment_ids, padding_mask,
                                                         tokens (the word pieces, from vocab.txt)

Tokenization and packing run in-graph with tensorflow-text (the project's
`WordPieceTokenizer`), so a client sends raw text; TF Serving links
tensorflow-text's ops. `vocab.txt` and `labels.txt` are SavedModel assets
(lookup tables initialised from them). Outputs are float32 and named.

Layout (TF Serving's): `BASE/NAME/VERSION/` published by atomic rename after
the version passed validation; BASE/NAME's entry is then merged into
`BASE/models.config` (the user's other entries kept verbatim), with
`BASE/batching_parameters.txt` and `BASE/README.md` (the exact
`tensorflow_model_server` command) written where they are ours
(export/serving_config/). A conflict there is refused before the version
is built.

TPU SavedModel (`export_tpu_saved_model`): id inputs at fixed bucket shapes
`[batch_size, L]`, each endpoint a `tf.function(jit_compile=True)` shown to
lower to HLO with no string or host-transfer op, optional bfloat16 compute
with float32 outputs, and `function_aliases` (`tpu_serve_L128`, ...) for the
TPU inference converter. Tokenization stays on the host (vocab.txt beside).
"""

from __future__ import annotations

import json
import pathlib
import re
import shutil

import keras
import numpy as np
import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2

from export import manifest as mf
from export.consistency import RECORD_COLLECTION, artifact_record
from export.serving_config import check_serving_base, write_serving_files
from export.specs import ServingVersion, TpuBuckets, Validation, checked_spec
from export.validate import check_validation_texts, validate_new_artifact
from zoo.models import (
    INPUT_NAMES,
    ids_assertions,
    input_contract,
    task_of,
    with_dtype_policy,
)
from zoo.text import description as td
from zoo.text.tokenizer_record import write_tokenizer_files
from zoo.utils.atomic import atomic_directory

LABELS_FILE = "labels.txt"
MAX_ANSWER_LENGTH = 30


class XlaLoweringError(RuntimeError):
    """A TPU endpoint does not lower fully to XLA."""


# --- in-graph pieces ----------------------------------------------------------------


def _line_table(path):
    """id (line number) -> line, from a text file that becomes a SavedModel asset."""
    initializer = tf.lookup.TextFileInitializer(
        str(path),
        key_dtype=tf.int64,
        key_index=tf.lookup.TextFileIndex.LINE_NUMBER,
        value_dtype=tf.string,
        value_index=tf.lookup.TextFileIndex.WHOLE_LINE,
    )
    return tf.lookup.StaticHashTable(initializer, default_value="")


def _model_outputs(model, ids):
    return {k: tf.cast(v, tf.float32) for k, v in model(ids, training=False).items()}


def _answer_spans(start, end, ids, sep_id, max_answer_length=MAX_ANSWER_LENGTH):
    """Best span over context tokens: `(start [B], end [B], score [B])`.

    Allowed spans lie in segment 1, on real tokens other than [SEP], with
    end >= start and at most `max_answer_length` tokens (the host-side
    `validate.best_spans` applies the same rule).
    """
    length = tf.shape(start)[1]
    valid = (
        (ids["segment_ids"] == 1)
        & (ids["padding_mask"] == 1)
        & (ids["token_ids"] != sep_id)
    )
    i = tf.range(length)
    allowed = (i[None, :, None] <= i[None, None, :]) & (
        i[None, None, :] - i[None, :, None] < max_answer_length
    )
    allowed = allowed & valid[:, :, None] & valid[:, None, :]  # (B, L, L)
    scores = tf.where(allowed, start[:, :, None] + end[:, None, :], -np.inf)
    flat = tf.reshape(scores, [tf.shape(start)[0], -1])
    best = tf.argmax(flat, axis=1, output_type=tf.int32)
    return best // length, best % length, tf.reduce_max(flat, axis=1)


def _task_outputs(task, model, ids, labels_table, vocab_table, sep_id):
    out = _model_outputs(model, ids)
    if task == "regress":
        return {"score": out["score"]}
    if task == "classify":
        logits = out["logits"]
        return {
            "logits": logits,
            "probabilities": tf.nn.softmax(logits, axis=-1),
            "label": labels_table.lookup(tf.argmax(logits, axis=-1)),
        }
    tokens = vocab_table.lookup(tf.cast(ids["token_ids"], tf.int64))
    real = ids["padding_mask"] == 1
    if task == "tag":
        logits = out["logits"]
        label = labels_table.lookup(tf.argmax(logits, axis=-1))
        return {
            "logits": logits,
            "probabilities": tf.nn.softmax(logits, axis=-1),
            "label": tf.where(real, label, ""),
            "tokens": tf.where(real, tokens, ""),
        }
    start, end = out["start_logits"], out["end_logits"]
    s, e, score = _answer_spans(start, end, ids, sep_id)
    found = score > -np.inf
    i = tf.range(tf.shape(start)[1])[None, :]
    in_span = (i >= s[:, None]) & (i <= e[:, None]) & found[:, None]
    pieces = tf.ragged.boolean_mask(tokens, in_span)
    answer = tf.strings.regex_replace(
        tf.strings.reduce_join(pieces, axis=1, separator=" "), " ##", ""
    )
    return {
        "start_logits": start,
        "end_logits": end,
        "answer_start": tf.where(found, s, -1),
        "answer_end": tf.where(found, e, -1),
        "answer": answer,
        "answer_score": tf.where(found, score, 0.0),
    }


def _id_specs(shape, prefix=""):
    return {n: tf.TensorSpec(shape, tf.int32, name=prefix + n) for n in INPUT_NAMES}


def _track_tables(archive, tokenizer, vocab_path, labels_path):
    """The lookup tables the endpoints use, tracked by `archive`: the
    vocabulary's and the labels' (None without labels) returned, and a
    byte-level BPE tokenizer's merge table. Variables are tracked by
    add_endpoint; tracking the model itself would only add a slow walk of
    every layer for lookup tables."""
    vocab_table = _line_table(vocab_path)
    archive.track(vocab_table)
    # A byte-level BPE tokenizer's merge table is a TF resource of its own.
    for table in getattr(tokenizer, "lookup_tables", ()):
        archive.track(table)
    labels_table = None
    if labels_path is not None:
        labels_table = _line_table(labels_path)
        archive.track(labels_table)
    return vocab_table, labels_table


def build_text_archive(model, tokenizer, sequence_length, vocab_path, labels_path):
    """ExportArchive with serving_default / serve_text_pair / serve_ids / tokenize.

    Returns `(archive, signatures)` where `signatures` describes each
    endpoint for metadata.json.
    """
    task = task_of(model)
    archive = keras.export.ExportArchive()
    vocab_table, labels_table = _track_tables(archive, tokenizer, vocab_path, labels_path)
    sep_id = int(tokenizer.sep_id)
    length = int(sequence_length)
    text = tf.TensorSpec([None], tf.string, name="text")
    text_b = tf.TensorSpec([None], tf.string, name="text_b")

    # Shared inner functions: each endpoint calls them, so the tokenizer and
    # the model are traced once per input structure rather than once per
    # endpoint (tracing dominates the export's time).
    def inner(fn, *specs):
        return tf.function(fn, input_signature=list(specs), autograph=False)

    pack_one = inner(lambda a: tokenizer(a, sequence_length=length), text)
    pack_pair = inner(
        lambda a, b: tokenizer(a, text_b=b, sequence_length=length), text, text_b
    )
    predict = inner(
        lambda ids: _task_outputs(task, model, ids, labels_table, vocab_table, sep_id),
        _id_specs([None, length]),
    )

    def tokenize_outputs(ids):
        real = ids["padding_mask"] == 1
        tokens = vocab_table.lookup(tf.cast(ids["token_ids"], tf.int64))
        return {**ids, "tokens": tf.where(real, tokens, "")}

    if task == "qa":
        endpoints = {
            "serving_default": (
                lambda text, text_b: predict(pack_pair(text, text_b)),
                [text, text_b],
                {"input": "text", "text_b": True},
            ),
        }
    else:
        endpoints = {
            "serving_default": (
                lambda text: predict(pack_one(text)),
                [text],
                {"input": "text"},
            ),
            "serve_text_pair": (
                lambda text, text_b: predict(pack_pair(text, text_b)),
                [text, text_b],
                {"input": "text_pair"},
            ),
        }
    contract = input_contract(model)

    def checked_outputs(ids):
        # Ids from outside: the contract's asserts run first, so a bad id is
        # an InvalidArgument error (a 400 from TF Serving), not wrong logits.
        with tf.control_dependencies(ids_assertions(ids, contract)):
            ids = {k: tf.identity(v) for k, v in ids.items()}
        return _model_outputs(model, ids)

    endpoints["serve_ids"] = (
        checked_outputs,
        [_id_specs([None, None])],
        {"input": "ids", "sequence_length": None},
    )
    if task == "qa":
        endpoints["tokenize"] = (
            lambda text, text_b: tokenize_outputs(pack_pair(text, text_b)),
            [text, text_b],
            {"input": "text", "role": "tokenize"},
        )
    else:
        endpoints["tokenize"] = (
            lambda text: tokenize_outputs(pack_one(text)),
            [text],
            {"input": "text", "role": "tokenize"},
        )
    signatures = {}
    for name, (fn, input_signature, info) in endpoints.items():
        # Not traced here: saving traces every endpoint in its own context
        # (a trace made outside it would be redone). Output names are read
        # back from the written SavedModel (`signature_outputs`).
        archive.add_endpoint(name, fn, input_signature=input_signature)
        info.setdefault("sequence_length", length)
        info.setdefault("role", "predict")
        signatures[name] = info
    return archive, signatures


def signature_outputs(saved_model_dir):
    """`{signature: sorted output names}` read from a written saved_model.pb."""

    proto = saved_model_pb2.SavedModel()
    proto.ParseFromString((pathlib.Path(saved_model_dir) / "saved_model.pb").read_bytes())
    return {
        name: sorted(sig.outputs)
        for name, sig in proto.meta_graphs[0].signature_def.items()
        if not name.startswith("__")
    }


# --- TF Serving layout ---------------------------------------------------------------


def _versions_in(model_dir):
    model_dir = pathlib.Path(model_dir)
    if not model_dir.is_dir():
        return []
    return sorted(
        int(p.name) for p in model_dir.iterdir() if p.is_dir() and p.name.isdigit()
    )


def next_version(model_dir) -> int:
    """1 + the highest numeric version under `BASE/NAME`, or 1."""
    versions = _versions_in(model_dir)
    return versions[-1] + 1 if versions else 1


# --- export ---------------------------------------------------------------------------


def export_saved_model(
    model,
    tokenizer,
    base_dir,
    *,
    serving=None,
    sequence_length=None,
    validation=None,
    source_dir=None,
):
    """Write a text-in SavedModel to `BASE/NAME/VERSION/` and validate it.

    The version is assembled in a hidden temporary directory beside the
    final one, validated there (TF1 session loader in a fresh process, every
    signature against the Keras model), and only then renamed into place.

    Args:
        model: a zoo `Classifier`, `TokenClassifier`, `QuestionAnswerer` or
            `Regressor`.
        tokenizer: the project `WordPieceTokenizer` the model was trained with
            (None: a text model's own).
        base_dir: TF Serving's model base (holds `NAME/`).
        serving: a `ServingVersion` (export.specs): the model name in
            models.config and the REST URL, the version (None = 1 + the
            highest existing one) and whether to overwrite it (None: name
            "model", the next version, no overwrite).
        sequence_length: the text signatures pad/truncate to this length
            (default: a text model's own length, else 128).
        validation: a `Validation` (export.specs): >= 200 real texts (pairs
            for QA; fewer are refused before anything is built; None runs a
            load-and-run check on probe sentences only), optional gold labels, allow_degraded.
        source_dir: the zoo model directory the model came from (recorded, so
            `zoo validate` can find the reference model later).

    Returns: the published version directory.
    """
    serving = checked_spec("export_saved_model", "serving", serving, ServingVersion)
    validation = checked_spec("export_saved_model", "validation", validation, Validation)
    check_validation_texts(validation, "export_saved_model")
    task_of(model)  # a clear TypeError for anything but a zoo task model
    tokenizer = mf.model_tokenizer(model, tokenizer)
    sequence_length = _checked_sequence_length(model, sequence_length)
    base_dir, name, overwrite = pathlib.Path(base_dir), serving.name, serving.overwrite
    model_dir = base_dir / name
    version = next_version(model_dir) if serving.version is None else int(serving.version)
    meta = mf.base_metadata(
        model, tokenizer, kind="saved_model", source=mf.source_info(model, source_dir)
    )
    # A conflict in the TF Serving base is refused before the version is built.
    check_serving_base(base_dir, name, version, overwrite=overwrite)
    with atomic_directory(model_dir / str(version), overwrite=overwrite) as tmp:
        signatures = _write_text_saved_model(model, tokenizer, sequence_length, meta, tmp)
        meta.update(
            name=name,
            version=version,
            sequence_lengths=[int(sequence_length)],
            signatures=signatures,
            latency_signature="serving_default",
            validation_profile="saved_model",
            assets=sorted(p.name for p in (tmp / "assets").iterdir()),
        )
        mf.write_json(tmp / mf.METADATA, meta)
        validate_new_artifact(tmp, model, tokenizer, validation)
    write_serving_files(base_dir, name, overwrite=overwrite)
    return model_dir / str(version)


# The steps of `export_saved_model`, in its order.


def _checked_sequence_length(model, sequence_length):
    """`sequence_length` (default: the model's own), checked."""
    if sequence_length is None:
        sequence_length = mf.default_sequence_length(model)
    if not isinstance(sequence_length, (int, np.integer)) or sequence_length < 3:
        raise ValueError(
            f"sequence_length must be an int >= 3; received {sequence_length!r}."
        )
    encoder = getattr(model, "encoder", model)
    if sequence_length > encoder.max_sequence_length:
        raise ValueError(
            f"sequence_length={sequence_length} exceeds the encoder's max_sequence_length "
            f"({encoder.max_sequence_length})."
        )
    return sequence_length


def _write_text_saved_model(model, tokenizer, sequence_length, meta, tmp):
    """The text-in SavedModel (its record among its variables) and vocab.txt
    into `tmp`; returns its signatures, each with the outputs it has."""
    # Scratch space inside the temporary version directory: a killed
    # export leaves one stale directory, which the next export removes.
    assets = tmp / ".work"
    assets.mkdir()
    vocab_path = mf.write_vocabulary(assets, tokenizer.vocabulary)
    labels = mf.label_names(model)
    labels_path = None
    if labels is not None:
        labels_path = assets / LABELS_FILE
        labels_path.write_text("\n".join(labels) + "\n", encoding="utf-8")
    archive, signatures = build_text_archive(
        model, tokenizer, sequence_length, vocab_path, labels_path
    )
    # What the SavedModel says it is, among its own variables: loaders
    # check metadata.json against it (export/consistency/saved_model_checks.py).
    record = json.dumps(artifact_record(meta), sort_keys=True)
    archive.add_variable_collection(
        RECORD_COLLECTION,
        [tf.Variable(record, trainable=False, name=RECORD_COLLECTION)],
    )
    archive.write_out(str(tmp), verbose=False)
    shutil.rmtree(assets)  # write_out copied the assets into tmp/assets
    write_tokenizer_files(tmp, tokenizer)
    for signature, outputs in signature_outputs(tmp).items():
        if signature in signatures:
            signatures[signature]["outputs"] = outputs
    return signatures


# --- TPU ---------------------------------------------------------------------------------


# Ops that move data between the device and the host, or call back into the
# host: none may appear in a TPU endpoint's HLO.
_HOST_HLO = re.compile(
    r"\b(send|send-done|recv|recv-done|infeed|outfeed|custom-call|host-compute)\("
)


def _graph_ops(concrete):
    ops = {op.type for op in concrete.graph.get_operations()}
    for fdef in concrete.graph.as_graph_def().library.function:
        ops.update(node.op for node in fdef.node_def)
    return ops


def _string_ops(concrete):
    found = set()
    graphs = [concrete.graph]
    for g in graphs:
        for op in g.get_operations():
            if any(t.dtype == tf.string for t in list(op.inputs) + list(op.outputs)):
                found.add(op.type)
    return sorted(found)


def xla_lowering(fn, spec):
    """Prove that `fn` (a jit_compile tf.function) lowers fully to XLA.

    Compiles it to HLO (`experimental_get_compiler_ir(...)(stage="hlo")`,
    which fails if any op has no XLA kernel) and checks that the function
    holds no string op and the HLO no host transfer or custom call. Returns
    the evidence; raises `XlaLoweringError` otherwise.
    """
    concrete = fn.get_concrete_function()
    strings = _string_ops(concrete)
    zeros = {k: tf.zeros(v.shape, v.dtype) for k, v in spec.items()}
    try:
        hlo = fn.experimental_get_compiler_ir(zeros)(stage="hlo")
    except Exception as e:  # the compiler's own message names the op
        raise XlaLoweringError(f"{fn.__name__} does not lower to XLA: {e}") from e
    host = sorted(set(_HOST_HLO.findall(hlo)))
    opcodes = sorted(set(re.findall(r"= \S+ ([a-z][a-z0-9-]*)\(", hlo)))
    if strings or host:
        raise XlaLoweringError(
            f"{fn.__name__}: string ops {strings} / host ops {host} inside a TPU endpoint; "
            "tokenization must stay on the host."
        )
    return {
        "lowered_to_hlo": True,
        "hlo_instructions": len(re.findall(r"^\s*(?:ROOT )?%\S+ = ", hlo, flags=re.M)),
        "hlo_opcodes": opcodes,
        "tf_ops": sorted(_graph_ops(concrete)),
        "string_ops": strings,
        "host_ops": host,
    }


def _bfloat16_clone(model):
    """The same model computing in bfloat16 (mixed_bfloat16 policy), float32 weights."""
    if not hasattr(model, "encoder"):
        raise ValueError(
            "compute_dtype='bfloat16' needs a zoo task model (encoder + head)."
        )
    return with_dtype_policy(model, "mixed_bfloat16")


def export_tpu_saved_model(
    model,
    tokenizer,
    base_dir,
    *,
    serving=None,
    buckets=None,
    validation=None,
    source_dir=None,
):
    """Write an ids-in SavedModel for TPU serving to `BASE/NAME/VERSION/`.

    One endpoint per bucket (`buckets`, a `TpuBuckets`; None: lengths 128,
    256 and 512, batch 8, float32), `serve_ids_L{L}`
    with int32 inputs `[batch_size, L]`, compiled with `jit_compile=True`,
    checked to lower fully to XLA (evidence in metadata.json `xla`), and
    aliased for the TPU inference converter as `tpu_serve_L{L}`
    (SaveOptions.function_aliases). `serving_default` is the first bucket.
    The host tokenizes (vocab.txt beside), pads each batch to `batch_size`
    rows and each text to the smallest bucket that holds it.
    `compute_dtype="bfloat16"` computes under `mixed_bfloat16`; outputs stay
    float32. `serving` (a `ServingVersion`), `validation` and `source_dir`
    are `export_saved_model`'s.
    """
    serving = checked_spec("export_tpu_saved_model", "serving", serving, ServingVersion)
    buckets = checked_spec("export_tpu_saved_model", "buckets", buckets, TpuBuckets)
    validation = checked_spec(
        "export_tpu_saved_model", "validation", validation, Validation
    )
    check_validation_texts(validation, "export_tpu_saved_model")
    task_of(model)  # a clear TypeError for anything but a zoo task model
    tokenizer = mf.model_tokenizer(model, tokenizer)
    compute_dtype, batch_size = buckets.compute_dtype, buckets.batch_size
    lengths = mf.check_sequence_lengths(buckets.sequence_lengths, model)
    serving_model = model if compute_dtype == "float32" else _bfloat16_clone(model)
    base_dir, name, overwrite = pathlib.Path(base_dir), serving.name, serving.overwrite
    model_dir = base_dir / name
    version = next_version(model_dir) if serving.version is None else int(serving.version)
    archive = keras.export.ExportArchive()

    signatures, xla, aliases = {}, {}, {}
    for length in lengths:
        spec = _id_specs([batch_size, length])
        fn = tf.function(
            lambda ids: _model_outputs(serving_model, ids),
            input_signature=[spec],
            jit_compile=True,
            autograph=False,
        )
        fn.__name__ = f"serve_ids_L{length}"
        xla[fn.__name__] = xla_lowering(fn, spec)
        archive.add_endpoint(fn.__name__, fn)
        aliases[f"tpu_serve_L{length}"] = fn
        signatures[fn.__name__] = {
            "input": "ids",
            "sequence_length": length,
            "batch_size": int(batch_size),
            "outputs": sorted(fn.get_concrete_function().structured_outputs),
            "role": "predict",
            "function_alias": f"tpu_serve_L{length}",
        }
    meta = mf.base_metadata(
        model, tokenizer, kind="tpu_saved_model", source=mf.source_info(model, source_dir)
    )
    meta.update(
        name=name,
        version=version,
        sequence_lengths=lengths,
        batch_size=int(batch_size),
        compute_dtype=compute_dtype,
        signatures=signatures,
        serving_default=f"serve_ids_L{lengths[0]}",
        function_aliases={a: f"serve_ids_L{a.rsplit('L', 1)[1]}" for a in aliases},
        xla=xla,
        latency_signature=f"serve_ids_L{lengths[0]}",
        validation_profile=f"tpu_{compute_dtype}",
        # Where the text is tokenized (the TPU graph takes ids); how is
        # `tokenization`, the description every artifact carries.
        host_tokenization=f"host: {td.summary(meta['tokenization'])} -> pad to a bucket",
    )
    options = tf.saved_model.SaveOptions(function_aliases=aliases)
    check_serving_base(base_dir, name, version, overwrite=overwrite)
    with atomic_directory(model_dir / str(version), overwrite=overwrite) as tmp:
        archive.write_out(str(tmp), options=options, verbose=False)
        write_tokenizer_files(tmp, tokenizer)
        mf.write_json(tmp / mf.METADATA, meta)
        validate_new_artifact(tmp, model, tokenizer, validation)
    write_serving_files(base_dir, name, overwrite=overwrite)
    return model_dir / str(version)
