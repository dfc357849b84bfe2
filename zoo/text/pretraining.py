"""BERT pre-training examples from raw text, built inside `tf.data`.

    documents = read_documents("corpus/")          # list of documents, each a list of sentences
    ds = pretraining_dataset(documents, tokenizer, sequence_length=128, batch_size=32)
    pretrainer.fit(ds, epochs=3)                   # zoo.Pretrainer: MLM + NSP

Each example is `[CLS] A [SEP] B [SEP]`: A is a sentence; B is the sentence
that follows it in its document half of the time (`nsp_label` 0, "is next",
as in BERT's checkpoints) and a random sentence of another document
otherwise (label 1). The pair is trimmed longest-first to the target length
and masked for MLM (`masking.py`). With `nsp=False` (the DistilBERT recipe)
examples are runs of consecutive sentences of one document, MLM only.

The corpus is tokenized once, in one batched call, into a ragged tensor held
by the pipeline; pairing, packing and masking are batched graph ops on
indices, so no Python runs per example. Shuffling and masking are re-drawn
every epoch from `tf.data.Dataset.random(seed)`: dynamic masking, yet the
same seed gives the same stream in a fresh process.
"""

from __future__ import annotations

import pathlib
import re

import numpy as np
import tensorflow as tf

from zoo.configs import DEFAULT_SEQUENCE_LENGTH
from zoo.text import corpora
from zoo.text.masking import continuation_table, mask_tokens

TEXT_SUFFIXES = (".txt", ".text", ".md")


def split_sentences(text):
    """Sentences of a paragraph, whitespace folded (`corpora.split_sentences`:
    closing quotes stay with their sentence, titles such as "Mr." do not end one)."""
    return corpora.split_sentences(" ".join(text.split()))


def documents_from_text(text):
    """Documents are blocks separated by blank lines; sentences within."""
    blocks = re.split(r"\n\s*\n", text)
    docs = [split_sentences(b) for b in blocks]
    return [d for d in docs if d]


def read_documents(path):
    """Read raw text for pre-training.

    `path` is a text file or a folder (searched recursively for .txt/.text/.md
    files, in sorted order). A file with blank-line-separated blocks gives one
    document per block; a file without blank lines is one document.
    """
    path = pathlib.Path(path)
    if not path.exists():
        raise FileNotFoundError(f"--data {path}: no such file or directory.")
    files = (
        [path]
        if path.is_file()
        else sorted(p for p in path.rglob("*") if p.suffix.lower() in TEXT_SUFFIXES)
    )
    if not files:
        raise ValueError(
            f"--data {path}: no text files found (looked for {', '.join(TEXT_SUFFIXES)})."
        )
    documents = []
    for file in files:
        try:
            text = file.read_text(encoding="utf-8")
        except UnicodeDecodeError as e:
            raise ValueError(
                f"{file}: not UTF-8 text ({e}); convert it, e.g. `iconv -t utf-8`."
            ) from e
        documents += documents_from_text(text)
    return documents


class _Corpus:
    """The tokenized corpus as tensors: ragged sentences, document bounds."""

    def __init__(self, documents, tokenizer, min_sentences=2):
        documents = [d for d in documents if len(d) >= 1]
        sentences = [s for d in documents for s in d]
        if len(documents) < 2 or len(sentences) < min_sentences:
            raise ValueError(
                f"pre-training needs at least 2 documents with sentences; received "
                f"{len(documents)} document(s), {len(sentences)} sentence(s)."
            )
        pieces = []
        for start in range(0, len(sentences), 4096):  # bounded memory per call
            pieces.append(tokenizer.tokenize(sentences[start : start + 4096]))
        self.sentences = tf.concat(pieces, axis=0)  # ragged [S, (pieces)]
        lengths = np.array([len(d) for d in documents])
        self.doc_start = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype("int64")
        self.doc_length = lengths.astype("int64")
        self.doc_of = np.repeat(np.arange(len(documents)), lengths).astype("int64")
        # Sentences with a successor in the same document can anchor a pair.
        has_next = np.zeros(len(sentences), bool)
        has_next[:-1] = self.doc_of[:-1] == self.doc_of[1:]
        self.anchors = np.flatnonzero(has_next).astype("int64")
        self.num_documents = len(documents)
        self.num_sentences = len(sentences)


