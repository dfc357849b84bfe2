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
"""

from __future__ import annotations

import dataclasses
import glob
import pathlib
import re

import numpy as np
import tensorflow as tf

from zoo.configs import DEFAULT_SEQUENCE_LENGTH
from zoo.datasets import corpora
from zoo.text.masking import continuation_table, mask_spans, mask_tokens

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
    """Read raw text for pre-training into memory (`TextShards` streams it).

    `path` is a text file, a folder (searched recursively for .txt/.text/.md
    files) or a glob pattern, in sorted order. A file with blank-line-separated
    blocks gives one document per block; a file without blank lines is one
    document.
    """
    return [d for file in text_files(path) for d in documents_from_text(_read_text(file))]


OBJECTIVE_PARTS = ("mlm", "nsp", "sop", "sbo")
MASKINGS = ("token", "whole-word", "span")
PACKINGS = ("sentences", "full")


@dataclasses.dataclass(frozen=True)
class PretrainingObjective:
    """What the examples carry: `sentence` is "nsp", "sop" or None; `sbo`
    the span-boundary targets; `masking` one of `MASKINGS`; `packing` one of
    `PACKINGS` ("sentences": a pair, or with no sentence objective a run of
    one document's sentences; "full": RoBERTa's FULL-SENTENCES)."""

    sentence: str | None = "nsp"
    sbo: bool = False
    masking: str = "token"
    packing: str = "sentences"

    @property
    def name(self):
        return "+".join(
            ["mlm"] + [p for p in (self.sentence,) if p] + (["sbo"] if self.sbo else [])
        )


def pretraining_objective(
    objective=None, masking=None, packing=None, *, nsp=None, whole_word=None
):
    """Resolve the objective flags into a `PretrainingObjective`.

    `objective` is "mlm" plus any of "+nsp", "+sop" (at most one of the two)
    and "+sbo", e.g. "mlm+sop+sbo"; default "mlm+nsp", or "mlm" when
    `nsp=False`. `nsp` and `whole_word` are the older switches
    (`--no-nsp`, `--whole-word`): they map onto `objective` and `masking`,
    and contradicting them is an error. `masking` defaults to "span" with
    "+sbo" (which needs spans), else "whole-word" with `whole_word=True`,
    else "token". `packing` defaults to "sentences"."""
    if objective is None:
        objective = "mlm" if nsp is False else "mlm+nsp"
    parts = [p.strip().lower() for p in str(objective).split("+")]
    unknown = [p for p in parts if p not in OBJECTIVE_PARTS]
    if unknown or "mlm" not in parts or len(set(parts)) != len(parts):
        raise ValueError(
            f"--objective {objective!r}: expected 'mlm' joined by '+' with any of nsp, sop, "
            "sbo (each once), e.g. mlm, mlm+nsp, mlm+sop, mlm+sbo, mlm+sop+sbo."
        )
    if "nsp" in parts and "sop" in parts:
        raise ValueError(
            f"--objective {objective!r}: NSP and SOP both classify segment B "
            "from the pooled output; choose one."
        )
    if nsp is False and "nsp" in parts:
        raise ValueError(
            f"--no-nsp contradicts --objective {objective!r}; drop one of them "
            "(--objective mlm is --no-nsp)."
        )
    if nsp is True and "nsp" not in parts:
        raise ValueError(f"nsp=True contradicts objective={objective!r}; drop one of them.")
    sbo = "sbo" in parts
    if masking is None:
        masking = "span" if sbo else ("whole-word" if whole_word else "token")
    if masking not in MASKINGS:
        raise ValueError(f"--masking {masking!r}: expected one of {', '.join(MASKINGS)}.")
    if whole_word and masking != "whole-word":
        raise ValueError(
            f"--whole-word contradicts --masking {masking}; drop one of them "
            "(--masking whole-word is --whole-word)."
        )
    if sbo and masking != "span":
        raise ValueError(
            f"--objective {objective}: the span-boundary objective predicts "
            f"span tokens from their boundaries and needs --masking span; "
            f"received --masking {masking}."
        )
    packing = packing or "sentences"
    if packing not in PACKINGS:
        raise ValueError(f"--packing {packing!r}: expected one of {', '.join(PACKINGS)}.")
    sentence = "nsp" if "nsp" in parts else ("sop" if "sop" in parts else None)
    if packing == "full" and sentence:
        raise ValueError(
            f"--objective {objective}: full-sentence packing (--recipe roberta) "
            f"makes one segment, so there is no segment B for {sentence.upper()}; "
            "use --objective mlm or mlm+sbo, or --packing sentences."
        )
    return PretrainingObjective(sentence, sbo, masking, packing)


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


def _epoch_keys(seed, epoch_variable):
    """A one-element dataset: the epoch's int64 seed pair. With
    `epoch_variable` it is `(seed, epoch)`, so an epoch's shuffle and masks
    are the same whether or not training was resumed; without, each
    iteration of the dataset draws a new key (the same sequence of keys in a
    fresh process)."""
    if epoch_variable is not None:
        return tf.data.Dataset.from_tensors(0).map(
            lambda _: tf.stack(
                [
                    tf.constant(seed, tf.int64),
                    tf.cast(epoch_variable.read_value(), tf.int64),
                ]
            )
        )
    return (
        tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=True)
        .take(1)
        .map(lambda r: tf.stack([tf.constant(seed, tf.int64), r]))
    )


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
    for a `PretrainingObjective`."""
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


