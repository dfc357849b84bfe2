"""BERT's fine-tuning optimizer: the warmup/linear-decay schedule's values,
and AdamW's weight decay applied to kernels and embeddings but never to
LayerNorm parameters or biases."""

from unittest import mock

import keras
import numpy as np
import pytest
import tensorflow as tf

import zoo
from tests.helpers import TINY, tiny_batch
from zoo.train.optimization import WarmupLinearDecay, make_adamw
from zoo.utils import schedules


def test_schedule_warms_up_then_decays_linearly_to_zero():
    schedule = WarmupLinearDecay(1e-3, total_steps=100, warmup_steps=10)
    values = {step: float(schedule(step)) for step in (0, 4, 9, 10, 55, 99, 100, 150)}
    assert values[0] == pytest.approx(1e-4)  # 1/10 of the peak on the first step
    assert values[4] == pytest.approx(5e-4)
    assert values[9] == pytest.approx(1e-3)  # peak at the end of warmup
    assert values[10] == pytest.approx(1e-3)
    assert values[55] == pytest.approx(5e-4)  # half way down the decay
    assert values[99] == pytest.approx(1e-3 / 90)  # 1 of the 90 decay steps left
    assert values[100] == 0.0 and values[150] == 0.0
    # Round-trips through its config (it is saved inside compiled models).
    again = WarmupLinearDecay.from_config(schedule.get_config())
    assert float(again(55)) == pytest.approx(values[55])
    with pytest.raises(ValueError, match="total_steps must be >= 1; received 0"):
        WarmupLinearDecay(1e-3, total_steps=0, warmup_steps=0)


def test_weight_decay_skips_layer_norm_and_biases():
    # With zero gradients Adam's update is exactly zero, so the only change a
    # step makes is decoupled weight decay: w <- w * (1 - lr * wd).
    model = zoo.Classifier(zoo.BertEncoder(**TINY), 3)
    model(tiny_batch(2, 5, TINY["vocabulary_size"]))
    # Biases and LayerNorm offsets start at 0, which decay would leave at 0:
    # give every variable non-zero values so decayed and kept differ.
    rng = np.random.default_rng(0)
    for v in model.trainable_variables:
        v.assign(rng.uniform(0.5, 1.5, v.shape).astype("float32"))
    lr, wd = 0.01, 0.1
    optimizer = make_adamw(model, lr, total_steps=10, warmup_fraction=0.0, weight_decay=wd)
    before = {v.path: np.array(v) for v in model.trainable_variables}
    optimizer.apply_gradients(
        [(keras.ops.zeros_like(v), v) for v in model.trainable_variables]
    )

    decayed, kept = [], []
    for v in model.trainable_variables:
        after, old = np.array(v), before[v.path]
        if np.allclose(after, old * (1 - lr * wd), rtol=1e-6, atol=0):
            decayed.append(v.path)
        elif np.array_equal(after, old):
            kept.append(v.path)
        else:
            raise AssertionError(f"{v.path} changed by something other than weight decay")
    leaf = lambda path: path.rsplit("/", 1)[-1]  # noqa: E731
    assert kept and decayed
    # Every LayerNorm scale/offset and every bias is excluded ...
    assert all(leaf(p) in ("gamma", "beta", "bias") for p in kept), kept
    # ... and everything else (kernels, embeddings) is decayed.
    assert all(leaf(p) not in ("gamma", "beta", "bias") for p in decayed), decayed
    assert any("embedding" in p for p in decayed)
    assert sum(leaf(p) == "gamma" for p in kept) == 2 * TINY["num_layers"] + 1


