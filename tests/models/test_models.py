"""Every encoder family and every head through the harness of
tests/models/harness.py, one item per (family, head, check); then what
crosses models (fresh-process loading, dtype policies, model directories,
the heads' refusals, the tied masked-LM decoder)."""

import io
import json
import subprocess
import sys
import zipfile

import h5py
import keras
import numpy as np
import pytest

import zoo
from tests.helpers import TINY, max_diff, tiny_batch, to_numpy
from tests.models.harness import (
    CHECKS,
    ENCODER,
    FAMILIES,
    HEADS,
    B,
    P,
    T,
    batch,
    built,
    family_config,
    fresh_process_pairs,
    items,
    tiny_encoder,
)
from zoo.checkpoints import load_model_dir, save_model_dir
from zoo.models import ENCODER_CLASSES
from zoo.models.encoder_task import EncoderTask
from zoo.text.tokenizer import WordPieceTokenizer
from zoo.train.optimization import make_adamw


@pytest.mark.parametrize(
    "family, head, check", items(), ids=["-".join(item) for item in items()]
)
def test_model_checks(family, head, check):
    CHECKS[check](family, head)


def test_the_harness_covers_every_family_and_head():
    """A registered encoder family or an exported head missing from the
    harness's tables fails here, not silently."""
    assert {f: cls for f, (cls, _) in FAMILIES.items()} == ENCODER_CLASSES
    assert set(FAMILIES) == set(zoo.configs.FAMILY_DEFAULTS)
    exported = {
        obj
        for name in zoo.models.__all__
        if isinstance(obj := getattr(zoo.models, name), type)
        and issubclass(obj, EncoderTask)
    }
    assert exported == {spec.cls for name, spec in HEADS.items() if name != ENCODER}
    assert {(f, h) for f, h, _ in items()} >= {(f, ENCODER) for f in FAMILIES}


@pytest.mark.parametrize(
    "family, head",
    [
        (f, h)
        for f in FAMILIES
        for h, spec in HEADS.items()
        if spec.needs_pooler and not family_config(f).has_pooler
    ],
)
def test_heads_that_read_the_pooler_refuse_an_encoder_without_one(family, head):
    with pytest.raises(ValueError, match="has no pooler") as err:
        HEADS[head].build(tiny_encoder(family))
    assert "zoo.MaskedLM for MLM-only" in str(err.value)


def bert():
    return zoo.BertEncoder(**TINY)


def distil():
    return zoo.DistilBertEncoder(**TINY)


def _tiny_tokenizer():
    """A WordPiece tokenizer over TINY's vocabulary size (for model directories)."""
    special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    return WordPieceTokenizer(
        special + [f"w{i}" for i in range(TINY["vocabulary_size"] - 5)]
    )


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
def test_with_dtype_policy_and_model_directories_compute_in_float32(policy, tmp_path):
    """A model trained under mixed precision is saved as a float32 model
    directory (for export and serving); `with_dtype_policy` moves a model
    between policies with the same weights."""
    inputs = tiny_batch(B, T, TINY["vocabulary_size"])
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
    with pytest.raises(TypeError, match="BertEncoder or DistilBertEncoder"):
        zoo.Classifier(keras.layers.Dense(3), 3)
    with pytest.raises(ValueError, match="2 labels given for num_classes=3"):
        zoo.Classifier(bert(), 3, labels=["a", "b"])


def test_masked_lm_ties_output_weights_to_token_embedding():
    model = zoo.MaskedLM(bert())
    model(tiny_batch(B, T, TINY["vocabulary_size"], masked=P))
    embeddings = model.encoder.token_embedding.embeddings
    assert model.mlm_head.token_embedding.embeddings is embeddings
    # Counted once: encoder + transform dense + LayerNorm + output bias.
    h, v = TINY["hidden_dim"], TINY["vocabulary_size"]
    assert model.count_params() == model.encoder.count_params() + (h * h + h) + 2 * h + v