def _corpus_examples(corpus, group_seed, build, batch_size, shuffle):
    """Unbatched examples of one corpus, one per anchor sentence, in an
    order (and with masks) drawn from `group_seed`."""
    n = tf.shape(corpus["anchors"], out_type=tf.int64)[0]
    if shuffle:
        keys = tf.random.stateless_uniform(
            [n], tf.random.experimental.stateless_fold_in(group_seed, 0)
        )
        order = tf.argsort(keys, stable=True)
        order = tf.cast(order, tf.int64)
    else:
        order = tf.range(n)
    batches = tf.data.Dataset.from_tensor_slices(order).batch(batch_size).enumerate(start=1)
    return batches.map(
        lambda i, index: build(
            corpus, index, tf.random.experimental.stateless_fold_in(group_seed, i)
        ),
        num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=True,
    ).unbatch()


def _check_length(sequence_length):
    if sequence_length < 8:
        raise ValueError(f"sequence_length must be >= 8; received {sequence_length}.")


def pretraining_dataset(
    documents,
    tokenizer,
    *,
    sequence_length=DEFAULT_SEQUENCE_LENGTH,
    max_predictions=20,
    batch_size=32,
    nsp=None,
    whole_word=None,
    seed=0,
    shuffle=True,
    drop_remainder=True,
    epoch_variable=None,
    objective=None,
    masking=None,
    packing=None,
):
    """A `tf.data.Dataset` of `(inputs, targets, sample_weights)` batches for
    `zoo.Pretrainer` (`nsp=True`) or `zoo.MaskedLM` (`nsp=False`), from
    documents held in memory (`TextShards.dataset` streams files instead).

    inputs: `token_ids`, `segment_ids`, `padding_mask` `[B, L]`,
    `masked_positions` `[B, P]`; targets: `mlm_logits` (original ids at the
    masked positions) and, with NSP, `nsp_logits` (0 = B follows A);
    sample_weights: `mlm_logits` = the masked weights (0 for padding slots).
    One pass (an epoch) has one example per anchor sentence. Each pass
    re-draws the order, the pairs and the masks; with `epoch_variable`
    (`zoo.train.callbacks.EpochCounter`) they depend on (seed, epoch) only.

    `objective`, `masking`, `packing` (and the older `nsp`, `whole_word`):
    see `pretraining_objective`; the default is MLM + NSP, token masking.
    """
    _check_length(sequence_length)
    task = pretraining_objective(
        objective, masking, packing, nsp=nsp, whole_word=whole_word
    )
    corpus = _Corpus(
        documents, tokenizer, packing=task.packing, sequence_length=sequence_length
    )
    if len(corpus.anchors) == 0:
        raise ValueError(
            "no document has two consecutive sentences; NSP and sentence runs need "
            "multi-sentence documents (separate documents with blank lines)."
        )
    build = _example_builder(
        tokenizer,
        sequence_length=sequence_length,
        max_predictions=max_predictions,
        objective=task,
    )
    arrays = {k: tf.constant(v) for k, v in corpus.arrays.items()}

    def one_epoch(key):
        return _corpus_examples(arrays, key, build, batch_size, shuffle)

    dataset = _epoch_keys(seed, epoch_variable).flat_map(one_epoch)
    dataset = dataset.batch(batch_size, drop_remainder=drop_remainder)
    n = len(corpus.anchors)
    batches = n // batch_size if drop_remainder else -(-n // batch_size)
    dataset = dataset.apply(tf.data.experimental.assert_cardinality(batches))
    return dataset.prefetch(tf.data.AUTOTUNE)