def test_fused_adam_step_is_keras_adams_step():
    """`zoo.utils.schedules.AdamW.update_step` (TensorFlow's fused
    ResourceApplyAdam) moves every variable and both moments as Keras's own
    Adam step does, over several steps of real, varying gradients, weight
    decay and clipping included; and it is the kernel that runs."""
    rng = np.random.default_rng(0)
    model = zoo.Classifier(zoo.BertEncoder(**TINY), 3)
    model(tiny_batch(2, 5, TINY["vocabulary_size"]))
    start = [np.array(v) for v in model.trainable_variables]
    grads = [
        [rng.normal(size=v.shape).astype("float32") for v in model.trainable_variables]
        for _ in range(4)
    ]
    ends = {}
    for name, step in (
        ("fused", schedules.AdamW.update_step),
        ("keras", keras.optimizers.AdamW.update_step),
    ):
        for v, value in zip(model.trainable_variables, start):
            v.assign(value)
        optimizer = make_adamw(model, 1e-2, total_steps=10, warmup_fraction=0.0)
        with mock.patch.object(schedules.AdamW, "update_step", step):
            for g in grads:
                optimizer.apply_gradients(zip(g, model.trainable_variables))
        ends[name] = (
            [np.array(v) for v in model.trainable_variables],
            [np.array(m) for m in optimizer._momentums + optimizer._velocities],
        )
    # Float32 rounding in another order: ~2e-7 on weights that moved ~4e-2.
    for fused, ours in zip(*[ends["fused"][0], ends["keras"][0]]):
        np.testing.assert_allclose(fused, ours, rtol=1e-5, atol=1e-6)
    for fused, ours in zip(*[ends["fused"][1], ends["keras"][1]]):
        np.testing.assert_allclose(fused, ours, rtol=1e-5, atol=1e-7)
    moved = max(float(np.abs(a - b).max()) for a, b in zip(ends["fused"][0], start))
    assert moved > 1e-3  # four steps at lr 1e-2 moved the weights
    graph = (
        tf.function(
            lambda: optimizer.apply_gradients(zip(grads[0], model.trainable_variables))
        )
        .get_concrete_function()
        .graph
    )
    assert "ResourceApplyAdam" in {op.type for op in graph.get_operations()}


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("patience", 0, "--patience must be a positive integer; received 0"),
        ("epochs", -1, "--epochs must be a positive integer; received -1"),
        ("batch_size", 2.5, "--batch-size must be a positive integer; received 2.5"),
        ("learning_rate", 0, "--learning-rate must be a finite number > 0 .*; received 0"),
        ("learning_rate", float("inf"), "--learning-rate must be a finite number > 0"),
        ("warmup_fraction", 1.5, r"--warmup-fraction must be in \[0, 1\]; received 1.5"),
        (
            "weight_decay",
            -0.1,
            "--weight-decay must be a finite number >= 0; received -0.1",
        ),
        ("weight_decay", float("inf"), "--weight-decay must be a finite number >= 0"),
        ("steps_per_epoch", 0, "--steps-per-epoch must be a positive integer; received 0"),
        (
            "gradient_accumulation",
            True,
            "--gradient-accumulation must be a positive integer",
        ),
        # Bounded by what each number becomes, not only by its sign.
        ("sequence_length", 2, r"--sequence-length must be at least [38] \(.*received 2"),
        ("seed", -1, r"--seed must be an integer in 0\.\.4294967295; received -1"),
        ("seed", 2**32, r"--seed must be an integer in 0\.\.4294967295"),
        ("batch_size", 10**20, "--batch-size must be at most 2,147,483,647"),
        ("gradient_accumulation", 2**31, "--gradient-accumulation must be at most"),
        (
            "learning_rate",
            1e-300,
            "--learning-rate must be a finite number > 0 that float32",
        ),
        ("learning_rate", 1e39, "--learning-rate must be a finite number > 0 that float32"),
        ("weight_decay", 1e39, "--weight-decay must be a finite number >= 0"),
        ("weight_decay", 3e4, "drives the weights through zero; lower --learning-rate"),
    ],
)
def test_training_configs_name_the_bad_field(field, value, message):
    """finetune, pretrain and distill refuse the same numbers the same way
    (`check_training_numbers`), before anything is written."""
    from zoo.distill.pipeline import DistillConfig, check_distill_inputs
    from zoo.train.finetune import FinetuneConfig
    from zoo.train.pretrain import PretrainConfig

    with pytest.raises(ValueError, match=message):
        FinetuneConfig(**{field: value})
    if field != "patience":
        with pytest.raises(ValueError, match=message):
            PretrainConfig(**{field: value})
        with pytest.raises(ValueError, match=message):
            check_distill_inputs("no-teacher", "bbc", DistillConfig(2, **{field: value}))


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("temperature", float("nan"), "--temperature must be a finite number > 0"),
        ("temperature", 0, "--temperature must be a finite number > 0; received 0"),
        ("soft_weight", -5, "--soft-weight must be a finite number >= 0; received -5"),
        ("hard_weight", float("inf"), "--hard-weight must be a finite number >= 0"),
        ("cosine_weight", float("nan"), "--cosine-weight must be a finite number >= 0"),
        ("temperature", 1e39, r"--temperature must be at most 1e\+06; received 1e\+39"),
        ("soft_weight", 1e7, r"--soft-weight must be at most 1e\+06"),
    ],
)
def test_distillation_refuses_loss_numbers_that_train_to_nan_or_away(field, value, message):
    """A NaN temperature trained to NaN, and negative weights trained the
    student away from its teacher, both with exit 0: refused by name
    before anything is written."""
    from zoo.distill.pipeline import DistillConfig, check_distill_inputs

    with pytest.raises(ValueError, match=message):
        check_distill_inputs("no-teacher", "bbc", DistillConfig(2, **{field: value}))


