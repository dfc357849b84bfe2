"""Reliability corpus (issue #35), three areas:

- "odd input files": legal but unusual data files in every reader of user
  files (`--data` readers, `zoo predict`/`zoo similarity --input`, model
  directories' JSON): a CSV field over csv's default 131,072-character
  limit, deeply nested JSON, a NUL byte, a BOM, CRLF, a header-only file, a
  huge single line, malformed quoting, rows wider than their header. Legal
  data reads as the same text does from .txt/.jsonl; the rest is refused
  naming the file (and line).
- "Python API misuse": what `zoo.TextClassifier`, `TextTagger` and
  `TextQuestionAnswerer` are given in place of texts (a dict of texts, a
  bare str where a list is due, numbers, None, wrong nesting, empty data),
  and `from_checkpoint(labels=...)` against the checkpoint's head.
- "untrusted configs": a `.keras` file's config naming a path (a FIFO, a
  file) where the saved form holds inline data; loading must refuse it
  without opening the path.

Each case is its own pytest item, its name the id; the models, the files and
the configs each area reads are made once per module (fixtures).
"""

import base64
import contextlib
import io
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import types
import zipfile

# isort: off
import zoo  # first: sets TensorFlow's log level and Keras's backend

# isort: on
import keras
import numpy as np
import pytest
import tensorflow as tf

from tests.export.conftest import TINY, TINY_LABELS, VOCABULARY, sentences
from tests.reliability.corpus import answer, case_ids, check_case, error
from zoo.checkpoints import load_model_dir, save_model_dir
from zoo.cli import main
from zoo.cli.predict import read_inputs
from zoo.cli.runs import CliError
from zoo.text import readers
from zoo.text.preprocessor import TextPreprocessor
from zoo.text.sentencepiece_tokenizer import SentencePieceTokenizer
from zoo.text.tokenizer import WordPieceTokenizer

# Slow (hundreds of cases through real models: minutes on 2 cores): `make
# test` runs the corpus, `make test-quick` does not.
pytestmark = pytest.mark.slow

LENGTH = 16
TAGS = ["O", "B-ORG", "I-ORG", "B-PER"]
# A legal text longer than csv's default field limit (131,072 characters).
LONG = ("the market shares fell . " * 9000)[:200_000]
# Deeper than Python's JSON decoder can recurse (RecursionError).
DEEP = "[" * 100_000 + "]" * 100_000


class Hung(Exception):
    """A case ran past its time limit (counted as a crash)."""


def limited(cases, seconds=60):
    """`cases` with each run stopped after `seconds` (SIGALRM, main thread):
    a hang, e.g. reading an infinite dataset into a list, is a finding."""

    def wrap(run):
        def timed():
            def stop(signum, frame):
                raise Hung(f"still running after {seconds} s")

            previous = signal.signal(signal.SIGALRM, stop)
            signal.alarm(seconds)
            try:
                return run()
            finally:
                signal.alarm(0)
                signal.signal(signal.SIGALRM, previous)

        return timed

    for case in cases:
        case.run = wrap(case.run)
    return cases


# Each area's cases are built twice: at import over placeholders (UNBUILT
# paths, None for models and configs), for their names only, so that pytest
# gives each case its own id; and once per module over the real files and
# models (a module fixture), for running. Building a case runs nothing (its
# work is in `run`), so the placeholders are never read.
UNBUILT = pathlib.Path("/unbuilt")


def by_name(cases, names):
    """`cases` by name, each time-limited (`limited`); their names must be
    the ids collected (`names`), each once."""
    found = {case.name: case for case in limited(cases)}
    assert len(found) == len(cases), "two cases share a name"
    assert list(found) == list(names), "the cases differ from the ids collected"
    return found


class CliFailure(ValueError):
    """`zoo` exited 2 with this message (no traceback)."""


def cli(*argv):
    def run():
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            try:
                code = main([str(a) for a in argv])
            except SystemExit as e:  # argparse's own errors
                code = e.code
        if code == 2:
            raise CliFailure(err.getvalue())
        return {"exit": code, "lines": out.getvalue().splitlines()}

    return run


def _encoder(seed=7):
    keras.utils.set_random_seed(seed)
    return zoo.BertEncoder(vocabulary_size=len(VOCABULARY), **TINY)


def _write(path, text, encoding="utf-8", newline=""):
    with open(path, "w", encoding=encoding, newline=newline) as f:
        f.write(text)
    return path


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    tokenizer = WordPieceTokenizer(VOCABULARY)
    pre = TextPreprocessor(tokenizer, LENGTH)
    clf = zoo.TextClassifier(
        _encoder(), preprocessor=pre, labels=TINY_LABELS, pooling="mean"
    )
    tagger = zoo.TextTagger(_encoder(), preprocessor=pre, labels=TAGS)
    qa = zoo.TextQuestionAnswerer(_encoder(), preprocessor=TextPreprocessor(tokenizer, 32))
    named = zoo.Classifier(clf.encoder, 3, pooling="mean", labels=TINY_LABELS)
    named.set_weights(clf.get_weights())
    unnamed = zoo.Classifier(clf.encoder, 3, pooling="mean")
    unnamed.set_weights(clf.get_weights())
    tok_named = zoo.TokenClassifier(tagger.encoder, 4, labels=TAGS)
    tok_named.set_weights(tagger.get_weights())
    tok_unnamed = zoo.TokenClassifier(tagger.encoder, 4)
    tok_unnamed.set_weights(tagger.get_weights())
    extra = {"sequence_length": LENGTH}
    dirs = {
        "named": save_model_dir(named, root / "named", tokenizer, extra=extra),
        "unnamed": save_model_dir(unnamed, root / "unnamed", tokenizer, extra=extra),
        "encoder": save_model_dir(clf.encoder, root / "encoder", tokenizer),
        "text": clf.save_model_dir(root / "text"),
        "tag_named": save_model_dir(tok_named, root / "tag_named", tokenizer, extra=extra),
        "tag_unnamed": save_model_dir(
            tok_unnamed, root / "tag_unnamed", tokenizer, extra=extra
        ),
        "tag_text": tagger.save_model_dir(root / "tag_text"),
    }
    return {"clf": clf, "tagger": tagger, "qa": qa, "dirs": dirs, "root": root}


# === odd input files ======================================================================