def text_files(path):
    """The text files `--data` names: a file, a folder (searched recursively
    for .txt/.text/.md files) or a glob pattern such as `shards/*.txt`, in
    sorted order."""
    path = str(path)
    if any(c in path for c in "*?[") and not pathlib.Path(path).exists():
        files = sorted(
            pathlib.Path(p)
            for p in glob.glob(path, recursive=True)
            if pathlib.Path(p).is_file()
        )
        if not files:
            raise FileNotFoundError(f"--data {path}: the pattern matches no file.")
        return files
    root = pathlib.Path(path)
    if not root.exists():
        raise FileNotFoundError(f"--data {path}: no such file, folder or pattern.")
    if root.is_file():
        return [root]
    files = sorted(p for p in root.rglob("*") if p.suffix.lower() in TEXT_SUFFIXES)
    if not files:
        raise ValueError(
            f"--data {path}: no text files found (looked for {', '.join(TEXT_SUFFIXES)})."
        )
    return files


def _read_text(file):
    try:
        return file.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(
            f"{file}: not UTF-8 text ({e}); convert it, e.g. `iconv -t utf-8`."
        ) from e


class TextShards:
    """Pre-training text streamed from many files, never held whole.

        shards = TextShards.from_path("corpus/")       # a file, folder or glob
        ds = shards.dataset(tokenizer, sequence_length=128, batch_size=32)

    One pass over the files (`count`) splits them into documents and
    sentences without keeping them, counts the examples of an epoch (one
    per sentence with a successor in its document, as `pretraining_dataset`)
    and cuts the sorted files into groups of at least `group_bytes` of text
    and two documents. The dataset reads a group at a time inside
    `tf.data` (`interleave` over `cycle_length` groups, in an order drawn
    per epoch), tokenizes it and builds the examples with the same pairing,
    packing and masking as `pretraining_dataset`; NSP's random sentence
    comes from another document of the same group. Memory is bounded by
    `cycle_length` groups, not by the corpus."""

    def __init__(self, files, group_bytes=1 << 20):
        self.files = [pathlib.Path(f) for f in files]
        self.group_bytes = int(group_bytes)
        self._counts = None

    @classmethod
    def from_path(cls, path, **kwargs):
        return cls(text_files(path), **kwargs)

    def count(self):
        """{files, groups, documents, sentences, examples} (cached)."""
        if self._counts is not None:
            return self._counts
        groups, current = [], {"files": [], "bytes": 0, "documents": 0, "examples": 0}
        documents = sentences = 0
        for file in self.files:
            docs = documents_from_text(_read_text(file))
            documents += len(docs)
            sentences += sum(len(d) for d in docs)
            current["files"].append(str(file))
            current["bytes"] += file.stat().st_size
            current["documents"] += len(docs)
            current["examples"] += sum(len(d) - 1 for d in docs)
            if (
                current["bytes"] >= self.group_bytes
                and current["documents"] >= 2
                and current["examples"] >= 1
            ):
                groups.append(current)
                current = {"files": [], "bytes": 0, "documents": 0, "examples": 0}
        if current["files"]:
            if groups and (current["documents"] < 2 or current["examples"] < 1):
                last = groups[-1]
                for key in ("bytes", "documents", "examples"):
                    last[key] += current[key]
                last["files"] += current["files"]
            else:
                groups.append(current)
        if documents < 2 or not any(g["examples"] for g in groups):
            raise ValueError(
                f"--data: {len(self.files)} file(s) hold {documents} document(s) and "
                f"{sentences} sentence(s); pre-training needs at least 2 documents and one "
                "with two consecutive sentences (separate documents with blank lines)."
            )
        self.groups = [g["files"] for g in groups]
        self._counts = {
            "files": len(self.files),
            "groups": len(groups),
            "documents": documents,
            "sentences": sentences,
            "examples": sum(g["examples"] for g in groups),
        }
        return self._counts

    def _load(self, tokenizer, group):
        files = self.groups[int(group)]
        documents = [
            d for f in files for d in documents_from_text(_read_text(pathlib.Path(f)))
        ]
        arrays = _Corpus(documents, tokenizer, where=f"the file group {files[0]}..").arrays
        return [arrays[k] for k in _CORPUS_SIGNATURE]

    def dataset(
        self,
        tokenizer,
        *,
        sequence_length=DEFAULT_SEQUENCE_LENGTH,
        max_predictions=20,
        batch_size=32,
        nsp=None,
        whole_word=None,
        seed=0,
        shuffle=True,
        drop_remainder=True,
        epoch_variable=None,
        cycle_length=4,
        objective=None,
        masking=None,
        packing=None,
    ):
        """Batches as `pretraining_dataset`'s, an epoch being one pass over
        every file. Full-sentence packing is not offered here: an epoch's
        example count would need the corpus tokenized before training."""
        _check_length(sequence_length)
        task = pretraining_objective(
            objective, masking, packing, nsp=nsp, whole_word=whole_word
        )
        if task.packing == "full":
            raise ValueError(
                "full-sentence packing (--recipe roberta) works on the in-memory corpora "
                "(--data austen, wordnet, austen+wordnet) only for now; for text files use "
                "--packing sentences (runs of one document's sentences, MLM only)."
            )
        counts = self.count()
        build = _example_builder(
            tokenizer,
            sequence_length=sequence_length,
            max_predictions=max_predictions,
            objective=task,
        )
        num_groups = counts["groups"]
        names = list(_CORPUS_SIGNATURE)

        def load(group):
            arrays = tf.py_function(
                lambda g: self._load(tokenizer, g.numpy()),
                [group],
                Tout=[_CORPUS_SIGNATURE[k].dtype for k in names],
            )
            for array in arrays:
                array.set_shape([None])
            return group, dict(zip(names, arrays))

        def one_epoch(key):
            if shuffle:
                keys = tf.random.stateless_uniform(
                    [num_groups], tf.random.experimental.stateless_fold_in(key, -1)
                )
                order = tf.cast(tf.argsort(keys, stable=True), tf.int64)
            else:
                order = tf.range(num_groups, dtype=tf.int64)
            return (
                tf.data.Dataset.from_tensor_slices(order)
                .map(load)
                .interleave(
                    lambda group, corpus: _corpus_examples(
                        corpus,
                        tf.random.experimental.stateless_fold_in(key, group + 1),
                        build,
                        batch_size,
                        shuffle,
                    ),
                    cycle_length=min(cycle_length, num_groups),
                    block_length=1,
                )
            )

        dataset = _epoch_keys(seed, epoch_variable).flat_map(one_epoch)
        dataset = dataset.batch(batch_size, drop_remainder=drop_remainder)
        n = counts["examples"]
        batches = n // batch_size if drop_remainder else -(-n // batch_size)
        dataset = dataset.apply(tf.data.experimental.assert_cardinality(batches))
        return dataset.prefetch(tf.data.AUTOTUNE)


