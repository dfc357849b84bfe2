"""The demo's measure stage: accuracy, agreement with the teacher, size and
batch-1 latency of every Keras model and exported artifact on BBC News'
test articles, and the linear baseline beside them, into
OUT/measurements.json."""

from __future__ import annotations

import json
import pathlib

import numpy as np

from export.runtime import load_signature
from export.validate import keras_outputs
from zoo.checkpoints.model_dir import load_model_dir
from zoo.demo.common import BASELINE_FORMAT, _exports, _log, _phone
from zoo.text.readers import read_data
from zoo.text.tokenizer import tokenize_texts
from zoo.train.baseline import baseline_for_examples, paired_comparison
from zoo.train.data import load_task_data
from zoo.utils.atomic import atomic_file
from zoo.utils.latency import interleaved_latency_ms, keras_latency_ms


def _main_result(report, length):
    """The result row that ran every validation text at `length`."""
    rows = [
        r
        for r in report["results"]
        if r.get("predictions") is not None and r["sequence_length"] == length
    ]
    return max(rows, key=lambda r: len(r["predictions"]))


def stage_measure(out, config):
    """Accuracy, agreement with the teacher, size and batch-1 latency of
    every Keras model and every exported artifact on BBC's texts, written to
    OUT/measurements.json."""
    texts, labels = read_data("bbc")
    L = config.sequence_length
    rows = []
    teacher_pred = None
    tokenizers = {}  # model directory -> its tokenizer, for the .tflite timing below
    for name, model_dir in _keras_models(out, config):
        model, tokenizer, _ = load_model_dir(model_dir)
        tokenizers[pathlib.Path(model_dir)] = tokenizer
        # Every model names the teacher's labels in the teacher's order
        # (students and the pruned one inherit them): one gold column.
        index = {n: i for i, n in enumerate(model.labels)}
        gold = np.array([index[y] for y in labels])
        pred = keras_outputs(model, tokenize_texts(tokenizer, texts, L))["logits"].argmax(
            -1
        )
        if teacher_pred is None:
            teacher_pred = pred
        rows.append(_keras_row(name, model_dir, model, L, pred, gold, teacher_pred))
        _log(
            f"      {name} keras: accuracy {rows[-1]['accuracy']:.4f}, "
            f"{rows[-1]['latency_ms']:.1f} ms"
        )
    source = {pathlib.Path(r["path"]): r for r in rows}
    phone = {}  # LiteRT runners of every .tflite, timed together below
    for name, kind, model_dir, mode, path in _exports(out, config):
        origin = source[pathlib.Path(model_dir)]
        rows.append(_artifact_row(name, kind, mode, path, origin, L, gold, teacher_pred))
        if kind == "tflite":
            runner = load_signature(path)
            one = tokenize_texts(
                tokenizers[pathlib.Path(model_dir)], texts[:1], runner.sequence_length
            )
            phone[len(rows) - 1] = lambda runner=runner, one=one: runner.raw(**one)
        _log(
            f"      {name} {kind} {mode or ''}: accuracy {rows[-1]['accuracy']:.4f}, "
            f"{rows[-1]['size_mb']:.1f} MB"
        )
    _time_phone_files(rows, phone)
    rows.append(_baseline_row(index, gold, teacher_pred))
    b = rows[-1]
    _log(
        f"      linear baseline ({b['description']}): accuracy {b['accuracy']:.4f}, "
        f"{b['size_mb']:.1f} MB, {b['latency_ms']:.1f} ms"
    )
    with atomic_file(out / "measurements.json", "w") as f:
        json.dump({"texts": len(texts), "sequence_length": L, "rows": rows}, f, indent=2)
    return {"rows": len(rows)}


# The steps of `stage_measure`.


def _keras_models(out, config):
    """(row name, model directory) of every Keras model measured: the
    teacher first (the others' agreement is with it), the students, the
    pruned phone student."""
    return (
        [("teacher", out / "teacher" / "model")]
        + [(f"student{k}", out / f"student{k}" / "model") for k in config.students]
        + [(_phone(config), out / f"{_phone(config)}_pruned")]
    )


