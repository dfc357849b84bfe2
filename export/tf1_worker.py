"""Run requests against a SavedModel in a fresh process, through the TF1
session loader (`tf.compat.v1.saved_model.loader.load`), the restore path TF
Serving's C++ loader mirrors.

    python export/tf1_worker.py REQUEST.json

`export.runtime.run_tf1` runs this file as a script, not as a module of the
package, so the process holds TensorFlow and tensorflow-text only (what TF
Serving links): no Keras, no zoo, no `export` package's `__init__`. It checks the
manifest itself (exit 3 on a mismatch), loads
the SavedModel, runs each request and writes the outputs REQUEST.json names:

    {"dir": SavedModel directory, "inputs": .npz of id arrays, "texts": {name: [str]},
     "runs": [{signature, feeds: {input: source name}, batch_size, fixed_batch, latency}],
     "latency_runs": N, "outputs": .npz to write, "result": .json to write}
"""

import gc
import hashlib
import json
import os
import sys
import time

# Nothing TensorFlow's import makes is garbage: collecting while it builds
# its half a million objects only costs time (as in `zoo/__init__.py`).
gc.disable()
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tensorflow_text  # noqa: E402,F401  registers the tokenizer's ops, as TF Serving does

gc.enable()

MANIFEST_MISMATCH = 3  # exit status: a file does not match manifest.json


def manifest_matches(directory):
    """True when every file manifest.json lists has its recorded sha256."""
    with open(os.path.join(directory, "manifest.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    for name, entry in manifest["files"].items():
        digest = hashlib.sha256()
        with open(os.path.join(directory, name), "rb") as f:
            for chunk in iter(lambda f=f: f.read(1 << 20), b""):
                digest.update(chunk)
        if digest.hexdigest() != entry["sha256"]:
            sys.stderr.write(f"MANIFEST MISMATCH {name}\n")
            return False
    return True


def describe(infos):
    """dtype and shape of each tensor of a SignatureDef's inputs or outputs."""
    return {
        k: {
            "dtype": tf.dtypes.as_dtype(v.dtype).name if v.dtype else None,
            "shape": None
            if v.tensor_shape.unknown_rank
            else [d.size for d in v.tensor_shape.dim],
        }
        for k, v in infos.items()
    }


def run_request(session, signature_def, run, inputs, texts, latency_runs):
    """Outputs of one request in batches, and its batch-1 latencies."""
    fetches = {k: v.name for k, v in signature_def.outputs.items()}
    feeds = {
        signature_def.inputs[name].name: texts[source]
        if source in texts
        else inputs[source]
        for name, source in run["feeds"].items()
    }
    n = len(next(iter(feeds.values())))
    batch = run["batch_size"]
    chunks = {}
    for start in range(0, n, batch):
        feed = {}
        for k, v in feeds.items():
            part = v[start : start + batch]
            if run.get("fixed_batch") and len(part) < batch:
                # A fixed-shape (TPU) signature: pad with the last row, drop after.
                part = list(part) + [part[-1]] * (batch - len(part))
                part = np.stack(part) if isinstance(v, np.ndarray) else part
            feed[k] = part
        for k, v in session.run(fetches, feed).items():
            chunks.setdefault(k, []).append(v[: min(batch, n - start)])
    times = []
    if run.get("latency"):
        # Batch-1 latency; a fixed-shape (TPU) signature runs one full batch.
        rows = batch if run.get("fixed_batch") else 1
        one = {k: v[:rows] for k, v in feeds.items()}
        for _ in range(3 + latency_runs):
            t0 = time.perf_counter()
            session.run(fetches, one)
            times.append(time.perf_counter() - t0)
    return {k: np.concatenate(parts) for k, parts in chunks.items()}, times[3:]


def main(request_path):
    with open(request_path, encoding="utf-8") as f:
        request = json.load(f)
    directory = request["dir"]
    if not manifest_matches(directory):
        return MANIFEST_MISMATCH
    inputs = dict(np.load(request["inputs"], allow_pickle=False))
    texts = request.get("texts", {})
    result = {"signatures": {}, "strings": {}, "latency": {}}
    numeric = {}
    with tf.compat.v1.Session(graph=tf.Graph()) as session:
        meta_graph = tf.compat.v1.saved_model.loader.load(session, ["serve"], directory)
        for key, sig in meta_graph.signature_def.items():
            result["signatures"][key] = {
                "method_name": sig.method_name,
                "inputs": describe(sig.inputs),
                "outputs": describe(sig.outputs),
            }
        for run in request["runs"]:
            outputs, times = run_request(
                session,
                meta_graph.signature_def[run["signature"]],
                run,
                inputs,
                texts,
                request["latency_runs"],
            )
            for k, value in outputs.items():
                key = run["signature"] + "/" + k
                if value.dtype.kind in "OSU":
                    result["strings"][key] = [
                        [x.decode("utf-8", "replace") for x in row]
                        if value.ndim > 1
                        else row.decode("utf-8", "replace")
                        for row in value
                    ]
                else:
                    numeric[key] = value
            if run.get("latency"):
                result["latency"][run["signature"]] = times
    np.savez(request["outputs"], **numeric)
    with open(request["result"], "w", encoding="utf-8") as f:
        json.dump(result, f)
    return 0


if __name__ == "__main__":
    status = main(sys.argv[1])
    # Its results are written and closed: skip the exit's collections over
    # TensorFlow's object graph (about a second of every validation), as
    # the `zoo` program does. Reference counts and atexit still run.
    gc.freeze()
    sys.exit(status)
