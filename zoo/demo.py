"""`zoo demo`: the main job end to end on the real default (docs/data.md).

    1 convert   the real all-MiniLM-L6-v2 checkpoint -> OUT/minilm
    2 teacher   fine-tune it on BBC News             -> OUT/teacher
    3 distill   2-layer student from layers 0,3      -> OUT/student2 (--students 3,2: more;
                --student-intermediate-dim 768: half the feed-forward units)
    4 prune     the phone student keeps the word pieces BBC's training split
                needs                                 -> OUT/student2_pruned
    5 export    SavedModel (TF Serving layout) of teacher and student, the
                pruned student as .tflite in float32/float16/dynamic_int8/
                int8/int4 (each with its MediaPipe file; and the teacher in
                float32, the reference for the phone figures), each re-loaded
                and validated in its runtime on the BBC test split before it
                is published; Android assets
    6 measure   size, batch-1 latency (sequence 128; every .tflite timed in
                one interleaved run), accuracy and agreement with the
                teacher of every model and artifact
    7 report    OUT/report.md, OUT/report.json, OUT/tradeoffs.png,
                OUT/training_curves.png

Every stage records itself in OUT/stages.json when it finishes; a re-run
skips a stage whose record and outputs are there and verify (model
directories load, artifact manifests match), and `force=True` redoes all.
Training stages that were killed resume at their last finished epoch.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import shutil
import sys
import time

import matplotlib
import matplotlib.pyplot as plt
import numpy as np

from export import manifest as mf
from export.runtime import load_signature
from export.saved_model import export_saved_model
from export.tflite import CALIBRATED_MODES, export_tflite
from export.validate import format_report, keras_outputs
from zoo.checkpoints import load_checkpoint, save_model_dir
from zoo.checkpoints.model_dir import load_model_dir, read_model_dir_meta
from zoo.configs import DEFAULT_SEQUENCE_LENGTH
from zoo.datasets.corpora import minilm_checkpoint_dir
from zoo.distill.pipeline import DistillConfig, distill
from zoo.distill.prune import prune_model_dir
from zoo.distill.student_init import default_layer_map
from zoo.models.sentence_embedding import (
    PUBLISHED_SIMILARITY,
    SIMILARITY_SENTENCES,
    embed_texts,
)
from zoo.text.readers import calibration_and_validation, read_data
from zoo.text.tokenizer import tokenize_texts
from zoo.train.curves import StepCurve
from zoo.train.finetune import FinetuneConfig, finetune
from zoo.utils.atomic import atomic_file, output_marker, write_run_marker
from zoo.utils.jsonfile import read_json_object
from zoo.utils.latency import interleaved_latency_ms, keras_latency_ms

# The marker of a demo --out written before run directories held
# `.zoo-output` (zoo.utils.atomic.write_run_marker): still ours.
MARKER = ".zoo-demo"
# What the demo writes in --out (named in its run marker): --force redoes
# the stages, each removing only its own entries, so other files stay.
DEMO_ENTRIES = (
    "minilm/",
    "teacher/",
    "student*/",
    "exports/",
    "stages.json",
    "measurements.json",
    "report.md",
    "report.json",
    "tradeoffs.png",
    "training_curves.png",
    "args.json",
)
STAGES = ("convert", "teacher", "distill", "prune", "export", "measure", "report")
TFLITE_MODES = ("float32", "float16", "dynamic_int8", "int8", "int4")
# The quantized phone files the headline compares with the float32 teacher.
PHONE_MODES = ("dynamic_int8", "int8", "int4")


@dataclasses.dataclass
class DemoConfig:
    """The demo's recipe. `fast()` is the CI-sized variant (same stages,
    capped steps and a shorter sequence)."""

    sequence_length: int = DEFAULT_SEQUENCE_LENGTH
    batch_size: int = 16
    teacher_epochs: int = 2
    teacher_learning_rate: float = 1e-4
    distill_epochs: int = 3
    distill_learning_rate: float = 2e-4
    # The first student is the phone model: pruned, every .tflite mode. Two
    # layers keep over 99% of the teacher's accuracy on BBC (BUILD_NOTES.md,
    # "Performance figures") at a third of its compute.
    students: tuple = (2,)
    # The students keep the 768 strongest of each copied layer's 1536
    # feed-forward units (None keeps them all): the phone files are 4.4-5.4x
    # faster than the teacher instead of 3.8-4.1x. Two epochs at 1e-4 were
    # not enough for it (0.9390, 97.6% of a 0.9624 teacher); three, with the
    # teacher's outputs cached, at 1e-4 / 2e-4 gave 0.9531 / 0.9554 on test
    # and 0.9765 / 0.9812 on validation, where 2e-4 was chosen (the phone
    # file: BUILD_NOTES.md, "Phone and MediaPipe").
    student_intermediate_dim: int | None = 768
    # Run the teacher once over the training articles instead of once per
    # epoch (`zoo distill --cache-teacher`).
    cache_teacher: bool = True
    steps_per_epoch: int | None = None
    tflite_modes: tuple = TFLITE_MODES
    seed: int = 0

    @classmethod
    def fast(cls):
        # 10 steps at the full recipe's 1e-4 left the 2-layer student at
        # ~0.55, so unsure of itself that dynamic int8 flipped 1.4% of its
        # labels; the half-width student needs 5e-4 for a CI-sized run's
        # worth of confidence (at 3e-4 dynamic int8 flipped 6 of 426 labels,
        # agreement 0.986 < 0.99; at 5e-4, 1). Ten capped steps would not
        # repay caching the teacher over every training article.
        return cls(
            sequence_length=64,
            teacher_epochs=1,
            distill_epochs=1,
            distill_learning_rate=5e-4,
            steps_per_epoch=10,
            students=(2,),
            cache_teacher=False,
        )


class DemoError(Exception):
    """A user-facing problem with the demo's output directory or inputs."""


