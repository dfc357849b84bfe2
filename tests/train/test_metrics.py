"""Task metrics against hand-checked examples."""

import pytest

from zoo.train import metrics


def test_classification_metrics():
    y = [0, 0, 1, 1, 2]
    p = [0, 1, 1, 1, 0]
    assert metrics.accuracy(y, p) == pytest.approx(0.6)
    # per class F1: c0 = 2*1/(2+1+1)=0.5, c1 = 2*2/(4+1+0)=0.8, c2 = 0
    assert metrics.macro_f1(y, p) == pytest.approx((0.5 + 0.8 + 0.0) / 3)


def test_entity_f1_hand_checked():
    gold = [["B-PER", "I-PER", "O", "B-LOC"], ["B-ORG", "O"]]
    pred = [["B-PER", "I-PER", "O", "B-ORG"], ["I-ORG", "O"]]
    # gold entities: PER(0,2) LOC(3,4) ORG(0,1); predicted: PER(0,2) ORG(3,4) ORG(0,1)
    # (a leading I- starts an entity, conlleval's rule) -> tp 2 of 3 each way.
    scores = metrics.entity_f1(gold, pred)
    assert scores["precision"] == pytest.approx(2 / 3)
    assert scores["recall"] == pytest.approx(2 / 3)
    assert metrics.bio_entities(["B-A", "I-B", "I-B", "O"]) == {("A", 0, 1), ("B", 1, 3)}


def test_squad_metrics_hand_checked():
    from zoo.text.readers import QAExample

    examples = [
        QAExample("a", "q", "c", (("the Eiffel Tower", 0), ("Eiffel Tower", 4))),
        QAExample("b", "q", "c", (("in 1889", 0),)),
        QAExample("c", "q", "c", (), True),
    ]
    scores = metrics.squad_scores(
        examples, {"a": "Eiffel tower!", "b": "1889 exactly", "c": ""}
    )
    # a: exact after normalisation; b: tokens {1889, exactly} vs {in, 1889}: F1 0.5; c: null.
    assert scores["exact_match"] == pytest.approx(2 / 3)
    assert scores["f1"] == pytest.approx((1 + 0.5 + 1) / 3)
