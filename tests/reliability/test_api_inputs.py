"""Reliability corpus (issue #43, class 7), area "Python API: tables and
labels": what people pass to `zoo.TextClassifier`, `TextTagger` and
`TextQuestionAnswerer` besides lists.

- pandas: a DataFrame is read by its column names (`text`, `text_b`,
  `label`/`labels`; a tagger's `tags`; QA's `question`, `context`,
  `answer`), any other columns refused naming them (iterated, a DataFrame
  gives its column NAMES: one answer for a whole frame before); a Series
  works as a list; numpy arrays of texts are 1-D, a 2-D one is refused
  naming its shape.
- Labels: with label names that read as numbers ("1", "2", "3"), an int
  target could be a class index or a name: refused naming both readings;
  str targets are names. The default names "0".."N-1" take ints (both
  readings agree). Unknown names and indices out of range are refused.
- `batch_size`, `epochs`, `steps_per_epoch` and `from_checkpoint`'s numbers:
  positive ints, anything else one TypeError/ValueError naming the argument.

Every predict answer is checked against the rows it was given. Cases are
built per test item from a module fixture (tiny random encoders), one
pytest id each.
"""

# isort: off
import zoo  # first: sets TensorFlow's log level and Keras's backend

# isort: on
import functools
import types

import keras
import numpy as np
import pandas as pd  # installed by `make setup`; a missing pandas fails here, loudly
import pytest
import tensorflow as tf

from tests.export.conftest import TINY, TINY_LABELS, VOCABULARY
from tests.reliability.corpus import answer, check_case, error
from zoo.predict import open_predictor
from zoo.text.preprocessor import TextPreprocessor
from zoo.text.tokenizer import WordPieceTokenizer

AREA = "Python API: tables and labels"
LENGTH = 16
TAGS = ["O", "B-ORG", "I-ORG", "B-PER"]
# A separable set: each class has its own words.
WORDS_OF = (
    "the market shares and the bank",
    "the match goal of the game",
    "the film music on the phone",
)
TEXTS = [
    f"{WORDS_OF[i % 3]} {w}" for i, w in enumerate("one two is it that was".split() * 3)
][:18]
TEXTS_B = [f"{w} was there" for w in "one two all some day side".split() * 3][:18]
CLASS = [i % 3 for i in range(len(TEXTS))]
NAMES = [TINY_LABELS[c] for c in CLASS]
DIGITS = ["1", "2", "3"]
PAIRS = [("what fell ?", "the market fell"), ("who said ?", "the bank said")] * 3


def _encoder():
    keras.utils.set_random_seed(7)
    return zoo.BertEncoder(vocabulary_size=len(VOCABULARY), **TINY)


def _classifier(labels=None, num_classes=None):
    """A fresh classifier, the same initial weights for every label list."""
    pre = TextPreprocessor(WordPieceTokenizer(VOCABULARY), LENGTH)
    return zoo.TextClassifier(
        _encoder(), num_classes, pre, labels=labels, pooling="mean", dropout=0.0
    )


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    pre = TextPreprocessor(WordPieceTokenizer(VOCABULARY), LENGTH)
    clf = _classifier(TINY_LABELS)
    directory = clf.save_model_dir(tmp_path_factory.mktemp("api") / "clf")
    return types.SimpleNamespace(
        clf=clf,
        digits=_classifier(DIGITS),
        tagger=zoo.TextTagger(_encoder(), preprocessor=pre, labels=TAGS),
        qa=zoo.TextQuestionAnswerer(
            _encoder(), preprocessor=TextPreprocessor(WordPieceTokenizer(VOCABULARY), 32)
        ),
        directory=directory,
    )


# --- how a case reads ----------------------------------------------------------------------

SPECS = {}  # name -> function(models) -> Case


def refused(name, run, *names):
    """`run(m)` must raise a clear error naming `names`."""
    SPECS[name] = lambda m: error(name, lambda: run(m), *names)


SLOW = set()  # cases that train a fresh model (5-20 s each on 2 busy cores)


