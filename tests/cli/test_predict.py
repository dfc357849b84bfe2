"""`zoo predict` (zoo.predict): one text, or a file of them, through a zoo
model directory, its `.tflite` artifact and its SavedModel; the same answers
from each; taggers' entity offsets and QA's answer offsets; bad input."""

import csv
import json

import numpy as np
import pytest

from export import Quantization, ServingVersion, Signatures, Validation
from export.saved_model import export_saved_model
from export.tflite import export_tflite
from tests.export.conftest import (
    TINY_LABELS,
    VOCABULARY,
    make_tiny,
    sentences,
    softmax_regression,
)
from zoo.checkpoints import save_model_dir
from zoo.cli import main
from zoo.models.bert_encoder import padding_mean
from zoo.predict import open_predictor
from zoo.tasks.decode import word_spans
from zoo.text.tokenizer import WordPieceTokenizer

LENGTH = 32


def _decisive(model, scale):
    """Scale the head so the random tiny model's answers have clear margins
    (formats then agree on labels, not just within float error)."""
    kernel, bias = model.output_dense.get_weights()
    model.output_dense.set_weights([kernel * scale, bias])
    return model


def _varied_classifier(tokenizer):
    """The tiny classifier with a head fitted (numpy) to the texts' first
    word, so its labels vary from text to text with clear margins."""
    model = make_tiny("classifier")
    texts = sentences(300, seed=5)
    ids = tokenizer(texts, sequence_length=LENGTH)
    pooled = np.asarray(
        padding_mean(model.encoder(ids)["sequence_output"], ids["padding_mask"])
    )
    targets = np.array([len(t.split()[0]) % 3 for t in texts])
    kernel, bias = softmax_regression(pooled, targets, 3, steps=500)
    model.output_dense.set_weights([kernel * 4, bias * 4])
    return model


@pytest.fixture(scope="module")
def formats(tmp_path_factory):
    root = tmp_path_factory.mktemp("predict")
    tokenizer = WordPieceTokenizer(VOCABULARY)
    model = _varied_classifier(tokenizer)
    model_dir = save_model_dir(model, root / "model", tokenizer)
    texts = sentences(200, seed=3)
    labels = [TINY_LABELS[i % 3] for i in range(200)]
    common = dict(validation=Validation(texts, labels), source_dir=model_dir)
    tfl = export_tflite(
        model,
        tokenizer,
        root / "phone",
        quantization=Quantization("float32"),
        signatures=Signatures((LENGTH,)),
        **common,
    )
    export_saved_model(
        model,
        tokenizer,
        root / "serving",
        serving=ServingVersion("tiny"),
        sequence_length=LENGTH,
        **common,
    )
    return {"model": model_dir, "tflite": tfl, "saved_model": root / "serving" / "tiny"}


def _json_lines(capsys):
    out = capsys.readouterr().out
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def test_the_three_formats_give_the_same_answers(formats, tmp_path, capsys):
    texts = sentences(40, seed=11)
    path = tmp_path / "texts.txt"
    path.write_text("\n".join(texts[:20]) + "\n\n" + "\n".join(texts[20:]) + "\n")
    answers = {}
    for name, where in formats.items():
        assert (
            main(
                [
                    "predict",
                    "--model",
                    str(where),
                    "--input",
                    str(path),
                    "--json",
                    "--quiet",
                ]
            )
            == 0
        )
        answers[name] = _json_lines(capsys)
    reference = answers["model"]
    assert len(reference) == 40 and [a["input"] for a in reference][19:22] == [20, 22, 23]
    for a in reference:
        assert a["label"] in TINY_LABELS and set(a["scores"]) == set(TINY_LABELS)
        assert abs(sum(a["scores"].values()) - 1) < 1e-4 and a["windows"] == 1
        assert a["label"] == max(a["scores"], key=a["scores"].get)
    for name in ("tflite", "saved_model"):
        assert [a["label"] for a in answers[name]] == [a["label"] for a in reference], name
        diff = max(
            abs(a["scores"][k] - b["scores"][k])
            for a, b in zip(answers[name], reference)
            for k in TINY_LABELS
        )
        assert diff <= 1e-4, (name, diff)
    labels = [a["label"] for a in reference]
    assert len(set(labels)) > 1  # a model that says one thing would prove little
    # One text on the command line: the top 3 (all here) with probabilities.
    assert main(["predict", "--model", str(formats["tflite"]), "--text", texts[0]]) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith(labels[0] + " ") and len(line.split()) == 6


