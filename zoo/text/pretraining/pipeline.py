"""The `tf.data` pipelines of pre-training examples: `pretraining_dataset`
over documents held in memory and `TextShards` streaming groups of files,
with the epoch's seed, the shuffled order and the batches.
"""

from __future__ import annotations

import pathlib

import tensorflow as tf

from zoo.configs import DEFAULT_SEQUENCE_LENGTH
from zoo.text.pretraining.corpus import _CORPUS_SIGNATURE, _Corpus
from zoo.text.pretraining.documents import _read_text, documents_from_text, text_files
from zoo.text.pretraining.examples import _example_builder
from zoo.text.pretraining.objective import pretraining_objective


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


# The shortest pre-training example: [CLS] A [SEP] B [SEP] with room for text.
MIN_SEQUENCE_LENGTH = 8


def _check_length(sequence_length):
    if sequence_length < MIN_SEQUENCE_LENGTH:
        raise ValueError(
            f"sequence_length must be >= {MIN_SEQUENCE_LENGTH}; received {sequence_length}."
        )


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
