"""The demo's training and export stages: convert the checkpoint, fine-tune
the teacher, distil the students, prune the phone student's vocabulary,
export and validate every artifact (and copy the phone model into the
Android app's assets)."""

from __future__ import annotations

import json
import shutil
import time

from export import manifest as mf
from export.saved_model import export_saved_model
from export.specs import ServingVersion, Signatures, Validation
from export.tflite import CALIBRATED_MODES, LOSSY_MODES, Quantization, export_tflite
from export.validate import format_report
from export.validate.limits import ExportValidationError
from zoo.checkpoints import load_checkpoint, save_model_dir
from zoo.checkpoints.model_dir import load_model_dir
from zoo.datasets.corpora import minilm_checkpoint_dir
from zoo.demo.common import DemoError, _artifact_ok, _exports, _log, _phone, _verbose
from zoo.distill.pipeline import DistillConfig, distill
from zoo.distill.prune import prune_model_dir
from zoo.distill.student_init import default_layer_map
from zoo.models.sentence_embedding import (
    PUBLISHED_SIMILARITY,
    SIMILARITY_SENTENCES,
    embed_texts,
)
from zoo.text import description as td
from zoo.text.readers import calibration_and_validation
from zoo.text.tokenizer_record import recorded_description
from zoo.train.curves import StepCurve
from zoo.train.finetune import FinetuneConfig, finetune
from zoo.utils.atomic import atomic_file
from zoo.utils.jsonfile import read_json_object


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
            student_hidden_dim=config.student_hidden_dim,
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
        if config.student_hidden_dim:
            width += f", hidden width {config.student_hidden_dim}"
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


def stage_export(out, config):
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
        try:
            _export_one(
                model, tokenizer, kind, mode, path, model_dir, L, texts, labels, calibration
            )
        except ExportValidationError as e:
            raise DemoError(_validation_failed(label, e)) from None
        report = json.loads((path / "validation.json").read_text())
        report["artifact"] = str(path)
        _log(format_report(report))
        summary[label] = round(time.time() - t0, 1)
    return summary


def _validation_failed(label, error):
    """The demo's one-paragraph error for an artifact that missed its
    thresholds (the export published nothing)."""
    return (
        f"{label} missed its validation thresholds and was not published ("
        + "; ".join(error.report["failures"])
        + "). Quantization flips the labels of a student unsure of them, as one "
        "trained briefly (--fast caps training) and made narrow (--student-hidden-dim, "
        "--student-intermediate-dim) is: train it fully (no --fast) or keep the "
        "default widths, in a new --out or with --force. The finished stages here "
        "are kept."
    )


def _export_one(
    model, tokenizer, kind, mode, path, model_dir, L, texts, labels, calibration
):
    """Export and validate one artifact of `stage_export` at `path`."""
    if kind == "saved_model":
        shutil.rmtree(path, ignore_errors=True)
        export_saved_model(
            model,
            tokenizer,
            path.parents[1],
            serving=ServingVersion(path.parent.name, int(path.name), overwrite=True),
            sequence_length=L,
            validation=Validation(texts, labels),
            source_dir=model_dir,
        )
    else:
        # int8 and int4 are the modes that can lose accuracy: a miss is
        # recorded (and flagged in the report) rather than refused.
        calibrated = mode in CALIBRATED_MODES
        export_tflite(
            model,
            tokenizer,
            path,
            quantization=Quantization(mode, calibration if calibrated else None),
            signatures=Signatures((L,)),
            validation=Validation(texts, labels, allow_degraded=mode in LOSSY_MODES),
            source_dir=model_dir,
        )


# What the demo last copied into an --android-assets folder ({file: sha256}):
# a file there is replaced only when it is absent or still the demo's own.
ANDROID_RECORD = ".zoo-android-assets.json"
ANDROID_FILES = ("model.tflite", "vocab.txt", "metadata.json")


def _android_assets(out, config, folder, mode="dynamic_int8", why=""):
    """The phone model the app ships: the pruned phone student's `.tflite`
    in `mode` (the report's pick, `report.android_pick`; the app runs it
    through LiteRT's Interpreter, the runtime `make android-test` checks the
    same kind of file on; its mediapipe.tflite is for MediaPipe Tasks apps).
    A file of the same name that the demo did not put there (not in the
    folder's record, or changed since) is never overwritten: the demo stops
    first."""
    source = out / "exports" / f"{_phone(config)}_{mode}"
    path = source / mf.METADATA
    meta = read_json_object(path, "re-run the export stage")
    try:
        refusal = td.app_refusal(recorded_description(meta, path))
    except td.DescriptionError as e:
        refusal = str(e)
    if refusal is not None:
        # The app implements BERT's WordPiece rule only; it would refuse the file.
        raise DemoError(
            f"--android-assets: {source}: {refusal}. The app would refuse this model; "
            "ship model.tflite with host-side tokenization instead (docs/tokenization.md)."
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
    _log(
        f"Android assets: {source.name} ({why or mode}): {', '.join(ANDROID_FILES)} -> {folder}"
    )


def _sha256_or_none(path):
    return mf.sha256_file(path) if path.is_file() and not path.is_symlink() else None
