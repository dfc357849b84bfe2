"""One engine of bench/backends.py, in a process of its own:

    KERAS_BACKEND=jax python bench/backends_worker.py jax tiny 8 128 5 2
    KERAS_BACKEND=torch python bench/backends_worker.py hf bert_base 8 128 5 2

(engine, config, batch, length, timed steps, untimed first steps). Prints one
JSON line: the seconds of the timed steps, examples/s, the last loss, the
device, and whether TensorFlow got loaded. It imports `zoo.configs`,
`zoo.models` and `zoo.utils.schedules`, none of which loads TensorFlow on
JAX or PyTorch, and builds synthetic token ids (no tokenizer).
"""

from __future__ import annotations

import json
import sys
import time

import keras
import numpy as np

from zoo.configs import get_preset
from zoo.models import Classifier, build_encoder
from zoo.utils.schedules import AdamW

PRESETS = {"tiny": "bert_tiny", "bert_base": "bert_base"}
NUM_CLASSES = 4


def synthetic_batch(config, batch, length, seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(1000, config.vocabulary_size, size=(batch, length)).astype("int32")
    ids[:, 0] = 101  # [CLS]
    x = {
        "token_ids": ids,
        "segment_ids": np.zeros((batch, length), "int32"),
        "padding_mask": np.ones((batch, length), "int32"),
    }
    return x, rng.integers(0, NUM_CLASSES, size=(batch,)).astype("int32")


def keras_device():
    """The first device Keras's backend places work on (`gpu:0`, `cpu:0`)."""
    if keras.backend.backend() == "torch":
        # Optional dependency (the torch backend's own package); Keras's
        # distribution API has no PyTorch implementation to ask.
        import torch

        return "cuda:0" if torch.cuda.is_available() else "cpu:0"
    devices = keras.distribution.list_devices()
    gpus = [d for d in devices if not d.lower().startswith("cpu")]
    return (gpus or devices or ["cpu"])[0].lower()


def run_keras(config, batch, length, steps, warmup):
    """Train steps of the zoo's Classifier on this process's Keras backend."""
    keras.utils.set_random_seed(0)
    model = Classifier(build_encoder(config), NUM_CLASSES)
    model.compile(
        optimizer=AdamW(2e-5, weight_decay=0.01),
        loss={"logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True)},
    )
    x, y = synthetic_batch(config, batch, length)
    y = {"logits": y}
    for _ in range(warmup):  # tracing, compiling
        model.train_on_batch(x, y)
    started = time.perf_counter()
    for _ in range(steps):
        loss = model.train_on_batch(x, y)  # host floats: the step has finished
    seconds = time.perf_counter() - started
    return seconds, float(np.ravel(loss)[0]), keras_device()


def run_hf(config, batch, length, steps, warmup):
    """The same steps with transformers' BertForSequenceClassification."""
    # Optional dependencies (the `test` extra): the peer only.
    import torch
    import transformers

    torch.manual_seed(0)
    hf_config = transformers.BertConfig(
        vocab_size=config.vocabulary_size,
        hidden_size=config.hidden_dim,
        num_hidden_layers=config.num_layers,
        num_attention_heads=config.num_heads,
        intermediate_size=config.intermediate_dim,
        max_position_embeddings=config.max_sequence_length,
        hidden_dropout_prob=config.dropout,
        attention_probs_dropout_prob=config.dropout,
        num_labels=NUM_CLASSES,
    )
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = transformers.BertForSequenceClassification(hf_config).to(device).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5, weight_decay=0.01)
    x, y = synthetic_batch(config, batch, length)
    inputs = {
        "input_ids": torch.as_tensor(x["token_ids"], dtype=torch.long, device=device),
        "token_type_ids": torch.as_tensor(
            x["segment_ids"], dtype=torch.long, device=device
        ),
        "attention_mask": torch.as_tensor(x["padding_mask"], device=device),
        "labels": torch.as_tensor(y, dtype=torch.long, device=device),
    }

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss = model(**inputs).loss
        loss.backward()
        optimizer.step()
        return loss.item()  # waits for the device

    for _ in range(warmup):
        step()
    started = time.perf_counter()
    for _ in range(steps):
        loss = step()
    seconds = time.perf_counter() - started
    return seconds, loss, "cuda:0" if device.type == "cuda" else "cpu:0"


def main(argv):
    engine, name = argv[0], argv[1]
    batch, length, steps, warmup = (int(v) for v in argv[2:6])
    if engine != "hf" and engine != keras.backend.backend():
        raise SystemExit(
            f"backends_worker: engine {engine!r} but KERAS_BACKEND runs "
            f"{keras.backend.backend()!r}; set KERAS_BACKEND={engine}."
        )
    run = run_hf if engine == "hf" else run_keras
    seconds, loss, device = run(get_preset(PRESETS[name]), batch, length, steps, warmup)
    result = {
        "seconds": seconds,
        "examples_per_s": steps * batch / seconds,
        "final_loss": loss,
        "device": device,
        "tensorflow_loaded": "tensorflow" in sys.modules,
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1:])
