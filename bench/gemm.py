"""MiniLM's dense products alone, one core: TensorFlow (oneDNN) against numpy
(OpenBLAS) and ONNX Runtime (MLAS).

The 36 products of MiniLM-L6's encoder at batch 1 x 128 tokens (per layer:
query, key, value and output 128x384x384, feed-forward 128x384x1536 and
128x1536x384), chained as the layers chain them, with nothing else. It
answers whether the gap between the project's Keras forward pass and ONNX
Runtime's at batch 1 is in the graph around the products or in the products'
kernels (the answer: BUILD_NOTES.md, "Known limits"). Needs the `bench` extra.

`--training` times instead the products of one training step of MiniLM at
batch 16 x 128, two threads: each dense layer's forward product and its two
gradient products (x @ w, dy @ w.T, x.T @ dy), 108 in all, in TensorFlow
(oneDNN) against PyTorch (the HF peer's kernels), in float32 and bfloat16.
It answers how much of the training ratio against HF torch on a machine is
set by the two libraries' matrix kernels there (docs/benchmarks.md).

    python bench/gemm.py [--rounds 20]
    python bench/gemm.py --training [--rounds 20]
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy loads OpenBLAS

# isort: off
import zoo  # noqa: F401  first: TensorFlow's environment (oneDNN, log level)

# isort: on
import numpy as np
import onnxruntime as ort
import tensorflow as tf
from onnx import TensorProto, helper, numpy_helper

from zoo.utils.latency import interleaved_latency_ms

LAYERS, TOKENS, HIDDEN, INTERMEDIATE = 6, 128, 384, 1536
TRAINING_ROWS = 16 * TOKENS  # one fine-tuning batch of 16 texts


def weights(seed=0):
    rng = np.random.default_rng(seed)
    shapes = [(HIDDEN, HIDDEN)] * 4 + [(HIDDEN, INTERMEDIATE), (INTERMEDIATE, HIDDEN)]
    return [(rng.normal(size=s) * 0.05).astype("float32") for s in shapes]


def numpy_chain(x, w):
    for _ in range(LAYERS):
        qkv = x @ w[0] + x @ w[1] + x @ w[2]
        x = ((qkv @ w[3]) @ w[4]) @ w[5] * 0.01 + x
    return x


def onnx_session(w):
    inits = [numpy_helper.from_array(v, f"w{i}") for i, v in enumerate(w)]
    inits.append(numpy_helper.from_array(np.array(0.01, "float32"), "scale"))
    nodes, x = [], "x"
    for n in range(LAYERS):
        nodes += [
            helper.make_node("MatMul", [x, f"w{i}"], [f"{c}{n}"])
            for i, c in enumerate("qkv")
        ]
        nodes += [
            helper.make_node("Add", [f"q{n}", f"k{n}"], [f"qk{n}"]),
            helper.make_node("Add", [f"qk{n}", f"v{n}"], [f"qkv{n}"]),
            helper.make_node("MatMul", [f"qkv{n}", "w3"], [f"o{n}"]),
            helper.make_node("MatMul", [f"o{n}", "w4"], [f"h{n}"]),
            helper.make_node("MatMul", [f"h{n}", "w5"], [f"f{n}"]),
            helper.make_node("Mul", [f"f{n}", "scale"], [f"g{n}"]),
            helper.make_node("Add", [f"g{n}", x], [f"y{n}"]),
        ]
        x = f"y{n}"
    shape = [TOKENS, HIDDEN]
    graph = helper.make_graph(
        nodes,
        "products",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, shape)],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    return ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )


def training_operands(seed=0):
    """(x, w, dy) of each dense product of the six layers at batch 16 x 128,
    every one distinct (the same operands twice would be computed once by
    TensorFlow's graph optimizer)."""
    rng = np.random.default_rng(seed)
    return [
        tuple(
            (rng.normal(size=shape) * scale).astype("float32")
            for shape, scale in (
                ((TRAINING_ROWS, k), 1.0),
                ((k, n), 0.05),
                ((TRAINING_ROWS, n), 1.0),
            )
        )
        for k, n in (
            [(HIDDEN, HIDDEN)] * 4 + [(HIDDEN, INTERMEDIATE), (INTERMEDIATE, HIDDEN)]
        )
        * LAYERS
    ]


def training_products():
    """{engine, precision: a zero-argument call running a training step's
    108 dense products}, TensorFlow and PyTorch in float32 and bfloat16, each
    on 2 threads."""
    import torch  # the test extra's PyTorch: the training peer's kernels

    torch.set_num_threads(2)
    tf.config.threading.set_intra_op_parallelism_threads(2)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    operands = training_operands()
    calls = {}
    for precision in ("float32", "bfloat16"):
        tf_ops = [tuple(tf.cast(a, precision) for a in ops) for ops in operands]
        torch_ops = [
            tuple(torch.from_numpy(a).to(getattr(torch, precision)) for a in ops)
            for ops in operands
        ]

        @tf.function
        def tf_step(tf_ops=tf_ops):
            return [
                (
                    tf.matmul(x, w),
                    tf.matmul(dy, w, transpose_b=True),
                    tf.matmul(x, dy, transpose_a=True),
                )
                for x, w, dy in tf_ops
            ]

        def torch_step(torch_ops=torch_ops):
            with torch.no_grad():
                for x, w, dy in torch_ops:
                    x @ w, dy @ w.T, x.T @ dy

        calls[f"TensorFlow (oneDNN), {precision}"] = tf_step
        calls[f"PyTorch, {precision}"] = torch_step
    return calls


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument(
        "--training",
        action="store_true",
        help="a training step's products at batch 16 x 128, 2 threads, "
        "TensorFlow against PyTorch in float32 and bfloat16",
    )
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error(
            f"--rounds {args.rounds}: give at least 1 (each round times every engine once)"
        )
    if args.training:
        ms = interleaved_latency_ms(training_products(), rounds=args.rounds)
        flops = LAYERS * 3 * 2 * TRAINING_ROWS * HIDDEN * (4 * HIDDEN + 2 * INTERMEDIATE)
        for name, value in ms.items():
            print(f"{name:32s} {value:8.1f} ms  {flops / value / 1e6:6.1f} GFLOP/s")
        for precision in ("float32", "bfloat16"):
            ratio = ms[f"TensorFlow (oneDNN), {precision}"] / ms[f"PyTorch, {precision}"]
            print(f"{precision}: TensorFlow's time over PyTorch's {ratio:.2f}")
        return
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    w = weights()
    x = np.random.default_rng(1).normal(size=(TOKENS, HIDDEN)).astype("float32")
    tw = [tf.constant(v) for v in w]

    @tf.function
    def tf_chain(x):
        return numpy_chain(x, tw)  # the same expression on tensors

    session = onnx_session(w)
    want = numpy_chain(x, w)
    got = {
        "TensorFlow": tf_chain(tf.constant(x)).numpy(),
        "ONNX Runtime": session.run(None, {"x": x})[0],
    }
    for name, value in got.items():
        np.testing.assert_allclose(value, want, rtol=1e-3, atol=1e-3, err_msg=name)
    tx = tf.constant(x)
    ms = interleaved_latency_ms(
        {
            "TensorFlow (oneDNN)": lambda: tf_chain(tx).numpy(),
            "numpy (OpenBLAS)": lambda: numpy_chain(x, w),
            "ONNX Runtime (MLAS)": lambda: session.run(None, {"x": x}),
        },
        rounds=args.rounds,
    )
    flops = LAYERS * 2 * TOKENS * HIDDEN * (4 * HIDDEN + 2 * INTERMEDIATE)
    for name, value in ms.items():
        print(f"{name:22s} {value:7.2f} ms  {flops / value / 1e6:6.1f} GFLOP/s")


if __name__ == "__main__":
    main()
