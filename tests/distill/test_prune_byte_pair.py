"""Vocabulary pruning of a byte-level BPE (RoBERTa) model: the vocabulary
shrinks with its merges, the corpus tokenizes to the same tokens and gives
the same logits, any other text still tokenizes (no <unk>)."""

from __future__ import annotations

import keras
import numpy as np

import zoo
from tests.bpe import train_bpe
from tests.checkpoints.conftest import SENTENCES
from zoo.checkpoints import load_model_dir, save_model_dir
from zoo.distill.prune import prune_vocabulary, tokenized_differently


def _strings(tokenizer, texts):
    vocabulary = tokenizer.vocabulary
    return [[vocabulary[i] for i in row] for row in tokenizer.tokenize(texts).to_list()]


def test_pruned_bpe_keeps_the_corpus_tokens_and_logits(tmp_path):
    bpe = train_bpe(SENTENCES * 3, tmp_path / "bpe", vocabulary_size=600)
    tokenizer = zoo.BytePairTokenizer(bpe / "vocab.json", bpe / "merges.txt")
    keras.utils.set_random_seed(5)
    encoder = zoo.RobertaEncoder(
        tokenizer.vocabulary_size, 2, 2, 16, 32, max_sequence_length=48
    )
    model = zoo.Classifier(encoder, 3, labels=["a", "b", "c"])
    corpus, others = SENTENCES[:6], SENTENCES[6:]

    pruned, small, report = prune_vocabulary(model, tokenizer, corpus)
    assert isinstance(small, zoo.BytePairTokenizer)
    assert report["vocabulary_after"] < report["vocabulary_before"] == 600
    assert small.vocabulary_size == report["vocabulary_after"]
    assert len(small.merges) < len(tokenizer.merges)
    assert small.pad_id == tokenizer.pad_id == 1 and small.cls_id == 0
    # The corpus: the same tokens (ids renumbered) and the same logits.
    assert _strings(small, corpus) == _strings(tokenizer, corpus)
    assert tokenized_differently(tokenizer, small, corpus) == 0
    np.testing.assert_allclose(
        pruned(small(corpus, sequence_length=48))["logits"],
        model(tokenizer(corpus, sequence_length=48))["logits"],
        atol=1e-6,
    )
    # Other texts: split into smaller pieces, byte by byte at worst, never <unk>.
    assert tokenized_differently(tokenizer, small, others) > 0
    for before, after in zip(_strings(tokenizer, others), _strings(small, others)):
        assert "".join(after) == "".join(before)
        assert small.unk_token not in after
    decoded = small.detokenize(small.tokenize(others)).numpy()
    assert [t.decode("utf-8") for t in decoded] == others

    save_model_dir(pruned, tmp_path / "pruned", small)
    back, back_tokenizer, meta = load_model_dir(tmp_path / "pruned")
    assert back_tokenizer.merges == small.merges
    assert meta["vocabulary_size"] == small.vocabulary_size
