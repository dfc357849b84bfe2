"""`zoo demo --fast` end to end on the real assets: every stage, the report's
numbers, resumption, --force, and refusing a foreign directory."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

from export import manifest as mf
from export import mediapipe
from export.runtime import load_signature
from zoo import demo
from zoo.text.readers import read_data
from zoo.text.tokenizer import WordPieceTokenizer, tokenize_texts

ROOT = pathlib.Path(__file__).resolve().parents[1]
PHONE = "student2"  # DemoConfig's phone student
MODES = ("float32", "float16", "dynamic_int8", "int8", "int4")

pytestmark = [pytest.mark.assets, pytest.mark.slow]


def _zoo(*args, timeout=1200):
    return subprocess.run(
        [sys.executable, "-m", "zoo", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory, minilm_dir):
    out = tmp_path_factory.mktemp("demo") / "run"
    assets = out.parent / "android_assets"
    t0 = time.time()
    proc = _zoo("demo", "--fast", "--out", str(out), "--android-assets", str(assets))
    seconds = time.time() - t0
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    print(f"\nzoo demo --fast: {seconds:.0f} s")
    return out, assets, proc, seconds


def test_demo_report_numbers_are_present_and_sane(demo_run):
    out, assets, proc, _ = demo_run
    report = json.loads((out / "report.json").read_text())
    rows = {(r["model"], r["format"], r["quantization"]): r for r in report["rows"]}
    rows_list = report["rows"]
    keras = [r for r in rows_list if r["format"] == "keras"]
    assert [(r["model"], r["vocabulary"] < 30522) for r in keras] == [
        ("teacher", False),
        (PHONE, False),
        (PHONE, True),
    ]  # the last one pruned
    rows = {
        (r["model"], r["format"], r["quantization"]): r
        for r in rows_list
        if r["format"] != "keras"
    } | {("teacher", "keras", "float32"): keras[0], (PHONE, "keras", "float32"): keras[1]}
    expected = {
        ("teacher", "keras", "float32"),
        ("teacher", "saved_model", "float32"),
        ("teacher", "tflite", "float32"),
        (PHONE, "keras", "float32"),
        (PHONE, "saved_model", "float32"),
    }
    expected |= {(PHONE, "tflite", m) for m in MODES}
    assert expected <= set(rows), sorted(rows)
    for m in MODES:  # the phone files come from the pruned student
        assert rows[(PHONE, "tflite", m)]["vocabulary"] == keras[2]["vocabulary"]
    print(
        "\n"
        + "\n".join(
            f"{k}: acc {r['accuracy']:.4f} agree {r['agreement_with_teacher']:.4f}"
            f" {r['size_mb']:.1f} MB {r['latency_ms']} ms"
            for k, r in rows.items()
        )
    )
    for key, r in rows.items():
        # 5 classes: chance is 0.2. The fast run trains the teacher and the
        # 2-layer student for 10 steps each (the student lands near 0.55).
        assert r["accuracy"] > (0.5 if key[0] == "teacher" else 0.4), (key, r["accuracy"])
        assert 0.0 <= r["agreement_with_teacher"] <= 1.0
        assert r["size_mb"] > 0 and r["latency_ms"] and r["latency_ms"] > 0, key
    assert rows[("teacher", "keras", "float32")]["agreement_with_teacher"] == 1.0
    # The exported teacher decides exactly like the Keras teacher.
    assert rows[("teacher", "tflite", "float32")]["agreement_with_teacher"] == 1.0
    assert rows[("teacher", "saved_model", "float32")]["agreement_with_teacher"] == 1.0
    s = {m: rows[(PHONE, "tflite", m)]["size_mb"] for m in MODES}
    assert s["int8"] < 0.3 * s["float32"] and s["dynamic_int8"] < 0.3 * s["float32"]
    assert s["int4"] < s["dynamic_int8"] and s["float16"] < 0.55 * s["float32"]
    # Each artifact against the Keras model it came from (the exporter's own
    # validation on all 426 test articles, in LiteRT / the TF1 loader).
    for model in ("teacher", PHONE):
        for fmt, mode in (("tflite", "float32"), ("saved_model", "float32")):
            r = rows.get((model, fmt, mode))
            if r is not None:
                assert r["max_abs_logit_diff"] <= 1e-4 and r["agreement_with_keras"] == 1.0
    assert rows[(PHONE, "tflite", "float16")]["agreement_with_keras"] >= 0.995
    assert rows[(PHONE, "tflite", "dynamic_int8")]["agreement_with_keras"] >= 0.99
    for mode in ("int8", "int4"):
        r = rows[(PHONE, "tflite", mode)]
        # Flagged exactly when it agrees with Keras on < 97% of texts.
        assert r["validation"].startswith("DEGRADED") == (r["agreement_with_keras"] < 0.97)
    for r in rows.values():
        assert not any(op.startswith("Flex") for op in r.get("ops", [])), r["ops"]
    headline = report["headline"]
    assert headline["dynamic_int8"]["size_ratio"] > 4 and headline["int8"]["size_ratio"] > 4
    assert headline["int4"]["size_ratio"] > headline["dynamic_int8"]["size_ratio"]
    assert report["git_revision"] is None or len(report["git_revision"]) == 40
    md = (out / "report.md").read_text()
    assert f"| {PHONE} (2 layers, " in md and "tflite int4 |" in md and "Headline" in md
    assert "Vocabulary pruning" in md
    for png in ("tradeoffs.png", "training_curves.png"):
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out / "exports/serving/teacher/1/saved_model.pb").is_file()
    assert (out / "exports/serving/models.config").is_file()
    assert {p.name for p in assets.iterdir()} >= {
        "model.tflite",
        "vocab.txt",
        "metadata.json",
    }
    # The app gets the phone file the report's rule picks, byte for byte.
    mode, _ = demo.android_pick(report["headline"])
    if "best" in report["headline"]:
        assert mode == report["headline"]["best"]["mode"]
    shipped = out / "exports" / f"{PHONE}_{mode}"
    for name in demo.ANDROID_FILES:
        assert (assets / name).read_bytes() == (shipped / name).read_bytes(), name
    assert json.loads((assets / "metadata.json").read_text())["quantization"] == mode
    assert f"Android assets: {shipped.name} (" in proc.stderr + proc.stdout
    # The baseline against the teacher, article by article: the texts only
    # one of them gets right differ by exactly their accuracies' difference.
    base = next(r for r in rows_list if r["format"] == "scikit-learn")
    paired = base["against_teacher"]
    assert paired["model_only"] - paired["baseline_only"] == round(
        (keras[0]["accuracy"] - base["accuracy"]) * report["texts"]
    )
    assert 0.0 < paired["p_value"] <= 1.0
    assert report["machine"]["int8"] in (
        "AMX",
        "AVX-512 VNNI",
        "AVX-VNNI",
        "AVX2 only",
        "no AVX2",
    )
    assert "Machine: " in md and "; int8: " in md
    assert json.loads((out / "args.json").read_text())["arguments"]["fast"] is True
    assert "| model | format |" in proc.stdout  # the terminal ends with the table


def test_demo_rerun_skips_finished_stages(demo_run):
    out, _, _, first = demo_run
    t0 = time.time()
    proc = _zoo("demo", "--fast", "--out", str(out), "--android-assets", "none")
    assert proc.returncode == 0, proc.stderr[-3000:]
    seconds = time.time() - t0
    print(f"\nre-run: {seconds:.0f} s (first run {first:.0f} s)")
    for stage in ("convert", "teacher", "distill", "prune", "export", "measure", "report"):
        assert f"{stage}: done earlier" in proc.stdout, proc.stdout
    assert seconds < first / 3


def test_demo_refuses_foreign_directory_and_other_recipe(demo_run, tmp_path):
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    proc = _zoo("demo", "--fast", "--out", str(foreign), timeout=120)
    assert proc.returncode == 2
    assert "not created by `zoo demo`" in proc.stderr
    assert (foreign / "notes.txt").read_text() == "mine"
    out = demo_run[0]
    proc = _zoo("demo", "--out", str(out), timeout=120)  # full recipe into a fast run
    assert proc.returncode == 2 and "another recipe" in proc.stderr, proc.stderr


def _mediapipe_python():
    path = pathlib.Path(
        os.environ.get("ZOO_MEDIAPIPE_PYTHON", ROOT / ".venv-mediapipe" / "bin" / "python")
    )
    if path.is_file():
        return path
    if os.environ.get("CI"):
        pytest.fail(
            f"MediaPipe's venv is missing in CI ({path}); run `make mediapipe-venv`"
        )
    pytest.skip(f"no MediaPipe venv at {path}: `make mediapipe-venv`")


def _mediapipe(python, model, texts, tmp_path):
    (tmp_path / "texts.json").write_text(json.dumps(texts))
    proc = subprocess.run(
        [
            str(python),
            str(ROOT / "tests" / "tools" / "mediapipe_classify.py"),
            str(model),
            str(tmp_path / "texts.json"),
            str(tmp_path / "out.json"),
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads((tmp_path / "out.json").read_text())["results"]


def _echo_file(vocabulary, length, path):
    """A MediaPipe file whose `probabilities` are its inputs, so MediaPipe's
    scores are its own token ids, segment ids and mask (exact below 2**24)."""

    class Echo(tf.Module):
        @tf.function(
            input_signature=[
                tf.TensorSpec([1, length], tf.int32, name=n)
                for n in ("token_ids", "segment_ids", "padding_mask")
            ]
        )
        def serve(self, token_ids, segment_ids, padding_mask):
            x = tf.concat([token_ids, segment_ids, padding_mask], axis=1)
            return {"probabilities": tf.cast(x, tf.float32)}

    module = Echo()
    tf.saved_model.save(
        module, str(path / "echo_sm"), signatures={f"serving_L{length}": module.serve}
    )
    converter = tf.lite.TFLiteConverter.from_saved_model(
        str(path / "echo_sm"), signature_keys=[f"serving_L{length}"]
    )
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
    labels = [f"{k}{i}" for k in ("id", "seg", "mask") for i in range(length)]
    data = mediapipe.mediapipe_classifier(
        converter.convert(), f"serving_L{length}", vocabulary, labels, lowercase=True
    )
    (path / "echo.tflite").write_bytes(data)
    return path / "echo.tflite"


def test_phone_file_runs_in_mediapipe_tasks(demo_run, tmp_path):
    """The exported student's mediapipe.tflite in MediaPipe Tasks'
    TextClassifier (the C++ graph Android's tasks-text runs) on the BBC test
    split: its labels against our LiteRT run of the same file with our
    tokenizer, and MediaPipe's own token ids (read back through an echo
    model with the same metadata) against ours."""
    python = _mediapipe_python()
    artifact = demo_run[0] / "exports" / f"{PHONE}_dynamic_int8"
    meta = mf.read_metadata(artifact)
    texts, _ = read_data("bbc")
    tokenizer = WordPieceTokenizer(str(artifact / "vocab.txt"), lowercase=meta["lowercase"])
    run = load_signature(artifact, file=mediapipe.FILE)
    ids = tokenize_texts(tokenizer, texts, run.sequence_length)
    ours = [
        int(np.argmax(run(**{k: v[i : i + 1] for k, v in ids.items()})["probabilities"]))
        for i in range(len(texts))
    ]
    theirs = [
        result[0][0]
        for result in _mediapipe(python, artifact / mediapipe.FILE, texts, tmp_path)
    ]
    agreement = float(np.mean(np.array(ours) == np.array(theirs)))
    echo = _echo_file(tokenizer.vocabulary, run.sequence_length, tmp_path)
    length = run.sequence_length
    different = 0
    for i, result in enumerate(_mediapipe(python, echo, texts, tmp_path)):
        scores = np.zeros(3 * length)
        for index, score in result:
            scores[index] = score
        mp_ids = scores.reshape(3, length).astype(np.int64)
        mine = np.stack([ids[k][i] for k in ("token_ids", "segment_ids", "padding_mask")])
        different += int(not np.array_equal(mp_ids, mine))
    print(
        f"\nMediaPipe vs LiteRT labels: {agreement:.4f} agreement on {len(texts)} BBC test "
        f"articles; texts whose ids differ: {different}"
    )
    assert agreement >= 0.995
    assert different <= 0.01 * len(texts)


def test_the_app_ships_the_best_phone_file_else_the_most_accurate():
    def entry(accuracy, size_ratio):
        return {"student_accuracy": accuracy, "size_ratio": size_ratio}

    headline = {
        "dynamic_int8": entry(0.95, 4.0),
        "int8": entry(0.95, 4.1),
        "int4": entry(0.94, 8.0),
    }
    # No file keeps 99%: the most accurate, then the smallest of those.
    mode, why = demo.android_pick(headline)
    assert (mode, why.startswith("no phone file keeps 99%")) == ("int8", True)
    headline["best"] = dict(headline["int4"], mode="int4")
    assert demo.android_pick(headline) == ("int4", "the report's best phone model")
    with pytest.raises(ValueError, match="no phone .tflite rows"):
        demo.android_pick({})


def test_android_assets_never_overwrite_a_file_the_demo_did_not_write(tmp_path):
    """`zoo demo --android-assets DIR` copies the phone model into DIR: a
    model.tflite / vocab.txt / metadata.json already there that the demo did
    not write is refused before anything is copied; the demo's own copies
    (recorded in DIR/.zoo-android-assets.json) are replaced."""
    config = demo.DemoConfig()
    source = tmp_path / "run" / "exports" / f"{demo._phone(config)}_dynamic_int8"
    source.mkdir(parents=True)
    for name in demo.ANDROID_FILES:
        # metadata.json is read (a byte-level BPE model is refused): a JSON object.
        (source / name).write_text(
            '{"note": "new metadata.json"}' if name == "metadata.json" else f"new {name}"
        )
    folder = tmp_path / "assets"
    folder.mkdir()
    (folder / "model.tflite").write_text("the user's own model")
    (folder / "notes.txt").write_text("kept")
    with pytest.raises(demo.DemoError, match="model.tflite"):
        demo._android_assets(tmp_path / "run", config, folder)
    assert (folder / "model.tflite").read_text() == "the user's own model"
    assert not (folder / "vocab.txt").exists()
    (folder / "model.tflite").unlink()
    demo._android_assets(tmp_path / "run", config, folder)
    assert (folder / "model.tflite").read_text() == "new model.tflite"
    (source / "model.tflite").write_text("newer model")
    demo._android_assets(tmp_path / "run", config, folder)  # its own copy: replaced
    assert (folder / "model.tflite").read_text() == "newer model"
    (folder / "vocab.txt").write_text("edited by hand")
    with pytest.raises(demo.DemoError, match="vocab.txt"):
        demo._android_assets(tmp_path / "run", config, folder)
    assert (folder / "notes.txt").read_text() == "kept"
