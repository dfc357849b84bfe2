"""Reliability corpus, area "CLI runs": commands with a bad input. Each must
exit 2 with a message naming the flag or file, and leave nothing in --out
(no args.json): otherwise the corrected command would be refused as "a run
with other arguments".

Each case is its own pytest item, its name the id (`CASES`: name -> a
function of the item's context that builds the case); the models and data
files the commands read are built once per module."""

import argparse
import contextlib
import csv
import io
import types

import pytest

import zoo
from tests.distill.tiny import TOPICS, WORDS, teacher_dir, topic_data
from tests.reliability.corpus import CaseTable, check_case, error
from zoo.checkpoints import save_model_dir
from zoo.cli import main
from zoo.cli.runs import training_output
from zoo.text.tokenizer import WordPieceTokenizer


class CliFailure(ValueError):
    """`zoo` exited 2 with this message and left nothing behind."""


def cli(argv, out=None):
    def run():
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            try:
                code = main([str(a) for a in argv])
            except SystemExit as e:  # argparse's own errors
                code = e.code
        message = err.getvalue()
        left = out is not None and (out / "args.json").exists()
        if code == 2 and not left:
            if out is not None and out.is_dir():
                # The corrected command must be accepted: --out is still new.
                assert training_output(out, argparse.Namespace(), False) == "new"
            raise CliFailure(message)
        return {"exit": code, "args.json left in --out": left, "stderr": message[-300:]}

    return run


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli")
    teacher = teacher_dir(root)
    data = topic_data(root)
    tokenizer = WordPieceTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS])
    encoder = zoo.BertEncoder(
        vocabulary_size=len(tokenizer.vocabulary),
        num_layers=2,
        num_heads=2,
        hidden_dim=8,
        intermediate_dim=16,
        max_sequence_length=16,
    )
    encoder_dir = save_model_dir(encoder, root / "encoder", tokenizer)
    one_label = root / "one_label.csv"
    with open(one_label, "w", newline="") as f:
        csv.writer(f).writerows(
            [["text", "label"]] + [[f"goal {i}", "sport"] for i in range(30)]
        )
    no_label = root / "no_label.csv"
    no_label.write_text("text\n" + "".join(f"goal {i}\n" for i in range(30)))
    empty = root / "empty.csv"
    empty.write_text("text,label\n")
    a_file = root / "a_file"
    a_file.write_text("x")
    (root / "empty_dir").mkdir()
    (root / "not_empty").mkdir()
    (root / "not_empty" / "notes.txt").write_text("mine")
    return {
        "root": root,
        "teacher": teacher,
        "data": data,
        "encoder": encoder_dir,
        "one_label": one_label,
        "no_label": no_label,
        "empty": empty,
        "file": a_file,
        "empty_dir": root / "empty_dir",
        "not_empty": root / "not_empty",
        "topics": sorted(TOPICS),
    }


AREA = "CLI runs"
CASES = CaseTable(AREA)  # name -> make(ctx) -> Case


@pytest.fixture
def ctx(inputs, tmp_path):
    """The module's inputs (`i`) and the item's own --out (`out`)."""
    return types.SimpleNamespace(i=inputs, out=tmp_path / "out")


def _refuses(name, command, *names):
    """`command(ctx)`, a `cli` run, must exit 2 naming every one of `names`."""
    CASES[name] = lambda c: error(name, command(c), *names)


def _finetune(c, *extra, data=None, model=None):
    return cli(
        [
            "finetune",
            "--model",
            model or c.i["encoder"],
            "--data",
            data or c.i["data"],
            "--task",
            "classify",
            "--out",
            c.out,
            "--sequence-length",
            "16",
            *extra,
        ],
        c.out,
    )


def _distill(c, *extra, teacher=None):
    return cli(
        [
            "distill",
            "--teacher",
            teacher or c.i["teacher"],
            "--data",
            c.i["data"],
            "--out",
            c.out,
            "--sequence-length",
            "12",
            *extra,
        ],
        c.out,
    )


def _pretrain(c, *extra, config="bert_tiny", data="austen"):
    return cli(
        ["pretrain", "--config", config, "--data", data, "--out", c.out, *extra], c.out
    )


def _export(c, model, out, *extra):
    return cli(
        ["export", "--model", model, "--format", "tflite", *extra]
        + ["--data", c.i["data"], "--out", out]
    )


