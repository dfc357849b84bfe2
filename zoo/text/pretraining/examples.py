"""Examples from the tokenized corpus, as batched graph ops on indices: the
sentence pairs (NSP, SOP) or runs (one document's, or FULL-SENTENCES),
packed, masked (token, whole-word or span masking) and keyed by the
Pretrainer's input and output names.
"""

from __future__ import annotations

import tensorflow as tf

from zoo.text.masking import continuation_table, mask_spans, mask_tokens

# Sentences an SOP example's two segments may hold together.
SOP_MAX_SENTENCES = 8


def _ragged_where(condition, x, y):
    """Row i of `x` where `condition[i]`, else row i of `y` (ragged rows)."""
    rows_x = tf.cast(tf.where(condition), tf.int64)[:, 0]
    rows_y = tf.cast(tf.where(tf.logical_not(condition)), tf.int64)[:, 0]
    merged = tf.concat([tf.gather(x, rows_x), tf.gather(y, rows_y)], axis=0)
    order = tf.math.invert_permutation(tf.concat([rows_x, rows_y], axis=0))
    return tf.gather(merged, order)


def _example_builder(tokenizer, *, sequence_length, max_predictions, objective):
    """`build(corpus, index, seed_pair)`: the examples anchored at the
    sentences `index` of one corpus (a dict of `_CORPUS_SIGNATURE` tensors),
    for a `PretrainingObjective`. At most `sequence_length` positions are
    masked whatever `max_predictions` says (more would only be empty slots)."""
    max_predictions = min(int(max_predictions), int(sequence_length))
    specials = [tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id, tokenizer.mask_id]
    continuation = (
        continuation_table(tokenizer.vocabulary)
        if objective.masking in ("whole-word", "span")
        else None
    )

    def build(corpus, index, seed_pair):
        sentences = tf.RaggedTensor.from_row_lengths(
            corpus["pieces"], corpus["sentence_length"]
        )
        pair_seed, mask_seed = tf.unstack(
            tf.random.experimental.stateless_split(seed_pair, 2)
        )
        first = tf.gather(corpus["anchors"], index)  # [B]
        args = (tokenizer, corpus, sentences, first, sequence_length)
        sentence_label = None
        if objective.sentence == "nsp":
            packed, sentence_label = _next_sentence_pairs(*args, pair_seed)
        elif objective.sentence == "sop":
            packed, sentence_label = _sentence_order_pairs(*args, pair_seed)
        elif objective.packing == "full":
            packed = _full_sentences(*args, tf.gather(corpus["run_length"], index))
        else:
            packed = _document_run(*args)
        masker = mask_spans if objective.masking == "span" else mask_tokens
        masked = masker(
            packed["token_ids"],
            packed["padding_mask"],
            mask_seed,
            vocabulary_size=tokenizer.vocabulary_size,
            mask_id=tokenizer.mask_id,
            special_ids=specials,
            max_predictions=max_predictions,
            continuation=continuation,
        )
        return _training_example(
            objective, packed, masked, sentence_label, tf.shape(first)[0]
        )

    return build


# The inputs `_example_builder` packs, one per objective and packing: each
# takes the anchors `first` ([B] sentence indices) and returns
# `tokenizer.pack_ids`'s dict (with the sentence task's label, if any).


def _next_sentence_pairs(tokenizer, corpus, sentences, first, sequence_length, pair_seed):
    """BERT's NSP: the anchor and its next sentence, or (half of the time,
    label 1) a random sentence of another document."""
    doc_of, doc_start, doc_length = (
        corpus["doc_of"],
        corpus["doc_start"],
        corpus["doc_length"],
    )
    num_docs = tf.shape(doc_length, out_type=tf.int64)[0]
    n = tf.shape(first)[0]
    draws = tf.random.stateless_uniform([3, n], pair_seed)
    is_next = draws[0] < 0.5
    # A random sentence of another document: shift the document by
    # 1..D-1, then pick a sentence in it uniformly.
    shift = 1 + tf.cast(draws[1] * tf.cast(num_docs - 1, tf.float32), tf.int64)
    other_doc = (tf.gather(doc_of, first) + shift) % num_docs
    offset = tf.cast(
        draws[2] * tf.cast(tf.gather(doc_length, other_doc), tf.float32), tf.int64
    )
    random_sentence = tf.gather(doc_start, other_doc) + offset
    second = tf.where(is_next, first + 1, random_sentence)
    a = tf.gather(sentences, first)
    b = tf.gather(sentences, second)
    packed = tokenizer.pack_ids(a, b, sequence_length=sequence_length)
    return packed, tf.where(is_next, 0, 1)