def _write_odd_files(p, model):
    """Write the files `_odd_cases` reads under `p` (a copy of the model
    directory `model` among them)."""
    _write(p / "long.csv", f'text,label\n"{LONG}",sport\nshort one,tech\n')
    _write(p / "long.tsv", f"text\tlabel\n{LONG}\tsport\nshort one\ttech\n")
    _write(p / "long_b.csv", f'text,text_b,label\nshort,"{LONG}",sport\nshort,two,tech\n')
    _write(p / "reg.csv", f'text,text_b,score\n"{LONG}",b,3.5\nx,y,1\n')
    _write(p / "reg.tsv", f"text\ttext_b\tscore\n{LONG}\tb\t3.5\nx\ty\t1\n")
    _write(p / "pairs.csv", f'text,text_b\n"{LONG}",the market\na,b\n')
    _write(
        p / "pairs.jsonl",
        json.dumps({"text": LONG, "text_b": "the market"})
        + "\n"
        + json.dumps({"text": "a", "text_b": "b"})
        + "\n",
    )
    _write(p / "in.txt", f"{LONG}\nshort one\n")
    ok_row = json.dumps({"text": "the market", "label": "sport"})
    deep_row = '{"text": "a", "label": "sport", "meta": ' + DEEP + "}"
    _write(p / "deep.jsonl", ok_row + "\n" + deep_row + "\n")
    _write(
        p / "deep_reg.jsonl",
        json.dumps({"text": "a", "score": 1}) + "\n" + '{"text": ' + DEEP + "}\n",
    )
    _write(p / "deep_squad.json", '{"data": ' + DEEP + "}")
    _write(p / "deep_in.jsonl", json.dumps({"text": "a"}) + "\n" + DEEP + "\n")
    split = p / "split"
    split.mkdir()
    _write(split / "train.jsonl", ok_row + "\n" + deep_row + "\n")
    _write(split / "test.jsonl", ok_row + "\n")
    shallow = "[" * 100 + "]" * 100
    _write(
        p / "shallow.jsonl", '{"text": "a", "label": "sport", "meta": ' + shallow + "}\n"
    )
    _write(p / "nul.csv", "text,label\nbad\x00byte,sport\n")
    _write(p / "nul.txt", "bad\x00byte\nthe market\n")
    bom = "\ufeff"
    _write(p / "bom.csv", bom + "text,label\nthe market,sport\n")
    _write(p / "bom_reg.csv", bom + "text,score\nthe market,2.5\n")
    _write(p / "bom.jsonl", bom + ok_row + "\n")
    _write(p / "bom_in.csv", bom + "text\nthe market\n")
    _write(p / "bom_in.jsonl", bom + '{"text": "the market"}\n')
    _write(p / "bom_in.txt", bom + "the market\n")
    squad = {
        "data": [
            {
                "paragraphs": [
                    {
                        "context": "the market fell",
                        "qas": [
                            {
                                "id": "q1",
                                "question": "what fell ?",
                                "answers": [{"text": "market", "answer_start": 4}],
                            }
                        ],
                    }
                ]
            }
        ]
    }
    _write(p / "bom_squad.json", bom + json.dumps(squad))
    _write(p / "bom.conll", bom + "EU B-ORG\nrejects O\n")
    _write(p / "crlf.csv", "text,label\r\nthe market,sport\r\na b,tech\r\n")
    _write(p / "crlf.jsonl", ok_row + "\r\n" + ok_row + "\r\n")
    _write(p / "crlf.tsv", "text\tscore\r\nthe market\t1.5\r\n")
    _write(p / "crlf.txt", "the market\r\na b\r\n")
    _write(p / "header.csv", "text,label\n")
    _write(p / "header_reg.csv", "text,score\n")
    _write(p / "header_in.csv", "text\n")
    _write(p / "empty.csv", "")
    _write(p / "empty.jsonl", "\n\n")
    _write(p / "huge.txt", "market " * 150_000 + "\n")
    _write(
        p / "huge.jsonl", json.dumps({"text": "market " * 150_000, "label": "sport"}) + "\n"
    )
    latin_csv = p / "latin.csv"
    latin_csv.write_bytes("text,label\ncaf\xe9,sport\n".encode("latin-1"))
    latin_jsonl = p / "latin.jsonl"
    latin_jsonl.write_bytes(b'{"text": "caf\xe9", "score": 1}\n')
    latin_in = p / "latin_in.csv"
    latin_in.write_bytes(b"text\nthe market\ncaf\xe9\n")
    _write(p / "wide.csv", "text,label\nhello, world,sport\n")
    _write(p / "wide_empty.csv", "text,label\nhello,,sport,x\n")
    _write(p / "wide_in.csv", "text\nhello, world\n")
    _write(p / "dup.csv", "text,text,label\na,b,sport\n")
    _write(
        p / "unclosed.csv",
        'text,label\n"the market,sport\n' + "".join(f"row {i},tech\n" for i in range(50)),
    )
    _write(
        p / "unclosed_in.csv",
        'text\n"the market\n' + "".join(f"row {i}\n" for i in range(50)),
    )
    _write(p / "quote.tsv", 'text\tlabel\n"Hello," she said\tsport\n')
    _write(p / "list_text.jsonl", '{"text": ["a", "b"], "label": "sport"}\n')
    _write(p / "dict_label.jsonl", '{"text": "a", "label": {"x": 1}}\n')
    _write(
        p / "squad_nc.json",
        json.dumps(
            {"data": [{"paragraphs": [{"qas": squad["data"][0]["paragraphs"][0]["qas"]}]}]}
        ),
    )
    _write(p / "squad_str.json", json.dumps({"data": ["an article"]}))
    bad_start = json.loads(json.dumps(squad))
    bad_start["data"][0]["paragraphs"][0]["qas"][0]["answers"][0]["answer_start"] = "four"
    _write(p / "squad_bad_start.json", json.dumps(bad_start))
    no_id = json.loads(json.dumps(squad))
    del no_id["data"][0]["paragraphs"][0]["qas"][0]["id"]
    _write(p / "squad_no_id.json", json.dumps(no_id))
    nested_manifest = p / "nested_model"
    shutil.copytree(model, nested_manifest)
    (nested_manifest / "zoo_model.json").write_text('{"format": ' + DEEP + "}")

    _write(
        p / "long.jsonl",
        json.dumps({"text": LONG, "label": "sport"})
        + "\n"
        + json.dumps({"text": "short one", "label": "tech"})
        + "\n",
    )
    _write(p / "in.csv", f'text\n"{LONG}"\nshort one\n')
    _write(
        p / "in.jsonl",
        json.dumps({"text": LONG}) + "\n" + json.dumps({"text": "short one"}) + "\n",
    )