def _keras_row(name, model_dir, model, length, pred, gold, teacher_pred):
    return {
        "model": name,
        "format": "keras",
        "quantization": "float32",
        "layers": int(model.encoder.num_layers),
        "hidden": int(model.encoder.hidden_dim),
        "parameters": int(model.count_params()),
        "vocabulary": int(model.encoder.vocabulary_size),
        "size_mb": (model_dir / "model.keras").stat().st_size / 1e6,
        "latency_ms": keras_latency_ms(model, length),
        "latency_runtime": "TensorFlow (tf.function, default threads)",
        "accuracy": float((pred == gold).mean()),
        "agreement_with_teacher": float((pred == teacher_pred).mean()),
        "path": str(model_dir),
    }


def _artifact_row(name, kind, mode, path, origin, length, gold, teacher_pred):
    """An exported artifact's row, from the report its validation wrote
    (predictions, sizes, latency) and its source model's row (`origin`)."""
    report = json.loads((path / "validation.json").read_text())
    main = _main_result(report, length)
    pred = np.array(main["predictions"])
    metrics = main.get("metrics", {})
    # The sizes the validator measured and recorded for this artifact.
    sizes = report["file_sizes"]
    size = sizes[
        "saved_model (pb + variables)" if kind == "saved_model" else "model.tflite"
    ]
    return {
        "model": name,
        "format": kind,
        "quantization": mode or "float32",
        "layers": origin["layers"],
        "hidden": origin["hidden"],
        "parameters": origin["parameters"],
        "vocabulary": origin["vocabulary"],
        "size_mb": size / 1e6,
        "latency_ms": (main.get("latency") or {}).get("p50_ms"),
        "latency_runtime": report["runtime"],
        "accuracy": float((pred == gold).mean()),
        "agreement_with_teacher": float((pred == teacher_pred).mean()),
        "agreement_with_keras": metrics.get("label_agreement"),
        "max_abs_logit_diff": metrics.get("max_abs_diff"),
        "validation": "passed"
        if report["passed"]
        else ("DEGRADED: " + "; ".join(report["failures"])),
        "ops": sorted({op for ops in (report.get("ops") or {}).values() for op in ops}),
        "path": str(path),
    }


def _time_phone_files(rows, phone):
    """Every .tflite in one interleaved run at 1 thread: the phone figures
    compare files measured under the same load (their rows' latency)."""
    for i, ms in interleaved_latency_ms(phone, rounds=40).items():
        rows[i]["latency_ms"] = ms
        rows[i]["latency_runtime"] = (
            "LiteRT Interpreter, 1 thread, every .tflite timed in one interleaved run"
        )


def _baseline_row(index, gold, teacher_pred):
    """The linear baseline (zoo.train.baseline) as a table row: fitted on
    the training articles the teacher was fine-tuned on, scored on the same
    test articles as the other rows. Its latency is the median time to
    classify one whole test article on one pinned CPU; the BERT rows time
    one 128-token window (the text they read). `against_teacher`: the two
    compared article by article (zoo.train.baseline.paired_comparison)."""
    data = load_task_data("bbc", "classify")
    b = baseline_for_examples(data.splits["train"], data.splits["test"], predictions=True)
    if "skipped" in b:  # BBC News always suits it; a changed corpus would not
        raise RuntimeError(f"the linear baseline could not run on BBC News: {b['skipped']}")
    pred = np.array([index[y] for y in b.pop("predictions")])
    return {
        "model": "linear baseline",
        "format": BASELINE_FORMAT,
        "quantization": "float64",
        "description": b["description"],
        "features": b["num_features"],
        "size_mb": b["size_bytes"] / 1e6,
        "latency_ms": b["latency_ms"],
        "latency_runtime": b["latency_runtime"],
        "accuracy": b["accuracy"],
        "macro_f1": b["macro_f1"],
        "agreement_with_teacher": float((pred == teacher_pred).mean()),
        "against_teacher": paired_comparison(gold, teacher_pred, pred),
        "train_seconds": b["train_seconds"],
        "num_train": b["num_train"],
        "hyperparameters": b["parameters"],
        "validation": "-",
    }
