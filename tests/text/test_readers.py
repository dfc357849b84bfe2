"""Readers against hand-checked examples (the task metrics are in
tests/train/test_metrics.py, the split rule in tests/datasets/test_splits.py)."""

import csv
import json
import re

import pytest

from zoo.text.readers import (
    TaggedSentence,
    calibration_and_validation,
    find_split_files,
    read_classification,
    read_conll,
    read_data,
    read_squad,
)


def test_class_folders_csv_tsv_jsonl(tmp_path):
    for label, texts in {"sport": ["Goal!", "A win."], "tech": ["New chip."]}.items():
        (tmp_path / "folders" / label).mkdir(parents=True)
        for i, t in enumerate(texts):
            (tmp_path / "folders" / label / f"{i}.txt").write_text(t)
    folder = read_classification(tmp_path / "folders")
    assert [(e.text, e.label) for e in folder] == [
        ("Goal!", "sport"),
        ("A win.", "sport"),
        ("New chip.", "tech"),
    ]

    (tmp_path / "d.csv").write_text(
        'text,text_b,label\n"Hi, there",,greet\nBye,Later,leave\n'
    )
    rows = read_classification(tmp_path / "d.csv")
    assert (
        rows[0].text == "Hi, there" and rows[0].text_b is None and rows[1].text_b == "Later"
    )

    (tmp_path / "d.tsv").write_text("label\ttext\npos\tgreat film\n")
    assert read_classification(tmp_path / "d.tsv")[0].label == "pos"

    (tmp_path / "d.jsonl").write_text(json.dumps({"text": "x", "label": 1}) + "\n\n")
    assert read_classification(tmp_path / "d.jsonl")[0].label == "1"


def test_classification_errors_name_the_problem(tmp_path):
    (tmp_path / "bad.csv").write_text("sentence,label\nhello,x\n")
    with pytest.raises(
        ValueError, match=r"header must name `text` and `label`.*\['sentence', 'label'\]"
    ):
        read_classification(tmp_path / "bad.csv")
    (tmp_path / "bad.jsonl").write_text('{"text": "a"}\n')
    with pytest.raises(ValueError, match=r"bad.jsonl:1: missing `label`"):
        read_classification(tmp_path / "bad.jsonl")
    (tmp_path / "broken.jsonl").write_text("{not json\n")
    with pytest.raises(ValueError, match=r"broken.jsonl:1: not valid JSON"):
        read_classification(tmp_path / "broken.jsonl")
    with pytest.raises(ValueError, match="unsupported file type '.xml'"):
        (tmp_path / "a.xml").write_text("<a/>")
        read_classification(tmp_path / "a.xml")
    with pytest.raises(FileNotFoundError, match="no such file"):
        read_classification(tmp_path / "missing")


def test_one_class_one_spelling_and_every_class_folder_read(tmp_path):
    """`1` and `1.0` (or `pos` and `pos `) trained as two classes, and a
    class folder of .TXT files vanished from the labels without a word."""
    (tmp_path / "mixed.jsonl").write_text(
        '{"text": "a", "label": 1}\n{"text": "b", "label": 1.0}\n{"text": "c", "label": 0}\n'
    )
    with pytest.raises(ValueError, match="labels '1' and '1.0' name the same class"):
        read_classification(tmp_path / "mixed.jsonl")
    (tmp_path / "spaced.csv").write_text('text,label\na,pos\nb,"pos "\nc,neg\n')
    with pytest.raises(ValueError, match="labels 'pos' and 'pos ' name the same class"):
        read_classification(tmp_path / "spaced.csv")
    (tmp_path / "versions.csv").write_text("text,label\na,1.1\nb,1.10\nc,2\n")
    assert {e.label for e in read_classification(tmp_path / "versions.csv")} == {
        "1.1",
        "1.10",
        "2",
    }
    for label, name in (("pos", "a.txt"), ("neg", "b.TXT"), ("neu", "c.txt")):
        (tmp_path / "folders" / label).mkdir(parents=True)
        (tmp_path / "folders" / label / name).write_text(f"a {label} text")
    read = read_classification(tmp_path / "folders")
    assert sorted({e.label for e in read}) == ["neg", "neu", "pos"]
    (tmp_path / "folders" / "neu" / "c.txt").write_text("  \n")
    with pytest.raises(ValueError, match=r"class folder\(s\) \['neu'\] hold no non-empty"):
        read_classification(tmp_path / "folders")


def test_conll(tmp_path):
    (tmp_path / "a.conll").write_text(
        "-DOCSTART- -X- O O\n\nEU NNP B-NP B-ORG\nrejects VBZ B-VP O\n"
        "German JJ B-NP B-MISC\n\nPeter NNP B-NP B-PER\nBlackburn NNP I-NP I-PER\n"
    )
    sentences = read_conll(tmp_path / "a.conll")
    assert sentences == [
        TaggedSentence(("EU", "rejects", "German"), ("B-ORG", "O", "B-MISC")),
        TaggedSentence(("Peter", "Blackburn"), ("B-PER", "I-PER")),
    ]
    (tmp_path / "b.conll").write_text("lonely\n")
    with pytest.raises(ValueError, match=r"b.conll:1: expected `WORD ... TAG`"):
        read_conll(tmp_path / "b.conll")


