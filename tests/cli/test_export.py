"""`zoo export` / `zoo validate`: argument handling, data readers, one run each."""

import json

import pytest

from export import manifest as mf
from tests.export.conftest import TINY_LABELS, VOCABULARY, make_tiny, sentences
from zoo.checkpoints import save_model_dir
from zoo.cli import build_parser as parser
from zoo.cli import main
from zoo.text.tokenizer import WordPieceTokenizer


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
    for flag, value in (("--batch-size", "0"), ("--version", "-3"), ("--version", "x")):
        with pytest.raises(SystemExit):
            parser().parse_args(
                ["export", "--model", "m", "--format", "tpu", flag, value, "--out", "o"]
            )
        assert (
            f"argument {flag}: {value!r}: give a positive integer"
            in capsys.readouterr().err
        )
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
    assert "applies to --format tflite only" in capsys.readouterr().err
    assert main(base + ["--format", "saved_model", "--sequence-lengths", "64,128"]) == 2
    assert "takes one sequence length" in capsys.readouterr().err
    assert main(base + ["--format", "tflite"]) == 2
    assert "no such directory" in capsys.readouterr().err
    assert main(["validate", str(tmp_path / "none"), "--data", "bbc"]) == 2
    assert "no such directory" in capsys.readouterr().err


@pytest.mark.parametrize("fmt", ["tflite", "saved_model"])
def test_too_few_validation_texts_are_refused_before_anything_is_built(
    fmt, tmp_path, capsys, monkeypatch
):
    """199 texts cannot prove an artifact: refused with the count and the way
    out before the exporter runs (it used to build the whole file first)."""
    import zoo.cli.export as cli_export

    def exporter_ran(*args, **kwargs):
        raise AssertionError("the exporter ran")

    monkeypatch.setattr(cli_export, "export_tflite", exporter_ran)
    monkeypatch.setattr(cli_export, "_export_serving", exporter_ran)
    model_dir = tmp_path / "tiny"
    save_model_dir(make_tiny(), model_dir, WordPieceTokenizer(VOCABULARY))
    data = tmp_path / "data.jsonl"
    data.write_text(
        "".join(
            json.dumps({"text": t, "label": TINY_LABELS[i % 3]}) + "\n"
            for i, t in enumerate(sentences(199, seed=3))
        )
    )
    argv = ["export", "--model", str(model_dir), "--format", fmt]
    argv += ["--sequence-lengths", "16", "--data", str(data), "--out", str(tmp_path / "o")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"--data {data}: 199 texts to validate on; validation needs at least 200" in err
    assert "Pass more (e.g. --data bbc)" in err
    assert not (tmp_path / "o").exists()


def test_help_has_worked_examples(capsys):
    for command in ("export", "validate"):
        with pytest.raises(SystemExit):
            parser().parse_args([command, "--help"])
        out = capsys.readouterr().out
        assert "examples:\n  zoo " + command in out


@pytest.mark.slow  # validated exports
def test_export_and_validate_commands_end_to_end(tmp_path, capsys):
    tiny_tokenizer = WordPieceTokenizer(VOCABULARY)

    model_dir = tmp_path / "models" / "tiny"
    # Trained at 24 tokens (what finetune records): the export's default length.
    save_model_dir(make_tiny(), model_dir, tiny_tokenizer, extra={"sequence_length": 24})
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
        "--data",
        str(data),
        "--out",
        str(out),
        "--allow-degraded",
    ]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert (
        "lengths [24]" in printed
        and "model.tflite:serving_L24" in printed
        and f"wrote {out}" in printed
    )
    meta = mf.read_metadata(out)
    assert meta["quantization"] == "dynamic_int8"
    assert meta["source_model"]["path"] == str(model_dir.resolve())
    # 230 texts < 200 + 200 calibration: validation used all of them.
    assert json.loads((out / "validation.json").read_text())["num_texts"] == 230
    assert main(argv) == 2 and "pass --force" in capsys.readouterr().err

    # validate finds the reference model through metadata.json's source path.
    assert (
        main(["validate", str(out), "--data", str(data), "--json", "--allow-degraded"]) == 0
    )
    report = json.loads(capsys.readouterr().out)
    assert report["reference"] == "metadata source_model" and report["num_texts"] == 230
    assert report["results"][0]["metrics"]["cosine_min"] > 0.99
    assert len(list(out.glob("validation-*.json"))) == 1
    mf.verify_manifest(out)  # the saved report is outside the manifest


@pytest.mark.slow  # validated exports
def test_export_and_validate_take_a_train_test_folder_and_name_the_splits(tmp_path, capsys):
    """The folder `zoo finetune` reads (train/ and test/, each of class
    sub-folders): int8 calibrates on train, validation runs the test split."""
    model_dir = tmp_path / "model"
    save_model_dir(make_tiny(), model_dir, WordPieceTokenizer(VOCABULARY))
    data = tmp_path / "data"
    texts = sentences(330, seed=5)
    for i, text in enumerate(texts):
        split = "train" if i < 120 else "test"
        folder = data / split / TINY_LABELS[i % 3]
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{i:03d}.txt").write_text(text)
    out = tmp_path / "exports" / "tiny_int8"
    argv = [
        "export",
        "--model",
        str(model_dir),
        "--format",
        "tflite",
        "--quantize",
        "int8",
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
    assert f"validating on the test split of {data} (210 texts)" in printed
    assert f"calibrating on the train split of {data} (first 120 of 120 texts)" in printed
    assert json.loads((out / "validation.json").read_text())["num_texts"] == 210
    assert mf.read_metadata(out)["representative_texts"] == 120

    assert main(["validate", str(out), "--data", str(data), "--allow-degraded"]) == 0
    assert f"on the test split of {data} (210 texts)" in capsys.readouterr().out
    report = json.loads(next(out.glob("validation-*.json")).read_text())
    assert report["num_texts"] == 210 and report["data"].startswith("the test split")
