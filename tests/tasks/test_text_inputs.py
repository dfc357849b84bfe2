"""The text models' input rules as functions, without a model: the one rule
for int targets and label names that read as numbers, positive ints, and
pandas found without importing it (tests/reliability/test_api_inputs.py
runs them through the models)."""

import sys

import numpy as np
import pytest

from zoo.tasks.text_classifier import _label_names
from zoo.tasks.text_task import is_frame, positive_int


@pytest.mark.parametrize(
    "labels, targets, want",
    [
        (["neg", "pos"], [1, 0], ["pos", "neg"]),  # indices
        (["0", "1", "2"], [2, np.int64(0)], ["2", "0"]),  # default names: readings agree
        (["1", "2", "3"], ["3", b"1"], ["3", "1"]),  # str and bytes: names
        (["neg", "pos"], ["pos"], ["pos"]),
    ],
)
def test_targets_read_as_names_or_indices(labels, targets, want):
    assert _label_names(targets, labels, "y") == want


@pytest.mark.parametrize(
    "labels, targets, names",
    [
        (["1", "2", "3"], [1], ["ambiguous", "class index 1 (label '2')", "label '1'"]),
        (["1", "2", "3"], [3], ["ambiguous", "outside 0...2", "label '3'"]),
        (["-1", "1"], [np.int64(-1)], ["ambiguous"]),
        (["1", "0"], [0], ["ambiguous"]),  # the default names reordered
        (["neg", "pos"], [2], ["y[0]", "outside 0...1"]),
        (["neg", "pos"], [True], ["'True'"]),  # a bool is no index
        (
            ["neg", "pos"],
            ["bad", "pos", "worse", "bad"],
            ["y[0]", "'bad'", "'worse'", "2 unknown"],
        ),
    ],
)
def test_ambiguous_out_of_range_and_unknown_targets_are_refused(labels, targets, names):
    with pytest.raises(ValueError) as e:
        _label_names(targets, labels, "y")
    for name in names:
        assert name in str(e.value)


def test_predict_ignores_labels_so_either_reading_passes():
    assert _label_names([3], ["1", "2", "3"], "label", ignored=True) == ["3"]


@pytest.mark.parametrize(
    "value, error, names",
    [
        (0, ValueError, ["batch_size", "1 or more", "0"]),
        (-1, ValueError, ["-1"]),
        (1.5, TypeError, ["float"]),
        ("8", TypeError, ["str", "pass 8"]),
        (True, TypeError, ["bool"]),
        (None, TypeError, ["None"]),
    ],
)
def test_positive_int_refuses_naming_the_argument(value, error, names):
    with pytest.raises(error) as e:
        positive_int(value, "batch_size")
    for name in ["batch_size", *names]:
        assert name in str(e.value)


def test_positive_int_takes_ints_and_a_default():
    assert positive_int(np.int32(4), "batch_size") == 4
    assert positive_int(None, "batch_size", 16) == 16
    assert positive_int(None, "batch_size", None) is None


def test_pandas_is_looked_up_not_imported(monkeypatch):
    import pandas  # installed by `make setup`: missing, this fails rather than skips

    frame = pandas.DataFrame({"text": ["a"]})
    assert is_frame(frame)
    monkeypatch.setitem(sys.modules, "pandas", None)  # as if never imported
    assert not is_frame(frame)