def _squad(path, qas, context="Paris is the capital of France."):
    path.write_text(
        json.dumps(
            {
                "version": "2.0",
                "data": [{"title": "t", "paragraphs": [{"context": context, "qas": qas}]}],
            }
        )
    )
    return path


def test_squad_v1_and_v2(tmp_path):
    examples = read_squad(
        _squad(
            tmp_path / "s.json",
            [
                {
                    "id": "q1",
                    "question": "What is the capital of France?",
                    "answers": [{"text": "Paris", "answer_start": 0}],
                },
                {
                    "id": "q2",
                    "question": "What is the capital of Spain?",
                    "answers": [],
                    "is_impossible": True,
                },
            ],
        )
    )
    assert examples[0].answers == (("Paris", 0),) and not examples[0].is_impossible
    assert examples[1].is_impossible and examples[1].answers == ()
    with pytest.raises(ValueError, match="answer 'Paris' is not at answer_start=3"):
        read_squad(
            _squad(
                tmp_path / "bad.json",
                [
                    {
                        "id": "q",
                        "question": "?",
                        "answers": [{"text": "Paris", "answer_start": 3}],
                    }
                ],
            )
        )


@pytest.mark.parametrize(
    "qas, message",
    [
        # Two questions under one id: predictions are keyed by id, so the
        # second's answer was scored for both (EM 0.5 with perfect logits).
        (
            [
                {
                    "id": "1",
                    "question": "a?",
                    "answers": [{"text": "Paris", "answer_start": 0}],
                },
                {
                    "id": "1",
                    "question": "b?",
                    "answers": [{"text": "France", "answer_start": 24}],
                },
            ],
            r"id '1' is also the id of data\[0\].paragraphs\[0\].qas\[0\]",
        ),
        # The string "false" was read as true.
        (
            [
                {
                    "id": "q",
                    "question": "?",
                    "answers": [{"text": "Paris", "answer_start": 0}],
                    "is_impossible": "false",
                }
            ],
            '`is_impossible` is "false"; expected true or false',
        ),
        # Empty text passed the offset check at any offset.
        (
            [{"id": "q", "question": "?", "answers": [{"text": "", "answer_start": 9999}]}],
            "an answer's text is ''",
        ),
        (
            [{"id": "q", "question": "?", "answers": [{"text": "", "answer_start": 0}]}],
            "an answer's text is ''",
        ),
    ],
)
def test_squad_refuses_what_would_score_or_train_wrongly(tmp_path, qas, message):
    with pytest.raises(ValueError, match=message):
        read_squad(_squad(tmp_path / "s.json", qas))


def test_explicit_split_files(tmp_path):
    for name in ("train.jsonl", "dev.jsonl", "test.jsonl"):
        (tmp_path / name).write_text('{"text": "a", "label": "x"}\n')
    found = find_split_files(tmp_path)
    assert set(found) == {"train", "validation", "test"}
    assert found["validation"].name == "dev.jsonl"


def test_read_data_folder_csv_jsonl(tmp_path):
    for label in ("sport", "tech"):
        (tmp_path / "folder" / label).mkdir(parents=True)
        (tmp_path / "folder" / label / "1.txt").write_text(f"a {label} story")
    texts, labels = read_data(tmp_path / "folder")
    assert texts == ["a sport story", "a tech story"] and labels == ["sport", "tech"]
    with open(tmp_path / "d.csv", "w", newline="") as f:
        csv.writer(f).writerows([["text", "label"], ["one, two", "x"], ["three", "y"]])
    assert read_data(tmp_path / "d.csv") == (["one, two", "three"], ["x", "y"])
    (tmp_path / "d.jsonl").write_text(
        '{"text": "q?", "text_b": "ctx"}\n\n{"text": "r", "text_b": "s"}\n'
    )
    assert read_data(tmp_path / "d.jsonl") == ([("q?", "ctx"), ("r", "s")], None)
    with pytest.raises(
        ValueError, match=r"must name a `text` column.*found \['sentence'\]"
    ):
        (tmp_path / "bad.csv").write_text("sentence\nx\n")
        read_data(tmp_path / "bad.csv")
    with pytest.raises(ValueError, match="unsupported file type"):
        (tmp_path / "d.txt").write_text("x")
        read_data(tmp_path / "d.txt")
    with pytest.raises(FileNotFoundError, match="Give `bbc`"):
        read_data(tmp_path / "missing.csv")


