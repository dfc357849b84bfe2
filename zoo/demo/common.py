"""What the demo's stages share: the recipe (`DemoConfig`), its error, the
stage record (OUT/stages.json), the list of artifacts, and the checks that a
model directory or an artifact is complete."""

from __future__ import annotations

import dataclasses
import json
import pathlib
import sys

from export import manifest as mf
from zoo.checkpoints.model_dir import read_model_dir_meta
from zoo.configs import DEFAULT_SEQUENCE_LENGTH
from zoo.utils.atomic import atomic_file
from zoo.utils.jsonfile import read_json_object

STAGES = ("convert", "teacher", "distill", "prune", "export", "measure", "report")
TFLITE_MODES = ("float32", "float16", "dynamic_int8", "int8", "int4")
# The format of the linear baseline's row (zoo.train.baseline) in the
# measurements and the report: not a BERT model, not an artifact.
BASELINE_FORMAT = "scikit-learn"
# The quantized phone files the headline compares with the float32 teacher.
PHONE_MODES = ("dynamic_int8", "int8", "int4")


@dataclasses.dataclass
class DemoConfig:
    """The demo's recipe. `fast()` is the CI-sized variant (same stages,
    capped steps and a shorter sequence)."""

    # The first 128 word pieces of each article (about 100 words; the
    # median BBC article is over 400). Reading more did not help the teacher
    # on BBC's 213 validation articles: the first 256 pieces gave a higher
    # validation loss at two seeds (0.117 and 0.098 against 0.091 and
    # 0.084; accuracy 0.9765 and 0.9812 against 0.9859 and 0.9812), and up
    # to four 128-piece windows 0.9765, at about 2.5x and 4x the training
    # time. The first 96 and last 30 pieces (bench/head_tail.py) were one
    # validation article better at both seeds, noise at 213 articles, for a
    # second truncation rule in every tokenizer an export meets (MediaPipe's
    # keeps the head): not taken (docs/benchmarks.md, the BBC table).
    sequence_length: int = DEFAULT_SEQUENCE_LENGTH
    batch_size: int = 16
    teacher_epochs: int = 2
    teacher_learning_rate: float = 1e-4
    # Five epochs for the hidden-256 student (below): at three its
    # validation loss was 0.0835 and still falling, at five 0.0767.
    distill_epochs: int = 5
    distill_learning_rate: float = 2e-4
    # The first student is the phone model: pruned, every .tflite mode. Two
    # layers keep over 99% of the teacher's accuracy on BBC (BUILD_NOTES.md,
    # "Performance figures") at a third of its compute.
    students: tuple = (2,)
    # The students keep the 384 strongest of each copied layer's 1536
    # feed-forward units (None keeps them all). The width is the narrowest
    # whose int4 phone file keeps 99% of the teacher's validation accuracy:
    # on BBC's 213 validation articles 768 / 512 / 384 units gave 0.9812 /
    # 0.9859 / 0.9812 against the teacher's 0.9859, and at 1 thread (AVX-512
    # VNNI) files 8.8x / 9.6x / 10.2x faster than the float32 teacher's, of
    # 5.58 / 5.38 / 5.27 MB (docs/benchmarks.md, "The phone files"). Three
    # epochs, the teacher's outputs cached, at 2e-4 (1e-4 gave 0.9765 on
    # validation at width 768).
    student_intermediate_dim: int | None = 384
    # The students' hidden width (None: the teacher's 384): 256 keeps 8 of
    # each copied layer's 12 heads and 256 of the 384 residual features
    # (`zoo distill --student-hidden-dim`). The narrowest whose int4 phone
    # file keeps 99% of the teacher's validation accuracy: on BBC's 213
    # validation articles, against the teacher's 0.9859, widths 384 / 256 /
    # 192 (5 epochs) gave 0.9859 / 0.9812 (0.9812 at a second seed) / 0.9718;
    # the 256 file is 3.48 MB and 1.7 ms an article at 1 thread, the 384
    # one 5.27 MB and 2.7 ms (docs/benchmarks.md, "Narrower students").
    student_hidden_dim: int | None = 256
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
            # The width the fast run's thresholds were set at (above).
            student_intermediate_dim=768,
            student_hidden_dim=None,
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


def _phone(config):
    return f"student{config.students[0]}"


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