def _log(msg):
    print(msg, flush=True)


class Stages:
    """OUT/stages.json: which stages finished, when, in how long."""

    def __init__(self, out):
        self.path = pathlib.Path(out) / "stages.json"
        self.done = (
            read_json_object(self.path, "pass --force to redo the demo")
            if self.path.is_file()
            else {}
        )

    def finished(self, name):
        return name in self.done

    def record(self, name, seconds, **info):
        self.done[name] = {"seconds": round(seconds, 1), **info}
        with atomic_file(self.path, "w") as f:
            json.dump(self.done, f, indent=2)

    def forget(self, name):
        self.done.pop(name, None)


def _model_dir_ok(path):
    try:
        read_model_dir_meta(path)
        return (pathlib.Path(path) / "model.keras").is_file()
    except (FileNotFoundError, ValueError):
        return False


def _artifact_ok(path):
    try:
        mf.verify_manifest(path)
        report = json.loads((pathlib.Path(path) / "validation.json").read_text())
        return bool(report.get("passed") or report.get("degraded"))
    except (FileNotFoundError, ValueError, OSError):
        return False


def _verbose():
    return 1 if sys.stdout.isatty() else 2


# --- the stages --------------------------------------------------------------


def stage_convert(out, config):

    src = minilm_checkpoint_dir()
    _log(f"      reading {src}")
    encoder, tokenizer = load_checkpoint(src)
    # The published sentence similarities are the conversion's sanity check.
    emb = embed_texts(encoder, tokenizer, SIMILARITY_SENTENCES, sequence_length=32)
    sim = emb @ emb.T
    for (i, j), published in PUBLISHED_SIMILARITY.items():
        if abs(sim[i, j] - published) > 0.01:
            raise DemoError(
                f"converted checkpoint gives similarity {sim[i, j]:.3f} for "
                f"{SIMILARITY_SENTENCES[i]!r} / {SIMILARITY_SENTENCES[j]!r}; the model card "
                f"publishes {published}. The installed checkpoint is not the expected one."
            )
    save_model_dir(encoder, out / "minilm", tokenizer, extra={"source": str(src)})
    _log(
        f"      BertEncoder L{encoder.num_layers} H{encoder.hidden_dim} A{encoder.num_heads}, "
        f"{encoder.count_params():,} parameters; similarity guitar/strumming "
        f"{sim[0, 1]:.3f}, guitar/stock market {sim[0, 2]:.3f} (published 0.719, -0.054)"
    )
    return {
        "parameters": int(encoder.count_params()),
        "similarity": {
            "guitar/strumming": float(sim[0, 1]),
            "guitar/stock market": float(sim[0, 2]),
        },
    }


