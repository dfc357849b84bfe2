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

`objective`, `masking` and `packing` choose the rest of the BERT family
(`pretraining_objective`):

- `mlm+sop` (ALBERT): A and B are two consecutive segments (runs of whole
  sentences that together fit the length) of one document, swapped with
  probability 1/2; `sop_logits` label 0 = in order, 1 = swapped
  (0 is the positive class, as NSP's "is next").
- `masking="span"` (SpanBERT): whole-word spans (`masking.mask_spans`); with
  `+sbo` the inputs also carry each masked position's span boundaries
  (`span_left_positions`, `span_right_positions`) and the targets `sbo_logits`.
- `packing="full"` (RoBERTa's FULL-SENTENCES): one segment of whole
  consecutive sentences up to the length, crossing document boundaries with
  an extra `[SEP]` between documents. The corpus is cut into such examples
  once (each sentence in exactly one); the order and the masks are re-drawn
  each epoch as for every objective.

The corpus is tokenized once, in one batched call, into a ragged tensor held
by the pipeline; pairing, packing and masking are batched graph ops on
indices, so no Python runs per example. Shuffling and masking are re-drawn
every epoch from `tf.data.Dataset.random(seed)`: dynamic masking, yet the
same seed gives the same stream in a fresh process.

The package: `documents` (text files into documents of sentences),
`objective` (the flags resolved), `corpus` (the tokenized corpus as
arrays), `examples` (pairing, packing and masking as graph ops),
`pipeline` (the `tf.data` datasets, in memory and streamed) and
`statistics` (masking measurements); this module re-exports their names.
"""

from __future__ import annotations

from zoo.text.pretraining.corpus import _Corpus
from zoo.text.pretraining.documents import (
    TEXT_SUFFIXES,
    documents_from_text,
    read_documents,
    split_sentences,
    text_files,
)
from zoo.text.pretraining.examples import SOP_MAX_SENTENCES
from zoo.text.pretraining.objective import (
    MASKINGS,
    OBJECTIVE_PARTS,
    PACKINGS,
    PretrainingObjective,
    pretraining_objective,
)
from zoo.text.pretraining.pipeline import (
    MIN_SEQUENCE_LENGTH,
    TextShards,
    pretraining_dataset,
)
from zoo.text.pretraining.statistics import masking_statistics

# The names importable from zoo.text.pretraining, wherever in the package
# they live (tests use `_Corpus`).
__all__ = [
    "MASKINGS",
    "MIN_SEQUENCE_LENGTH",
    "OBJECTIVE_PARTS",
    "PACKINGS",
    "SOP_MAX_SENTENCES",
    "TEXT_SUFFIXES",
    "PretrainingObjective",
    "TextShards",
    "_Corpus",
    "documents_from_text",
    "masking_statistics",
    "pretraining_dataset",
    "pretraining_objective",
    "read_documents",
    "split_sentences",
    "text_files",
]