def _odd_cases(p, model):
    """The cases over the files `_write_odd_files(p, model)` writes."""
    csv_long = p / "long.csv"
    tsv_long = p / "long.tsv"
    csv_long_b = p / "long_b.csv"
    reg_csv = p / "reg.csv"
    reg_tsv = p / "reg.tsv"
    pairs_csv = p / "pairs.csv"
    pairs_jsonl = p / "pairs.jsonl"
    in_txt = p / "in.txt"
    deep_jsonl = p / "deep.jsonl"
    deep_reg = p / "deep_reg.jsonl"
    deep_squad = p / "deep_squad.json"
    deep_in = p / "deep_in.jsonl"
    shallow_jsonl = p / "shallow.jsonl"
    nul_csv = p / "nul.csv"
    nul_txt = p / "nul.txt"
    bom_csv = p / "bom.csv"
    bom_reg = p / "bom_reg.csv"
    bom_jsonl = p / "bom.jsonl"
    bom_in_csv = p / "bom_in.csv"
    bom_in_jsonl = p / "bom_in.jsonl"
    bom_in_txt = p / "bom_in.txt"
    bom_squad = p / "bom_squad.json"
    bom_conll = p / "bom.conll"
    crlf_csv = p / "crlf.csv"
    crlf_jsonl = p / "crlf.jsonl"
    crlf_tsv = p / "crlf.tsv"
    crlf_txt = p / "crlf.txt"
    header_csv = p / "header.csv"
    header_reg = p / "header_reg.csv"
    header_in = p / "header_in.csv"
    empty_csv = p / "empty.csv"
    empty_jsonl = p / "empty.jsonl"
    huge_txt = p / "huge.txt"
    huge_jsonl = p / "huge.jsonl"
    wide_csv = p / "wide.csv"
    wide_empty = p / "wide_empty.csv"
    wide_in = p / "wide_in.csv"
    dup_csv = p / "dup.csv"
    unclosed = p / "unclosed.csv"
    unclosed_in = p / "unclosed_in.csv"
    quote_tsv = p / "quote.tsv"
    list_text = p / "list_text.jsonl"
    dict_label = p / "dict_label.jsonl"
    squad_no_context = p / "squad_nc.json"
    squad_str = p / "squad_str.json"
    squad_bad_start = p / "squad_bad_start.json"
    squad_no_id = p / "squad_no_id.json"
    long_jsonl = p / "long.jsonl"
    in_csv = p / "in.csv"
    in_jsonl = p / "in.jsonl"
    split = p / "split"
    latin_csv = p / "latin.csv"
    latin_jsonl = p / "latin.jsonl"
    latin_in = p / "latin_in.csv"
    nested_manifest = p / "nested_model"

    def texts_of(path, **kw):
        return lambda: [e.text for e in readers.read_classification(path, **kw)]

    def records(path):
        return lambda: [r for _, r in read_inputs(path)]

    def same_output(a, b):
        """`zoo predict --json` on two files gives the same answers."""
        return lambda: (
            cli("predict", "--model", model, "--input", a, "--json")(),
            cli("predict", "--model", model, "--input", b, "--json")(),
        )

    def answers_equal(got):
        a, b = got
        strip = [
            {k: v for k, v in json.loads(x).items() if k != "input"} for x in a["lines"]
        ]
        strip_b = [
            {k: v for k, v in json.loads(x).items() if k != "input"} for x in b["lines"]
        ]
        return a["exit"] == b["exit"] == 0 and strip == strip_b and len(strip) == 2

    return [
        # --- a field longer than csv's default limit -------------------------------------
        answer(
            "long field: --data .csv",
            texts_of(csv_long),
            lambda t: t == [LONG, "short one"],
        ),
        answer(
            "long field: --data .tsv",
            texts_of(tsv_long),
            lambda t: t == [LONG, "short one"],
        ),
        answer(
            "long field: --data .csv text_b",
            lambda: [e.text_b for e in readers.read_classification(csv_long_b)],
            lambda t: t == [LONG, "two"],
        ),
        answer(
            "long field: --data .csv as .jsonl",
            lambda: (texts_of(csv_long)(), texts_of(long_jsonl)()),
            lambda got: got[0] == got[1],
        ),
        answer(
            "long field: export texts (labels optional) .csv",
            texts_of(csv_long, labelled=False),
            lambda t: t == [LONG, "short one"],
        ),
        answer(
            "long field: regression .csv",
            lambda: [e.text for e in readers.read_regression(reg_csv)],
            lambda t: t == [LONG, "x"],
        ),
        answer(
            "long field: regression .tsv",
            lambda: [e.text for e in readers.read_regression(reg_tsv)],
            lambda t: t == [LONG, "x"],
        ),
        answer(
            "long field: --data split folder via read_task_examples",
            lambda: [e.text for e in readers.read_task_examples(csv_long).examples],
            lambda t: t == [LONG, "short one"],
        ),
        answer(
            "long field: predict --input .csv (read_inputs)",
            records(in_csv),
            lambda r: [x["text"] for x in r] == [LONG, "short one"],
        ),
        answer(
            "long field: zoo predict --input .csv",
            cli("predict", "--model", model, "--input", in_csv, "--quiet"),
            lambda r: r["exit"] == 0 and len(r["lines"]) == 2,
        ),
        answer(
            "long field: zoo predict .csv answers = .jsonl answers",
            same_output(in_csv, in_jsonl),
            answers_equal,
        ),
        answer(
            "long field: zoo predict .csv answers = .txt answers",
            same_output(in_csv, in_txt),
            answers_equal,
        ),
        answer(
            "long field: zoo similarity --input .csv",
            cli(
                "similarity",
                "--model",
                model,
                "--input",
                pairs_csv,
                "--sequence-length",
                16,
            ),
            lambda r: r["exit"] == 0 and len(r["lines"]) == 2,
        ),
        answer(
            "long field: zoo similarity .csv = .jsonl",
            lambda: (
                cli(
                    "similarity",
                    "--model",
                    model,
                    "--input",
                    pairs_csv,
                    "--sequence-length",
                    16,
                )(),
                cli(
                    "similarity",
                    "--model",
                    model,
                    "--input",
                    pairs_jsonl,
                    "--sequence-length",
                    16,
                )(),
            ),
            # the same cosines (each line: the input's line in its file, a tab, the cosine)
            lambda got: (
                [line.split("\t")[1] for line in got[0]["lines"]]
                == [line.split("\t")[1] for line in got[1]["lines"]]
                and len(got[0]["lines"]) == 2
            ),
        ),
        # --- JSON nested deeper than the parser recurses ----------------------------------
        error(
            "nested JSON: --data .jsonl",
            lambda: readers.read_classification(deep_jsonl),
            f"{deep_jsonl}:2",
            "nested",
        ),
        error(
            "nested JSON: regression .jsonl",
            lambda: readers.read_regression(deep_reg),
            f"{deep_reg}:2",
            "nested",
        ),
        error(
            "nested JSON: SQuAD .json",
            lambda: readers.read_squad(deep_squad),
            str(deep_squad),
            "nested",
        ),
        error(
            "nested JSON: split folder train.jsonl",
            lambda: readers.read_task_examples(split),
            f"{split / 'train.jsonl'}:2",
        ),
        error(
            "nested JSON: export texts .jsonl",
            lambda: readers.read_task_examples(deep_jsonl, "tag", labelled=False),
            f"{deep_jsonl}:2",
        ),
        error(
            "nested JSON: read_inputs .jsonl",
            records(deep_in),
            str(deep_in),
            "line 2",
            errors=(ValueError, CliError),
        ),
        error(
            "nested JSON: zoo predict --input",
            cli("predict", "--model", model, "--input", deep_in, "--quiet"),
            str(deep_in),
            "line 2",
        ),
        error(
            "nested JSON: zoo similarity --input",
            cli(
                "similarity", "--model", model, "--input", deep_in, "--sequence-length", 16
            ),
            str(deep_in),
            "line 2",
        ),
        error(
            "nested JSON: a model directory's zoo_model.json",
            lambda: load_model_dir(nested_manifest),
            "zoo_model.json",
        ),
        answer(
            "JSON nested 100 deep: an ignored field",
            texts_of(shallow_jsonl),
            lambda t: t == ["a"],
        ),
        # --- neighbours --------------------------------------------------------------------
        answer(
            "NUL byte in a .csv field", texts_of(nul_csv), lambda t: t == ["bad\x00byte"]
        ),
        answer(
            "NUL byte in a .txt line (zoo predict)",
            cli("predict", "--model", model, "--input", nul_txt, "--quiet"),
            lambda r: r["exit"] == 0 and len(r["lines"]) == 2,
        ),
        answer("BOM: --data .csv", texts_of(bom_csv), lambda t: t == ["the market"]),
        answer(
            "BOM: regression .csv",
            lambda: [e.score for e in readers.read_regression(bom_reg)],
            lambda s: s == [2.5],
        ),
        answer("BOM: --data .jsonl", texts_of(bom_jsonl), lambda t: t == ["the market"]),
        answer(
            "BOM: read_inputs .csv",
            records(bom_in_csv),
            lambda r: [x.get("text") for x in r] == ["the market"],
        ),
        answer(
            "BOM: read_inputs .jsonl",
            records(bom_in_jsonl),
            lambda r: [x.get("text") for x in r] == ["the market"],
        ),
        answer(
            "BOM: read_inputs .txt",
            records(bom_in_txt),
            lambda r: [x.get("text") for x in r] == ["the market"],
        ),
        answer(
            "BOM: SQuAD .json",
            lambda: [e.question for e in readers.read_squad(bom_squad)],
            lambda q: q == ["what fell ?"],
        ),
        answer(
            "BOM: CoNLL",
            lambda: readers.read_conll(bom_conll)[0].words,
            lambda w: w == ("EU", "rejects"),
        ),
        answer(
            "CRLF: --data .csv", texts_of(crlf_csv), lambda t: t == ["the market", "a b"]
        ),
        answer(
            "CRLF: --data .jsonl", texts_of(crlf_jsonl), lambda t: t == ["the market"] * 2
        ),
        answer(
            "CRLF: regression .tsv",
            lambda: [(e.text, e.score) for e in readers.read_regression(crlf_tsv)],
            lambda r: r == [("the market", 1.5)],
        ),
        answer(
            "CRLF: read_inputs .txt",
            records(crlf_txt),
            lambda r: [x["text"] for x in r] == ["the market", "a b"],
        ),
        error(
            "header only: --data .csv",
            lambda: readers.read_classification(header_csv),
            str(header_csv),
            "no rows",
        ),
        error(
            "header only: regression .csv",
            lambda: readers.read_regression(header_reg),
            str(header_reg),
        ),
        error(
            "header only: zoo predict --input .csv",
            cli("predict", "--model", model, "--input", header_in, "--quiet"),
            str(header_in),
            "no inputs",
        ),
        error(
            "empty .csv (no header)",
            lambda: readers.read_classification(empty_csv),
            str(empty_csv),
            "header",
        ),
        error(
            "blank lines only .jsonl",
            lambda: readers.read_classification(empty_jsonl),
            str(empty_jsonl),
        ),
        answer(
            "huge single line .txt (zoo predict)",
            cli("predict", "--model", model, "--input", huge_txt, "--quiet"),
            lambda r: r["exit"] == 0 and len(r["lines"]) == 1,
        ),
        answer(
            "huge single line .jsonl",
            texts_of(huge_jsonl),
            lambda t: len(t) == 1 and len(t[0]) == 7 * 150_000,
        ),
        error(
            "not UTF-8: --data .csv",
            lambda: readers.read_classification(latin_csv),
            str(latin_csv),
            "UTF-8",
        ),
        error(
            "not UTF-8: regression .jsonl",
            lambda: readers.read_regression(latin_jsonl),
            str(latin_jsonl),
            "UTF-8",
        ),
        error(
            "not UTF-8: zoo predict --input .csv",
            cli("predict", "--model", model, "--input", latin_in, "--quiet"),
            str(latin_in),
            "UTF-8",
        ),
        error(
            "row wider than the header: --data .csv (unquoted comma)",
            lambda: readers.read_classification(wide_csv),
            f"{wide_csv}:2",
        ),
        error(
            "row wider than the header, empty label",
            lambda: readers.read_classification(wide_empty),
            f"{wide_empty}:2",
        ),
        error(
            "row wider than the header: zoo predict --input .csv",
            cli("predict", "--model", model, "--input", wide_in, "--quiet"),
            str(wide_in),
            "line 2",
        ),
        error(
            "a column named twice",
            lambda: readers.read_classification(dup_csv),
            str(dup_csv),
            "text",
        ),
        error(
            "unclosed quote swallows the rows below: --data .csv",
            lambda: readers.read_classification(unclosed),
            str(unclosed),
            "quote",
        ),
        error(
            "unclosed quote: zoo predict --input .csv",
            cli("predict", "--model", model, "--input", unclosed_in, "--quiet"),
            str(unclosed_in),
            "quote",
        ),
        error(
            "text after a closing quote: .tsv",
            lambda: readers.read_classification(quote_tsv),
            f"{quote_tsv}:2",
            "quote",
        ),
        error(
            "`text` is a list in .jsonl",
            lambda: readers.read_classification(list_text),
            f"{list_text}:1",
            "text",
        ),
        error(
            "`label` is an object in .jsonl",
            lambda: readers.read_classification(dict_label),
            f"{dict_label}:1",
            "label",
        ),
        error(
            "SQuAD paragraph without context",
            lambda: readers.read_squad(squad_no_context),
            str(squad_no_context),
            "context",
        ),
        error(
            "SQuAD article that is a string",
            lambda: readers.read_squad(squad_str),
            str(squad_str),
        ),
        error(
            "SQuAD answer_start not a number",
            lambda: readers.read_squad(squad_bad_start),
            str(squad_bad_start),
            "answer_start",
        ),
        error(
            "SQuAD question without id",
            lambda: readers.read_squad(squad_no_id),
            str(squad_no_id),
            "id",
        ),
    ]