@pytest.mark.assets
def test_bbc_data_is_the_fixed_test_split(bbc_split):
    texts, labels = read_data("bbc")
    assert len(texts) == len(bbc_split["test"]) == 426 and set(labels) == {
        "business",
        "entertainment",
        "politics",
        "sport",
        "tech",
    }
    calibration, val_texts, val_labels, note = calibration_and_validation("bbc")
    assert val_texts == texts and len(calibration) == 200 and note["overlap"] is False
    assert not set(calibration) & set(texts)


def test_odd_but_legal_files_read_as_jsonl_does(tmp_path):
    """A CSV/TSV field over csv's default 131,072-character limit, a
    byte-order mark and CRLF lines read as the same text in .jsonl does."""
    long = "word " * 40_000
    (tmp_path / "a.csv").write_text(
        f'\ufefftext,label\r\n"{long}",x\r\nshort,y\r\n', encoding="utf-8"
    )
    (tmp_path / "a.tsv").write_text(f"text\tlabel\n{long}\tx\nshort\ty\n")
    (tmp_path / "a.jsonl").write_text(
        "\ufeff" + json.dumps({"text": long, "label": "x"}) + "\n"
        '{"text": "short", "label": "y"}\n'
    )
    expected = read_classification(tmp_path / "a.jsonl")
    assert expected[0].text == long
    assert read_classification(tmp_path / "a.csv") == expected
    assert read_classification(tmp_path / "a.tsv") == expected


def test_malformed_files_name_the_file_and_line(tmp_path):
    cases = {
        "deep.jsonl": (
            '{"text": "a", "label": "x"}\n' + "[" * 50_000 + "\n",
            ":2: JSON nested",
        ),
        "wide.csv": ("text,label\nhello, world,x\n", ":2: 3 fields"),
        "unclosed.csv": ('text,label\n"a,x\nb,y\nc,z\n', ":2: not valid CSV"),
        "quote.tsv": ('text\tlabel\n"Hi," she said\tx\n', ":2: not valid TSV"),
        "twice.csv": ("text,text,label\na,b,x\n", "names `text` more than once"),
        "list.jsonl": ('{"text": ["a"], "label": "x"}\n', ":1: `text` is a JSON list"),
    }
    for name, (content, message) in cases.items():
        (tmp_path / name).write_text(content)
        with pytest.raises(
            ValueError,
            match=re.escape(f"{name}{message}" if message[0] == ":" else message),
        ):
            read_classification(tmp_path / name)
    (tmp_path / "latin.csv").write_bytes(b"text,label\nok,x\ncaf\xe9,y\n")
    with pytest.raises(ValueError, match=r"latin.csv:3: not UTF-8 text"):
        read_classification(tmp_path / "latin.csv")
    (tmp_path / "deep.json").write_text('{"data": ' + "[" * 50_000 + "}")
    with pytest.raises(ValueError, match="deep.json: JSON nested too deeply"):
        read_squad(tmp_path / "deep.json")
    squad = {"data": [{"paragraphs": [{"context": "c", "qas": [{"question": "?"}]}]}]}
    (tmp_path / "noid.json").write_text(json.dumps(squad))
    with pytest.raises(ValueError, match=r"noid.json: .*has no `id`"):
        read_squad(tmp_path / "noid.json")


def test_an_empty_or_blank_cell_is_named_as_such_not_as_missing(tmp_path):
    for name, row in [
        ("empty", '{"text": "", "label": "a"}'),
        ("spaces", '{"text": "   ", "label": "a"}'),
        ("blank_label", '{"text": "words", "label": " "}'),
    ]:
        path = tmp_path / f"{name}.jsonl"
        path.write_text(row + "\n")
        with pytest.raises(
            ValueError, match=r":1: `(text|label)` is empty or only whitespace"
        ):
            read_classification(path)
    (tmp_path / "absent.jsonl").write_text('{"label": "a"}\n')
    with pytest.raises(ValueError, match=r"absent.jsonl:1: missing `text`"):
        read_classification(tmp_path / "absent.jsonl")
    (tmp_path / "texts.jsonl").write_text('{"text": "  "}\n')
    with pytest.raises(ValueError, match=r"`text` is empty or only whitespace"):
        read_classification(tmp_path / "texts.jsonl", labelled=False)


def test_a_file_of_another_format_is_refused_by_name_not_misread(tmp_path):
    """A JSONL row splits into whitespace columns as a CoNLL line does: read
    as CoNLL it was one long 'sentence' and the error spoke of empty splits."""
    from zoo.text.readers import read_conll, read_squad

    rows = tmp_path / "data.jsonl"
    rows.write_text('{"text": "the bank", "label": "business"}\n' * 3)
    with pytest.raises(
        ValueError, match=r"data.jsonl: tagging data is a CoNLL file .*not \.jsonl"
    ):
        read_conll(rows)
    with pytest.raises(
        ValueError, match=r"data.jsonl: QA data is a SQuAD JSON file, not \.jsonl"
    ):
        read_squad(rows)
