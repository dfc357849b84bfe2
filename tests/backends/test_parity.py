"""The zoo's models, heads, losses, schedule and optimizer on the JAX and
PyTorch backends against TensorFlow, on the same weights (issue #39).

The models are built and saved here (TensorFlow, tiny configs); a worker
process per backend (tests/backends/worker.py; the backend is fixed per
process) loads the same `.keras` files, so this also checks that weights
move from TensorFlow to JAX and PyTorch. Compared: every output of every
model (encoders with every layer's hidden states and attention
probabilities), the distillation losses, the schedule, and three optimizer
steps of dropout-free models (gradients through GELU, the tied decoders,
the span-boundary head and the embeddings) and two epochs of the
Distiller with every loss term. Each figure is printed.
"""

from __future__ import annotations

import numpy as np
import pytest

import zoo
from tests.backends.conftest import run_workers
from tests.helpers import TINY, tiny_batch
from zoo.distill import make_student

# Worker processes on three backends (the project marks tests that spawn
# workers slow; `make test` runs them).
pytestmark = pytest.mark.slow

OTHER_BACKENDS = ("jax", "torch")
# Float32 rounding of the same computation in another order (XLA's and
# PyTorch's kernels); the outputs are O(1). Measured on a 2-core CPU: forward
# 9.5e-7 (JAX) and 1.9e-6 (PyTorch), both on a loss; after the optimizer
# steps 8.9e-6 and 5.3e-6 (an attention bias after the Distiller's epochs).
FORWARD_TOLERANCE = 2e-5
TRAIN_TOLERANCE = 5e-5

P = 2  # masked positions


def _models():
    bert = zoo.BertEncoder(**TINY)
    albert = zoo.AlbertEncoder(**{**TINY, "embedding_dim": 6, "num_groups": 1})
    distil = zoo.DistilBertEncoder(**TINY)
    return {
        "bert_encoder": bert,
        "albert_encoder": albert,
        "distilbert_encoder": distil,
        "roberta_encoder": zoo.RobertaEncoder(**TINY),
        "classifier": zoo.Classifier(bert, 3),
        "mean_classifier": zoo.Classifier(distil, 3, pooling="mean"),
        "token_classifier": zoo.TokenClassifier(bert, 4),
        "question_answerer": zoo.QuestionAnswerer(albert),
        "regressor": zoo.Regressor(bert),
        "masked_lm": zoo.MaskedLM(albert),
        "pretrainer": zoo.Pretrainer(bert, span_boundary=True),
    }


def _inputs(name, model, seed):
    x = tiny_batch(batch=3, seq=7, vocab=TINY["vocabulary_size"], seed=seed)
    names = [i.name for i in model.inputs] if isinstance(model.inputs, list) else []
    if "masked_positions" in names or name in ("masked_lm", "pretrainer"):
        x["masked_positions"] = np.array([[1, 3], [2, 4], [1, 2]], "int32")
    if name == "roberta_encoder":
        x["segment_ids"] = np.zeros_like(x["segment_ids"])  # RoBERTa has one segment type
    if name == "pretrainer":
        x["span_left_positions"] = np.array([[0, 2], [1, 3], [0, 1]], "int32")
        x["span_right_positions"] = np.array([[2, 4], [3, 5], [2, 3]], "int32")
    return x


def _loss_inputs():
    rng = np.random.default_rng(1)
    b, t, c, h, heads = 3, 5, 6, 8, 2
    probs = rng.random((2, b, heads, t, t)).astype("float32")
    probs /= probs.sum(-1, keepdims=True)
    mask = (np.arange(t)[None, :] < np.array([5, 3, 1])[:, None]).astype("int32")
    return {
        "teacher_logits": rng.normal(size=(b, t, c)).astype("float32") * 3,
        "student_logits": rng.normal(size=(b, t, c)).astype("float32") * 3,
        "labels": rng.integers(0, c, size=(b, t)).astype("int32"),
        "teacher_hidden": rng.normal(size=(b, t, h)).astype("float32"),
        "student_hidden": rng.normal(size=(b, t, h)).astype("float32"),
        "teacher_probs": probs[0],
        "student_probs": probs[1],
        "mask": mask,
    }


