"""Vocabulary pruning: the kept pieces, identical outputs on the corpus it
was pruned for, the single-character fallback for new words, and
`zoo prune` on a model directory."""

import json

import numpy as np
import pytest

import zoo
from tests.distill.tiny import TOPICS, teacher_dir
from zoo.checkpoints import load_model_dir
from zoo.cli import main
from zoo.distill.prune import kept_token_ids, prune_vocabulary, tokenized_differently
from zoo.text.tokenizer import WordPieceTokenizer

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
PIECES = ["a", "b", "c", "##a", "##b", "##c", "ab", "abc", "cab", "##bc", "bca", "##cab"]


def test_kept_pieces_and_identical_outputs_on_the_corpus():
    tokenizer = WordPieceTokenizer(SPECIAL + PIECES)
    corpus = ["abc ab", "cab abc"]
    kept = [tokenizer.vocabulary[i] for i in kept_token_ids(tokenizer, corpus)]
    # Used pieces, specials, every single character and its ## form; not
    # "##bc", "bca", "##cab", which the corpus never produced.
    assert kept == SPECIAL + ["a", "b", "c", "##a", "##b", "##c", "ab", "abc", "cab"]
    encoder = zoo.BertEncoder(
        vocabulary_size=len(tokenizer.vocabulary),
        num_layers=1,
        num_heads=2,
        hidden_dim=8,
        intermediate_dim=16,
        max_sequence_length=16,
    )
    model = zoo.Classifier(encoder, 2, pooling="mean")
    pruned, new_tokenizer, report = prune_vocabulary(model, tokenizer, corpus)
    assert report["vocabulary_after"] == len(kept) and new_tokenizer.vocabulary == kept
    assert pruned.encoder.vocabulary_size == len(kept)
    assert report["parameters_after"] == report["parameters_before"] - 3 * 8
    old = model(tokenizer(corpus, sequence_length=8))["logits"]
    new = pruned(new_tokenizer(corpus, sequence_length=8))["logits"]
    np.testing.assert_allclose(np.asarray(new), np.asarray(old), atol=1e-6)
    # A new word that used a dropped piece splits into kept ones, not [UNK].
    assert tokenized_differently(tokenizer, new_tokenizer, ["abbc", "abc", "bca"]) == 2
    assert new_tokenizer.tokenize(["abbc bca"]).to_list()[0] == [
        kept.index(p) for p in ("ab", "##b", "##c", "b", "##c", "##a")
    ]


@pytest.mark.slow  # fine-tune, prune and evaluate
def test_zoo_prune_writes_a_smaller_model_directory(tmp_path, capsys):
    teacher = teacher_dir(tmp_path)
    # Sport and weather articles only: the politics words are never used.
    data = tmp_path / "two_topics.csv"
    rows = [
        (f"{w} {TOPICS[t][(i + 1) % 5]} {i}", t)
        for i, (t, w) in enumerate(
            (t, w) for _ in range(4) for t in ("sport", "weather") for w in TOPICS[t]
        )
    ]
    data.write_text("text,label\n" + "".join(f"{x},{y}\n" for x, y in rows))
    out = tmp_path / "pruned"
    assert (
        main(
            [
                "prune",
                "--model",
                str(teacher),
                "--data",
                str(data),
                "--out",
                str(out),
                "--json",
            ]
        )
        == 0
    )
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    model, tokenizer, meta = load_model_dir(out)
    assert report["vocabulary_after"] < report["vocabulary_before"]
    assert (
        model.encoder.vocabulary_size
        == len(tokenizer.vocabulary)
        == meta["vocabulary_size"]
        == report["vocabulary_after"]
    )
    assert meta["vocabulary_pruning"]["vocabulary_after"] == report["vocabulary_after"]
    assert (
        meta["pruned_from"] == str(teacher)
        and meta["labels"] == load_model_dir(teacher)[2]["labels"]
    )
    assert report["after"]["accuracy"] == report["before"]["accuracy"]
    assert (
        main(["prune", "--model", str(teacher), "--data", str(data), "--out", str(out)])
        == 2
    )  # not empty: needs --force