ODD_NAMES = case_ids(_odd_cases(UNBUILT / "odd files", UNBUILT / "model"))


@pytest.fixture(scope="module")
def odd_cases(models, tmp_path_factory):
    p, model = tmp_path_factory.mktemp("odd_files"), models["dirs"]["named"]
    _write_odd_files(p, model)
    return by_name(_odd_cases(p, model), ODD_NAMES)


@pytest.mark.parametrize("name", ODD_NAMES, ids=str)
def test_odd_input_files(name, odd_cases):
    check_case("odd input files", odd_cases[name])


# === Python API misuse ====================================================================


def _dataset(*tensors):
    return tf.data.Dataset.from_tensor_slices(tensors if len(tensors) > 1 else tensors[0])


def _api_cases(models):
    """The cases over `models` (the module fixture's)."""
    clf, tagger, qa = models["clf"], models["tagger"], models["qa"]
    dirs = models["dirs"]
    texts = sentences(4, seed=2)
    labels = [TINY_LABELS[i % 3] for i in range(4)]
    tags = [["O"] * len(t.split()) for t in texts]
    pairs = [("what fell ?", "the market fell"), ("who ?", "the bank said")]

    def close(got, want=None):
        """`got` equals the classifier's probabilities of `texts` now (a case
        that trained the shared model by mistake changed them)."""
        want = clf.predict(texts) if want is None else want
        return (
            np.shape(got) == np.shape(want) and np.abs(np.asarray(got) - want).max() < 1e-6
        )

    def fit(model, *args, **kw):
        return lambda: model.fit(*args, epochs=1, verbose=0, **kw)

    cases = []
    # --- the classifier ------------------------------------------------------------------
    cases += [
        error(
            "clf.predict(dict of texts)",
            lambda: clf.predict({"text": texts}),
            "`x`",
            "dict",
        ),
        error(
            "clf.predict_labels(dict of texts)",
            lambda: clf.predict_labels({"text": texts}),
            "`x`",
            "dict",
        ),
        error(
            "clf.predict_logits(dict of texts)",
            lambda: clf.predict_logits({"text": texts, "text_b": texts}),
            "`x`",
            "dict",
        ),
        error(
            "clf.evaluate(dict of texts)",
            lambda: clf.evaluate({"text": texts}, labels, verbose=0),
            "`x`",
            "dict",
        ),
        error("clf.fit(dict of texts)", fit(clf, {"text": texts}, labels), "`x`", "dict"),
        error("clf.fit(y a dict)", fit(clf, texts, {"label": labels}), "`y`", "dict"),
        error("clf.predict(None)", lambda: clf.predict(None), "`x`", "None"),
        error("clf.predict(5)", lambda: clf.predict(5), "`x`", "int"),
        error("clf.predict(3.5)", lambda: clf.predict(3.5), "`x`", "float"),
        error("clf.predict([1, 2])", lambda: clf.predict([1, 2]), "x[0]", "int"),
        error("clf.predict([None])", lambda: clf.predict([None]), "x[0]", "None"),
        error(
            "clf.predict(list of word lists)",
            lambda: clf.predict([["a", "b", "c"]]),
            "x",
        ),
        error(
            "clf.predict(three levels of lists)",
            lambda: clf.predict([[["a", "b"]]]),
            "x",
        ),
        error(
            "clf.predict(2-D numpy array)",
            lambda: clf.predict(np.array([["a", "b"], ["c", "d"]])),
            "x",
        ),
        error(
            "clf.predict(2-D string tensor)",
            lambda: clf.predict(tf.constant([["a", "b"]])),
            "x",
        ),
        error(
            "clf.predict(invalid UTF-8 bytes)",
            lambda: clf.predict([b"ok", b"caf\xe9"]),
            "x[1]",
            "UTF-8",
        ),
        error(
            "clf.predict(lone surrogate)",
            lambda: clf.predict(["ok", "bad\udc80"]),
            "x[1]",
            "surrogate",
        ),
        error("clf.fit(bare str x)", fit(clf, texts[0], labels[0]), "`x`", "str"),
        error("clf.fit(bare str y)", fit(clf, texts[:1], "sport"), "`y`", "str"),
        error(
            "clf.evaluate(bare str x)",
            lambda: clf.evaluate("a", ["sport"], verbose=0),
            "`x`",
        ),
        error("clf.fit([], [])", fit(clf, [], []), "`x`", "empty"),
        error(
            "clf.evaluate([], [])", lambda: clf.evaluate([], [], verbose=0), "`x`", "empty"
        ),
        error(
            "clf.fit(empty validation_data)",
            fit(clf, texts, labels, validation_data=([], [])),
            "validation_data",
            "empty",
        ),
        error(
            "clf.fit(empty dataset)",
            fit(clf, _dataset(tf.constant([], tf.string), tf.constant([], tf.string))),
            "`x`",
            "empty",
        ),
        error("clf.fit(x, y of other lengths)", fit(clf, texts, labels[:3]), "4", "3"),
        error("clf.fit(None, labels)", fit(clf, None, labels), "`x`", "None"),
        error("clf.fit(texts, float labels)", fit(clf, texts, [0.5] * 4), "y[0]"),
        error(
            "clf.fit(dataset of dicts)",
            fit(clf, tf.data.Dataset.from_tensor_slices({"text": texts, "label": labels})),
            "x",
        ),
        answer(
            "clf.predict([]) is empty", lambda: clf.predict([]), lambda r: r.shape == (0, 3)
        ),
        answer(
            "clf.predict(one str) is a batch of one",
            lambda: clf.predict(texts[0]),
            lambda r: close(r, clf.predict(texts[:1])),
        ),
        answer(
            "clf.predict(generator of str)",
            lambda: clf.predict(t for t in texts),
            close,
        ),
        answer("clf.predict(tuple of str)", lambda: clf.predict(tuple(texts)), close),
        answer("clf.predict(numpy array)", lambda: clf.predict(np.array(texts)), close),
        answer(
            "clf.predict(tf.string tensor)", lambda: clf.predict(tf.constant(texts)), close
        ),
        answer(
            "clf.predict(dataset of texts)",
            lambda: clf.predict(_dataset(texts)),
            close,
        ),
        answer(
            "clf.predict(batched dataset of texts)",
            lambda: clf.predict(_dataset(texts).batch(3)),
            close,
        ),
        answer(
            "clf.predict(dataset of (text, label))",
            lambda: clf.predict(_dataset(texts, labels)),
            close,
        ),
        error(
            "clf.predict(dataset of (text, text_b)): the second item is no label",
            lambda: clf.predict(_dataset(texts, texts)),
            "x",
            "label",
        ),
        answer(
            "clf.predict_labels(dataset)",
            lambda: clf.predict_labels(_dataset(texts).batch(2)),
            lambda r: r == [TINY_LABELS[i] for i in clf.predict(texts).argmax(-1)],
        ),
        error(
            "clf.predict(infinite dataset)",
            lambda: clf.predict(_dataset(texts).repeat()),
            "x",
            "repeat",
        ),
    ]
    # --- the tagger ----------------------------------------------------------------------
    cases += [
        error(
            "tagger.predict(dict of texts)",
            lambda: tagger.predict({"text": texts}),
            "`x`",
            "dict",
        ),
        error(
            "tagger.predict_entities(dict of texts)",
            lambda: tagger.predict_entities({"text": texts}),
            "`x`",
            "dict",
        ),
        error(
            "tagger.fit(dict of texts)", fit(tagger, {"text": texts}, tags), "`x`", "dict"
        ),
        error(
            "tagger.evaluate(dict of texts)",
            lambda: tagger.evaluate({"text": texts}, tags, verbose=0),
            "`x`",
            "dict",
        ),
        error("tagger.predict(None)", lambda: tagger.predict(None), "`x`", "None"),
        error("tagger.predict(5)", lambda: tagger.predict(5), "`x`", "int"),
        error("tagger.predict([1])", lambda: tagger.predict([1]), "x[0]"),
        error(
            "tagger.predict(dataset)",
            lambda: tagger.predict(_dataset(texts)),
            "`x`",
            "Dataset",
        ),
        error("tagger.fit([], [])", fit(tagger, [], []), "`x`", "empty"),
        error(
            "tagger.evaluate([], [])",
            lambda: tagger.evaluate([], [], verbose=0),
            "`x`",
            "empty",
        ),
        error("tagger.fit(bare str x)", fit(tagger, "the bank", ["O", "O"]), "`x`", "str"),
        error(
            "tagger.fit(a tag list that is a bare str)",
            fit(tagger, ["bank"], ["O"]),
            "y[0]",
            "str",
        ),
        error("tagger.fit(x, y of other lengths)", fit(tagger, texts, tags[:2]), "4", "2"),
        answer(
            "tagger.predict([]) is empty", lambda: tagger.predict([]), lambda r: r == []
        ),
        answer(
            "tagger.predict(one str)",
            lambda: tagger.predict(texts[0]),
            lambda r: len(r) == 1 and r[0].shape == (len(texts[0].split()), 4),
        ),
    ]
    # --- the question answerer -----------------------------------------------------------
    questions = [q for q, _ in pairs]
    contexts = [c for _, c in pairs]
    cases += [
        error(
            "qa.predict(dict of columns)",
            lambda: qa.predict({"question": questions, "context": contexts}),
            "`x`",
            "dict",
        ),
        error(
            "qa.predict(one dict)",
            lambda: qa.predict({"question": "q ?", "context": "the market"}),
            "`x`",
            "dict",
        ),
        error(
            "qa.fit(dict of columns)",
            fit(qa, {"question": questions, "context": contexts}, ["market", ""]),
            "`x`",
            "dict",
        ),
        error("qa.predict(None)", lambda: qa.predict(None), "`x`"),
        error("qa.predict(5)", lambda: qa.predict(5), "`x`"),
        error("qa.predict(a list of str)", lambda: qa.predict(["what ?"]), "x", "pairs"),
        error("qa.predict(pair holding an int)", lambda: qa.predict([("q ?", 5)]), "x"),
        error(
            "qa.predict(dataset)",
            lambda: qa.predict(_dataset(questions, contexts)),
            "`x`",
            "Dataset",
        ),
        error("qa.fit([], [])", fit(qa, [], []), "`x`", "empty"),
        error(
            "qa.evaluate([], [])", lambda: qa.evaluate([], [], verbose=0), "`x`", "empty"
        ),
        error("qa.fit(bare str y)", fit(qa, pairs[:1], "market"), "`y`", "str"),
        error("qa.fit(x, y of other lengths)", fit(qa, pairs, ["market"]), "2", "1"),
        answer("qa.predict([]) is empty", lambda: qa.predict([]), lambda r: r == []),
        answer(
            "qa.predict(one (question, context) tuple)",
            lambda: qa.predict(pairs[0]),
            lambda r: len(r) == 1 and set(r[0]) == {"answer", "start", "end", "score"},
        ),
    ]
    # --- from_checkpoint(labels=...) against the head ------------------------------------
    reverse = TINY_LABELS[::-1]

    def clf_from(name, **kw):
        return lambda: zoo.TextClassifier.from_checkpoint(dirs[name], **kw)

    def tagger_from(name, **kw):
        return lambda: zoo.TextTagger.from_checkpoint(dirs[name], **kw)

    def labelled_as(want, name=None):
        """The model has labels `want` and, loaded from `dirs[name]`, the
        probabilities of that directory loaded without labels=."""

        def check(model):
            if model.labels != want:
                return False
            if name is None:
                return True
            plain = zoo.TextClassifier.from_checkpoint(dirs[name])
            return close(model.predict(texts), plain.predict(texts))

        return check

    cases += [
        error(
            "clf.from_checkpoint(fine-tuned, labels reversed)",
            clf_from("named", labels=reverse),
            str(reverse),
            str(TINY_LABELS),
        ),
        error(
            "clf.from_checkpoint(fine-tuned, two labels)",
            clf_from("named", labels=["a", "b"]),
            "['a', 'b']",
            str(TINY_LABELS),
        ),
        error(
            "clf.from_checkpoint(fine-tuned, num_classes 5)",
            clf_from("named", num_classes=5),
            "num_classes",
            "3",
        ),
        answer(
            "clf.from_checkpoint(fine-tuned, its own labels)",
            clf_from("named", labels=list(TINY_LABELS)),
            labelled_as(TINY_LABELS, "named"),
        ),
        answer(
            "clf.from_checkpoint(fine-tuned, no labels)",
            clf_from("named"),
            labelled_as(TINY_LABELS, "named"),
        ),
        error(
            "clf.from_checkpoint(saved TextClassifier, labels reversed)",
            clf_from("text", labels=reverse),
            str(reverse),
            str(TINY_LABELS),
        ),
        error(
            "clf.from_checkpoint(saved TextClassifier, four labels)",
            clf_from("text", labels=["a", "b", "c", "d"]),
            "['a', 'b', 'c', 'd']",
        ),
        answer(
            "clf.from_checkpoint(head without names, labels of its size)",
            clf_from("unnamed", labels=["neg", "neu", "pos"]),
            labelled_as(["neg", "neu", "pos"], "unnamed"),
        ),
        error(
            "clf.from_checkpoint(head without names, two labels)",
            clf_from("unnamed", labels=["neg", "pos"]),
            "['neg', 'pos']",
            "3",
        ),
        error(
            "clf.from_checkpoint(head without names, its default names reordered)",
            clf_from("unnamed", labels=["2", "1", "0"]),
            "['2', '1', '0']",
        ),
        answer(
            "clf.from_checkpoint(encoder only, labels reversed): a new head",
            clf_from("encoder", labels=reverse),
            labelled_as(reverse),
        ),
        error(
            "tagger.from_checkpoint(fine-tuned, labels reordered)",
            tagger_from("tag_named", labels=TAGS[::-1]),
            str(TAGS[::-1]),
            str(TAGS),
        ),
        error(
            "tagger.from_checkpoint(saved TextTagger, labels reordered)",
            tagger_from("tag_text", labels=TAGS[::-1]),
            str(TAGS[::-1]),
            str(TAGS),
        ),
        error(
            "tagger.from_checkpoint(head without names, 2 labels)",
            tagger_from("tag_unnamed", labels=["O", "B-X"]),
            "['O', 'B-X']",
            "4",
        ),
        answer(
            "tagger.from_checkpoint(head without names, labels of its size)",
            tagger_from("tag_unnamed", labels=["O", "B-X", "I-X", "B-Y"]),
            lambda m: m.labels == ["O", "B-X", "I-X", "B-Y"],
        ),
        answer(
            "tagger.from_checkpoint(fine-tuned, its own labels)",
            tagger_from("tag_named", labels=list(TAGS)),
            lambda m: m.labels == TAGS,
        ),
    ]
    cases += [
        error(
            "TextClassifier(labels='abc'), a str",
            lambda: zoo.TextClassifier(
                clf.encoder, preprocessor=clf.preprocessor, labels="abc"
            ),
            "labels",
            "str",
        ),
        error(
            "clf.from_checkpoint(head without names, labels a str)",
            clf_from("unnamed", labels="abc"),
            "labels",
            "str",
        ),
    ]
    return cases


