"""Reliability corpus, area "CLI runs": commands with a bad input. Each must
exit 2 with a message naming the flag or file, and leave nothing in --out
(no args.json): otherwise the corrected command would be refused as "a run
with other arguments"."""

import contextlib
import csv
import io

import pytest

import zoo
from tests.distill.tiny import TOPICS, WORDS, teacher_dir, topic_data
from tests.reliability.corpus import error, run_area
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
                import argparse

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


def test_bad_command_lines(inputs, tmp_path):
    i = inputs
    counter = iter(range(10**6))

    def out():
        return tmp_path / f"out{next(counter)}"

    def finetune(*extra, data=None, model=None):
        o = out()
        return cli(
            [
                "finetune",
                "--model",
                model or i["encoder"],
                "--data",
                data or i["data"],
                "--task",
                "classify",
                "--out",
                o,
                "--sequence-length",
                "16",
                *extra,
            ],
            o,
        )

    def distill(*extra, teacher=None):
        o = out()
        return cli(
            [
                "distill",
                "--teacher",
                teacher or i["teacher"],
                "--data",
                i["data"],
                "--out",
                o,
                "--sequence-length",
                "12",
                *extra,
            ],
            o,
        )

    def pretrain(*extra, config="bert_tiny", data="austen"):
        o = out()
        return cli(["pretrain", "--config", config, "--data", data, "--out", o, *extra], o)

    cases = [
        error(
            "finetune: --data missing",
            finetune(data=i["root"] / "nowhere.csv"),
            "nowhere.csv",
        ),
        error("finetune: one label", finetune(data=i["one_label"]), "1 label"),
        error("finetune: no label column", finetune(data=i["no_label"]), "label"),
        error("finetune: empty data", finetune(data=i["empty"]), "empty.csv"),
        error(
            "finetune: --sequence-length 100000",
            finetune("--sequence-length", "100000"),
            "--sequence-length",
        ),
        error(
            "finetune: --model missing", finetune(model=i["root"] / "no_model"), "no_model"
        ),
        error(
            "finetune: --model is an empty folder",
            finetune(model=i["empty_dir"]),
            "empty_dir",
        ),
        error("finetune: --epochs 0", finetune("--epochs", "0"), "--epochs"),
        error(
            "finetune: --learning-rate -1",
            finetune("--learning-rate", "-1"),
            "--learning-rate",
        ),
        error("finetune: --max-windows 0", finetune("--max-windows", "0"), "--max-windows"),
        error(
            "finetune: --task bogus",
            cli(
                [
                    "finetune",
                    "--model",
                    i["encoder"],
                    "--data",
                    i["data"],
                    "--task",
                    "bogus",
                    "--out",
                    out(),
                ]
            ),
            "--task",
        ),
        error(
            "finetune: --out is a file",
            cli(
                [
                    "finetune",
                    "--model",
                    i["encoder"],
                    "--data",
                    i["data"],
                    "--task",
                    "classify",
                    "--out",
                    i["file"],
                    "--sequence-length",
                    "16",
                ]
            ),
            "is a file",
        ),
        error(
            "distill: --student-layers 99",
            distill("--student-layers", "99"),
            "--student-layers",
        ),
        error(
            "distill: --student-layers 0",
            distill("--student-layers", "0"),
            "--student-layers",
        ),
        error(
            "distill: teacher is not a model",
            distill("--student-layers", "2", teacher=i["empty_dir"]),
            "--teacher",
        ),
        error(
            "distill: teacher without a task head",
            distill("--student-layers", "2", teacher=i["encoder"]),
            "BertEncoder",
        ),
        error(
            "distill: --layer-map out of range",
            distill("--student-layers", "2", "--layer-map", "0,9"),
            "--layer-map",
        ),
        error(
            "distill: --layer-map of the wrong length",
            distill("--student-layers", "2", "--layer-map", "0,1,2"),
            "--layer-map",
        ),
        error(
            "distill: --sequence-length 100000",
            distill("--student-layers", "2", "--sequence-length", "100000"),
            "--sequence-length",
        ),
        error(
            "pretrain: unknown --config", pretrain(config="bert_gigantic"), "bert_gigantic"
        ),
        error(
            "pretrain: --data missing", pretrain(data=i["root"] / "no_corpus"), "no_corpus"
        ),
        error(
            "pretrain: --sequence-length 100000",
            pretrain("--sequence-length", "100000"),
            "--sequence-length",
        ),
        error(
            "export: --out is a file",
            cli(
                [
                    "export",
                    "--model",
                    i["teacher"],
                    "--format",
                    "tflite",
                    "--data",
                    i["data"],
                    "--out",
                    i["file"],
                ]
            ),
            "is a file",
        ),
        error(
            "export: --model missing",
            cli(
                [
                    "export",
                    "--model",
                    i["root"] / "no_model",
                    "--format",
                    "tflite",
                    "--data",
                    i["data"],
                    "--out",
                    out(),
                ]
            ),
            "no_model",
        ),
        error(
            "export: --quantize bogus",
            cli(
                [
                    "export",
                    "--model",
                    i["teacher"],
                    "--format",
                    "tflite",
                    "--quantize",
                    "int3",
                    "--data",
                    i["data"],
                    "--out",
                    out(),
                ]
            ),
            "--quantize",
        ),
        error(
            "export: an encoder without a head",
            cli(
                [
                    "export",
                    "--model",
                    i["encoder"],
                    "--format",
                    "tflite",
                    "--data",
                    i["data"],
                    "--out",
                    out(),
                ]
            ),
            "not a fine-tuned task model",
        ),
        error(
            "validate: no such artifact",
            cli(["validate", i["root"] / "no_artifact", "--data", i["data"]]),
            "no_artifact",
        ),
        error(
            "evaluate: --split bogus",
            cli(
                ["evaluate", "--model", i["teacher"], "--data", i["data"], "--split", "dev"]
            ),
            "--split",
        ),
        error(
            "evaluate: an encoder without a head",
            cli(["evaluate", "--model", i["encoder"], "--data", i["data"]]),
            "not a fine-tuned task model",
        ),
        error(
            "convert: no such checkpoint",
            cli(["convert", i["root"] / "no_ckpt", "--out", out()]),
            "no_ckpt",
        ),
        error(
            "convert: --out not empty",
            cli(["convert", i["teacher"], "--out", i["not_empty"]]),
            "--force",
        ),
        error(
            "convert: --out holds SRC",
            cli(["convert", i["teacher"], "--out", i["root"]]),
            "SRC",
        ),
        error(
            'finetune: --out "" (an unset variable)',
            cli(
                [
                    "finetune",
                    "--model",
                    i["encoder"],
                    "--data",
                    i["data"],
                    "--task",
                    "classify",
                    "--out",
                    "",
                ]
            ),
            "--out",
        ),
    ]
    problems = run_area("CLI runs", cases)
    assert not problems, "\n".join(problems)