def works(name, run, check, *, trains=False):
    """`run(m)` must return, and `check(m, result)` hold."""
    SPECS[name] = lambda m: answer(name, lambda: run(m), lambda r: check(m, r))
    if trains:
        SLOW.add(name)


def same_probabilities(want):
    """The classifier's answer equals its answer to `want(m)` (lists), one row
    per text."""

    def check(m, got):
        expected = m.clf.predict(want(m))
        return got.shape == expected.shape and np.abs(got - expected).max() < 1e-6

    return check


def rows(n, classes=3):
    return lambda m, got: np.shape(got) == (n, classes)


def fit(model, x, y=None, **kw):
    kw.setdefault("epochs", 1)
    return model.fit(x, y, verbose=0, **kw)


def fit_loss(make, x, y=None, **kw):
    """The first epoch's loss of a fresh model fitted on (x, y)."""
    return lambda m: fit(make(), x, y, **kw).history["loss"][0]


def loss_equals(want):
    """The loss equals that of a fresh model fitted on `want` (lists)."""
    return lambda m, got: abs(got - want(m)) < 1e-5


def frame(**columns):
    return pd.DataFrame(columns)


@functools.cache
def _names_loss():
    return fit_loss(lambda: _classifier(TINY_LABELS), TEXTS, NAMES)(None)


def names_loss(m):
    """The loss of the reference run: named labels, str targets, lists."""
    return _names_loss()


# === DataFrames and Series for predict ======================================================

