"""The tokenized corpus as the arrays the example builder indexes:
sentences' word pieces, document bounds and the anchor sentences of an
epoch's examples (with full-sentence packing, the runs the corpus is cut
into once).
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf


class _Corpus:
    """The tokenized corpus as arrays: sentences' word pieces (flat values
    and row lengths), document bounds, and the sentences that anchor an
    example: those with a successor in their document, or with
    `packing="full"` the first sentence of each full-length run
    (`run_length` sentences, else 1)."""

    def __init__(
        self,
        documents,
        tokenizer,
        min_sentences=2,
        where="pre-training",
        packing="sentences",
        sequence_length=None,
    ):
        documents = [d for d in documents if len(d) >= 1]
        sentences = [s for d in documents for s in d]
        if len(documents) < 2 or len(sentences) < min_sentences:
            raise ValueError(
                f"{where} needs at least 2 documents with sentences; received "
                f"{len(documents)} document(s), {len(sentences)} sentence(s)."
            )
        flat, lengths = [], []
        for start in range(0, len(sentences), 4096):  # bounded memory per call
            pieces = tokenizer.tokenize(sentences[start : start + 4096])
            flat.append(pieces.flat_values.numpy().astype("int32"))
            lengths.append(pieces.row_lengths().numpy().astype("int64"))
        doc_length = np.array([len(d) for d in documents], "int64")
        doc_of = np.repeat(np.arange(len(documents)), doc_length).astype("int64")
        # Sentences with a successor in the same document can anchor a pair.
        has_next = np.zeros(len(sentences), bool)
        has_next[:-1] = doc_of[:-1] == doc_of[1:]
        sentence_length = np.concatenate(lengths)
        anchors = np.flatnonzero(has_next).astype("int64")
        run_length = np.ones(len(anchors), "int64")
        if packing == "full":
            anchors, run_length = _full_sentence_runs(
                sentence_length, ~has_next, sequence_length - 2
            )
        self.arrays = {
            "pieces": np.concatenate(flat),
            "sentence_length": sentence_length,
            "doc_start": np.concatenate([[0], np.cumsum(doc_length)[:-1]]).astype("int64"),
            "doc_length": doc_length,
            "doc_of": doc_of,
            "anchors": anchors,
            "run_length": run_length,
        }
        self.anchors = self.arrays["anchors"]


def _full_sentence_runs(sentence_length, ends_document, budget):
    """(first sentence, number of sentences) of each FULL-SENTENCES example:
    the corpus cut greedily, in order, into runs of whole sentences whose
    pieces plus one separator per document end fit in `budget` tokens (a
    sentence longer than the budget is an example of its own, truncated).
    One `searchsorted` per example, over the whole corpus."""
    cost = sentence_length.astype("int64") + ends_document.astype("int64")
    total = np.concatenate([[0], np.cumsum(cost)])
    starts, counts, i, n = [], [], 0, len(cost)
    while i < n:
        # The last j with total[j] - total[i] <= budget: sentences i..j-1 fit.
        j = max(int(np.searchsorted(total, total[i] + budget, side="right")) - 1, i + 1)
        starts.append(i)
        counts.append(j - i)
        i = j
    return np.array(starts, "int64"), np.array(counts, "int64")


_CORPUS_SIGNATURE = {
    "pieces": tf.TensorSpec([None], tf.int32),
    "sentence_length": tf.TensorSpec([None], tf.int64),
    "doc_start": tf.TensorSpec([None], tf.int64),
    "doc_length": tf.TensorSpec([None], tf.int64),
    "doc_of": tf.TensorSpec([None], tf.int64),
    "anchors": tf.TensorSpec([None], tf.int64),
    "run_length": tf.TensorSpec([None], tf.int64),
}