def _train_models():
    quiet = {**TINY, "dropout": 0.0}
    bert = zoo.BertEncoder(**quiet)
    albert = zoo.AlbertEncoder(**{**quiet, "embedding_dim": 6, "num_groups": 1})
    return {
        "classifier": zoo.Classifier(bert, 3, dropout=0.0),
        "pretrainer": zoo.Pretrainer(bert, span_boundary=True),
        "albert_pretrainer": zoo.Pretrainer(albert, sentence_task="sop"),
    }


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    import keras

    root = tmp_path_factory.mktemp("backends")
    keras.utils.set_random_seed(3)
    (root / "models").mkdir()
    inputs = {}
    for i, (name, model) in enumerate(_models().items()):
        model.save(root / "models" / f"{name}.keras")
        inputs.update({f"{name}/{k}": v for k, v in _inputs(name, model, i).items()})
    np.savez(root / "inputs.npz", **inputs)
    np.savez(root / "loss_inputs.npz", **_loss_inputs())
    (root / "train").mkdir()
    data = {}
    rng = np.random.default_rng(5)
    for name, model in _train_models().items():
        model.save(root / "train" / f"{name}.keras")
        x = _inputs("pretrainer" if name == "pretrainer" else "masked_lm", model, 7)
        if name == "classifier":
            x = {k: x[k] for k in ("token_ids", "segment_ids", "padding_mask")}
        data.update({f"{name}/x/{k}": v for k, v in x.items()})
        for out in model.output:
            size = model.output[out].shape[-1]
            shape = (3, P) if out in ("mlm_logits", "sbo_logits") else (3,)
            data[f"{name}/y/{out}"] = rng.integers(0, size, shape).astype("int32")
    np.savez(root / "train_inputs.npz", **data)
    (root / "distill").mkdir()
    teacher = zoo.Classifier(
        zoo.BertEncoder(**{**TINY, "num_layers": 4, "dropout": 0.0}), 3, dropout=0.0
    )
    teacher.save(root / "distill" / "teacher.keras")
    make_student(teacher, 2).save(root / "distill" / "student.keras")
    np.savez(
        root / "distill" / "data.npz",
        **tiny_batch(batch=8, seq=7, vocab=TINY["vocabulary_size"], seed=11),
        labels=np.arange(8, dtype="int32") % 3,
    )
    run_workers(root, ("forward", "train"), ("tensorflow", *OTHER_BACKENDS))
    return {
        (b, mode): dict(np.load(root / b / f"{mode}.npz"))
        for b in ("tensorflow", *OTHER_BACKENDS)
        for mode in ("forward", "train")
    }


def _diffs(want, got):
    assert sorted(want) == sorted(got)
    return {
        k: float(np.max(np.abs(want[k].astype("float64") - got[k].astype("float64"))))
        for k in want
        if k != "tensorflow_loaded"
    }


@pytest.mark.parametrize("backend", OTHER_BACKENDS)
def test_forward_matches_tensorflow(results, backend):
    want, got = results[("tensorflow", "forward")], results[(backend, "forward")]
    diffs = _diffs(want, got)
    worst = max(diffs, key=diffs.get)
    print(
        f"\n{backend} forward vs TF: max|diff| {diffs[worst]:.2e} ({worst}); {len(diffs)} arrays"
    )
    by_model = {}
    for k, d in diffs.items():
        by_model[k.split(":")[0]] = max(d, by_model.get(k.split(":")[0], 0.0))
    print("  " + ", ".join(f"{m} {d:.1e}" for m, d in sorted(by_model.items())))
    assert diffs[worst] <= FORWARD_TOLERANCE, (worst, diffs[worst])
    # Every model, every layer's outputs, the losses and the schedule came back.
    assert {k.split(":")[0] for k in diffs} >= {*_models(), "loss", "schedule"}
    assert not got["tensorflow_loaded"], f"{backend}: the models imported TensorFlow"


@pytest.mark.parametrize("backend", OTHER_BACKENDS)
def test_training_steps_match_tensorflow(results, backend):
    want, got = results[("tensorflow", "train")], results[(backend, "train")]
    diffs = _diffs(want, got)
    worst = max(diffs, key=diffs.get)
    print(f"\n{backend} 3 AdamW steps vs TF: max|diff| {diffs[worst]:.2e} ({worst})")
    assert diffs[worst] <= TRAIN_TOLERANCE, (worst, diffs[worst])
    # The weights did move (a step that changed nothing would also match).
    for name in _train_models():
        losses = got[f"{name}:losses"]
        assert losses[-1] < losses[0], (name, losses)
    assert got["distill:loss"][-1] < got["distill:loss"][0], got["distill:loss"]
    assert {"distill:hidden_loss", "distill:attention_loss", "distill:soft_loss"} <= set(
        got
    )
    assert not got["tensorflow_loaded"], f"{backend}: training imported TensorFlow"