works(
    "clf.predict(DataFrame text): one answer per row",
    lambda m: m.clf.predict(frame(text=TEXTS)),
    same_probabilities(lambda m: TEXTS),
)
works(
    "clf.predict(DataFrame text, text_b): pairs",
    lambda m: m.clf.predict(frame(text=TEXTS, text_b=TEXTS_B)),
    same_probabilities(lambda m: (TEXTS, TEXTS_B)),
)
works(
    "clf.predict(DataFrame text, label): labels ignored",
    lambda m: m.clf.predict(frame(text=TEXTS, label=NAMES)),
    same_probabilities(lambda m: TEXTS),
)
works(
    "clf.predict(DataFrame of one row)",
    lambda m: m.clf.predict(frame(text=TEXTS[:1])),
    same_probabilities(lambda m: TEXTS[:1]),
)
works(
    "clf.predict(DataFrame of two rows, text and text_b)",
    lambda m: m.clf.predict(frame(text=TEXTS[:2], text_b=TEXTS_B[:2])),
    same_probabilities(lambda m: list(zip(TEXTS[:2], TEXTS_B[:2]))),
)
works(
    "clf.predict(DataFrame with a string dtype and another index)",
    lambda m: m.clf.predict(
        pd.DataFrame({"text": pd.array(TEXTS, dtype="string")}, index=range(100, 118))
    ),
    same_probabilities(lambda m: TEXTS),
)
works(
    "clf.predict_labels(DataFrame text): one label per row",
    lambda m: m.clf.predict_labels(frame(text=TEXTS)),
    lambda m, got: got == m.clf.predict_labels(TEXTS) and len(got) == len(TEXTS),
)
works(
    "clf.predict(DataFrame text, 0 rows): an empty answer",
    lambda m: m.clf.predict(pd.DataFrame({"text": pd.Series([], dtype=object)})),
    rows(0),
)
refused(
    "clf.predict(DataFrame of another column name)",
    lambda m: m.clf.predict(frame(sentence=TEXTS)),
    "'sentence'",
    "'text'",
)
refused(
    "clf.predict(DataFrame text and an unread column)",
    lambda m: m.clf.predict(frame(id=list(range(18)), text=TEXTS)),
    "'id'",
    "'text'",
)
refused(
    "clf.predict(DataFrame with 'text_b' misspelt)",
    lambda m: m.clf.predict(frame(text=TEXTS, textb=TEXTS_B)),
    "'textb'",
    "'text_b'",
)
refused(
    "clf.predict(empty DataFrame, no columns)",
    lambda m: m.clf.predict(pd.DataFrame()),
    "'text'",
    "[]",
)
refused(
    "clf.predict(DataFrame of numbered columns)",
    lambda m: m.clf.predict(pd.DataFrame([[t] for t in TEXTS])),
    "[0]",
    "'text'",
)
refused(
    "clf.predict(DataFrame with 'text' twice)",
    lambda m: m.clf.predict(
        pd.DataFrame([[t, t] for t in TEXTS], columns=["text", "text"])
    ),
    "twice",
)
refused(
    "clf.predict(DataFrame text with a missing value)",
    lambda m: m.clf.predict(frame(text=[*TEXTS[:3], None])),
    "'text'",
    "[3]",
)
refused(
    "clf.predict(DataFrame text and labels twice)",
    lambda m: m.clf.predict(frame(text=TEXTS, label=NAMES, labels=NAMES)),
    "'label'",
    "'labels'",
)
works(
    "clf.predict(Series of str)",
    lambda m: m.clf.predict(pd.Series(TEXTS)),
    same_probabilities(lambda m: TEXTS),
)
works(
    "clf.predict(Series with another index)",
    lambda m: m.clf.predict(pd.Series(TEXTS, index=range(50, 68))),
    same_probabilities(lambda m: TEXTS),
)
works(
    "clf.predict(a DataFrame's column)",
    lambda m: m.clf.predict(frame(text=TEXTS, label=NAMES)["text"]),
    same_probabilities(lambda m: TEXTS),
)
works(
    "clf.predict(numpy 1-D str_)",
    lambda m: m.clf.predict(np.array(TEXTS)),
    same_probabilities(lambda m: TEXTS),
)
works(
    "clf.predict(numpy 1-D object)",
    lambda m: m.clf.predict(np.array(TEXTS, dtype=object)),
    same_probabilities(lambda m: TEXTS),
)
works(
    "clf.predict(numpy 0-D str): one text",
    lambda m: m.clf.predict(np.array(TEXTS[0])),
    same_probabilities(lambda m: TEXTS[:1]),
)
refused(
    "clf.predict(numpy 2-D (N, 2))",
    lambda m: m.clf.predict(np.array(list(zip(TEXTS, TEXTS_B)))),
    "x",
    "(18, 2)",
)
refused(
    "clf.predict(numpy 2-D (N, 1), a DataFrame's .values)",
    lambda m: m.clf.predict(frame(text=TEXTS).values),
    "x",
    "(18, 1)",
)
refused(
    "clf.predict(2-D string tensor)",
    lambda m: m.clf.predict(tf.constant([TEXTS[:2]])),
    "x",
    "(1, 2)",
)
works(
    "clf.predict((Series, Series)): pairs",
    lambda m: m.clf.predict((pd.Series(TEXTS), pd.Series(TEXTS_B))),
    same_probabilities(lambda m: (TEXTS, TEXTS_B)),
)

# === DataFrames for fit and evaluate ========================================================

