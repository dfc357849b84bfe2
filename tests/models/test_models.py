"""Every layer and model class through the shared checks, on tiny configs."""

import json
import subprocess
import sys

import keras
import numpy as np
import pytest

import zoo
from tests.helpers import (
    TINY,
    check_config_round_trip,
    check_fit_step,
    check_save_reload,
    max_diff,
    tiny_batch,
    to_numpy,
)


def bert():
    return zoo.BertEncoder(**TINY)


def distil():
    return zoo.DistilBertEncoder(**TINY)


# (name, builder, needs masked positions, targets builder, losses)
B, T, P, C = 3, 7, 2, 4
CASES = {
    "bert_encoder": (bert, False, None, None),
    "distil_encoder": (distil, False, None, None),
    "classifier": (
        lambda: zoo.Classifier(bert(), C, labels=list("abcd")),
        False,
        lambda: {"logits": np.arange(B) % C},
        {"logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True)},
    ),
    "classifier_mean_distil": (
        lambda: zoo.Classifier(distil(), C, pooling="mean"),
        False,
        lambda: {"logits": np.arange(B) % C},
        {"logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True)},
    ),
    "token_classifier": (
        lambda: zoo.TokenClassifier(bert(), C),
        False,
        lambda: {"logits": np.ones((B, T), "int32")},
        {"logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True)},
    ),
    "question_answerer": (
        lambda: zoo.QuestionAnswerer(bert()),
        False,
        lambda: {"start_logits": np.ones(B, "int32"), "end_logits": np.ones(B, "int32")},
        {
            "start_logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            "end_logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        },
    ),
    "masked_lm": (
        lambda: zoo.MaskedLM(distil()),
        True,
        lambda: {"mlm_logits": np.full((B, P), 7, "int32")},
        {"mlm_logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True)},
    ),
    "nsp": (
        lambda: zoo.NextSentencePredictor(bert()),
        False,
        lambda: {"nsp_logits": np.arange(B) % 2},
        {"nsp_logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True)},
    ),
    "pretrainer": (
        lambda: zoo.Pretrainer(bert()),
        True,
        lambda: {"mlm_logits": np.full((B, P), 7, "int32"), "nsp_logits": np.arange(B) % 2},
        {
            "mlm_logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            "nsp_logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        },
    ),
}


def _inputs(masked):
    return tiny_batch(B, T, TINY["vocabulary_size"], masked=P if masked else None)


@pytest.mark.parametrize("name", sorted(CASES))
def test_model_checks(name, tmp_path):
    build, masked, targets, losses = CASES[name]
    model = build()
    inputs = _inputs(masked)
    eager = to_numpy(model(inputs))
    for value in eager.values():
        assert np.all(np.isfinite(value))
    # Symbolic call gives the same structure.
    symbolic = model({k: keras.Input((None,), dtype="int32", name=k) for k in inputs})
    assert sorted(symbolic) == sorted(eager)
    check_config_round_trip(model, inputs)
    check_save_reload(model, inputs, tmp_path / f"{name}.keras")
    if targets is not None:
        check_fit_step(model, inputs, targets(), losses)


@pytest.mark.slow  # a fresh process
def test_keras_files_reload_in_a_fresh_process(tmp_path):
    """A .keras file loads with no custom_objects in a process that never
    built the model (only `import zoo`), in safe mode, to 1e-6."""
    expected = {}
    for name, (build, masked, _, _) in CASES.items():
        model = build()
        inputs = _inputs(masked)
        model.save(tmp_path / f"{name}.keras")
        np.savez(tmp_path / f"{name}_in.npz", **inputs)
        np.savez(tmp_path / f"{name}_out.npz", **to_numpy(model(inputs)))
        expected[name] = type(model).__name__
    script = f"""
import json, sys, numpy as np, keras, zoo
root = {str(tmp_path)!r}
result = {{}}
for name in {sorted(CASES)!r}:
    model = keras.saving.load_model(f"{{root}}/{{name}}.keras", safe_mode=True)
    inputs = dict(np.load(f"{{root}}/{{name}}_in.npz"))
    want = dict(np.load(f"{{root}}/{{name}}_out.npz"))
    got = model(inputs)
    diff = max(float(np.abs(np.asarray(got[k]) - want[k]).max()) for k in want)
    result[name] = [type(model).__name__, diff]
print(json.dumps(result))
"""
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    for name, (cls_name, diff) in result.items():
        assert cls_name == expected[name]
        assert diff <= 1e-6, (name, diff)


def test_padding_does_not_change_real_token_outputs():
    encoder = bert()
    inputs = tiny_batch(1, 5, TINY["vocabulary_size"])
    inputs["padding_mask"][:] = 1
    short = to_numpy(encoder(inputs))
    padded = {k: np.pad(v, ((0, 0), (0, 4))) for k, v in inputs.items()}
    padded["token_ids"][:, 5:] = 3  # garbage ids in the padding
    long = to_numpy(encoder(padded))
    np.testing.assert_allclose(
        long["sequence_output"][:, :5], short["sequence_output"], atol=1e-6
    )
    np.testing.assert_allclose(long["pooled_output"], short["pooled_output"], atol=1e-6)


def test_with_internals_shares_weights_and_exposes_every_layer():
    encoder = bert()
    inputs = _inputs(False)
    full = encoder.with_internals()(inputs)
    assert len(full["hidden_states"]) == TINY["num_layers"] + 1
    assert len(full["attention_probs"]) == TINY["num_layers"]
    probs = np.asarray(full["attention_probs"][0])
    assert probs.shape == (B, TINY["num_heads"], T, T)
    np.testing.assert_allclose(probs.sum(-1), 1.0, atol=1e-5)
    # Padding keys get no attention from any query.
    pad_keys = inputs["padding_mask"] == 0  # (B, T)
    assert pad_keys.any()
    assert np.all(probs.transpose(0, 3, 1, 2)[pad_keys] < 1e-6)
    np.testing.assert_array_equal(
        np.asarray(full["hidden_states"][-1]),
        np.asarray(encoder(inputs)["sequence_output"]),
    )


def test_distil_encoder_ignores_segments_and_has_no_pooler():
    encoder = distil()
    inputs = _inputs(False)
    other = dict(inputs, segment_ids=np.ones_like(inputs["segment_ids"]))
    a, b = to_numpy(encoder(inputs)), to_numpy(encoder(other))
    assert sorted(a) == ["sequence_output"]
    assert max_diff(a, b) == 0.0


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
def test_mixed_precision_heads_output_float32(policy):
    keras.config.set_dtype_policy(policy)
    model = zoo.Pretrainer(bert())
    out = model(_inputs(True))
    for value in out.values():
        assert value.dtype == "float32"
        assert np.all(np.isfinite(np.asarray(value)))
    classifier = zoo.Classifier(bert(), 3)
    assert classifier(_inputs(False))["logits"].dtype == "float32"


def _tiny_tokenizer():
    """A WordPiece tokenizer over TINY's vocabulary size (for model directories)."""
    from zoo.text.tokenizer import WordPieceTokenizer

    special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    return WordPieceTokenizer(
        special + [f"w{i}" for i in range(TINY["vocabulary_size"] - 5)]
    )


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
def test_with_dtype_policy_and_model_directories_compute_in_float32(policy, tmp_path):
    """A model trained under mixed precision is saved as a float32 model
    directory (for export and serving); `with_dtype_policy` moves a model
    between policies with the same weights."""
    from zoo.checkpoints import load_model_dir, save_model_dir

    inputs = _inputs(False)
    model = zoo.Classifier(bert(), 3)
    reference = to_numpy(model(inputs))
    assert zoo.with_dtype_policy(model, "float32") is model  # nothing to change

    mixed = zoo.with_dtype_policy(model, policy)
    assert mixed.encoder.compute_policy.name == policy
    assert mixed.encoder.get_layer("transformer_layer_0").compute_dtype == policy[6:]
    assert all(
        np.array_equal(a, b) for a, b in zip(mixed.get_weights(), model.get_weights())
    )
    low = to_numpy(mixed(inputs))
    assert low["logits"].dtype == np.float32
    assert 0 < max_diff(low, reference) < 0.05  # the same model in low precision

    save_model_dir(mixed, tmp_path / "dir", _tiny_tokenizer())
    assert mixed.encoder.compute_policy.name == policy  # the trained model is untouched
    loaded, _, _ = load_model_dir(tmp_path / "dir")
    assert loaded.encoder.compute_policy.name == "float32"
    assert max_diff(to_numpy(loaded(inputs)), reference) < 1e-6
    # The encoder's policy is saved with it, so it stays float32 even in a
    # process running mixed (the small head layers follow the process).
    keras.config.set_dtype_policy(policy)
    assert load_model_dir(tmp_path / "dir")[0].encoder.compute_policy.name == "float32"
    with pytest.raises(TypeError, match="BertEncoder or DistilBertEncoder"):
        zoo.with_dtype_policy(keras.layers.Dense(3), policy)


def test_head_errors_explain_what_to_do():
    with pytest.raises(ValueError, match="pooling='cls' or 'mean'"):
        zoo.Classifier(distil(), 3, pooling="pooled")
    with pytest.raises(ValueError, match="zoo.MaskedLM for MLM-only"):
        zoo.Pretrainer(distil())
    with pytest.raises(TypeError, match="BertEncoder or DistilBertEncoder"):
        zoo.Classifier(keras.layers.Dense(3), 3)
    with pytest.raises(ValueError, match="2 labels given for num_classes=3"):
        zoo.Classifier(bert(), 3, labels=["a", "b"])


def test_masked_lm_ties_output_weights_to_token_embedding():
    model = zoo.MaskedLM(bert())
    model(_inputs(True))
    embeddings = model.encoder.token_embedding.embeddings
    assert model.mlm_head.token_embedding.embeddings is embeddings
    # Counted once: encoder + transform dense + LayerNorm + output bias.
    h, v = TINY["hidden_dim"], TINY["vocabulary_size"]
    assert model.count_params() == model.encoder.count_params() + (h * h + h) + 2 * h + v


@pytest.mark.slow  # a fresh process
def test_model_directory_of_a_trained_model_loads_in_a_fresh_process(tmp_path):
    """What `zoo finetune` writes (a compiled model, AdamW with the project's
    schedule, after fit) loads where nothing imported the trainer, and holds
    the weights without optimizer state."""
    from zoo.checkpoints import save_model_dir
    from zoo.train.optimization import make_adamw

    model = zoo.Classifier(bert(), 3, labels=["a", "b", "c"])
    inputs = tiny_batch(4, 6, TINY["vocabulary_size"])
    model.compile(
        optimizer=make_adamw(model, 1e-3, 10),
        loss={"logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True)},
    )
    model.fit(inputs, {"logits": np.array([0, 1, 2, 1])}, verbose=0)
    tokenizer = _tiny_tokenizer()
    save_model_dir(model, tmp_path / "dir", tokenizer)
    assert model.optimizer is not None  # restored after the save
    np.savez(tmp_path / "in.npz", **inputs)
    np.save(tmp_path / "out.npy", np.asarray(model(inputs)["logits"]))
    script = f"""
import numpy as np
from zoo.checkpoints.model_dir import load_model_dir
root = {str(tmp_path)!r}
model, tok, meta = load_model_dir(root + "/dir")
got = np.asarray(model(dict(np.load(root + "/in.npz")))["logits"])
print(float(np.abs(got - np.load(root + "/out.npy")).max()))
"""
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert float(proc.stdout.strip().splitlines()[-1]) <= 1e-6
    # Weights only: no optimizer variables (AdamW's moments triple the file).
    import io
    import zipfile

    import h5py

    with zipfile.ZipFile(tmp_path / "dir" / "model.keras") as z:
        weights = h5py.File(io.BytesIO(z.read("model.weights.h5")), "r")
        stored = []
        weights.visit(
            lambda name: stored.append(name) if name.startswith("optimizer") else None
        )
    assert not [n for n in stored if n.endswith(("/0", "/1", "/2"))], stored
