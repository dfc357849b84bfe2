"""The distillation pipeline (`zoo.distill.pipeline.distill`) in process."""

import json

import numpy as np

from tests.distill.tiny import teacher_dir, topic_data
from zoo.checkpoints import load_model_dir
from zoo.distill.pipeline import DistillConfig, distill


def test_cached_teacher_run_in_process(tmp_path):
    """`--cache-teacher`: the teacher runs once, before fit; the run trains
    and writes its student like the live-teacher path."""
    teacher, data = teacher_dir(tmp_path), topic_data(tmp_path)
    config = DistillConfig(student_layers=2, layer_map=(1, 3), epochs=2, batch_size=8,
                           sequence_length=12, learning_rate=1e-3, seed=3,
                           run_eagerly=True, evaluate=False, cache_teacher=True)
    summary = distill(teacher, data, tmp_path / "cached", config, verbose=0)
    history = json.loads((tmp_path / "cached" / "history.json").read_text())["history"]
    assert len(history["loss"]) == 2 and all(np.isfinite(history["loss"]))
    assert history["loss"][1] < history["loss"][0]
    assert summary["student_parameters"] < summary["teacher_parameters"]
    assert load_model_dir(tmp_path / "cached" / "model")[0].encoder.num_layers == 2
