"""Task data splits: data with train and test but no validation gets a
validation split carved out of train (the test split never selects a model
or stops training), and the split rule says so."""

import csv

import pytest

from zoo.train.data import load_task_data


def _write(path, rows):
    with open(path, "w", newline="") as f:
        csv.writer(f).writerows([["text", "label"]] + rows)


def _rows(n, offset=0):
    return [[f"text number {i + offset}", "ab"[i % 2]] for i in range(n)]


def test_train_and_test_only_carves_validation_from_train(tmp_path):
    _write(tmp_path / "train.csv", _rows(50))
    _write(tmp_path / "test.csv", _rows(20, 1000))
    data = load_task_data(tmp_path, "classify")
    assert len(data.splits["validation"]) == 5 and len(data.splits["train"]) == 45
    assert len(data.splits["test"]) == 20
    assert not {e.text for e in data.splits["validation"]} & {
        e.text for e in data.splits["test"]
    }
    assert not {e.text for e in data.splits["validation"]} & {
        e.text for e in data.splits["train"]
    }
    assert "carved out as validation" in data.split_rule


def test_train_and_validation_only_says_where_the_metrics_come_from(tmp_path):
    _write(tmp_path / "train.csv", _rows(50))
    _write(tmp_path / "dev.csv", _rows(20, 1000))
    data = load_task_data(tmp_path, "classify")
    assert len(data.splits["validation"]) == 20 and not data.splits.get("test")
    assert "no test split" in data.split_rule


def test_explicit_three_splits_are_kept(tmp_path):
    for name, n in (("train", 30), ("validation", 10), ("test", 10)):
        _write(tmp_path / f"{name}.csv", _rows(n, 100 * n))
    data = load_task_data(tmp_path, "classify")
    assert [len(data.splits[k]) for k in ("train", "validation", "test")] == [30, 10, 10]


def test_too_little_data_for_a_validation_split(tmp_path):
    _write(tmp_path / "d.csv", [["only one", "a"], ["only two", "b"]])
    with pytest.raises(ValueError, match="validation"):
        load_task_data(tmp_path / "d.csv", "classify")


def test_repeated_texts_are_dropped_and_the_split_rule_says_how_many(tmp_path):
    # Two repeats agree with the first; one gives another label.
    rows = _rows(40) + [
        ["text number 3", "b"],
        ["text number 4", "a"],
        ["text number 5", "a"],
    ]
    _write(tmp_path / "d.csv", rows)
    data = load_task_data(tmp_path / "d.csv", "classify")
    assert sum(len(v) for v in data.splits.values()) == 40
    assert "3 repeated example(s) dropped, the first of each kept" in data.split_rule
    assert "(1 of them with another label than the first" in data.split_rule
    kept = {e.text: e.label for v in data.splits.values() for e in v}
    assert kept["text number 5"] == "b"  # the first, as documented
    _write(tmp_path / "clean.csv", _rows(40))
    assert "repeated" not in load_task_data(tmp_path / "clean.csv", "classify").split_rule