# One fresh process loads what both tests below save: a TensorFlow start
# costs as much as a dozen harness items.
FRESH_PROCESS = """
import json, sys, numpy as np, keras
from zoo.checkpoints.model_dir import load_model_dir
import zoo

root, names = sys.argv[1], json.loads(sys.argv[2])
model, tok, meta = load_model_dir(root + "/dir")
got = np.asarray(model(dict(np.load(root + "/in.npz")))["logits"])
result = {"model_dir": float(np.abs(got - np.load(root + "/out.npy")).max())}
for name in names:
    model = keras.saving.load_model(f"{root}/{name}.keras", safe_mode=True)
    inputs = dict(np.load(f"{root}/{name}_in.npz"))
    want = dict(np.load(f"{root}/{name}_out.npz"))
    got = model(inputs)
    diff = max(float(np.abs(np.asarray(got[k]) - want[k]).max()) for k in want)
    result[name] = [type(model).__name__, diff]
print(json.dumps(result))
"""


@pytest.fixture(scope="module")
def fresh_process(tmp_path_factory):
    """Saves a `.keras` file of every encoder and head class and the model
    directory of a trained classifier, then loads them all in a process
    that never built them. Returns (root, classes saved, process, result)."""
    keras.utils.set_random_seed(1234)
    root = tmp_path_factory.mktemp("fresh_process")
    expected = {}
    for family, head in fresh_process_pairs():
        name = f"{family}_{head}"
        model = built(family, head)
        inputs = batch(getattr(model, "encoder", model), HEADS[head].masked)
        model.save(root / f"{name}.keras")
        np.savez(root / f"{name}_in.npz", **inputs)
        np.savez(root / f"{name}_out.npz", **to_numpy(model(inputs)))
        expected[name] = type(model).__name__
    # What `zoo finetune` writes: a compiled model (AdamW with the project's
    # schedule) after fit.
    model = zoo.Classifier(bert(), 3, labels=["a", "b", "c"])
    inputs = tiny_batch(4, 6, TINY["vocabulary_size"])
    model.compile(
        optimizer=make_adamw(model, 1e-3, 10),
        loss={"logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True)},
    )
    model.fit(inputs, {"logits": np.array([0, 1, 2, 1])}, verbose=0)
    save_model_dir(model, root / "dir", _tiny_tokenizer())
    assert model.optimizer is not None  # restored after the save
    np.savez(root / "in.npz", **inputs)
    np.save(root / "out.npy", np.asarray(model(inputs)["logits"]))
    proc = subprocess.run(
        [sys.executable, "-c", FRESH_PROCESS, str(root), json.dumps(sorted(expected))],
        capture_output=True,
        text=True,
        timeout=300,
    )
    result = (
        json.loads(proc.stdout.strip().splitlines()[-1]) if proc.returncode == 0 else {}
    )
    return root, expected, proc, result


@pytest.mark.slow  # a fresh process
def test_keras_files_reload_in_a_fresh_process(fresh_process):
    """A .keras file of every encoder class and every head class loads with
    no custom_objects in a process that never built the model (only `import
    zoo`), in safe mode, to 1e-6."""
    _, expected, proc, result = fresh_process
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert sorted(result) == sorted([*expected, "model_dir"])
    for name, cls_name in expected.items():
        assert result[name][0] == cls_name
        assert result[name][1] <= 1e-6, (name, result[name])


@pytest.mark.slow  # a fresh process
def test_model_directory_of_a_trained_model_loads_in_a_fresh_process(fresh_process):
    """What `zoo finetune` writes (a compiled model, AdamW with the project's
    schedule, after fit) loads where nothing imported the trainer, and holds
    the weights without optimizer state."""
    root, _, proc, result = fresh_process
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert result["model_dir"] <= 1e-6
    # Weights only: no optimizer variables (AdamW's moments triple the file).
    with zipfile.ZipFile(root / "dir" / "model.keras") as z:
        weights = h5py.File(io.BytesIO(z.read("model.weights.h5")), "r")
        stored = []
        weights.visit(
            lambda name: stored.append(name) if name.startswith("optimizer") else None
        )
    assert not [n for n in stored if n.endswith(("/0", "/1", "/2"))], stored