works(
    "clf.fit(DataFrame text, label) trains as lists do",
    fit_loss(lambda: _classifier(TINY_LABELS), frame(text=TEXTS, label=NAMES)),
    loss_equals(names_loss),
    trains=True,
)
works(
    "clf.fit(DataFrame text, labels) trains as lists do",
    fit_loss(lambda: _classifier(TINY_LABELS), frame(text=TEXTS, labels=NAMES)),
    loss_equals(names_loss),
    trains=True,
)
works(
    "clf.fit(DataFrame text, text_b, label) trains as pair lists do",
    fit_loss(
        lambda: _classifier(TINY_LABELS), frame(text=TEXTS, text_b=TEXTS_B, label=NAMES)
    ),
    loss_equals(fit_loss(lambda: _classifier(TINY_LABELS), (TEXTS, TEXTS_B), NAMES)),
    trains=True,
)
works(
    "clf.fit(DataFrame text, y a Series)",
    fit_loss(lambda: _classifier(TINY_LABELS), frame(text=TEXTS), pd.Series(NAMES)),
    loss_equals(names_loss),
    trains=True,
)
works(
    "clf.fit(list, y a one-column DataFrame)",
    fit_loss(lambda: _classifier(TINY_LABELS), TEXTS, frame(label=NAMES)),
    loss_equals(names_loss),
    trains=True,
)
works(
    "clf.fit(Series, y a categorical Series)",
    fit_loss(
        lambda: _classifier(TINY_LABELS),
        pd.Series(TEXTS),
        pd.Series(NAMES, dtype="category"),
    ),
    loss_equals(names_loss),
    trains=True,
)
works(
    "clf.fit(validation_data a DataFrame)",
    lambda m: (
        fit(
            _classifier(TINY_LABELS),
            TEXTS,
            NAMES,
            validation_data=frame(text=TEXTS, label=NAMES),
        ).history
    ),
    lambda m, h: len(h["val_loss"]) == 1 and np.isfinite(h["val_loss"][0]),
    trains=True,
)
works(
    "clf.evaluate(DataFrame text, label) = evaluate(lists)",
    lambda m: m.clf.evaluate(frame(text=TEXTS, label=NAMES), verbose=0),
    lambda m, got: np.allclose(got, m.clf.evaluate(TEXTS, NAMES, verbose=0), atol=1e-6),
)
refused(
    "clf.fit(DataFrame text, no label column and no y)",
    lambda m: fit(m.clf, frame(text=TEXTS)),
    "y",
    "'label'",
)
refused(
    "clf.fit(DataFrame with a label column and y as well)",
    lambda m: fit(m.clf, frame(text=TEXTS, label=NAMES), NAMES),
    "'label'",
    "y",
)
refused(
    "clf.fit(DataFrame label with a missing value)",
    lambda m: fit(m.clf, frame(text=TEXTS[:3], label=[NAMES[0], None, NAMES[2]])),
    "'label'",
    "[1]",
)
refused(
    "clf.fit(DataFrame of other names: sentence, target)",
    lambda m: fit(m.clf, frame(sentence=TEXTS, target=NAMES)),
    "'sentence'",
    "'target'",
    "'text'",
)
refused(
    "clf.fit(DataFrame text, label, 0 rows)",
    lambda m: fit(m.clf, pd.DataFrame({"text": pd.Series([], dtype=object), "label": []})),
    "x",
    "empty",
)
refused(
    "clf.fit(list, y a two-column DataFrame)",
    lambda m: fit(m.clf, TEXTS, frame(label=NAMES, other=NAMES)),
    "y",
    "'other'",
)
refused(
    "clf.evaluate(DataFrame text, label and an unread column)",
    lambda m: m.clf.evaluate(frame(text=TEXTS, label=NAMES, score=[1.0] * 18), verbose=0),
    "'score'",
)
refused(
    "clf.fit(numpy 2-D x)",
    lambda m: fit(m.clf, np.array(list(zip(TEXTS, TEXTS_B))), NAMES),
    "x",
    "(18, 2)",
)
refused(
    "clf.fit(validation_data a DataFrame without labels)",
    lambda m: fit(m.clf, TEXTS, NAMES, validation_data=frame(text=TEXTS)),
    "validation_data",
    "'label'",
)

# === labels that read as numbers ============================================================

INTS = [c + 1 for c in CLASS]  # star ratings 1..3, meant as the names "1".."3"


def digits_loss(targets):
    return fit_loss(lambda: _classifier(DIGITS), TEXTS, targets)