def _finetune_cases():
    _refuses(
        "finetune: --data missing",
        lambda c: _finetune(c, data=c.i["root"] / "nowhere.csv"),
        "nowhere.csv",
    )
    _refuses(
        "finetune: one label", lambda c: _finetune(c, data=c.i["one_label"]), "1 label"
    )
    _refuses(
        "finetune: no label column", lambda c: _finetune(c, data=c.i["no_label"]), "label"
    )
    _refuses("finetune: empty data", lambda c: _finetune(c, data=c.i["empty"]), "empty.csv")
    _refuses(
        "finetune: --sequence-length 100000",
        lambda c: _finetune(c, "--sequence-length", "100000"),
        "--sequence-length",
    )
    _refuses(
        "finetune: --model missing",
        lambda c: _finetune(c, model=c.i["root"] / "no_model"),
        "no_model",
    )
    _refuses(
        "finetune: --model is an empty folder",
        lambda c: _finetune(c, model=c.i["empty_dir"]),
        "empty_dir",
    )
    for flag, value in (
        ("--epochs", "0"),
        ("--learning-rate", "-1"),
        ("--max-windows", "0"),
    ):
        _refuses(
            f"finetune: {flag} {value}",
            lambda c, flag=flag, value=value: _finetune(c, flag, value),
            flag,
        )
    _refuses(
        "finetune: --task bogus",
        lambda c: cli(
            ["finetune", "--model", c.i["encoder"], "--data", c.i["data"]]
            + ["--task", "bogus", "--out", c.out]
        ),
        "--task",
    )
    _refuses(
        "finetune: --out is a file",
        lambda c: cli(
            ["finetune", "--model", c.i["encoder"], "--data", c.i["data"]]
            + ["--task", "classify", "--out", c.i["file"], "--sequence-length", "16"]
        ),
        "is a file",
    )


def _distill_cases():
    for layers in ("99", "0"):
        _refuses(
            f"distill: --student-layers {layers}",
            lambda c, layers=layers: _distill(c, "--student-layers", layers),
            "--student-layers",
        )
    _refuses(
        "distill: teacher is not a model",
        lambda c: _distill(c, "--student-layers", "2", teacher=c.i["empty_dir"]),
        "--teacher",
    )
    _refuses(
        "distill: teacher without a task head",
        lambda c: _distill(c, "--student-layers", "2", teacher=c.i["encoder"]),
        "BertEncoder",
    )
    _refuses(
        "distill: --layer-map out of range",
        lambda c: _distill(c, "--student-layers", "2", "--layer-map", "0,9"),
        "--layer-map",
    )
    _refuses(
        "distill: --layer-map of the wrong length",
        lambda c: _distill(c, "--student-layers", "2", "--layer-map", "0,1,2"),
        "--layer-map",
    )
    _refuses(
        "distill: --sequence-length 100000",
        lambda c: _distill(c, "--student-layers", "2", "--sequence-length", "100000"),
        "--sequence-length",
    )


def _other_commands():
    _refuses(
        "pretrain: unknown --config",
        lambda c: _pretrain(c, config="bert_gigantic"),
        "bert_gigantic",
    )
    _refuses(
        "pretrain: --data missing",
        lambda c: _pretrain(c, data=c.i["root"] / "no_corpus"),
        "no_corpus",
    )
    _refuses(
        "pretrain: --sequence-length 100000",
        lambda c: _pretrain(c, "--sequence-length", "100000"),
        "--sequence-length",
    )
    _refuses(
        "export: --out is a file",
        lambda c: _export(c, c.i["teacher"], c.i["file"]),
        "is a file",
    )
    _refuses(
        "export: --model missing",
        lambda c: _export(c, c.i["root"] / "no_model", c.out),
        "no_model",
    )
    _refuses(
        "export: --quantize bogus",
        lambda c: _export(c, c.i["teacher"], c.out, "--quantize", "int3"),
        "--quantize",
    )
    _refuses(
        "export: an encoder without a head",
        lambda c: _export(c, c.i["encoder"], c.out),
        "not a fine-tuned task model",
    )
    _refuses(
        "validate: no such artifact",
        lambda c: cli(["validate", c.i["root"] / "no_artifact", "--data", c.i["data"]]),
        "no_artifact",
    )
    _refuses(
        "evaluate: --split bogus",
        lambda c: cli(
            ["evaluate", "--model", c.i["teacher"], "--data", c.i["data"], "--split", "dev"]
        ),
        "--split",
    )
    _refuses(
        "evaluate: an encoder without a head",
        lambda c: cli(["evaluate", "--model", c.i["encoder"], "--data", c.i["data"]]),
        "not a fine-tuned task model",
    )
    _refuses(
        "convert: no such checkpoint",
        lambda c: cli(["convert", c.i["root"] / "no_ckpt", "--out", c.out]),
        "no_ckpt",
    )
    _refuses(
        "convert: --out not empty",
        lambda c: cli(["convert", c.i["teacher"], "--out", c.i["not_empty"]]),
        "--force",
    )
    _refuses(
        "convert: --out holds SRC",
        lambda c: cli(["convert", c.i["teacher"], "--out", c.i["root"]]),
        "SRC",
    )
    _refuses(
        'finetune: --out "" (an unset variable)',
        lambda c: cli(
            ["finetune", "--model", c.i["encoder"], "--data", c.i["data"]]
            + ["--task", "classify", "--out", ""]
        ),
        "--out",
    )


_finetune_cases()
_distill_cases()
_other_commands()


@pytest.mark.parametrize("name", list(CASES))
def test_bad_command_lines(name, ctx):
    check_case(AREA, CASES[name](ctx))
