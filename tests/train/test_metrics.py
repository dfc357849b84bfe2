"""Task metrics against hand-checked examples."""

import pytest

from zoo.text.readers import read_conll
from zoo.text.tag_schemes import tag_entities, tag_scheme
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
    assert tag_entities(["B-A", "I-B", "I-B", "O"]) == {("A", 0, 1), ("B", 1, 3)}


@pytest.mark.parametrize(
    "tags, scheme, spans",
    [
        # Bare types (IO; also part-of-speech tags): each run is one entity.
        (["PER", "PER", "O", "LOC"], "IO", {("PER", 0, 2), ("LOC", 3, 4)}),
        (["NN", "VB", "VB", "NN"], "IO", {("NN", 0, 1), ("VB", 1, 3), ("NN", 3, 4)}),
        # BIOES / BILOU: S-/U- single words and E-/L- ends are entities too.
        (
            ["S-PER", "B-LOC", "E-LOC", "S-LOC", "O", "U-ORG", "B-X", "I-X", "L-X"],
            "BIOES",
            {("PER", 0, 1), ("LOC", 1, 3), ("LOC", 3, 4), ("ORG", 5, 6), ("X", 6, 9)},
        ),
        (["B-A", "B-A", "I-A", "O"], "BIO", {("A", 0, 1), ("A", 1, 3)}),
    ],
)
def test_tag_schemes_read_their_entities(tags, scheme, spans):
    """Bare tags gave entity F1 0.0 against themselves, and BIOES's S-
    entities were not counted."""
    assert tag_scheme(tags) == scheme
    assert tag_entities(tags) == spans
    assert metrics.entity_f1([tags], [tags])["f1"] == 1.0


def test_mixed_tag_schemes_are_refused(tmp_path):
    with pytest.raises(
        ValueError, match="mix prefixed types .'B-PER'. with bare ones .'LOC'."
    ):
        tag_scheme(["B-PER", "LOC", "O"])
    path = tmp_path / "mixed.conll"
    path.write_text("Ann B-PER\nin O\nRome LOC\n")
    with pytest.raises(ValueError, match="mixed.conll: the tags mix"):
        read_conll(path)


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