def stage_teacher(out, config):
    run = out / "teacher"
    ft = FinetuneConfig(
        epochs=config.teacher_epochs,
        batch_size=config.batch_size,
        sequence_length=config.sequence_length,
        learning_rate=config.teacher_learning_rate,
        pooling="mean",
        steps_per_epoch=config.steps_per_epoch,
        seed=config.seed,
    )
    result = finetune(
        out / "minilm",
        "bbc",
        "classify",
        run,
        ft,
        callbacks=[StepCurve(run / "curve.json")],
        verbose=_verbose(),
    )
    _log(
        f"      teacher test accuracy {result['accuracy']:.4f} "
        f"({result['num_test']} articles, {result['train_seconds']} s training)"
    )
    return {"accuracy": result["accuracy"], "macro_f1": result["macro_f1"]}


def stage_distill(out, config):
    results = {}
    for layers in config.students:
        run = out / f"student{layers}"
        dc = DistillConfig(
            student_layers=layers,
            epochs=config.distill_epochs,
            batch_size=config.batch_size,
            sequence_length=config.sequence_length,
            learning_rate=config.distill_learning_rate,
            student_intermediate_dim=config.student_intermediate_dim,
            cache_teacher=config.cache_teacher,
            steps_per_epoch=config.steps_per_epoch,
            seed=config.seed,
        )

        spread = dc.layer_map or default_layer_map(6, layers)
        width = (
            f", feed-forward {config.student_intermediate_dim} units wide"
            if config.student_intermediate_dim
            else ""
        )
        _log(
            f"      {layers}-layer student from teacher layers {','.join(map(str, spread))}"
            f"{width}"
        )
        summary = distill(
            out / "teacher" / "model",
            "bbc",
            run,
            dc,
            callbacks=[StepCurve(run / "curve.json")],
            verbose=_verbose(),
        )
        _log(
            f"      student{layers} test accuracy {summary['student']['accuracy']:.4f} "
            f"(teacher {summary['teacher']['accuracy']:.4f}), "
            f"{summary['student_parameters']:,} parameters"
        )
        results[f"student{layers}"] = summary
    return results


def _phone(config):
    return f"student{config.students[0]}"


def stage_prune(out, config):
    name = _phone(config)
    report = prune_model_dir(out / name / "model", "bbc", out / f"{name}_pruned")
    _log(
        f"      {name}: vocabulary {report['vocabulary_before']:,} -> "
        f"{report['vocabulary_after']:,} word pieces, parameters "
        f"{report['parameters_before']:,} -> {report['parameters_after']:,}; test accuracy "
        f"{report['before']['accuracy']:.4f} -> {report['after']['accuracy']:.4f}; "
        f"{report['test_texts_tokenized_differently']} of {report['test_texts']} test "
        "articles tokenize differently"
    )
    return {k: v for k, v in report.items() if k not in ("before", "after")} | {
        "accuracy_before": report["before"]["accuracy"],
        "accuracy_after": report["after"]["accuracy"],
    }


def _exports(out, config):
    """(name, kind, model dir, mode, artifact path) of every artifact."""
    exports = out / "exports"
    student = f"student{config.students[0]}"
    items = [
        (
            "teacher",
            "saved_model",
            out / "teacher" / "model",
            None,
            exports / "serving" / "teacher" / "1",
        ),
        (
            student,
            "saved_model",
            out / student / "model",
            None,
            exports / "serving" / student / "1",
        ),
        (
            "teacher",
            "tflite",
            out / "teacher" / "model",
            "float32",
            exports / "teacher_float32",
        ),
    ]
    for layers in config.students:
        name = f"student{layers}"
        if name == _phone(config):  # the phone student: pruned, every mode
            for mode in config.tflite_modes:
                items.append(
                    (
                        name,
                        "tflite",
                        out / f"{name}_pruned",
                        mode,
                        exports / f"{name}_{mode}",
                    )
                )
        else:
            items.append(
                (
                    name,
                    "tflite",
                    out / name / "model",
                    "dynamic_int8",
                    exports / f"{name}_dynamic_int8",
                )
            )
    return items


