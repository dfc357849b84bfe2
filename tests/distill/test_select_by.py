"""`zoo distill --select-by`: early stopping and the best student watch
either the student's loss on the validation labels or its soft-target KL to
the teacher on the validation texts (`Distiller.test_step`'s teacher_kl)."""

import json

import numpy as np
import pytest

from tests.distill.tiny import teacher_dir, topic_data
from zoo.checkpoints import load_model_dir
from zoo.cli import build_parser, main
from zoo.distill import losses
from zoo.distill.distiller import Distiller
from zoo.distill.pipeline import SELECT_BY, DistillConfig, check_distill_inputs
from zoo.distill.student_init import make_student
from zoo.text.tokenizer import tokenize_texts
from zoo.train.callbacks import BestModelDirectory


def test_teacher_kl_is_the_soft_target_term_and_stays_out_of_training_logs(tmp_path):
    teacher, tokenizer, _ = load_model_dir(teacher_dir(tmp_path))
    student = make_student(teacher, 2)
    distiller = Distiller(teacher, student, temperature=2.0)
    distiller.compile(optimizer="adam")
    x = tokenize_texts(tokenizer, ["goal match team", "rain storm vote law"], 8)
    y = np.array([0, 1])
    logs = distiller.evaluate(x, y, batch_size=2, return_dict=True, verbose=0)
    # By hand: the KL of the two models' logits at temperature 2, batch mean.
    expected = np.mean(
        np.asarray(
            losses.soft_target_loss(teacher(x)["logits"], student(x)["logits"], 2.0, None)
        )
    )
    assert logs["teacher_kl"] == pytest.approx(float(expected), rel=1e-4)
    assert logs["teacher_kl"] > 0  # two different models
    # A student equal to its teacher is at KL 0.
    same = Distiller(teacher, teacher, temperature=2.0)
    same.compile(optimizer="adam")
    assert same.evaluate(x, y, return_dict=True, verbose=0)["teacher_kl"] == pytest.approx(
        0.0, abs=1e-6
    )
    history = distiller.fit(x, y, epochs=1, batch_size=2, verbose=0).history
    assert "teacher_kl" not in history and "loss" in history


def test_the_flag_reaches_the_best_model_and_a_wrong_value_is_refused(tmp_path, capsys):
    teacher, data = teacher_dir(tmp_path), topic_data(tmp_path)
    out = tmp_path / "student"
    argv = ["distill", "--teacher", str(teacher), "--data", str(data), "--out", str(out)]
    argv += ["--student-layers", "2", "--epochs", "3", "--batch-size", "8"]
    argv += ["--sequence-length", "12", "--select-by", "teacher", "--verbose", "0"]
    argv += ["--no-evaluate"]
    assert main(argv) == 0
    best = json.loads((out / "model" / "zoo_model.json").read_text())["best"]
    assert best["monitor"] == SELECT_BY["teacher"] == "val_teacher_kl"
    history = json.loads((out / "history.json").read_text())["history"]
    assert best["value"] == pytest.approx(min(history["val_teacher_kl"]))
    assert best["epoch"] == 1 + int(np.argmin(history["val_teacher_kl"]))
    # A resumed run compares with the recorded best only if it is the same
    # quantity (a KL is no cross-entropy).
    same = BestModelDirectory(out / "model", None, {}, monitor="val_teacher_kl")
    assert (same.best, same.best_epoch) == (pytest.approx(best["value"]), best["epoch"])
    assert BestModelDirectory(out / "model", None, {}, monitor="val_loss").best == np.inf
    # The default watches the labels; a wrong value is refused naming the flag.
    parser = build_parser()
    assert parser.parse_args(argv[:-5]).select_by == "labels"
    with pytest.raises(SystemExit):
        parser.parse_args([*argv[:-3], "--select-by", "accuracy"])
    assert "--select-by" in capsys.readouterr().err
    with pytest.raises(ValueError, match="--select-by 'accuracy'"):
        check_distill_inputs(teacher, data, DistillConfig(2, select_by="accuracy"))
