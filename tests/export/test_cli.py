"""`zoo export` / `zoo validate`: argument handling, data readers, one run each."""

import argparse
import csv
import json

import pytest

from export import cli
from export import manifest as mf
from export.validate import read_data
from tests.export.conftest import TINY_LABELS, make_tiny, sentences


def parser():
    p = argparse.ArgumentParser(prog="zoo")
    cli.register(p.add_subparsers(dest="command"))
    return p


def main(argv):
    """What `zoo` does: parse, call, print user errors with exit status 2."""
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except (FileNotFoundError, ValueError) as e:
        print(f"zoo {args.command}: error: {e}")
        return 2


def test_help_has_worked_examples(capsys):
    for command in ("export", "validate"):
        with pytest.raises(SystemExit):
            parser().parse_args([command, "--help"])
        out = capsys.readouterr().out
        assert "example:\n  zoo " + command in out


def test_parser_does_not_import_tensorflow_and_modes_agree():
    import subprocess
    import sys

    code = "import sys, argparse, export.cli as c; c.register(argparse.ArgumentParser().add_subparsers()); print('tensorflow' in sys.modules)"
    assert (
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True
        ).stdout.strip()
        == "False"
    )
    from export.tflite import QUANTIZATION_MODES

    assert cli.QUANTIZATION_MODES == QUANTIZATION_MODES


def test_parse_errors_and_user_errors(tmp_path, capsys):
    with pytest.raises(SystemExit):
        parser().parse_args(
            ["export", "--model", "m", "--format", "onnx", "--data", "bbc", "--out", "o"]
        )
    with pytest.raises(SystemExit):
        parser().parse_args(
            [
                "export",
                "--model",
                "m",
                "--format",
                "tflite",
                "--sequence-lengths",
                "64,x",
                "--data",
                "bbc",
                "--out",
                "o",
            ]
        )
    assert "comma-separated integers" in capsys.readouterr().err
    base = [
        "export",
        "--model",
        str(tmp_path / "nowhere"),
        "--data",
        "bbc",
        "--out",
        str(tmp_path / "o"),
    ]
    assert main(base + ["--format", "saved_model", "--quantize", "int8"]) == 2
    assert "applies to --format tflite only" in capsys.readouterr().out
    assert main(base + ["--format", "saved_model", "--sequence-lengths", "64,128"]) == 2
    assert "takes one sequence length" in capsys.readouterr().out
    assert main(base + ["--format", "tflite"]) == 2
    assert "not a zoo model directory" in capsys.readouterr().out
    assert main(["validate", str(tmp_path / "none"), "--data", "bbc"]) == 2
    assert "no such directory" in capsys.readouterr().out


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
    with pytest.raises(ValueError, match="needs a `text` column"):
        (tmp_path / "bad.csv").write_text("sentence\nx\n")
        read_data(tmp_path / "bad.csv")
    with pytest.raises(ValueError, match="unsupported file type"):
        (tmp_path / "d.txt").write_text("x")
        read_data(tmp_path / "d.txt")
    with pytest.raises(FileNotFoundError, match="Give `bbc`"):
        read_data(tmp_path / "missing.csv")


@pytest.mark.assets
def test_bbc_data_is_the_fixed_test_split(bbc_split):
    from export.validate import calibration_and_validation

    texts, labels = read_data("bbc")
    assert len(texts) == len(bbc_split["test"]) == 426 and labels[0] in TINY_LABELS + [
        "entertainment",
        "politics",
    ]
    calibration, val_texts, val_labels, note = calibration_and_validation("bbc")
    assert val_texts == texts and len(calibration) == 200 and note["overlap"] is False
    assert not set(calibration) & set(texts)


def test_export_and_validate_commands_end_to_end(tmp_path, tiny_tokenizer, capsys):
    from zoo.checkpoints import save_model_dir

    model_dir = tmp_path / "models" / "tiny"
    save_model_dir(make_tiny(), model_dir, tiny_tokenizer)
    rows = [
        {"text": t, "label": TINY_LABELS[i % 3]}
        for i, t in enumerate(sentences(230, seed=3))
    ]
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "exports" / "tiny_dyn"
    argv = [
        "export",
        "--model",
        str(model_dir),
        "--format",
        "tflite",
        "--quantize",
        "dynamic_int8",
        "--sequence-lengths",
        "24",
        "--data",
        str(data),
        "--out",
        str(out),
        "--allow-degraded",
    ]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "model.tflite:serving_L24" in printed and f"wrote {out}" in printed
    meta = mf.read_metadata(out)
    assert meta["quantization"] == "dynamic_int8"
    assert meta["source_model"]["path"] == str(model_dir.resolve())
    # 230 texts < 200 + 200 calibration: validation used all of them.
    assert json.loads((out / "validation.json").read_text())["num_texts"] == 230
    assert main(argv) == 2 and "pass --force" in capsys.readouterr().out

    # validate finds the reference model through metadata.json's source path.
    assert (
        main(["validate", str(out), "--data", str(data), "--json", "--allow-degraded"]) == 0
    )
    report = json.loads(capsys.readouterr().out)
    assert report["reference"] == "metadata source_model" and report["num_texts"] == 230
    assert report["results"][0]["metrics"]["cosine_min"] > 0.99
    assert len(list(out.glob("validation-*.json"))) == 1
    mf.verify_manifest(out)  # the saved report is outside the manifest