def _sentence_order_pairs(tokenizer, corpus, sentences, first, sequence_length, pair_seed):
    """ALBERT's sentence order: two consecutive segments of one document,
    swapped half of the time (label 1 = swapped). As in ALBERT (and BERT's
    data), a segment is a run of whole sentences: from the anchor, the
    consecutive sentences of its document (at most SOP_MAX_SENTENCES) that
    fit the length, at least two, cut at a uniform sentence boundary into A
    and B. Single-sentence segments left SOP at chance (0.494 after 900
    bert_tiny steps): one sentence's order is too weak a signal."""
    doc_of, doc_start, doc_length = (
        corpus["doc_of"],
        corpus["doc_start"],
        corpus["doc_length"],
    )
    n = tf.shape(first)[0]
    draws = tf.random.stateless_uniform([2, n], pair_seed)
    swapped = draws[0] < 0.5
    doc = tf.gather(doc_of, first)
    left = tf.gather(doc_start, doc) + tf.gather(doc_length, doc) - first  # >= 2
    steps = tf.range(SOP_MAX_SENTENCES, dtype=tf.int64)[None, :]
    in_doc = steps < left[:, None]
    rows = tf.minimum(
        first[:, None] + steps,
        tf.shape(corpus["sentence_length"], out_type=tf.int64)[0] - 1,
    )
    pieces = tf.where(in_doc, tf.gather(corpus["sentence_length"], rows), 0)
    fits = tf.logical_and(in_doc, tf.cumsum(pieces, axis=1) <= sequence_length - 3)
    count = tf.maximum(tf.reduce_sum(tf.cast(fits, tf.int64), axis=1), 2)
    cut = 1 + tf.cast(draws[1] * tf.cast(count - 1, tf.float32), tf.int64)  # 1..count-1
    cut = tf.minimum(cut, count - 1)
    in_a = steps < cut[:, None]
    in_b = tf.logical_and(steps >= cut[:, None], steps < count[:, None])
    a_run = tf.gather(sentences, tf.ragged.boolean_mask(rows, in_a)).merge_dims(1, 2)
    b_run = tf.gather(sentences, tf.ragged.boolean_mask(rows, in_b)).merge_dims(1, 2)
    packed = tokenizer.pack_ids(
        _ragged_where(swapped, b_run, a_run),
        _ragged_where(swapped, a_run, b_run),
        sequence_length=sequence_length,
    )
    return packed, tf.where(swapped, 1, 0)


def _full_sentences(tokenizer, corpus, sentences, first, sequence_length, count):
    """RoBERTa's FULL-SENTENCES: the run's `count` sentences in order, a
    [SEP] after each that ends its document (except the run's last;
    packing adds one)."""
    doc_of, doc_start, doc_length = (
        corpus["doc_of"],
        corpus["doc_start"],
        corpus["doc_length"],
    )
    rows = tf.ragged.range(first, first + count)  # [B, (s)]
    flat = rows.flat_values
    doc = tf.gather(doc_of, flat)
    ends_doc = flat == tf.gather(doc_start, doc) + tf.gather(doc_length, doc) - 1
    last_of_run = flat == tf.repeat(first + count - 1, rows.row_lengths())
    separator = tf.cast(tf.logical_and(ends_doc, tf.logical_not(last_of_run)), tf.int64)
    seps = tf.RaggedTensor.from_row_lengths(
        tf.fill([tf.reduce_sum(separator)], tf.constant(tokenizer.sep_id, tf.int32)),
        separator,
    )
    pieces = tf.concat([tf.gather(sentences, flat), seps], axis=1)  # [S, (p)]
    a = rows.with_flat_values(pieces).merge_dims(1, 2)
    return tokenizer.pack_ids(a, None, sequence_length=sequence_length)


def _document_run(tokenizer, corpus, sentences, first, sequence_length):
    """A run of consecutive sentences of one document up to the budget."""
    doc = tf.gather(corpus["doc_of"], first)
    end = tf.gather(corpus["doc_start"], doc) + tf.gather(corpus["doc_length"], doc)
    span = tf.minimum(end - first, 8)
    rows = first[:, None] + tf.range(8, dtype=tf.int64)[None, :]
    valid = tf.range(8, dtype=tf.int64)[None, :] < span[:, None]
    run = tf.gather(sentences, tf.ragged.boolean_mask(rows, valid))  # [B, (s), (p)]
    a = run.merge_dims(1, 2)
    return tokenizer.pack_ids(a, None, sequence_length=sequence_length)


def _training_example(objective, packed, masked, sentence_label, n):
    """(inputs, targets, sample weights) of `n` examples, keyed by the
    Pretrainer's input and output names."""
    inputs = {
        "token_ids": masked["token_ids"],
        "segment_ids": packed["segment_ids"],
        "padding_mask": packed["padding_mask"],
        "masked_positions": masked["masked_positions"],
    }
    targets = {"mlm_logits": masked["masked_ids"]}
    weights = {"mlm_logits": masked["masked_weights"]}
    if objective.sentence in ("nsp", "sop"):
        targets[f"{objective.sentence}_logits"] = sentence_label
        weights[f"{objective.sentence}_logits"] = tf.ones([n], tf.float32)
    if objective.sbo:
        inputs["span_left_positions"] = masked["span_left_positions"]
        inputs["span_right_positions"] = masked["span_right_positions"]
        targets["sbo_logits"] = masked["masked_ids"]
        weights["sbo_logits"] = masked["masked_weights"]
    return inputs, targets, weights
