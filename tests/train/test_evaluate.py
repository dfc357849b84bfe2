"""`evaluate_model` predicts in batches of one shape: the last batch is
filled with copies of the last example and the copies' outputs dropped, so
a model's predict function is traced once (a short last batch retraced it,
and after a few models TensorFlow printed an "excessive retracing" warning
in `zoo demo` and `zoo distill`). The metrics are those of the examples
given, no more."""

import numpy as np
import pytest

from tests.export.conftest import TINY_LABELS, VOCABULARY, make_tiny, sentences
from zoo.text.readers import TaggedSentence, TextExample
from zoo.text.tokenizer import WordPieceTokenizer
from zoo.train import metrics
from zoo.train.finetune import (
    FinetuneConfig,
    _fill_last_batch,
    _predict_whole_batches,
    evaluate_model,
    evaluation_config,
)


def test_fill_last_batch_repeats_the_last_item_up_to_a_multiple():
    assert _fill_last_batch([1, 2, 3], 4) == [1, 2, 3, 3]
    assert _fill_last_batch([1, 2, 3, 4], 4) == [1, 2, 3, 4]
    assert _fill_last_batch([1, 2, 3, 4, 5], 2) == [1, 2, 3, 4, 5, 5]
    assert _fill_last_batch([], 4) == []


def test_classification_metrics_are_the_given_examples_and_predict_traces_once():
    tokenizer = WordPieceTokenizer(VOCABULARY)
    model = make_tiny("classifier")
    texts = sentences(70, seed=3)  # 64 + 6: a short last batch before the fill
    examples = [TextExample(t, TINY_LABELS[i % 3]) for i, t in enumerate(texts)]
    result = evaluate_model(
        model,
        tokenizer,
        "classify",
        examples,
        TINY_LABELS,
        FinetuneConfig(sequence_length=32),
    )
    assert model.predict_function.experimental_get_tracing_count() == 1
    assert result["num_examples"] == 70

    ids = {k: np.asarray(v) for k, v in tokenizer(texts, sequence_length=32).items()}
    predicted = model.predict(ids, batch_size=70, verbose=0)["logits"].argmax(-1)
    gold = np.arange(70) % 3
    assert result["accuracy"] == metrics.accuracy(gold, predicted)
    assert result["macro_f1"] == metrics.macro_f1(gold, predicted, 3)


def test_predict_whole_batches_returns_the_given_rows_only():
    tokenizer = WordPieceTokenizer(VOCABULARY)
    model = make_tiny("tagger")
    ids = {
        k: np.asarray(v)
        for k, v in tokenizer(sentences(37, seed=4), sequence_length=16).items()
    }
    out = _predict_whole_batches(model, ids, 16)
    assert model.predict_function.experimental_get_tracing_count() == 1
    assert out["logits"].shape == (37, 16, 4)
    direct = model.predict(ids, batch_size=37, verbose=0)["logits"]
    np.testing.assert_allclose(out["logits"], direct, atol=1e-5)
    # What the fill avoids: 37 rows in batches of 16 end with a batch of 5.
    plain = make_tiny("tagger")
    plain.predict(ids, batch_size=16, verbose=0)
    assert plain.predict_function.experimental_get_tracing_count() == 2


def test_tagging_evaluation_scores_every_sentence_once():
    tokenizer = WordPieceTokenizer(VOCABULARY)
    model = make_tiny("tagger")
    words = [tuple(s.rstrip(".").split()) for s in sentences(67, seed=5)]
    examples = [TaggedSentence(w, ("B-ORG",) + ("O",) * (len(w) - 1)) for w in words]
    result = evaluate_model(
        model,
        tokenizer,
        "tag",
        examples,
        ["O", "B-ORG", "I-ORG", "B-PER"],
        FinetuneConfig(sequence_length=32),
    )
    assert model.predict_function.experimental_get_tracing_count() == 1
    assert result["num_examples"] == 67
    assert 0.0 <= result["entity_f1"] <= 1.0


@pytest.mark.parametrize("length", [0, 2, 513, 100_000, True])
def test_evaluation_config_refuses_a_length_the_model_cannot_take(length):
    """`zoo evaluate --sequence-length 100000` crashed in the position
    embedding's slice, and 0 silently used the recorded length."""
    meta = {"encoder_config": {"max_sequence_length": 512}, "sequence_length": 128}
    with pytest.raises(
        ValueError, match=r"--sequence-length must be an integer in 3\.\.512"
    ):
        evaluation_config(meta, length)
    assert evaluation_config(meta, 512).sequence_length == 512
    assert evaluation_config(meta).sequence_length == 128
