"""The graphs the converter reads: an ExportArchive SavedModel with one
`[1, L]` ids signature per length, and the text-in SavedModel that
tokenizes with tensorflow-text's FastBertTokenizer and packs densely."""

from __future__ import annotations

import keras
import tensorflow as tf
import tensorflow_text as tft

from zoo.models import INPUT_NAMES, task_of
from zoo.text import description as td


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