def stage_export(out, config, android_assets=None):
    calibration, texts, labels, _ = calibration_and_validation("bbc")
    L = config.sequence_length
    loaded = {}
    summary = {}
    items = _exports(out, config)
    for i, (name, kind, model_dir, mode, path) in enumerate(items, 1):
        label = f"{name} {kind}{' ' + mode if mode else ''}"
        if _artifact_ok(path):
            _log(f"      [{i}/{len(items)}] {label}: present and verified, kept")
            continue
        if model_dir not in loaded:
            loaded[model_dir] = load_model_dir(model_dir)[:2]
        model, tokenizer = loaded[model_dir]
        t0 = time.time()
        _log(f"      [{i}/{len(items)}] {label} ...")
        common = dict(
            validation_texts=texts, validation_labels=labels, source_dir=model_dir
        )
        if kind == "saved_model":
            shutil.rmtree(path, ignore_errors=True)
            export_saved_model(
                model,
                tokenizer,
                path.parents[1],
                name=path.parent.name,
                version=int(path.name),
                sequence_length=L,
                overwrite=True,
                **common,
            )
        else:
            # int8 and int4 are the modes that can lose accuracy: a miss is
            # recorded (and flagged in the report) rather than refused.
            export_tflite(
                model,
                tokenizer,
                path,
                quantize=mode,
                sequence_lengths=(L,),
                representative_texts=calibration if mode in CALIBRATED_MODES else None,
                allow_degraded=mode in CALIBRATED_MODES,
                **common,
            )
        report = json.loads((path / "validation.json").read_text())
        report["artifact"] = str(path)
        _log(format_report(report))
        summary[label] = round(time.time() - t0, 1)
    if android_assets is not None:
        _android_assets(out, config, pathlib.Path(android_assets))
    return summary


# What the demo last copied into an --android-assets folder ({file: sha256}):
# a file there is replaced only when it is absent or still the demo's own.
ANDROID_RECORD = ".zoo-android-assets.json"
ANDROID_FILES = ("model.tflite", "vocab.txt", "metadata.json")


def _android_assets(out, config, folder):
    """The phone model the app ships: the pruned phone student, dynamic int8
    (the app's LiteRT Interpreter path is verified on the JVM with such a
    file; its mediapipe.tflite is for MediaPipe Tasks apps). A file of the
    same name that the demo did not put there (not in the folder's record,
    or changed since) is never overwritten: the stage stops first."""
    source = out / "exports" / f"{_phone(config)}_dynamic_int8"
    if mf.is_byte_pair(read_json_object(source / mf.METADATA, "re-run the export stage")):
        # The app tokenizes in Java with WordPiece (vocab.txt) only.
        raise DemoError(
            f"--android-assets: {source} tokenizes with byte-level BPE (vocab.json + "
            "merges.txt, a RoBERTa model); the Android app's tokenizer is WordPiece "
            "(vocab.txt) and MediaPipe's text tasks take WordPiece or SentencePiece "
            "only, so the app would feed it other ids than in training. Ship "
            "model.tflite with host-side tokenization instead (docs/roberta.md)."
        )
    record_path = folder / ANDROID_RECORD
    record = {}
    if record_path.is_file():
        try:
            record = read_json_object(record_path, f"remove {record_path}")
        except ValueError:
            record = {}
    foreign = [
        name
        for name in ANDROID_FILES
        if (folder / name).exists()
        and record.get(name) != _sha256_or_none(folder / name)
        and _sha256_or_none(folder / name) != mf.sha256_file(source / name)
    ]
    if foreign:
        raise DemoError(
            f"--android-assets {folder}: {foreign} are not files the demo wrote there (or "
            "changed since); the demo never overwrites them. Move them away, or give "
            "another --android-assets folder."
        )
    folder.mkdir(parents=True, exist_ok=True)
    for name in ANDROID_FILES:
        tmp = folder / f".{name}.tmp"
        shutil.copyfile(source / name, tmp)
        tmp.replace(folder / name)
        record[name] = mf.sha256_file(folder / name)
    with atomic_file(record_path, "w") as f:
        json.dump(record, f, indent=2)
    _log(f"      Android assets: {', '.join(ANDROID_FILES)} -> {folder}")


def _sha256_or_none(path):
    return mf.sha256_file(path) if path.is_file() and not path.is_symlink() else None


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