refused(
    "labels '1','2','3', fit with int targets: ambiguous",
    lambda m: fit(m.digits, TEXTS, INTS),
    "y[0]",
    "ambiguous",
    "class index 1 (label '2')",
    "label '1'",
)
refused(
    "labels '1','2','3', fit with int targets 1 and 2 (in index range): ambiguous",
    lambda m: fit(m.digits, TEXTS[:4], [1, 2, 2, 1]),
    "y[0]",
    "ambiguous",
)
refused(
    "labels '1','2','3', fit with numpy int64 targets: ambiguous",
    lambda m: fit(m.digits, TEXTS, np.array(INTS)),
    "ambiguous",
)
refused(
    "labels '1','2','3', fit with a DataFrame int label column: ambiguous",
    lambda m: fit(m.digits, frame(text=TEXTS, label=INTS)),
    "ambiguous",
)
refused(
    "labels '1','2','3', evaluate with int targets: ambiguous",
    lambda m: m.digits.evaluate(TEXTS, INTS, verbose=0),
    "ambiguous",
)
refused(
    "labels '1','2','3', fit with a dataset of (text, int): ambiguous",
    lambda m: fit(m.digits, tf.data.Dataset.from_tensor_slices((TEXTS, INTS))),
    "ambiguous",
)
refused(
    "labels '-1','1', fit with int targets -1 and 1: ambiguous",
    lambda m: fit(_classifier(["-1", "1"]), TEXTS[:4], [-1, 1, -1, 1]),
    "ambiguous",
)
works(
    "labels '1','2','3', fit with str targets: names, as named labels train",
    digits_loss([str(v) for v in INTS]),
    loss_equals(names_loss),
    trains=True,
)
works(
    "labels '1','2','3', fit with a DataFrame str label column",
    fit_loss(lambda: _classifier(DIGITS), frame(text=TEXTS, label=[str(v) for v in INTS])),
    loss_equals(names_loss),
    trains=True,
)
works(
    "labels '1','2','3', targets mapped from indices: [labels[i] for i in y]",
    digits_loss([DIGITS[c] for c in CLASS]),
    loss_equals(names_loss),
    trains=True,
)
works(
    "labels '1','2','3', evaluate with str targets = named labels'",
    lambda m: m.digits.evaluate(TEXTS, [str(v) for v in INTS], verbose=0),
    lambda m, got: np.allclose(
        got, _classifier(TINY_LABELS).evaluate(TEXTS, NAMES, verbose=0), atol=1e-6
    ),
)
works(
    "labels '1','2','3', predict a dataset of (text, int): labels ignored",
    lambda m: m.digits.predict(tf.data.Dataset.from_tensor_slices((TEXTS, INTS))),
    lambda m, got: np.allclose(got, m.digits.predict(TEXTS), atol=1e-6),
)
works(
    "default labels '0','1','2' (num_classes=3), int targets: both readings agree",
    fit_loss(lambda: _classifier(num_classes=3), TEXTS, CLASS),
    loss_equals(names_loss),
    trains=True,
)
works(
    "named labels, int targets: class indices",
    fit_loss(lambda: _classifier(TINY_LABELS), TEXTS, CLASS),
    loss_equals(names_loss),
    trains=True,
)
refused(
    "named labels, int target out of range",
    lambda m: fit(m.clf, TEXTS[:3], [0, 1, 5]),
    "y[2]",
    "0...2",
)
refused(
    "named labels, int target -1",
    lambda m: fit(m.clf, TEXTS[:3], [0, -1, 2]),
    "y[1]",
    "0...2",
)
refused(
    "named labels, unknown str targets: all named",
    lambda m: fit(m.clf, TEXTS[:4], ["sport", "sprot", "tech", "bussiness"]),
    "'sprot'",
    "'bussiness'",
)
refused(
    "labels '1','2','3', float targets from a column with NaN dropped",
    lambda m: fit(m.digits, TEXTS[:3], [1.0, 2.0, 3.0]),
    "y[0]",
    "'1.0'",
)

# === batch_size and the other numbers =======================================================


def answers(n):
    return lambda m, got: len(got) == n


for bad, kind in (
    (-1, "1 or more"),
    (0, "1 or more"),
    (1.5, "float"),
    ("8", "str"),
    (True, "bool"),
):
    refused(
        f"clf.predict(batch_size={bad!r})",
        lambda m, bad=bad: m.clf.predict(TEXTS, batch_size=bad),
        "batch_size",
        kind,
    )