def masking_statistics(dataset, tokenizer, num_examples=10_000):
    """Measure the masking of the first `num_examples` examples of a
    pre-training dataset (batches of `pretraining_dataset`): the share of
    maskable tokens masked, the spans and their length in words (with
    span masking the positions sharing span boundaries, otherwise maximal
    runs of adjacent masked positions), special or padding tokens masked
    (must be 0), the 80/10/10 split over masked tokens and, per span, how
    many spans mix those actions (`mixed_spans`; 0 for span masking but for
    a random id that hits a special token and is kept instead).

    An analysis over numpy arrays, not part of the training path."""
    specials = np.array(
        [tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id, tokenizer.mask_id]
    )
    piece = continuation_table(tokenizer.vocabulary).numpy()
    seen = masked = maskable = special_masked = as_mask = randomised = mixed = 0
    histograms = []
    for x, y, w in dataset:
        take = min(int(x["token_ids"].shape[0]), num_examples - seen)
        now_ids = x["token_ids"].numpy()[:take]
        valid = x["padding_mask"].numpy()[:take] > 0
        positions = x["masked_positions"].numpy()[:take]
        real = w["mlm_logits"].numpy()[:take] > 0
        rows = np.broadcast_to(np.arange(take)[:, None], positions.shape)[real]
        cols = positions[real]
        was = y["mlm_logits"].numpy()[:take][real]
        now = now_ids[rows, cols]
        original = now_ids.copy()
        original[rows, cols] = was
        maskable += int((valid & ~np.isin(original, specials)).sum())
        masked += len(cols)
        special_masked += int(np.isin(was, specials).sum() + (~valid[rows, cols]).sum())
        is_mask = now == tokenizer.mask_id
        is_random = (now != was) & ~is_mask
        as_mask += int(is_mask.sum())
        randomised += int(is_random.sum())
        if "span_left_positions" in x:
            left = x["span_left_positions"].numpy()[:take][real]
            right = x["span_right_positions"].numpy()[:take][real]
            width = now_ids.shape[1] + 1
            keys = (rows * width + left) * width + right
        else:  # runs of adjacent positions (positions are sorted per row)
            new_run = np.ones(len(cols), bool)
            new_run[1:] = (rows[1:] != rows[:-1]) | (cols[1:] != cols[:-1] + 1)
            keys = np.cumsum(new_run)
        _, span = np.unique(keys, return_inverse=True)
        words = np.bincount(span, weights=~piece[was]).astype(int)
        histograms.append(np.bincount(np.maximum(words, 1)))
        action = np.where(is_mask, 0, np.where(is_random, 1, 2))
        kinds = np.zeros((span.max() + 1 if len(span) else 0, 3), int)
        np.add.at(kinds, (span, action), 1)
        mixed += int(((kinds > 0).sum(1) > 1).sum())
        seen += take
        if seen >= num_examples:
            break
    if seen < num_examples:
        raise ValueError(f"the dataset holds {seen} examples; asked for {num_examples}.")
    size = max(len(h) for h in histograms)
    histogram = sum(np.pad(h, (0, size - len(h))) for h in histograms)[1:]
    spans = int(histogram.sum())
    return {
        "examples": seen,
        "masked_share": masked / max(maskable, 1),
        "spans": spans,
        "mean_span_words": float((np.arange(1, size) * histogram).sum() / max(spans, 1)),
        "span_words_histogram": histogram.tolist(),
        "special_tokens_masked": special_masked,
        "mask_share": as_mask / max(masked, 1),
        "random_share": randomised / max(masked, 1),
        "kept_share": 1 - (as_mask + randomised) / max(masked, 1),
        "mixed_spans": mixed,
    }
