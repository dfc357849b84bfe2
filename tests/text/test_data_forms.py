"""One `--data` vocabulary: every command reads the same forms through
`read_task_examples`, and export/validate say which split calibrates and
which validates."""

import csv

import pytest

from zoo.cli import build_parser
from zoo.cli.runs import DATA_HELP
from zoo.text.readers import (
    calibration_and_validation,
    read_data,
    read_task_examples,
    validation_data,
)
from zoo.train.data import load_task_data


def _class_folders(root, texts_per_label):
    for label, texts in texts_per_label.items():
        (root / label).mkdir(parents=True)
        for i, text in enumerate(texts):
            (root / label / f"{i:03d}.txt").write_text(text)


def _csv(path, rows, header=("text", "label")):
    with open(path, "w", newline="") as f:
        csv.writer(f).writerows([list(header)] + rows)


@pytest.fixture
def split_folders(tmp_path):
    """data/train/{neg,pos}/*.txt and data/test/{neg,pos}/*.txt."""
    data = tmp_path / "data"
    _class_folders(
        data / "train",
        {"neg": ["train neg 0", "train neg 1"], "pos": ["train pos 0", "train pos 1"]},
    )
    _class_folders(
        data / "test", {"neg": ["test neg 0"], "pos": ["test pos 0", "test pos 1"]}
    )
    return data


def test_split_folder_of_class_folders_calibrates_on_train_validates_on_test(split_folders):
    calibration, texts, labels, note = calibration_and_validation(
        split_folders, calibration_size=3, min_validation=1
    )
    assert calibration == ["train neg 0", "train neg 1", "train pos 0"]
    assert texts == ["test neg 0", "test pos 0", "test pos 1"]
    assert labels == ["neg", "pos", "pos"]
    assert note["calibration"] == f"the train split of {split_folders} (first 3 of 4 texts)"
    assert note["validation"] == f"the test split of {split_folders} (3 texts)"
    assert note["overlap"] is False
    # zoo validate runs the texts zoo export validated on.
    assert read_data(split_folders) == (texts, labels)
    assert validation_data(split_folders)[2] == note["validation"]
    # ... and zoo finetune / evaluate see the same test split, read by the same reader.
    task = load_task_data(split_folders, "classify")
    assert [(e.text, e.label) for e in task.splits["test"]] == list(zip(texts, labels))
    assert (
        "train=train" in task.split_rule and "carved out as validation" in task.split_rule
    )


def test_split_folder_of_csv_files(tmp_path):
    _csv(tmp_path / "train.csv", [[f"train {i}", "ab"[i % 2]] for i in range(5)])
    _csv(tmp_path / "dev.csv", [["dev 0", "a"], ["dev 1", "b"]])
    _csv(tmp_path / "test.csv", [["test 0", "b"], ["test 1", "a"]])
    calibration, texts, labels, note = calibration_and_validation(
        tmp_path, calibration_size=2
    )
    assert calibration == ["train 0", "train 1"]
    assert (texts, labels) == (["test 0", "test 1"], ["b", "a"])
    assert "train split" in note["calibration"] and "test split" in note["validation"]

    # No test split: validation (dev) is what an export is validated on.
    (tmp_path / "test.csv").unlink()
    _, texts, _, note = calibration_and_validation(tmp_path, calibration_size=2)
    assert texts == ["dev 0", "dev 1"]
    assert note["validation"] == f"the validation split of {tmp_path} (2 texts)"


def test_split_entries_may_mix_forms_and_labels_are_optional_for_export(tmp_path):
    _class_folders(tmp_path / "train", {"a": ["one"], "b": ["two"]})
    _csv(tmp_path / "test.csv", [["q?", "ctx"], ["r", "s"]], header=("text", "text_b"))
    calibration, texts, labels, _ = calibration_and_validation(tmp_path)
    assert calibration == ["one", "two"]
    assert texts == [("q?", "ctx"), ("r", "s")] and labels is None
    # Training still needs labels, and says so with the file and line.
    with pytest.raises(ValueError, match=r"test.csv.*header must name `text` and `label`"):
        load_task_data(tmp_path, "classify")


def test_unsplit_data_keeps_the_last_texts_for_calibration(tmp_path):
    _csv(tmp_path / "d.csv", [[f"t{i}", "ab"[i % 2]] for i in range(10)])
    calibration, texts, labels, note = calibration_and_validation(
        tmp_path / "d.csv", calibration_size=3, min_validation=5
    )
    assert calibration == ["t7", "t8", "t9"] and texts == [f"t{i}" for i in range(7)]
    assert labels == list("abababa") and note["overlap"] is False
    assert note["calibration"].startswith("the last 3 of 10 texts")
    calibration, texts, _, note = calibration_and_validation(
        tmp_path / "d.csv", calibration_size=3, min_validation=8
    )
    assert (
        calibration == ["t0", "t1", "t2"] and len(texts) == 10 and note["overlap"] is True
    )
    assert "overlap" in note["validation"]
    assert read_data(tmp_path / "d.csv")[0] == [f"t{i}" for i in range(10)]


def test_tagging_and_qa_data_give_texts_to_export(tmp_path):
    for name in ("train", "test"):
        (tmp_path / f"{name}.conll").write_text(
            f"EU B-ORG\nrejects O\n\n{name} O\nPeter B-PER\n"
        )
    texts, labels = read_data(tmp_path, "tag")
    assert texts == ["EU rejects", "test Peter"] and labels is None
    assert load_task_data(tmp_path, "tag").splits["test"][1].words == ("test", "Peter")
    with pytest.raises(ValueError, match="--data bbc is a classification corpus"):
        read_data("bbc", "tag")


def test_errors_name_the_forms_including_the_split_folder(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(
        ValueError,
        match=r"found no class sub-folders holding \.txt files.*"
        r"train/ and test/",
    ):
        read_data(tmp_path / "empty")
    # train/ alone is not a split folder: it would be read as one class.
    _class_folders(tmp_path / "only_train" / "train", {"a": ["x"]})
    with pytest.raises(
        ValueError,
        match=r"train look\(s\) like a split: a split folder needs "
        r"`train` and `test`",
    ):
        read_data(tmp_path / "only_train")
    with pytest.raises(
        FileNotFoundError,
        match=r"--data .*missing: no such file or folder\. "
        r"Give `bbc`.*`train` and `test`",
    ):
        read_task_examples(tmp_path / "missing")
    (tmp_path / "ner").mkdir()
    with pytest.raises(ValueError, match="ner: is a folder; tagging data is a CoNLL file"):
        load_task_data(tmp_path / "ner", "tag")


def test_every_data_command_has_the_same_data_help():
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    helps = {}
    for name in ("finetune", "evaluate", "distill", "prune", "export", "validate"):
        helps[name] = next(a.help for a in sub.choices[name]._actions if a.dest == "data")
    assert set(helps.values()) == {DATA_HELP}
    assert "train" in DATA_HELP and "class sub-folders" in DATA_HELP and "bbc" in DATA_HELP