API_NAMES = case_ids(_api_cases(dict.fromkeys(["clf", "tagger", "qa", "dirs"])))


@pytest.fixture(scope="module")
def api_cases(models):
    return by_name(_api_cases(models), API_NAMES)


@pytest.mark.parametrize("name", API_NAMES, ids=str)
def test_python_api_misuse(name, api_cases):
    check_case("Python API misuse", api_cases[name])


# === untrusted configs ====================================================================


def _keras_file(path, config):
    """A `.keras` archive holding only `config` (no weights)."""
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("config.json", json.dumps(config))
        archive.writestr(
            "metadata.json",
            json.dumps({"keras_version": keras.__version__, "date_saved": "2026-01-01"}),
        )
    return path


def _load_in_subprocess(path, timeout=45):
    """Load `path` with safe_mode in a fresh process; the exception it raises
    becomes this process's ValueError (its last line), a hang a TimeoutError."""

    def run():
        script = (
            "import zoo, keras\n"
            f"keras.saving.load_model({str(path)!r}, safe_mode=True)\n"
            "print('LOADED')\n"
        )
        try:
            done = subprocess.run(
                [sys.executable, "-c", script],
                capture_output=True,
                text=True,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired:
            raise TimeoutError(f"loading {path} hung for {timeout} s") from None
        if done.returncode != 0:
            last = [line for line in done.stderr.splitlines() if line.strip()]
            raise ValueError(last[-1] if last else f"exit {done.returncode}")
        return done.stdout

    return run


@pytest.fixture(scope="module")
def spiece_model():
    spm = pytest.importorskip("sentencepiece")
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(sentences(300, seed=1)),
        model_writer=model,
        vocab_size=60,
        model_type="unigram",
        pad_id=0,
        unk_id=1,
        bos_id=-1,
        eos_id=-1,
        user_defined_symbols=["[CLS]", "[SEP]", "[MASK]"],
        minloglevel=2,
    )
    return model.getvalue()


