"""One Keras backend's side of tests/backends: run in a fresh process with
`KERAS_BACKEND` set (the backend is fixed per process at `import keras`).

    KERAS_BACKEND=jax python tests/backends/worker.py forward,train DIR
    KERAS_BACKEND=jax python tests/backends/worker.py fit DIR

DIR is what the test (on TensorFlow) wrote: `.keras` files and `.npz`
inputs. The worker writes its results to `DIR/<backend>/<mode>.npz` (or a
model directory for `fit`). `forward` and `train` import only the
backend-neutral rooms (zoo.models, zoo.layers, zoo.utils, zoo.distill.losses)
and record whether TensorFlow got loaded.
"""

from __future__ import annotations

import json
import os
import pathlib
import sys

import numpy as np

BACKEND = os.environ.get("KERAS_BACKEND", "tensorflow")


def _flatten(outputs, prefix=""):
    import keras

    flat = {}
    for key, value in outputs.items():
        if isinstance(value, (list, tuple)):
            for i, v in enumerate(value):
                flat[f"{prefix}{key}/{i}"] = np.asarray(keras.ops.convert_to_numpy(v))
        else:
            flat[f"{prefix}{key}"] = np.asarray(keras.ops.convert_to_numpy(value))
    return flat


def forward(root):
    """Every saved model on the same ids; the distillation losses and the
    learning-rate schedule on the same arrays."""
    import keras

    import zoo.distill.losses as losses
    import zoo.models  # noqa: F401 - registers the zoo's Keras classes
    import zoo.utils.schedules as schedules

    inputs = np.load(root / "inputs.npz")
    out = {}
    for path in sorted((root / "models").glob("*.keras")):
        model = keras.saving.load_model(path)
        name = path.stem
        x = {k.split("/", 1)[1]: inputs[k] for k in inputs if k.startswith(f"{name}/")}
        if name.endswith("_encoder"):
            model = model.with_internals()
        out.update(_flatten(model(x, training=False), f"{name}:"))
    a = np.load(root / "loss_inputs.npz")
    t, s = a["teacher_logits"], a["student_logits"]
    mask = a["mask"]
    out["loss:soft"] = losses.soft_target_loss(t, s, 2.0, mask)
    out["loss:soft_nomask"] = losses.soft_target_loss(t[:, 0], s[:, 0], 3.0)
    out["loss:hard"] = losses.hard_loss(a["labels"], s, mask)
    out["loss:cosine"] = losses.cosine_loss(a["teacher_hidden"], a["student_hidden"], mask)
    out["loss:hidden_mse"] = losses.hidden_mse_loss(
        a["teacher_hidden"], a["student_hidden"], mask
    )
    out["loss:attention_kl"] = losses.attention_kl_loss(
        a["teacher_probs"], a["student_probs"], mask
    )
    schedule = schedules.WarmupLinearDecay(1e-3, total_steps=20, warmup_steps=4)
    out["schedule"] = np.stack([schedule(step) for step in range(24)])
    out = {k: np.asarray(keras.ops.convert_to_numpy(v)) for k, v in out.items()}
    return out


def train(root):
    """Three optimizer steps (zoo's AdamW under the warmup schedule) of each
    dropout-free model in `root/train`: gradients through GELU, the tied
    decoder, the span-boundary head and the embeddings."""
    import keras

    import zoo.models  # noqa: F401 - registers the zoo's Keras classes
    from zoo.utils.schedules import AdamW, WarmupLinearDecay

    data = np.load(root / "train_inputs.npz")
    out = {}
    for path in sorted((root / "train").glob("*.keras")):
        name = path.stem
        model = keras.saving.load_model(path)
        x = {k.split("/", 2)[2]: data[k] for k in data if k.startswith(f"{name}/x/")}
        y = {k.split("/", 2)[2]: data[k] for k in data if k.startswith(f"{name}/y/")}
        model.compile(
            optimizer=AdamW(WarmupLinearDecay(1e-2, 6, 2), weight_decay=0.01),
            loss={
                k: keras.losses.SparseCategoricalCrossentropy(from_logits=True) for k in y
            },
        )
        # The total loss first (then each output's, with several outputs).
        losses = [float(np.ravel(model.train_on_batch(x, y))[0]) for _ in range(3)]
        out[f"{name}:losses"] = np.array(losses)
        for w in model.weights:
            out[f"{name}:{w.path}"] = np.asarray(keras.ops.convert_to_numpy(w))
    out.update(distill(root))
    return out


def distill(root):
    """Two epochs of the Distiller (every term: soft, hard, cosine, hidden,
    attention) of the saved dropout-free student against its teacher."""
    import keras

    from zoo.distill.distiller import Distiller
    from zoo.utils.schedules import AdamW

    teacher = keras.saving.load_model(root / "distill" / "teacher.keras")
    student = keras.saving.load_model(root / "distill" / "student.keras")
    data = np.load(root / "distill" / "data.npz")
    x = {k: data[k] for k in ("token_ids", "segment_ids", "padding_mask")}
    distiller = Distiller(teacher, student, hidden_weight=1.0, attention_weight=1.0)
    distiller.compile(optimizer=AdamW(1e-2, weight_decay=0.01))
    history = distiller.fit(
        x, {"logits": data["labels"]}, batch_size=4, epochs=2, shuffle=False, verbose=0
    ).history
    out = {f"distill:{k}": np.array(v) for k, v in history.items()}
    for w in student.weights:
        out[f"distill:{w.path}"] = np.asarray(keras.ops.convert_to_numpy(w))
    return out


def fit(root):
    """Fine-tune the saved model directory on raw strings (the zoo's
    TextClassifier: tf.data and tensorflow-text feed `fit` on every backend),
    evaluate, and save the model directory for TensorFlow to export."""
    import keras

    import zoo

    spec = json.loads((root / "fit.json").read_text())
    keras.utils.set_random_seed(spec["seed"])
    model = zoo.TextClassifier.from_checkpoint(
        spec["model_dir"],
        labels=spec["labels"],
        sequence_length=spec["sequence_length"],
        pooling=spec["pooling"],
        seed=spec["seed"],
    )
    model.compile(learning_rate=spec["learning_rate"])
    model.fit(
        spec["train_texts"],
        spec["train_labels"],
        epochs=spec["epochs"],
        batch_size=spec["batch_size"],
        verbose=0,
    )
    result = model.evaluate(
        spec["test_texts"], spec["test_labels"], return_dict=True, verbose=0
    )
    from zoo.checkpoints import save_model_dir

    save_model_dir(model, root / BACKEND / "model", model.tokenizer)
    np.savez(
        root / BACKEND / "weights.npz",
        **{w.path: np.asarray(keras.ops.convert_to_numpy(w)) for w in model.weights},
    )
    return {"accuracy": np.array(result["accuracy"]), "loss": np.array(result["loss"])}


def main():
    modes, root = sys.argv[1].split(","), pathlib.Path(sys.argv[2])
    (root / BACKEND).mkdir(exist_ok=True)
    for mode in modes:
        result = {"forward": forward, "train": train, "fit": fit}[mode](root)
        result["tensorflow_loaded"] = np.array("tensorflow" in sys.modules)
        np.savez(root / BACKEND / f"{mode}.npz", **result)
        print(f"{mode} on {BACKEND}: {len(result)} arrays")


if __name__ == "__main__":
    main()