def test_long_texts_take_windows_in_every_format(formats, capsys):
    long_text = " ".join(sentences(12, seed=4))  # ~150 pieces: several 32-token windows
    got = {}
    for name, where in formats.items():
        assert (
            main(
                [
                    "predict",
                    "--model",
                    str(where),
                    "--text",
                    long_text,
                    "--json",
                    "--max-windows",
                    "4",
                    "--sequence-length",
                    str(LENGTH),
                ]
            )
            == 0
        )
        got[name] = _json_lines(capsys)[0]
    assert {a["windows"] for a in got.values()} == {4}
    assert len({a["label"] for a in got.values()}) == 1
    predictor = open_predictor(formats["tflite"])  # an artifact defaults to one window
    assert predictor.predict([long_text])[0]["windows"] == 1


def test_csv_jsonl_pairs_and_top_k(formats, tmp_path, capsys):
    texts = sentences(6, seed=8)
    csv_path = tmp_path / "in.csv"
    csv_path.write_text(
        "text,text_b\n"
        + "\n".join(f'"{a}","{b}"' for a, b in zip(texts[:3], texts[3:]))
        + "\n"
    )
    jsonl = tmp_path / "in.jsonl"
    jsonl.write_text(
        "\n".join(
            json.dumps({"text": a, "text_b": b}) for a, b in zip(texts[:3], texts[3:])
        )
        + "\n"
    )
    rows = []
    for path in (csv_path, jsonl):
        assert (
            main(
                [
                    "predict",
                    "--model",
                    str(formats["model"]),
                    "--input",
                    str(path),
                    "--json",
                    "--top-k",
                    "1",
                ]
            )
            == 0
        )
        rows.append(_json_lines(capsys))
    assert [r["input"] for r in rows[0]] == [2, 3, 4] and [r["input"] for r in rows[1]] == [
        1,
        2,
        3,
    ]
    assert [r["label"] for r in rows[0]] == [r["label"] for r in rows[1]]
    assert all(len(r["scores"]) == 1 for r in rows[0])


def test_tagger_entities_and_qa_answers_carry_offsets(tmp_path, capsys):
    tokenizer = WordPieceTokenizer(VOCABULARY)
    tagger = _decisive(make_tiny("tagger"), scale=10.0)
    tagger_dir = save_model_dir(tagger, tmp_path / "tagger", tokenizer)
    phone = export_tflite(
        tagger,
        tokenizer,
        tmp_path / "tagger_phone",
        quantization=Quantization("float32"),
        signatures=Signatures((LENGTH,)),
    )
    texts = ["  the  market shares   of bank water ", *sentences(9, seed=2)]
    got = {}
    for name, where in (("model", tagger_dir), ("tflite", phone)):
        got[name] = open_predictor(where).predict(texts)
    assert [a["tags"] for a in got["model"]] == [a["tags"] for a in got["tflite"]]
    assert [[(e["start"], e["end"]) for e in a["entities"]] for a in got["model"]] == [
        [(e["start"], e["end"]) for e in a["entities"]] for a in got["tflite"]
    ]
    found = 0
    for text, answer in zip(texts, got["model"]):
        assert len(answer["tags"]) == len(text.split())
        for e in answer["entities"]:
            assert text[e["start"] : e["end"]] == e["text"] and e["label"] in ("ORG", "PER")
            assert not e["text"].startswith(" ") and 0 < e["score"] <= 1
            found += 1
    assert found > 0
    assert main(["predict", "--model", str(tagger_dir), "--text", texts[0]]) == 0
    assert capsys.readouterr().out.strip()

    qa = make_tiny("qa")
    qa_dir = save_model_dir(qa, tmp_path / "qa", tokenizer)
    context = "  The bank said  shares of the market fell ,  then water  rose ."
    assert (
        main(
            [
                "predict",
                "--model",
                str(qa_dir),
                "--text",
                "what fell ?",
                "--text-b",
                context,
                "--json",
            ]
        )
        == 0
    )
    answer = _json_lines(capsys)[0]
    assert answer["answer"] and context[answer["start"] : answer["end"]] == answer["answer"]
    assert 0 < answer["score"] <= 1
    assert main(["predict", "--model", str(qa_dir), "--text", "what fell ?"]) == 2
    assert "needs a question (text) and a context" in capsys.readouterr().err


def test_word_spans_match_whitespace_words():
    text = " a\u00a0b\tc  d\n"
    assert [text[a:b] for a, b in word_spans(text)] == text.split()