@pytest.fixture(scope="module")
def untrusted_cases(models, tmp_path_factory, spiece_model):
    """The files and configs `_untrusted_cases` edits, written once under
    the directory it returns (the names `_untrusted_cases` reads)."""
    root = tmp_path_factory.mktemp("untrusted")
    (root / "vocab.txt").write_text("\n".join(VOCABULARY) + "\n")
    os.mkfifo(root / "fifo")
    (root / "spiece.model").write_bytes(b"not a sentencepiece model")
    (root / "spiece_dir").mkdir()
    (root / "spiece_dir" / "spiece.model").write_bytes(spiece_model)
    configs = types.SimpleNamespace(
        tokenizer=WordPieceTokenizer(VOCABULARY).get_config(),
        sentencepiece=SentencePieceTokenizer(spiece_model).get_config(),
        preprocessor=TextPreprocessor(WordPieceTokenizer(VOCABULARY), LENGTH).get_config(),
    )
    models["clf"].save(root / "clf.keras")
    with zipfile.ZipFile(root / "clf.keras") as archive:
        configs.clf = json.loads(archive.read("config.json"))
        configs.members = {n: archive.read(n) for n in archive.namelist()}
    _keras_file(
        root / "fifo_tok.keras",
        _serialized(
            {**configs.tokenizer, "vocabulary": str(root / "fifo")},
            "zoo>WordPieceTokenizer",
        ),
    )
    _keras_file(
        root / "fifo_sp.keras",
        _serialized(
            {**configs.sentencepiece, "model": str(root / "fifo")},
            "zoo>SentencePieceTokenizer",
        ),
    )
    return by_name(_untrusted_cases(root, configs), UNTRUSTED_NAMES)


