"""`zoo demo --fast` end to end on the real assets: every stage, the report's
numbers, resumption, --force, and refusing a foreign directory."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

pytestmark = [pytest.mark.assets, pytest.mark.slow]


def _zoo(*args, timeout=1200):
    return subprocess.run([sys.executable, "-m", "zoo", *args], capture_output=True, text=True,
                          timeout=timeout)


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
    expected = {("teacher", "keras", "float32"), ("teacher", "saved_model", "float32"),
                ("teacher", "tflite", "float32"), ("student3", "keras", "float32"),
                ("student3", "saved_model", "float32")}
    expected |= {("student3", "tflite", m) for m in ("float32", "float16", "dynamic_int8", "int8")}
    assert expected <= set(rows), sorted(rows)
    print("\n" + "\n".join(f"{k}: acc {r['accuracy']:.4f} agree {r['agreement_with_teacher']:.4f}"
                           f" {r['size_mb']:.1f} MB {r['latency_ms']} ms"
                           for k, r in rows.items()))
    for key, r in rows.items():
        # 5 classes: chance is 0.2; even the capped fast run is far above it.
        assert r["accuracy"] > 0.5, (key, r["accuracy"])
        assert 0.0 <= r["agreement_with_teacher"] <= 1.0
        assert r["size_mb"] > 0 and r["latency_ms"] and r["latency_ms"] > 0, key
    assert rows[("teacher", "keras", "float32")]["agreement_with_teacher"] == 1.0
    # The exported teacher decides exactly like the Keras teacher.
    assert rows[("teacher", "tflite", "float32")]["agreement_with_teacher"] == 1.0
    assert rows[("teacher", "saved_model", "float32")]["agreement_with_teacher"] == 1.0
    s = {m: rows[("student3", "tflite", m)]["size_mb"] for m in ("float32", "float16",
                                                                   "dynamic_int8", "int8")}
    assert s["int8"] < 0.3 * s["float32"] and s["dynamic_int8"] < 0.3 * s["float32"]
    assert s["float16"] < 0.55 * s["float32"]
    # Each artifact against the Keras model it came from (the exporter's own
    # validation on all 426 test articles, in LiteRT / the TF1 loader).
    for model in ("teacher", "student3"):
        for fmt, mode in (("tflite", "float32"), ("saved_model", "float32")):
            r = rows.get((model, fmt, mode))
            if r is not None:
                assert r["max_abs_logit_diff"] <= 1e-4 and r["agreement_with_keras"] == 1.0
    assert rows[("student3", "tflite", "float16")]["agreement_with_keras"] >= 0.995
    assert rows[("student3", "tflite", "dynamic_int8")]["agreement_with_keras"] >= 0.99
    int8 = rows[("student3", "tflite", "int8")]
    # Full int8 is flagged exactly when it agrees with Keras on < 97% of texts.
    assert int8["validation"].startswith("DEGRADED") == (int8["agreement_with_keras"] < 0.97)
    for r in rows.values():
        assert not any(op.startswith("Flex") for op in r.get("ops", [])), r["ops"]
    headline = report["headline"]
    assert headline["dynamic_int8"]["size_ratio"] > 4 and headline["int8"]["size_ratio"] > 4
    assert report["git_revision"] is None or len(report["git_revision"]) == 40
    md = (out / "report.md").read_text()
    assert "| student3 (3 layers) | tflite int8 |" in md and "Headline" in md
    for png in ("tradeoffs.png", "training_curves.png"):
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out / "exports/serving/teacher/1/saved_model.pb").is_file()
    assert (out / "exports/serving/models.config").is_file()
    assert {p.name for p in assets.iterdir()} >= {"model.tflite", "vocab.txt", "metadata.json"}
    assert json.loads((out / "args.json").read_text())["arguments"]["fast"] is True
    assert "| model | format |" in proc.stdout  # the terminal ends with the table


def test_demo_rerun_skips_finished_stages(demo_run):
    out, _, _, first = demo_run
    t0 = time.time()
    proc = _zoo("demo", "--fast", "--out", str(out), "--android-assets", "none")
    assert proc.returncode == 0, proc.stderr[-3000:]
    seconds = time.time() - t0
    print(f"\nre-run: {seconds:.0f} s (first run {first:.0f} s)")
    for stage in ("convert", "teacher", "distill", "export", "measure", "report"):
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