works(
    "clf.predict(batch_size=None): the default",
    lambda m: m.clf.predict(TEXTS, batch_size=None),
    same_probabilities(lambda m: TEXTS),
)
works(
    "clf.predict(batch_size=4): 18 rows in batches of 4",
    lambda m: m.clf.predict(TEXTS, batch_size=4),
    same_probabilities(lambda m: TEXTS),
)
works(
    "clf.predict(batch_size=numpy int64)",
    lambda m: m.clf.predict(TEXTS, batch_size=np.int64(5)),
    same_probabilities(lambda m: TEXTS),
)
refused(
    "clf.predict([], batch_size=0): checked without texts too",
    lambda m: m.clf.predict([], batch_size=0),
    "batch_size",
)
refused(
    "clf.predict_labels(batch_size=-1)",
    lambda m: m.clf.predict_labels(TEXTS, batch_size=-1),
    "batch_size",
)
refused(
    "clf.predict(ids, batch_size=0)",
    lambda m: m.clf.predict(m.clf.preprocessor(TEXTS[:2]), batch_size=0),
    "batch_size",
)
for bad in (0, -1, 1.5, "8"):
    refused(
        f"clf.fit(batch_size={bad!r})",
        lambda m, bad=bad: fit(m.clf, TEXTS, NAMES, batch_size=bad),
        "batch_size",
    )
    refused(
        f"clf.evaluate(batch_size={bad!r})",
        lambda m, bad=bad: m.clf.evaluate(TEXTS, NAMES, batch_size=bad, verbose=0),
        "batch_size",
    )
for bad in (0, -2, 1.5, "2", None):
    refused(
        f"clf.fit(epochs={bad!r})",
        lambda m, bad=bad: fit(m.clf, TEXTS, NAMES, epochs=bad),
        "epochs",
    )
refused(
    "clf.fit(steps_per_epoch=0)",
    lambda m: fit(m.clf, TEXTS, NAMES, steps_per_epoch=0),
    "steps_per_epoch",
)
refused(
    "clf.fit(initial_epoch=1, epochs=1): no epoch would run",
    lambda m: fit(m.clf, TEXTS, NAMES, epochs=1, initial_epoch=1),
    "initial_epoch",
)
refused(
    "TextClassifier(num_classes='3')",
    lambda m: zoo.TextClassifier(m.clf.encoder, "3", m.clf.preprocessor),
    "num_classes",
)
refused(
    "TextClassifier(num_classes=2.5)",
    lambda m: zoo.TextClassifier(m.clf.encoder, 2.5, m.clf.preprocessor),
    "num_classes",
)
refused(
    "TextClassifier.from_checkpoint(sequence_length='16')",
    lambda m: zoo.TextClassifier.from_checkpoint(m.directory, sequence_length="16"),
    "sequence_length",
)
refused(
    "TextClassifier.from_checkpoint(sequence_length=0)",
    lambda m: zoo.TextClassifier.from_checkpoint(m.directory, sequence_length=0),
    "sequence_length",
)
refused(
    "TextClassifier.from_checkpoint(max_windows=0)",
    lambda m: zoo.TextClassifier.from_checkpoint(m.directory, max_windows=0),
    "max_windows",
)
refused(
    "TextClassifier.from_checkpoint(doc_stride=1.5)",
    lambda m: zoo.TextClassifier.from_checkpoint(m.directory, doc_stride=1.5),
    "doc_stride",
)
refused(
    "TextQuestionAnswerer(doc_stride='8')",
    lambda m: zoo.TextQuestionAnswerer(m.qa.encoder, m.qa.preprocessor, doc_stride="8"),
    "doc_stride",
)
refused(
    "TextQuestionAnswerer(max_answer_length=0)",
    lambda m: zoo.TextQuestionAnswerer(
        m.qa.encoder, m.qa.preprocessor, max_answer_length=0
    ),
    "max_answer_length",
)

# === the tagger and the question answerer ===================================================

TAG_TEXTS = ["the bank said", "the market fell today", "the film"]
TAG_ROWS = [["B-ORG", "I-ORG", "O"], ["O", "B-ORG", "O", "O"], ["O", "O"]]

