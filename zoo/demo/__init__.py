"""`zoo demo`: the main job end to end on the real default (docs/data.md).

    1 convert   the real all-MiniLM-L6-v2 checkpoint -> OUT/minilm
    2 teacher   fine-tune it on BBC News             -> OUT/teacher
    3 distill   2-layer student from layers 0,3      -> OUT/student2 (--students 3,2: more;
                384 of the 1,536 feed-forward units per layer)
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
                teacher of every model and artifact, and of a linear
                baseline (TF-IDF + LinearSVC on the same training articles)
    7 report    OUT/report.md, OUT/report.json, OUT/tradeoffs.png,
                OUT/training_curves.png

Every stage records itself in OUT/stages.json when it finishes; a re-run
skips a stage whose record and outputs are there and verify (model
directories load, artifact manifests match), and `force=True` redoes all.
Training stages that were killed resume at their last finished epoch.

The package: `common` (the recipe, the stage record, the artifact list),
`stages` (stages 1-5), `measure` (stage 6), `report` (stage 7); this
module drives them and re-exports their public names.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import shutil
import time

from zoo.datasets.corpora import minilm_checkpoint_dir
from zoo.demo.common import (
    PHONE_MODES,
    STAGES,
    TFLITE_MODES,
    DemoConfig,
    DemoError,
    Stages,
    _artifact_ok,
    _exports,
    _log,
    _model_dir_ok,
    _phone,
)
from zoo.demo.measure import stage_measure
from zoo.demo.report import (
    _headline,
    _headline_summary,
    _table,
    android_pick,
    baseline_sentence,
    report_markdown,
    stage_report,
)
from zoo.demo.stages import (
    ANDROID_FILES,
    ANDROID_RECORD,
    _android_assets,
    stage_convert,
    stage_distill,
    stage_export,
    stage_prune,
    stage_teacher,
)
from zoo.utils.atomic import output_marker, write_run_marker

# The names importable from zoo.demo, wherever in the package they live
# (tests and bench/ use some of the underscored ones).
__all__ = [
    "ANDROID_FILES",
    "ANDROID_RECORD",
    "DEMO_ENTRIES",
    "MARKER",
    "PHONE_MODES",
    "STAGES",
    "TFLITE_MODES",
    "DemoConfig",
    "DemoError",
    "Stages",
    "_android_assets",
    "_headline",
    "_headline_summary",
    "_phone",
    "_table",
    "android_pick",
    "baseline_sentence",
    "input_paths",
    "prepare_output",
    "report_markdown",
    "run_demo",
    "stage_convert",
    "stage_distill",
    "stage_export",
    "stage_measure",
    "stage_prune",
    "stage_report",
    "stage_teacher",
]

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
        "export": lambda: stage_export(out, config),
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
    report = json.loads((out / "report.json").read_text())
    if not redo:
        # Nothing ran: the terminal still ends with the table.
        _log("\n" + _table(report["rows"]))
    if android_assets is not None:
        # After the report, whose rule picks the file (a finished run given
        # --android-assets again only copies).
        mode, why = android_pick(report["headline"])
        _android_assets(out, config, pathlib.Path(android_assets), mode, why)
    _log(f"\nreport: {out / 'report.md'} ({total:.0f} s this run)")
    return report