def _headline(rows, config):
    """Each int8 student .tflite against the float32 teacher .tflite (same
    runtime, same thread count); accuracy against the Keras teacher."""
    by = {(r["model"], r["format"], r["quantization"]): r for r in rows}
    teacher = by.get(("teacher", "tflite", "float32"))
    teacher_keras = by[("teacher", "keras", "float32")]
    out = {}
    for mode in PHONE_MODES:
        student = by.get((_phone(config), "tflite", mode))
        if not (teacher and student):
            continue
        out[mode] = {
            "student": f"{_phone(config)} {mode} .tflite, {student['vocabulary']:,} word pieces",
            "teacher": "teacher float32 .tflite",
            "size_ratio": teacher["size_mb"] / student["size_mb"],
            "speedup": teacher["latency_ms"] / student["latency_ms"],
            "accuracy_ratio": student["accuracy"] / teacher_keras["accuracy"],
            "teacher_accuracy": teacher_keras["accuracy"],
            "student_accuracy": student["accuracy"],
            "agreement_with_teacher": student["agreement_with_teacher"],
        }
    # The best phone model: the smallest file within 99% of the teacher's
    # accuracy (then the fastest).
    good = [
        (h["size_ratio"], h["speedup"], mode)
        for mode, h in out.items()
        if h["accuracy_ratio"] >= 0.99
    ]
    if good:
        out["best"] = dict(out[max(good)[2]], mode=max(good)[2])
    return out


def _headline_summary(headline):
    """The report's headline: one line per phone file, the best one first
    (marked), then the other modes in their order. `headline["best"]` is a
    copy of one mode's entry (with that `mode`), so that mode is not listed
    a second time."""
    best = headline.get("best")
    entries = [("best", best)] if best else []
    entries += [
        (mode, h)
        for mode, h in headline.items()
        if mode != "best" and not (best and mode == best["mode"])
    ]
    return "\n".join(
        f"- {'Best phone model: ' if key == 'best' else ''}**{h['student']}** vs "
        f"{h['teacher']}: {h['size_ratio']:.1f}x smaller, "
        f"{h['speedup']:.1f}x faster, accuracy {h['student_accuracy']:.4f} vs "
        f"{h['teacher_accuracy']:.4f} ({100 * h['accuracy_ratio']:.1f}% of the teacher's), "
        f"agreement with the teacher {h['agreement_with_teacher']:.4f}."
        for key, h in entries
    )


def _table(rows):
    head = (
        "| model | format | size MB | latency ms | accuracy | agreement with teacher "
        "| validation |\n|---|---|---:|---:|---:|---:|---|"
    )
    lines = [head]
    for r in rows:
        fmt = r["format"] if r["format"] != "tflite" else f"tflite {r['quantization']}"
        latency = "-" if r["latency_ms"] is None else f"{r['latency_ms']:.1f}"
        vocabulary = (
            "" if r.get("vocabulary", 30522) == 30522 else (f", {r['vocabulary']:,} pieces")
        )
        lines.append(
            f"| {r['model']} ({r['layers']} layers{vocabulary}) | {fmt} | {r['size_mb']:.1f} | "
            f"{latency} | "
            f"{r['accuracy']:.4f} | {r['agreement_with_teacher']:.4f} | "
            f"{r.get('validation', '-')} |"
        )
    return "\n".join(lines)


def _plots(out, rows):
    matplotlib.use("Agg")

    markers = {
        "keras": "o",
        "saved_model": "s",
        "float32": "^",
        "float16": "v",
        "dynamic_int8": "D",
        "int8": "X",
        "int4": "P",
    }
    fig, axes = plt.subplots(1, 2, figsize=(12, 5.2))
    for ax, key, xlabel in (
        (axes[0], "latency_ms", "batch-1 latency, ms (log scale)"),
        (axes[1], "size_mb", "size, MB (log scale)"),
    ):
        for r in rows:
            if r[key] is None:
                continue
            kind = r["format"] if r["format"] != "tflite" else r["quantization"]
            name = {"keras": "Keras", "saved_model": "SavedModel"}.get(
                kind, f".tflite {kind}"
            )
            ax.scatter(
                r[key],
                r["accuracy"],
                s=60,
                marker=markers.get(kind, "o"),
                color="tab:blue" if r["model"] == "teacher" else "tab:orange",
                label=f"{r['model']} {name}",
                edgecolors="black",
                linewidths=0.5,
            )
        ax.set_xlabel(xlabel)
        ax.set_ylabel("BBC News test accuracy")
        ax.set_xscale("log")
        ax.grid(alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=5, fontsize=8, frameon=False)
    fig.suptitle("Every model and artifact of the demo: teacher (blue), student (orange)")
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    fig.savefig(out / "tradeoffs.png", dpi=110)
    plt.close(fig)

    runs = [("teacher", "fine-tuning the teacher")] + [
        (p.name, f"distilling {p.name}") for p in sorted(out.glob("student*"))
    ]
    runs = [(n, t) for n, t in runs if (out / n / "curve.json").is_file()]
    fig, axes = plt.subplots(1, max(1, len(runs)), figsize=(6 * max(1, len(runs)), 4.2))
    axes = [axes] if len(runs) <= 1 else list(axes)
    for ax, (name, title) in zip(axes, runs):
        curve = json.loads((out / name / "curve.json").read_text())
        steps = curve["steps"]
        keys = [k for k in steps[0] if k.endswith("loss")] if steps else []
        for key in keys:
            ys = [s[key] for s in steps]
            smooth, acc = [], None
            for y in ys:
                acc = y if acc is None else 0.9 * acc + 0.1 * y
                smooth.append(acc)
            ax.plot([s["step"] for s in steps], smooth, label=f"{key} (train, smoothed)")
        val = [(e["step"], e["val_loss"]) for e in curve["epochs"] if "val_loss" in e]
        if val:
            ax.plot(*zip(*val), "ko--", label="val_loss (epoch end)")
        ax.set_title(title)
        ax.set_xlabel("step")
        ax.set_yscale("log")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "training_curves.png", dpi=110)
    plt.close(fig)