def _serialized(obj_config, cls):
    return {
        "module": None,
        "class_name": cls,
        "config": obj_config,
        "registered_name": cls,
    }


def _untrusted_cases(root, configs):
    """The cases over the files under `root` and the `configs` (tokenizer,
    sentencepiece, preprocessor, clf: the saved classifier's config.json,
    members: its archive's members) that the `untrusted` fixture makes;
    `configs` is read only when a case runs."""
    vocab, garbage = root / "vocab.txt", root / "spiece.model"
    clf_path = root / "clf.keras"
    fifo_tokenizer, fifo_spiece = root / "fifo_tok.keras", root / "fifo_sp.keras"

    def with_(config, **changes):
        return {**config, **changes}

    def wordpiece(**changes):
        return lambda: WordPieceTokenizer.from_config(with_(configs.tokenizer, **changes))

    def sentencepiece(**changes):
        return lambda: SentencePieceTokenizer.from_config(
            with_(configs.sentencepiece, **changes)
        )

    def preprocessor(**changes):
        return lambda: TextPreprocessor.from_config(with_(configs.preprocessor, **changes))

    def edited_clf(vocabulary, name):
        config = json.loads(json.dumps(configs.clf))
        config["config"]["preprocessor"]["config"]["tokenizer"]["config"]["vocabulary"] = (
            vocabulary
        )
        path = root / name
        with zipfile.ZipFile(path, "w") as archive:
            for member, data in configs.members.items():
                archive.writestr(
                    member, json.dumps(config) if member == "config.json" else data
                )
        return path

    cases = [
        error(
            "WordPieceTokenizer config: vocabulary is a path to a real vocab.txt",
            wordpiece(vocabulary=str(vocab)),
            "vocabulary",
            str(vocab),
        ),
        error(
            "WordPieceTokenizer config: vocabulary is a missing path",
            wordpiece(vocabulary="/nonexistent/vocab.txt"),
            "vocabulary",
            "list",
        ),
        error(
            "WordPieceTokenizer config: vocabulary is a number",
            wordpiece(vocabulary=5),
            "vocabulary",
        ),
        error(
            "WordPieceTokenizer config: vocabulary is an object",
            wordpiece(vocabulary={"path": str(vocab)}),
            "vocabulary",
        ),
        error(
            "WordPieceTokenizer config: tokens that are not str",
            wordpiece(vocabulary=[1, 2, 3]),
            "vocabulary",
        ),
        answer(
            "WordPieceTokenizer config round trip",
            wordpiece(),
            lambda tok: tok.vocabulary == VOCABULARY,
        ),
        error(
            "SentencePieceTokenizer config: model is a path to a file",
            sentencepiece(model=str(garbage)),
            "model",
            str(garbage),
        ),
        error(
            "SentencePieceTokenizer config: model is a directory with spiece.model",
            sentencepiece(model=str(root / "spiece_dir")),
            "model",
        ),
        error(
            "SentencePieceTokenizer config: base64 that is not base64",
            sentencepiece(model="base64:!!not base64!!"),
            "model",
            "base64",
        ),
        error(
            "SentencePieceTokenizer config: base64 of no SentencePiece model",
            sentencepiece(model="base64:" + base64.b64encode(b"garbage").decode()),
            "model",
            "SentencePiece",
        ),
        error(
            "SentencePieceTokenizer config: model is a number",
            sentencepiece(model=7),
            "model",
        ),
        answer(
            "SentencePieceTokenizer config round trip",
            sentencepiece(),
            lambda tok: tok.vocabulary_size == 60,
        ),
        error(
            "TextPreprocessor config: tokenizer is a path",
            preprocessor(tokenizer=str(vocab)),
            "tokenizer",
            str(vocab),
        ),
        error(
            "TextPreprocessor config: tokenizer's vocabulary is a path",
            lambda: TextPreprocessor.from_config(
                with_(
                    configs.preprocessor,
                    tokenizer=_serialized(
                        with_(configs.tokenizer, vocabulary=str(vocab)),
                        "zoo>WordPieceTokenizer",
                    ),
                )
            ),
            "vocabulary",
        ),
        error(
            "TextClassifier .keras: vocabulary is a path (safe-mode load)",
            lambda: keras.saving.load_model(
                edited_clf(str(vocab), "path_vocab.keras"), safe_mode=True
            ),
            "vocabulary",
        ),
        answer(
            "TextClassifier .keras unedited (safe-mode load)",
            lambda: keras.saving.load_model(clf_path, safe_mode=True),
            lambda m: m.tokenizer.vocabulary == VOCABULARY,
        ),
        error(
            "a .keras naming a FIFO as a WordPiece vocabulary (subprocess)",
            _load_in_subprocess(fifo_tokenizer),
            "vocabulary",
        ),
        error(
            "a .keras naming a FIFO as a SentencePiece model (subprocess)",
            _load_in_subprocess(fifo_spiece),
            "model",
        ),
    ]
    return cases


UNTRUSTED_NAMES = case_ids(_untrusted_cases(UNBUILT / "untrusted", None))


@pytest.mark.parametrize("name", UNTRUSTED_NAMES, ids=str)
def test_untrusted_configs(name, untrusted_cases):
    check_case("untrusted configs", untrusted_cases[name])