def test_epochs_grow_with_small_data_and_stay_pinned_by_the_flag():
    from zoo.train.optimization import (
        AUTO_EPOCHS,
        AUTO_MAX_EPOCHS,
        AUTO_MIN_UPDATES,
        training_epochs,
    )

    # 400 texts at batch 16: 25 updates an epoch, 12 epochs for 300 updates.
    assert training_epochs(None, 25)[0] == -(-AUTO_MIN_UPDATES // 25) == 12
    # A large set keeps BERT's recipe; a tiny one is capped.
    assert training_epochs(None, 6250)[0] == AUTO_EPOCHS
    assert training_epochs(None, 2)[0] == AUTO_MAX_EPOCHS
    # Accumulated steps count as one update.
    assert training_epochs(None, 50, gradient_accumulation=2)[0] == 12
    # --epochs pins it; --steps-per-epoch (a run sized by hand) keeps the default.
    assert training_epochs(5, 25) == (
        5,
        "5 epochs, as given (--epochs, or the config's epochs)",
    )
    assert training_epochs(None, 2, capped=True)[0] == AUTO_EPOCHS
    epochs, why = training_epochs(None, 25)
    assert "25 updates an epoch" in why and "--epochs N pins it" in why


def test_numbers_bounded_by_other_numbers_are_refused_before_anything_is_written():
    """Checks that need two numbers, or one command's own: a QA answer of at
    least one word piece, a pre-training example of at least 8 tokens, no
    validation to select on in general distillation, and some loss left to
    train a student (also once a narrower student drops the cosine term)."""
    from zoo.distill.pipeline import DistillConfig, check_distill_inputs
    from zoo.train.finetune import FinetuneConfig
    from zoo.train.pretrain import PretrainConfig

    with pytest.raises(ValueError, match="--max-answer-length must be a positive integer"):
        FinetuneConfig(max_answer_length=0)
    FinetuneConfig(sequence_length=3)  # [CLS] one piece [SEP]
    with pytest.raises(
        ValueError, match=r"--sequence-length must be at least 8 .*received 5"
    ):
        PretrainConfig(sequence_length=5, max_predictions=2)
    # --max-predictions is a most: above the length it masks at most the length
    # (tests/train/test_pretraining_data.py), so the default takes a short length.
    PretrainConfig(sequence_length=16)
    with pytest.raises(ValueError, match="--max-predictions must be at most 2,147,483,647"):
        PretrainConfig(sequence_length=16, max_predictions=10**20)
    with pytest.raises(ValueError, match="--sequence-length must be at least 8"):
        check_distill_inputs(
            "no-teacher", "bbc", DistillConfig(2, mode="general", sequence_length=5)
        )
    with pytest.raises(FileNotFoundError, match="--teacher"):  # the numbers pass
        check_distill_inputs(
            "no-teacher", "bbc", DistillConfig(2, mode="general", sequence_length=16)
        )
    with pytest.raises(
        ValueError, match="--select-by teacher: --mode general has no valid"
    ):
        check_distill_inputs(
            "no-teacher", "bbc", DistillConfig(2, mode="general", select_by="teacher")
        )
    # Each mode refuses the other's settings instead of ignoring them.
    with pytest.raises(ValueError, match="--patience 5: --mode general has no valid"):
        check_distill_inputs(
            "no-teacher", "bbc", DistillConfig(2, mode="general", patience=5)
        )
    with pytest.raises(ValueError, match="--max-predictions 10: only --mode general"):
        check_distill_inputs("no-teacher", "bbc", DistillConfig(2, max_predictions=10))
    with pytest.raises(FileNotFoundError, match="--teacher"):  # their defaults pass
        check_distill_inputs("no-teacher", "bbc", DistillConfig(2, mode="general"))
    zero = dict(soft_weight=0, hard_weight=0, cosine_weight=0)
    with pytest.raises(ValueError, match=r"loss weights .*are all 0: nothing would train"):
        check_distill_inputs("no-teacher", "bbc", DistillConfig(2, **zero))


def test_a_narrower_student_with_only_the_cosine_loss_is_refused(tmp_path):
    from tests.export.conftest import VOCABULARY, make_tiny
    from zoo.checkpoints import save_model_dir
    from zoo.distill.pipeline import DistillConfig, check_distill_inputs
    from zoo.text.tokenizer import WordPieceTokenizer

    teacher = save_model_dir(
        make_tiny("classifier"), tmp_path / "teacher", WordPieceTokenizer(VOCABULARY)
    )
    config = DistillConfig(
        1,
        student_hidden_dim=8,  # one of the tiny teacher's two heads of 8
        soft_weight=0,
        hard_weight=0,
        cosine_weight=1,
        sequence_length=32,
    )
    with pytest.raises(
        ValueError, match="once the cosine term is dropped.*--hidden-weight"
    ):
        check_distill_inputs(teacher, "bbc", config)


def test_fewer_steps_than_one_accumulated_update_are_refused():
    """Keras applies accumulated gradients every N-th step only: a run of
    fewer than N steps would end with the weights it started from."""
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    with pytest.raises(
        ValueError, match=r"--gradient-accumulation 5: the run makes at most 2 "
    ):
        make_adamw(model, 1e-3, 2, gradient_accumulation=5)
    make_adamw(model, 1e-3, 5, gradient_accumulation=5)  # one update
    # Known from the flags alone (--steps-per-epoch x --epochs, or x 3 without
    # --epochs): refused before anything is written.
    from zoo.train.finetune import FinetuneConfig

    with pytest.raises(
        ValueError, match="--gradient-accumulation 5: the run makes at most 4 "
    ):
        FinetuneConfig(steps_per_epoch=2, epochs=2, gradient_accumulation=5)
    with pytest.raises(
        ValueError, match="--gradient-accumulation 7: the run makes at most 6 "
    ):
        FinetuneConfig(steps_per_epoch=2, gradient_accumulation=7)
    FinetuneConfig(steps_per_epoch=2, epochs=3, gradient_accumulation=6)
