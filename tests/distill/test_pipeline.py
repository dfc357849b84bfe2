"""The distillation pipeline (`zoo.distill.pipeline.distill`) in process."""

import dataclasses
import json

import numpy as np
import pytest

from tests.distill.tiny import TINY_RUN, teacher_dir, topic_data
from zoo.checkpoints import load_model_dir
from zoo.distill.pipeline import DistillConfig, distill


@pytest.mark.slow  # distillation runs
def test_cached_teacher_run_in_process(tmp_path):
    """`--cache-teacher`: the teacher runs once, before fit; the run trains
    and writes its student like the live-teacher path."""
    teacher, data = teacher_dir(tmp_path), topic_data(tmp_path)
    config = TINY_RUN
    summary = distill(teacher, data, tmp_path / "cached", config, verbose=0)
    history = json.loads((tmp_path / "cached" / "history.json").read_text())["history"]
    assert len(history["loss"]) == 2 and all(np.isfinite(history["loss"]))
    assert history["loss"][1] < history["loss"][0]
    assert summary["student_parameters"] < summary["teacher_parameters"]
    assert load_model_dir(tmp_path / "cached" / "model")[0].encoder.num_layers == 2


@pytest.mark.slow  # distillation runs
def test_gradient_accumulation_of_2_batches_of_4_is_one_batch_of_8(tmp_path):
    """`--gradient-accumulation 2` at batch 4 trains as batch 8: the same
    updates, so the same student (no dropout; every text has the same
    length, so token-averaged losses weigh the halves equally). Three
    updates each: the epoch is capped at 24 examples, a multiple of 8."""
    import keras

    import zoo
    from tests.distill.tiny import TOPICS, WORDS
    from zoo.checkpoints import save_model_dir
    from zoo.text.tokenizer import WordPieceTokenizer

    tokenizer = WordPieceTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS])
    keras.utils.set_random_seed(0)
    encoder = zoo.BertEncoder(
        vocabulary_size=len(tokenizer.vocabulary),
        num_layers=4,
        num_heads=2,
        hidden_dim=8,
        intermediate_dim=16,
        max_sequence_length=16,
        dropout=0.0,
    )
    teacher = save_model_dir(
        zoo.Classifier(encoder, 3, labels=sorted(TOPICS), dropout=0.0),
        tmp_path / "teacher",
        tokenizer,
    )
    data = topic_data(tmp_path)
    students = {}
    for batch, accumulation in ((8, 1), (4, 2)):
        config = DistillConfig(
            student_layers=2,
            layer_map=(1, 3),
            epochs=1,
            batch_size=batch,
            gradient_accumulation=accumulation,
            sequence_length=12,
            steps_per_epoch=24 // batch,
            learning_rate=1e-2,
            warmup_fraction=0.0,
            seed=3,
            run_eagerly=True,
            evaluate=False,
        )
        distill(teacher, data, tmp_path / f"b{batch}", config, verbose=0)
        students[batch] = load_model_dir(tmp_path / f"b{batch}" / "model")[0].get_weights()
    diff = max(float(np.abs(a - b).max()) for a, b in zip(students[8], students[4]))
    print(f"\nbatch 8 vs 2 x 4 accumulated: max weight difference {diff:.1e}")
    assert diff <= 1e-5


@pytest.mark.slow  # a distillation run
def test_narrower_hidden_student_trains_with_the_projected_hidden_loss(tmp_path, capsys):
    """`--student-hidden-dim`: a 4-wide student of the 8-wide teacher (one of
    its two heads) trains with the hidden-state MSE through learned
    projections in the cosine term's place, from a cached teacher, and saves
    and loads at width 4."""
    teacher, data = teacher_dir(tmp_path), topic_data(tmp_path)
    # The cache keeps only the outputs the weighted terms read: hidden
    # states, no attention maps.
    config = dataclasses.replace(TINY_RUN, student_hidden_dim=4, layer_map=None)
    summary = distill(teacher, data, tmp_path / "narrow", config, verbose=1)
    assert (
        "hidden-state loss through learned projections (weight 1)"
        in capsys.readouterr().out
    )
    history = json.loads((tmp_path / "narrow" / "history.json").read_text())["history"]
    assert "cosine_loss" not in history and all(np.isfinite(history["hidden_loss"]))
    assert history["loss"][1] < history["loss"][0]
    saved = json.loads((tmp_path / "narrow" / "model" / "zoo_model.json").read_text())
    assert saved["distill_config"]["hidden_weight"] == 1.0
    student = load_model_dir(tmp_path / "narrow" / "model")[0]
    assert (student.encoder.hidden_dim, student.encoder.num_heads) == (4, 1)
    assert summary["student_parameters"] < summary["teacher_parameters"]


def test_narrower_hidden_width_is_checked_before_anything_is_written(tmp_path):
    from zoo.distill.pipeline import check_distill_inputs

    teacher, data = teacher_dir(tmp_path), topic_data(tmp_path)
    for width in (6, 12, 0):
        config = DistillConfig(student_layers=2, student_hidden_dim=width)
        with pytest.raises(
            ValueError, match=f"--student-hidden-dim {width}: .*multiple of 4 up to 8"
        ):
            check_distill_inputs(teacher, data, config)
