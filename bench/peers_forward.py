"""`make bench`'s forward-pass rows (bench/peers.py), each run in its own
process: encoder latency and throughput for every engine, interleaved, at
one thread count, and the project's text-in SavedModel on BBC articles."""

from __future__ import annotations

import time

# isort: off
import zoo  # noqa: F401  first: TensorFlow's environment (oneDNN, log level)

# isort: on
import keras_hub
import numpy as np
import tensorflow as tf
from ai_edge_litert import interpreter as litert

from bench.peers_inputs import ENCODERS, _ids
from zoo.checkpoints import load_checkpoint
from zoo.models import BertEncoder
from zoo.text.readers import read_data
from zoo.utils.latency import interleaved_latency_ms
from zoo.utils.provenance import load_average


def _engines(name, work, threads, batch):
    """{engine: zero-argument callable running one forward pass}."""
    # The peers' runtimes come with the test and bench extras, not the runtime.
    import onnxruntime as ort
    import torch

    torch.set_num_threads(threads)
    ids = _ids(batch)
    zeros, ones = np.zeros_like(ids), np.ones_like(ids)
    calls = {}

    encoder = (
        load_checkpoint(work / "minilm_hf")[0]
        if name == "minilm"
        else BertEncoder(**ENCODERS[name], dropout=0.0)
    )
    x = {
        "token_ids": tf.constant(ids),
        "segment_ids": tf.constant(zeros),
        "padding_mask": tf.constant(ones),
    }
    zoo_fn = tf.function(
        lambda x: encoder(x, training=False)["sequence_output"], autograph=False
    )
    calls["project Keras"] = lambda: zoo_fn(x).numpy()

    saved = work / f"{name}_saved_model"
    if saved.exists():
        serve = tf.saved_model.load(str(saved)).signatures["serve_ids"]
        calls["project SavedModel"] = lambda: serve(
            token_ids=x["token_ids"],
            segment_ids=x["segment_ids"],
            padding_mask=x["padding_mask"],
        )

    config = (
        dict(
            vocabulary_size=30522,
            num_layers=6,
            num_heads=12,
            hidden_dim=384,
            intermediate_dim=1536,
            max_sequence_length=512,
        )
        if name == "minilm"
        else ENCODERS[name]
    )
    backbone = keras_hub.models.BertBackbone(**config, dropout=0.0)
    kh = {
        "token_ids": x["token_ids"],
        "segment_ids": x["segment_ids"],
        "padding_mask": x["padding_mask"],
    }
    kh_fn = tf.function(
        lambda x: backbone(x, training=False)["sequence_output"], autograph=False
    )
    calls["keras-hub"] = lambda: kh_fn(kh).numpy()

    model = torch.load(work / f"{name}_torch.pt", weights_only=False).eval()
    tids, tmask = (
        torch.from_numpy(ids.astype("int64")),
        torch.from_numpy(ones.astype("int64")),
    )

    def torch_call():
        with torch.inference_mode():
            return model(input_ids=tids, attention_mask=tmask).last_hidden_state.numpy()

    calls["HF torch"] = torch_call
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    feeds = {
        "input_ids": ids.astype("int64"),
        "attention_mask": ones.astype("int64"),
        "token_type_ids": zeros.astype("int64"),
    }
    for label, file in (("ORT fp32", f"{name}.onnx"), ("ORT int8", f"{name}_int8.onnx")):
        session = ort.InferenceSession(
            str(work / file), options, providers=["CPUExecutionProvider"]
        )
        wanted = {i.name for i in session.get_inputs()}
        feed = {k: v for k, v in feeds.items() if k in wanted}
        calls[label] = (lambda s, f: lambda: s.run(None, f))(session, feed)
    if batch == 1:
        inputs = {"token_ids": ids, "segment_ids": zeros, "padding_mask": ones}
        for mode in ("float32", "dynamic_int8"):
            path = work / f"{name}_tflite_{mode}" / "model.tflite"
            if not path.exists():
                continue
            interpreter = litert.Interpreter(model_path=str(path), num_threads=threads)
            runner = interpreter.get_signature_runner()
            calls[f"LiteRT {mode}"] = (lambda r: lambda: r(**inputs))(runner)
    return calls


def latency_worker(name, work, threads, rounds):
    """Runs in its own process: batch-1 latency (ms) at `threads`, and with 2
    threads also batch-8/32 throughput (examples/s)."""

    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)

    rows = []
    load = load_average()
    ms = interleaved_latency_ms(_engines(name, work, threads, 1), rounds=rounds)
    rows.append(
        {
            "row": f"{name} encoder, batch 1, {threads} thread(s)",
            "unit": "ms",
            "lower_is_better": True,
            "values": ms,
            "load": [load, load_average()],
        }
    )
    if threads == 2:
        for batch in (8, 32):
            load = load_average()
            ms = interleaved_latency_ms(
                _engines(name, work, threads, batch), rounds=max(3, rounds // 4), warmup=1
            )
            rows.append(
                {
                    "row": f"{name} encoder, batch {batch}, 2 threads",
                    "unit": "examples/s",
                    "lower_is_better": False,
                    "values": {k: 1000 * batch / v for k, v in ms.items()},
                    "load": [load, load_average()],
                }
            )
    return rows


def serving_worker(work, rounds):
    """Texts/s of the project's text-in SavedModel (serving_default) at batch
    1 / 8 / 32 on whole BBC test articles, 2 threads."""

    tf.config.threading.set_intra_op_parallelism_threads(2)
    articles, _ = read_data("bbc")  # the 426 BBC News test articles, whole
    serve = tf.saved_model.load(str(work / "minilm_saved_model")).signatures[
        "serving_default"
    ]
    values = {}
    for batch in (1, 8, 32):
        texts = tf.constant(articles[:batch])
        serve(text=texts)
        t0 = time.perf_counter()
        for _ in range(rounds):
            serve(text=texts)
        values[f"batch {batch}"] = batch * rounds / (time.perf_counter() - t0)
    return values