def test_bad_input_gets_a_clear_error(formats, tmp_path, capsys):
    model = str(formats["model"])
    cases = [
        (["--model", model], "give --text"),
        (["--model", model, "--text", "a", "--input", "x.txt"], "not both"),
        (
            ["--model", model, "--text", "a", "--text", "b", "--text-b", "c"],
            "--text-b goes with exactly one --text",
        ),
        (["--model", model, "--input", str(tmp_path / "x.pdf")], "expected a .txt"),
        (["--model", model, "--input", str(tmp_path / "missing.txt")], "no such file"),
        (
            ["--model", str(tmp_path / "nowhere"), "--text", "a"],
            "no such file or directory",
        ),
        (
            ["--model", str(formats["tflite"] / "model.tflite"), "--text", "a"],
            "give the artifact directory",
        ),
        (["--model", str(tmp_path), "--text", "a"], "neither a zoo model directory"),
        (["--model", model, "--text", "   "], "non-empty string"),
        (["--model", model, "--text", "a", "--top-k", "0"], "--top-k must be >= 1"),
        # The artifact is fine; the flag is not (LiteRT's own error blamed the file).
        (
            ["--model", str(formats["tflite"]), "--text", "a", "--threads", "0"],
            "--threads must be >= 1; received 0",
        ),
        (["--model", model, "--text", "a", "--threads", "-1"], "--threads must be >= 1"),
        # The third text is bad, in the second batch of one: named as the third.
        (
            [
                "--model",
                model,
                "--text",
                "a",
                "--text",
                "b",
                "--text",
                " ",
                "--batch-size",
                "1",
            ],
            '--text 3: "text" must be a non-empty string',
        ),
        (
            ["--model", model, "--text", "a", "--text", "b\udcff"],
            "--text 2: `text` holds '\\udcff' (U+DCFF)",
        ),
    ]
    bad_jsonl = tmp_path / "bad.jsonl"
    bad_jsonl.write_text('{"text": "the market"}\n[1, 2]\n')
    cases.append(
        (["--model", model, "--input", str(bad_jsonl)], "line 2: expected an object")
    )
    missing_text = tmp_path / "bad2.jsonl"
    missing_text.write_text('{"text": "the market"}\n\n{"txt": "the bank"}\n')
    cases.append(
        (
            ["--model", model, "--input", str(missing_text)],
            'line 3: "text" must be a non-empty string',
        )
    )
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    cases.append((["--model", model, "--input", str(empty)], "no inputs in the file"))
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("caf\xe9 market\n".encode("latin-1"))
    cases.append((["--model", model, "--input", str(latin1)], "not UTF-8"))
    no_text_column = tmp_path / "cols.csv"
    no_text_column.write_text("body,label\nthe market,business\n")
    cases.append(
        (["--model", model, "--input", str(no_text_column)], 'needs a "text" column')
    )
    wide = tmp_path / "wide.csv"
    wide.write_text("text\nthe market, the bank\n")
    cases.append((["--model", model, "--input", str(wide)], "line 2: 2 fields"))
    unclosed = tmp_path / "unclosed.csv"
    unclosed.write_text('text\n"the market\nthe bank\n')
    cases.append((["--model", model, "--input", str(unclosed)], "line 2: not valid CSV"))
    deep = tmp_path / "deep.jsonl"
    deep.write_text('{"text": "a"}\n' + "[" * 100_000 + "]" * 100_000 + "\n")
    cases.append((["--model", model, "--input", str(deep)], "line 2: JSON nested too"))
    for argv, message in cases:
        assert main(["predict", *argv]) == 2, argv
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err, (argv, err)


def test_csv_input_reads_as_jsonl_does(formats, tmp_path, capsys):
    """A field over csv's default limit (131,072 characters), a byte-order
    mark and CRLF lines: the same answers as the .jsonl of the same texts."""
    texts = [" ".join(sentences(4000, seed=1))[:150_000], "The market fell."]
    assert len(texts[0]) > 131_072
    as_csv = tmp_path / "in.csv"
    with open(as_csv, "w", encoding="utf-8-sig", newline="") as f:
        csv.writer(f, lineterminator="\r\n").writerows([["text"], *[[t] for t in texts]])
    as_jsonl = tmp_path / "in.jsonl"
    as_jsonl.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    answers = []
    for path in (as_csv, as_jsonl):
        assert (
            main(["predict", "--model", str(formats["model"]), "--input", str(path)]) == 0
        )
        answers.append(
            [line.split("\t")[1] for line in capsys.readouterr().out.splitlines()]
        )
    assert answers[0] == answers[1] and len(answers[0]) == 2