def stage_report(out, config, args_info):
    measured = json.loads((out / "measurements.json").read_text())
    rows = measured["rows"]
    headline = _headline(rows, config)
    stages = Stages(out).done
    report = {
        "config": dataclasses.asdict(config),
        "headline": headline,
        "rows": rows,
        "stages": stages,
        "texts": measured["texts"],
        "sequence_length": measured["sequence_length"],
        **args_info,
    }
    with atomic_file(out / "report.json", "w") as f:
        json.dump(report, f, indent=2)
    _plots(out, rows)
    lines = [
        "# zoo demo report",
        "",
        f"Teacher: all-MiniLM-L6-v2 fine-tuned on BBC News; students distilled from it. "
        f"Accuracy on the {measured['texts']} articles of the fixed BBC News test split at "
        f"sequence length {measured['sequence_length']}; latency is the median batch-1 time "
        "(LiteRT interpreter with 1 thread for .tflite, every file timed in one interleaved "
        "run; the TF1 session loader for SavedModel; TensorFlow for Keras).",
        "",
        _table(rows),
        "",
    ]
    summary = _headline_summary(headline)
    if summary:
        lines += ["Headline:", "", summary, ""]
    pruned = stages.get("prune", {}).get("result")
    if pruned:
        lines += [
            f"Vocabulary pruning ({_phone(config)}, `zoo prune`): "
            f"{pruned['vocabulary_before']:,} -> {pruned['vocabulary_after']:,} word "
            f"pieces, {pruned['parameters_before']:,} -> "
            f"{pruned['parameters_after']:,} parameters, test accuracy "
            f"{pruned['accuracy_before']:.4f} -> {pruned['accuracy_after']:.4f}; "
            f"{pruned['test_texts_tokenized_differently']} of {pruned['test_texts']} "
            "test articles tokenize differently (a word that used a piece the training "
            "articles never produced splits into shorter pieces). Every .tflite "
            "artifact also holds `mediapipe.tflite`, the file MediaPipe Tasks' "
            "TextClassifier runs as it is.",
            "",
        ]
    lines += [
        "![accuracy against latency and size](tradeoffs.png)",
        "",
        "![training curves](training_curves.png)",
        "",
        "Stage times (s): "
        + ", ".join(f"{k} {v['seconds']}" for k, v in stages.items() if k in STAGES),
        "",
        f"Versions: {json.dumps(args_info.get('versions'))}; git revision "
        f"{args_info.get('git_revision')}.",
        "",
    ]
    with atomic_file(out / "report.md", "w") as f:
        f.write("\n".join(lines))
    _log("\n" + _table(rows))
    if summary:
        _log("\n" + summary)
    return {"headline": headline}


# --- the driver --------------------------------------------------------------


def input_paths():
    """(what, path) of the inputs the demo reads from a path, for the rule
    that --out is none of them: the installed checkpoint (BBC News is read
    by name). A missing checkpoint is left to the stage that reads it."""
    try:
        return [("the all-MiniLM-L6-v2 checkpoint", minilm_checkpoint_dir())]
    except (FileNotFoundError, ImportError):
        return []