def pretraining_dataset(
    documents,
    tokenizer,
    *,
    sequence_length=DEFAULT_SEQUENCE_LENGTH,
    max_predictions=20,
    batch_size=32,
    nsp=True,
    whole_word=False,
    seed=0,
    shuffle=True,
    drop_remainder=True,
):
    """A `tf.data.Dataset` of `(inputs, targets, sample_weights)` batches for
    `zoo.Pretrainer` (`nsp=True`) or `zoo.MaskedLM` (`nsp=False`).

    inputs: `token_ids`, `segment_ids`, `padding_mask` `[B, L]`,
    `masked_positions` `[B, P]`; targets: `mlm_logits` (original ids at the
    masked positions) and, with NSP, `nsp_logits` (0 = B follows A);
    sample_weights: `mlm_logits` = the masked weights (0 for padding slots).
    One epoch has one example per anchor sentence.
    """
    if sequence_length < 8:
        raise ValueError(f"sequence_length must be >= 8; received {sequence_length}.")
    corpus = _Corpus(documents, tokenizer)
    if len(corpus.anchors) == 0:
        raise ValueError(
            "no document has two consecutive sentences; NSP and sentence runs need "
            "multi-sentence documents (separate documents with blank lines)."
        )
    sentences = corpus.sentences
    anchors = tf.constant(corpus.anchors)
    doc_of = tf.constant(corpus.doc_of)
    doc_start = tf.constant(corpus.doc_start)
    doc_length = tf.constant(corpus.doc_length)
    num_docs = corpus.num_documents
    specials = [tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id, tokenizer.mask_id]
    continuation = continuation_table(tokenizer.vocabulary) if whole_word else None
    budget = sequence_length - (3 if nsp else 2)

    def build(index, seed_pair):
        pair_seed, mask_seed = tf.unstack(tf.random.experimental.stateless_split(seed_pair, 2))
        first = tf.gather(anchors, index)  # [B]
        n = tf.shape(first)[0]
        if nsp:
            draws = tf.random.stateless_uniform([3, n], pair_seed)
            is_next = draws[0] < 0.5
            # A random sentence of another document: shift the document by
            # 1..D-1, then pick a sentence in it uniformly.
            shift = 1 + tf.cast(draws[1] * (num_docs - 1), tf.int64)
            other_doc = (tf.gather(doc_of, first) + shift) % num_docs
            offset = tf.cast(draws[2] * tf.cast(tf.gather(doc_length, other_doc), tf.float32),
                             tf.int64)
            random_sentence = tf.gather(doc_start, other_doc) + offset
            second = tf.where(is_next, first + 1, random_sentence)
            a = tf.gather(sentences, first)
            b = tf.gather(sentences, second)
            packed = tokenizer.pack_ids(a, b, sequence_length=sequence_length)
            nsp_label = tf.where(is_next, 0, 1)
        else:
            # A run of consecutive sentences of one document up to the budget.
            doc = tf.gather(doc_of, first)
            end = tf.gather(doc_start, doc) + tf.gather(doc_length, doc)
            span = tf.minimum(end - first, 8)
            rows = first[:, None] + tf.range(8, dtype=tf.int64)[None, :]
            valid = tf.range(8, dtype=tf.int64)[None, :] < span[:, None]
            run = tf.gather(sentences, tf.ragged.boolean_mask(rows, valid))  # [B, (s), (p)]
            a = run.merge_dims(1, 2)
            packed = tokenizer.pack_ids(a, None, sequence_length=sequence_length)
        masked = mask_tokens(
            packed["token_ids"],
            packed["padding_mask"],
            mask_seed,
            vocabulary_size=tokenizer.vocabulary_size,
            mask_id=tokenizer.mask_id,
            special_ids=specials,
            max_predictions=max_predictions,
            continuation=continuation,
        )
        inputs = {
            "token_ids": masked["token_ids"],
            "segment_ids": packed["segment_ids"],
            "padding_mask": packed["padding_mask"],
            "masked_positions": masked["masked_positions"],
        }
        targets = {"mlm_logits": masked["masked_ids"]}
        weights = {"mlm_logits": masked["masked_weights"]}
        if nsp:
            targets["nsp_logits"] = nsp_label
            weights["nsp_logits"] = tf.ones([n], tf.float32)
        return inputs, targets, weights

    del budget  # trimming happens in pack_ids
    indices = tf.data.Dataset.range(len(corpus.anchors))
    if shuffle:
        indices = indices.shuffle(
            len(corpus.anchors), seed=seed, reshuffle_each_iteration=True
        )
    indices = indices.batch(batch_size, drop_remainder=drop_remainder)
    seeds = tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=True).batch(2)
    dataset = tf.data.Dataset.zip(indices, seeds).map(
        build, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True
    )
    return dataset.prefetch(tf.data.AUTOTUNE)