works(
    "tagger.predict(DataFrame text): one answer per row",
    lambda m: m.tagger.predict(frame(text=TAG_TEXTS)),
    lambda m, got: (
        [w.shape for w in got] == [w.shape for w in m.tagger.predict(TAG_TEXTS)]
        and all(
            np.allclose(a, b, equal_nan=True)
            for a, b in zip(got, m.tagger.predict(TAG_TEXTS))
        )
    ),
)
works(
    "tagger.predict_entities(Series)",
    lambda m: m.tagger.predict_entities(pd.Series(TAG_TEXTS)),
    lambda m, got: got == m.tagger.predict_entities(TAG_TEXTS),
)
works(
    "tagger.evaluate(DataFrame text, tags) = evaluate(lists)",
    lambda m: m.tagger.evaluate(frame(text=TAG_TEXTS, tags=TAG_ROWS), verbose=0),
    lambda m, got: np.allclose(got, m.tagger.evaluate(TAG_TEXTS, TAG_ROWS, verbose=0)),
)
refused(
    "tagger.predict(DataFrame sentence)",
    lambda m: m.tagger.predict(frame(sentence=TAG_TEXTS)),
    "'sentence'",
    "'text'",
)
refused(
    "tagger.fit(DataFrame text, label): a tagger's targets are 'tags'",
    lambda m: fit(m.tagger, frame(text=TAG_TEXTS, label=["O"] * 3)),
    "'label'",
    "'tags'",
)
refused(
    "tagger.predict(batch_size=0)",
    lambda m: m.tagger.predict(TAG_TEXTS, batch_size=0),
    "batch_size",
)
refused(
    "tagger.predict_entities(batch_size='8')",
    lambda m: m.tagger.predict_entities(TAG_TEXTS, batch_size="8"),
    "batch_size",
)
refused(
    "tagger.predict(numpy 2-D)",
    lambda m: m.tagger.predict(np.array([TAG_TEXTS[:2]])),
    "(1, 2)",
)

QA_FRAME = dict(question=[q for q, _ in PAIRS], context=[c for _, c in PAIRS])
works(
    "qa.predict(DataFrame question, context): one answer per row",
    lambda m: m.qa.predict(frame(**QA_FRAME)),
    lambda m, got: got == m.qa.predict(PAIRS) and len(got) == len(PAIRS),
)
works(
    "qa.evaluate(DataFrame question, context, answer with None) = evaluate(lists)",
    lambda m: m.qa.evaluate(frame(**QA_FRAME, answer=["market", None] * 3), verbose=0),
    lambda m, got: np.allclose(got, m.qa.evaluate(PAIRS, ["market", None] * 3, verbose=0)),
)
refused(
    "qa.predict(DataFrame text, text_b)",
    lambda m: m.qa.predict(frame(text=QA_FRAME["question"], text_b=QA_FRAME["context"])),
    "'question'",
    "'context'",
)
refused(
    "qa.predict(numpy 2-D (N, 2))",
    lambda m: m.qa.predict(np.array(PAIRS)),
    "(6, 2)",
)
refused(
    "qa.predict(batch_size=1.5)",
    lambda m: m.qa.predict(PAIRS, batch_size=1.5),
    "batch_size",
)

# zoo.predict.open_predictor (what `zoo predict` and scripts call) checks its
# numbers as the text models do.
for bad in (0, -1, 1.5, "8", True, None):
    refused(
        f"open_predictor(batch_size={bad!r})",
        lambda m, bad=bad: open_predictor(m.directory, batch_size=bad),
        "--batch-size",
    )
works(
    "open_predictor(batch_size=2) answers every text",
    lambda m: open_predictor(m.directory, batch_size=2).predict(TEXTS[:5]),
    lambda m, got: len(got) == 5,
)


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(name, id=name, marks=[pytest.mark.slow] if name in SLOW else [])
        for name in SPECS
    ],
)
def test_tables_and_labels(models, name):
    check_case(AREA, SPECS[name](models))