def _ours(out):
    marker = output_marker(out)
    if marker is not None:
        return marker["kind"] == "run" and marker["command"] == "demo"
    return (out / MARKER).is_file()


def prepare_output(out, force):
    """Create OUT (or accept our own earlier OUT); refuse someone else's,
    --force or not. --force redoes the stages, each removing only its own
    directories (`run_demo`); other files in OUT stay."""
    out = pathlib.Path(out)
    if out.exists() and not out.is_dir():
        raise DemoError(f"--out {out} is a file; give a directory.")
    if out.exists() and any(out.iterdir()) and not _ours(out):
        raise DemoError(
            f"--out {out} is not empty and was not created by `zoo demo` (no .zoo-output "
            "marker of a demo run); choose another directory (the demo never writes into "
            "foreign files, even with --force)."
        )
    out.mkdir(parents=True, exist_ok=True)
    write_run_marker(out, "demo", DEMO_ENTRIES)
    return out


def run_demo(out, config=None, *, force=False, android_assets=None, args_info=None):
    """Run (or resume) every stage; returns the report dict."""
    config = config or DemoConfig()
    out = prepare_output(out, force)
    stages = Stages(out)
    checks = {
        "convert": lambda: _model_dir_ok(out / "minilm"),
        "teacher": lambda: (
            _model_dir_ok(out / "teacher" / "model")
            and (out / "teacher" / "metrics.json").is_file()
        ),
        "distill": lambda: all(
            _model_dir_ok(out / f"student{k}" / "model")
            and (out / f"student{k}" / "metrics.json").is_file()
            for k in config.students
        ),
        "prune": lambda: _model_dir_ok(out / f"{_phone(config)}_pruned"),
        "export": lambda: all(_artifact_ok(p) for *_, p in _exports(out, config)),
        "measure": lambda: (out / "measurements.json").is_file(),
        "report": lambda: (out / "report.json").is_file(),
    }
    recorded = stages.done.get("_config")
    recipe = json.loads(json.dumps(dataclasses.asdict(config)))  # tuples as JSON lists
    if recorded is not None and recorded != recipe and not force:
        raise DemoError(
            f"{out} holds a demo run with another recipe ({'fast' if recorded.get('steps_per_epoch') else 'full'}); "
            "pass --force to redo it, or choose another --out."
        )
    runners = {
        "convert": lambda: stage_convert(out, config),
        "teacher": lambda: stage_teacher(out, config),
        "distill": lambda: stage_distill(out, config),
        "prune": lambda: stage_prune(out, config),
        "export": lambda: stage_export(out, config, android_assets),
        "measure": lambda: stage_measure(out, config),
        "report": lambda: stage_report(out, config, args_info or {}),
    }
    dirs = {
        "convert": ["minilm"],
        "teacher": ["teacher"],
        "distill": [f"student{k}" for k in config.students],
        "prune": [f"{_phone(config)}_pruned"],
        "export": ["exports"],
    }
    redo = force
    started = time.time()
    for i, name in enumerate(STAGES, 1):
        if not redo and stages.finished(name) and checks[name]():
            _log(
                f"[{i}/{len(STAGES)}] {name}: done earlier ({stages.done[name]['seconds']} s), "
                "outputs verified, skipped"
            )
            continue
        # A stage that finished before (or whose inputs are new) starts
        # clean; one that was killed resumes from what it left.
        if redo or stages.finished(name):
            stages.forget(name)
            for d in dirs.get(name, []):
                shutil.rmtree(out / d, ignore_errors=True)
        # Every stage after one that ran depends on its new outputs.
        redo = True
        _log(f"[{i}/{len(STAGES)}] {name}")
        t0 = time.time()
        info = runners[name]()
        stages.done["_config"] = recipe
        stages.record(name, time.time() - t0, **{"result": info} if info else {})
        _log(f"      {name} finished in {time.time() - t0:.0f} s")
    total = time.time() - started
    if not redo:
        # Nothing ran: the terminal still ends with the table.
        _log("\n" + _table(json.loads((out / "report.json").read_text())["rows"]))
    _log(f"\nreport: {out / 'report.md'} ({total:.0f} s this run)")
    return json.loads((out / "report.json").read_text())
