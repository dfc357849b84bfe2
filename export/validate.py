"""Re-load an exported artifact in the runtime that will serve it and compare it
with the Keras float32 model, text by text.

    report = validate_artifact("exports/bbc_int8", texts, labels, reference_model=model)
    print(format_report(report))

Runtimes: a `.tflite` runs in LiteRT's `Interpreter` (the text-in file in
`InterpreterWithCustomOps` with tensorflow-text's kernels); a SavedModel runs
in a FRESH Python process through the TF1 session loader
(`tf.compat.v1.saved_model.loader.load`), the restore path of TF Serving's C++
loader, which imports nothing but TensorFlow and tensorflow-text. Every
loader checks manifest.json first.

Measured per signature: max and mean |difference| of the outputs (logits, or
start/end logits; over real tokens for per-token outputs), cosine between
output vectors, label agreement (argmax, or best span for QA), accuracy of
both models and its delta when labels are given, file size, batch-1 latency.
`THRESHOLDS` holds the per-profile limits; a miss raises
`ExportValidationError` carrying the report, unless `allow_degraded=True`,
which records the miss in the report (`"degraded": true`) instead.

The first sequence length of a multi-length file is its primary one and gets
every validation text; the other lengths get the first `SECONDARY_TEXTS`.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

from export import manifest as mf

MIN_VALIDATION_TEXTS = 200
SECONDARY_TEXTS = 32
LATENCY_RUNS = 20
REPORT = "validation.json"

# Per validation profile (metadata.json "validation_profile"). Each entry is
# a bound on a metric of every compared signature: `max_abs_diff` is an upper
# bound, the others are lower bounds. float32 must be the Keras model up to
# kernel rounding; quantized modes are judged on the decision they change.
THRESHOLDS = {
    "float32": {"max_abs_diff": 1e-4, "label_agreement": 1.0},
    "float16": {"label_agreement": 0.995},
    "dynamic_int8": {"label_agreement": 0.99},
    # Full-integer activations are the mode whose accuracy collapses quietly
    # (tensorflow#89904): below 97% agreement it is flagged.
    "int8": {"label_agreement": 0.97},
    "saved_model": {"max_abs_diff": 1e-4, "label_agreement": 1.0, "token_ids_match": 1.0},
    "tpu_float32": {"max_abs_diff": 1e-4, "label_agreement": 1.0},
    "tpu_bfloat16": {"label_agreement": 0.99},
}
LOWER_IS_BETTER = {"max_abs_diff", "mean_abs_diff"}


# A few sentences that exercise every signature when no validation texts are
# given (a load-and-run check, not a validation: the report says so).
PROBE_TEXTS = [
    "The shares rose sharply after the company reported record profits.",
    "The striker scored twice in the second half.",
    "Parliament will vote on the new bill next week.",
    "The film won three awards at the festival.",
]


class ExportValidationError(Exception):
    """An exported artifact disagrees with its Keras model beyond the thresholds.

    `.report` holds the full report (the same dict `validate_artifact` returns).
    """

    def __init__(self, message, report):
        super().__init__(message)
        self.report = report


# --- data --------------------------------------------------------------------


def _decode(raw):
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


def read_data(spec):
    """`(texts, labels)` from `spec`; `labels` is None when the data has none.

    `spec` is one of:
    - `"bbc"`: the project's fixed BBC News test split (426 articles);
    - a folder of class sub-folders of `.txt` files (label = folder name);
    - a `.csv` or `.jsonl` file with a `text` column, optional `label`, and
      optional `text_b` (then each text is a `(text, text_b)` pair).
    """
    if str(spec) == "bbc":
        from zoo.text.corpora import bbc_news_split

        pairs = bbc_news_split()["test"]
        return [t for t, _ in pairs], [label for _, label in pairs]
    path = pathlib.Path(spec)
    if not path.exists():
        raise FileNotFoundError(
            f"--data {spec}: no such file or folder. Give `bbc`, a folder of class sub-folders of "
            ".txt files, or a .csv/.jsonl file with `text` and `label` columns."
        )
    if path.is_dir():
        texts, labels = [], []
        for folder in sorted(p for p in path.iterdir() if p.is_dir()):
            for file in sorted(folder.glob("*.txt")):
                texts.append(_decode(file.read_bytes()))
                labels.append(folder.name)
        if not texts:
            raise ValueError(
                f"--data {path}: found no class sub-folders holding .txt files (expected "
                f"{path}/LABEL/*.txt)."
            )
        return texts, labels
    suffix = path.suffix.lower()
    if suffix == ".csv":
        with open(path, encoding="utf-8", newline="") as f:
            rows = list(csv.DictReader(f))
    elif suffix in (".jsonl", ".ndjson"):
        rows = []
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except ValueError as e:
                    raise ValueError(
                        f"--data {path}: line {number} is not JSON ({e})."
                    ) from e
    else:
        raise ValueError(
            f"--data {path}: unsupported file type {suffix!r}; use .csv or .jsonl with a `text` "
            "column (and `label`), a folder of class sub-folders, or `bbc`."
        )
    if not rows or "text" not in rows[0]:
        found = sorted(rows[0]) if rows else "no rows"
        raise ValueError(f"--data {path}: needs a `text` column; found {found}.")
    pair = "text_b" in rows[0]
    texts = [(r["text"], r["text_b"]) if pair else r["text"] for r in rows]
    has_labels = all(r.get("label") not in (None, "") for r in rows)
    labels = [str(r["label"]) for r in rows] if has_labels else None
    return texts, labels


def calibration_and_validation(spec, calibration_size=200):
    """Split `--data` into calibration texts and validation `(texts, labels)`.

    For `bbc` the calibration texts come from the train split and validation
    is the whole test split. For other data the last `calibration_size` texts
    calibrate and the rest validate, when at least `MIN_VALIDATION_TEXTS`
    remain; otherwise both use all texts (`overlap=True` in the note).
    """
    if str(spec) == "bbc":
        from zoo.text.corpora import bbc_news_split

        split = bbc_news_split()
        calibration = [t for t, _ in split["train"][:calibration_size]]
        texts, labels = read_data("bbc")
        return calibration, texts, labels, {"calibration": "bbc train", "overlap": False}
    texts, labels = read_data(spec)
    if len(texts) - calibration_size >= MIN_VALIDATION_TEXTS:
        cut = len(texts) - calibration_size
        calibration = texts[cut:]
        return (
            calibration,
            texts[:cut],
            None if labels is None else labels[:cut],
            {
                "calibration": f"last {calibration_size} texts of {spec}",
                "overlap": False,
            },
        )
    return (
        texts[:calibration_size],
        texts,
        labels,
        {"calibration": str(spec), "overlap": True},
    )


def _check_texts(texts, who):
    if isinstance(texts, (str, bytes)):
        raise TypeError(
            f"{who}: `texts` must be a list of str (or of (text, text_b) pairs), not one str."
        )
    texts = list(texts)
    if len(texts) < MIN_VALIDATION_TEXTS:
        raise ValueError(
            f"{who}: validation needs at least {MIN_VALIDATION_TEXTS} real texts to say anything "
            f"about label agreement; received {len(texts)}. Pass more (e.g. --data bbc)."
        )
    return texts


def _split_pairs(texts):
    if texts and isinstance(texts[0], (tuple, list)):
        return [t[0] for t in texts], [t[1] for t in texts]
    return list(texts), None


def tokenize(tokenizer, texts, sequence_length):
    """Host-side ids `{name: int32 [N, L]}` from the project's tokenizer."""
    a, b = _split_pairs(texts)
    out = {}
    for start in range(0, len(a), 256):
        chunk = tokenizer(
            a[start : start + 256],
            text_b=None if b is None else b[start : start + 256],
            sequence_length=sequence_length,
        )
        for k, v in chunk.items():
            out.setdefault(k, []).append(np.asarray(v))
    return {k: np.concatenate(v) for k, v in out.items()}


# --- reference ----------------------------------------------------------------


_REFERENCE_CACHE = {}


def _weights_fingerprint(model):
    return tuple(float(np.abs(np.asarray(w)).sum(dtype=np.float64)) for w in model.weights)


def keras_outputs(model, ids, batch_size=32):
    """Float32 outputs of the Keras model `{name: [N, ...]}` for host ids.

    Cached per (model, ids): exporting one model in four modes runs the
    reference once. The key includes a fingerprint of the weights, so a model
    trained further in between is recomputed.
    """
    digest = hashlib.sha1()
    for k in sorted(ids):
        digest.update(k.encode())
        digest.update(np.ascontiguousarray(ids[k]).tobytes())
    key = (id(model), digest.hexdigest())
    fingerprint = _weights_fingerprint(model)
    hit = _REFERENCE_CACHE.get(key)
    if hit is not None and hit[0] == fingerprint:
        return hit[1]
    outputs = _keras_outputs(model, ids, batch_size)
    if len(_REFERENCE_CACHE) >= 8:
        _REFERENCE_CACHE.pop(next(iter(_REFERENCE_CACHE)))
    _REFERENCE_CACHE[key] = (fingerprint, outputs)
    return outputs


def _keras_outputs(model, ids, batch_size):
    import tensorflow as tf

    spec = {k: tf.TensorSpec([None, None], tf.int32) for k in ids}

    @tf.function(autograph=False, input_signature=[spec])
    def run(batch):
        return {k: tf.cast(v, tf.float32) for k, v in model(batch, training=False).items()}

    n = len(ids["token_ids"])
    out = {}
    for start in range(0, n, batch_size):
        batch = {k: tf.constant(v[start : start + batch_size]) for k, v in ids.items()}
        for k, v in run(batch).items():
            out.setdefault(k, []).append(v.numpy())
    return {k: np.concatenate(v) for k, v in out.items()}


def best_spans(start, end, ids, sep_id, max_answer_length=30):
    """Best (start, end) per example over context tokens, the rule the
    SavedModel's QA signature uses: segment 1, real, not [SEP], end >= start,
    at most `max_answer_length` tokens."""
    valid = (
        (ids["segment_ids"] == 1)
        & (ids["padding_mask"] == 1)
        & (ids["token_ids"] != sep_id)
    )
    n, length = start.shape
    i = np.arange(length)
    allowed = (i[None, :, None] <= i[None, None, :]) & (
        i[None, None, :] - i[None, :, None] < max_answer_length
    )
    scores = start[:, :, None] + end[:, None, :]
    allowed = allowed & valid[:, :, None] & valid[:, None, :]
    scores = np.where(allowed, scores, -np.inf).reshape(n, -1)
    best = scores.argmax(axis=1)
    return np.stack([best // length, best % length], axis=1)


# --- comparison ---------------------------------------------------------------


def _cosine(a, b):
    a = a.reshape(len(a), -1).astype(np.float64)
    b = b.reshape(len(b), -1).astype(np.float64)
    num = (a * b).sum(1)
    den = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    return np.where(den > 0, num / np.maximum(den, 1e-30), 1.0)


def compare(task, artifact, reference, ids, *, labels=None, label_names=None, sep_id=None):
    """Metrics of `artifact` outputs against `reference` outputs (both `[N, ...]`)."""
    metrics = {"num_texts": int(len(ids["token_ids"]))}
    mask = ids["padding_mask"].astype(bool)
    if task == "classification":
        a, r = artifact["logits"], reference["logits"]
        diff = np.abs(a - r)
        agree = a.argmax(-1) == r.argmax(-1)
        cos = _cosine(a, r)
    elif task == "token_classification":
        a, r = artifact["logits"], reference["logits"]
        diff = np.abs(a - r)[mask]
        agree = (a.argmax(-1) == r.argmax(-1))[mask]
        cos = _cosine(np.where(mask[..., None], a, 0), np.where(mask[..., None], r, 0))
    else:
        a = np.stack([artifact["start_logits"], artifact["end_logits"]], -1)
        r = np.stack([reference["start_logits"], reference["end_logits"]], -1)
        diff = np.abs(a - r)[mask]
        agree = (
            best_spans(artifact["start_logits"], artifact["end_logits"], ids, sep_id)
            == best_spans(reference["start_logits"], reference["end_logits"], ids, sep_id)
        ).all(1)
        cos = _cosine(np.where(mask[..., None], a, 0), np.where(mask[..., None], r, 0))
    metrics.update(
        max_abs_diff=float(diff.max()) if diff.size else 0.0,
        mean_abs_diff=float(diff.mean()) if diff.size else 0.0,
        cosine_min=float(cos.min()),
        cosine_mean=float(cos.mean()),
        label_agreement=float(agree.mean()),
    )
    if labels is not None and task == "classification" and label_names:
        index = {name: i for i, name in enumerate(label_names)}
        known = np.array([label in index for label in labels])
        if known.any():
            target = np.array([index.get(label, -1) for label in labels])
            acc_a = float((artifact["logits"].argmax(-1) == target)[known].mean())
            acc_r = float((reference["logits"].argmax(-1) == target)[known].mean())
            metrics.update(
                accuracy_keras=acc_r, accuracy_artifact=acc_a, accuracy_delta=acc_a - acc_r
            )
    return metrics


def artifact_only_metrics(task, artifact, labels, label_names):
    metrics = {"num_texts": int(len(next(iter(artifact.values()))))}
    if labels is not None and task == "classification" and label_names:
        index = {name: i for i, name in enumerate(label_names)}
        target = np.array([index.get(label, -1) for label in labels])
        known = target >= 0
        if known.any():
            metrics["accuracy_artifact"] = float(
                (artifact["logits"].argmax(-1) == target)[known].mean()
            )
    return metrics


def check_thresholds(profile, results):
    """Failures (one line each) of every result against THRESHOLDS[profile]."""
    limits = THRESHOLDS.get(profile, {})
    failures = []
    for result in results:
        metrics = result.get("metrics", {})
        for name, bound in limits.items():
            if name not in metrics:
                continue
            value = metrics[name]
            bad = value > bound if name in LOWER_IS_BETTER else value < bound
            if bad:
                op = "<=" if name in LOWER_IS_BETTER else ">="
                failures.append(
                    f"{result['file']}:{result['signature']}: {name} = {value:.6g}, needs {op} {bound:g}"
                )
    return failures


# --- runtimes -------------------------------------------------------------------


def _latency(seconds, batch=1):
    ms = sorted(1000 * s for s in seconds)
    if not ms:
        return None
    return {
        "batch": batch,
        "p50_ms": round(statistics.median(ms), 3),
        "p90_ms": round(ms[min(len(ms) - 1, int(0.9 * len(ms)))], 3),
        "runs": len(ms),
    }


def run_tflite(artifact_dir, meta, texts, tokenizer):
    """Run every signature of every `.tflite` in the artifact over `texts`.

    Returns a list of runs: `{file, signature, sequence_length, ids, outputs,
    latency}`; the text-in file also returns the ids it made (`token_ids`).
    """
    from export.tflite import load_interpreter

    runs = []
    for file, info in meta["files"].items():
        if not file.endswith(".tflite"):
            continue
        if info.get("input") == "text" and _split_pairs(texts)[1] is not None:
            continue  # the text-in file takes single texts only
        interpreter = load_interpreter(artifact_dir, file)
        for position, signature in enumerate(info["signatures"]):
            length = info["sequence_lengths"][position]
            subset = texts if position == 0 else texts[:SECONDARY_TEXTS]
            ids = tokenize(tokenizer, subset, length)
            runner = interpreter.get_signature_runner(signature)
            outputs, seconds = {}, []
            a, b = _split_pairs(subset)
            for i in range(len(subset)):
                if info.get("input") == "text":
                    feed = {"text": np.array([a[i]], dtype=object)}
                    if b is not None:
                        feed["text_b"] = np.array([b[i]], dtype=object)
                else:
                    # By name, never by position: LiteRT sorts inputs by name.
                    feed = {k: v[i : i + 1] for k, v in ids.items()}
                t0 = time.perf_counter()
                result = runner(**feed)
                seconds.append(time.perf_counter() - t0)
                for k, v in result.items():
                    outputs.setdefault(k, []).append(np.array(v))
            outputs = {k: np.concatenate(v) for k, v in outputs.items()}
            runs.append(
                {
                    "file": file,
                    "signature": signature,
                    "sequence_length": length,
                    "input": info.get("input", "ids"),
                    "ids": ids,
                    "outputs": outputs,
                    # Steady state: the first calls allocate and pack weights.
                    "latency": _latency(seconds[3 : 3 + LATENCY_RUNS]),
                }
            )
    return runs


# The worker runs in a fresh interpreter with TensorFlow and tensorflow-text
# only (what TF Serving links): no keras, no zoo, no export package. It checks
# the manifest itself, loads with the TF1 session loader and runs each request.
_TF1_WORKER = r"""
import hashlib, json, os, sys, time
import numpy as np
request = json.load(open(sys.argv[1], encoding="utf-8"))
directory = request["dir"]
manifest = json.load(open(os.path.join(directory, "manifest.json"), encoding="utf-8"))
for name, entry in manifest["files"].items():
    digest = hashlib.sha256()
    with open(os.path.join(directory, name), "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    if digest.hexdigest() != entry["sha256"]:
        sys.stderr.write("MANIFEST MISMATCH " + name + "\n")
        sys.exit(3)
import tensorflow as tf
import tensorflow_text  # noqa: F401  registers the tokenizer's ops, as TF Serving does
inputs = dict(np.load(request["inputs"], allow_pickle=False))
texts = request.get("texts", {})
result = {"signatures": {}, "strings": {}, "latency": {}}
numeric = {}
with tf.compat.v1.Session(graph=tf.Graph()) as session:
    meta_graph = tf.compat.v1.saved_model.loader.load(session, ["serve"], directory)
    for key, sig in meta_graph.signature_def.items():
        describe = lambda infos: {
            k: {"dtype": tf.dtypes.as_dtype(v.dtype).name if v.dtype else None,
                "shape": None if v.tensor_shape.unknown_rank else [d.size for d in v.tensor_shape.dim]}
            for k, v in infos.items()}
        result["signatures"][key] = {"method_name": sig.method_name,
                                     "inputs": describe(sig.inputs), "outputs": describe(sig.outputs)}
    for run in request["runs"]:
        sig = meta_graph.signature_def[run["signature"]]
        fetches = {k: v.name for k, v in sig.outputs.items()}
        feeds = {}
        for name, source in run["feeds"].items():
            feeds[sig.inputs[name].name] = texts[source] if source in texts else inputs[source]
        n = len(next(iter(feeds.values())))
        batch = run["batch_size"]
        chunks = {}
        for start in range(0, n, batch):
            feed = {}
            for k, v in feeds.items():
                part = v[start:start + batch]
                if run.get("fixed_batch") and len(part) < batch:
                    # A fixed-shape (TPU) signature: pad with the last row, drop after.
                    part = list(part) + [part[-1]] * (batch - len(part))
                    part = np.stack(part) if isinstance(v, np.ndarray) else part
                feed[k] = part
            out = session.run(fetches, feed)
            for k, v in out.items():
                chunks.setdefault(k, []).append(v[: min(batch, n - start)])
        for k, parts in chunks.items():
            value = np.concatenate(parts)
            key = run["signature"] + "/" + k
            if value.dtype.kind in "OSU":
                result["strings"][key] = [
                    [x.decode("utf-8", "replace") for x in row] if value.ndim > 1 else row.decode("utf-8", "replace")
                    for row in value]
            else:
                numeric[key] = value
        if run.get("latency"):
            times = []
            # Batch-1 latency; a fixed-shape (TPU) signature runs one full batch.
            rows = batch if run.get("fixed_batch") else 1
            one = {k: v[:rows] for k, v in feeds.items()}
            for i in range(3 + request["latency_runs"]):
                t0 = time.perf_counter()
                session.run(fetches, one)
                times.append(time.perf_counter() - t0)
            result["latency"][run["signature"]] = times[3:]
np.savez(request["outputs"], **numeric)
json.dump(result, open(request["result"], "w", encoding="utf-8"))
"""


def run_tf1(artifact_dir, requests, texts_by_name, inputs, timeout=900):
    """Run `requests` against a SavedModel in a fresh process (TF1 session loader).

    `requests`: `[{signature, feeds: {input name: source name}, batch_size,
    fixed_batch, latency}]`; a source name refers to `texts_by_name` (lists of
    str) or `inputs` (numpy arrays). Returns `(numeric, strings, info)`.
    """
    with tempfile.TemporaryDirectory(prefix="zoo-tf1-") as tmp:
        tmp = pathlib.Path(tmp)
        np.savez(tmp / "inputs.npz", **inputs)
        request = {
            "dir": str(artifact_dir),
            "inputs": str(tmp / "inputs.npz"),
            "outputs": str(tmp / "outputs.npz"),
            "result": str(tmp / "result.json"),
            "texts": texts_by_name,
            "runs": requests,
            "latency_runs": LATENCY_RUNS,
        }
        (tmp / "request.json").write_text(json.dumps(request), encoding="utf-8")
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
        proc = subprocess.run(
            [sys.executable, "-c", _TF1_WORKER, str(tmp / "request.json")],
            capture_output=True,
            text=True,
            env=env,
            timeout=timeout,
        )
        if proc.returncode == 3:
            # The worker's own manifest check failed: say which file, the
            # same way the in-process loaders do.
            mf.verify_manifest(artifact_dir)
        if proc.returncode != 0:
            tail = "\n".join(proc.stderr.strip().splitlines()[-15:])
            raise RuntimeError(
                f"{artifact_dir}: the TF1 session loader (the restore path TF Serving uses) failed "
                f"in a fresh process (exit {proc.returncode}):\n{tail}"
            )
        numeric = dict(np.load(tmp / "outputs.npz", allow_pickle=False))
        info = json.loads((tmp / "result.json").read_text(encoding="utf-8"))
    return numeric, info["strings"], info


def _outputs_of(numeric, signature):
    prefix = signature + "/"
    return {k[len(prefix) :]: v for k, v in numeric.items() if k.startswith(prefix)}


def run_saved_model(artifact_dir, meta, texts, tokenizer):
    """Run every signature of a (TPU) SavedModel in the TF1 session loader."""
    primary = meta["sequence_lengths"][0]
    ids = tokenize(tokenizer, texts, primary)
    a, b = _split_pairs(texts)
    texts_by_name = {"text": a}
    if b is not None:
        texts_by_name["text_b"] = b
    inputs = {}
    text_model = any(info["input"] == "text" for info in meta["signatures"].values())
    requests = []
    plan = []  # (signature, input kind, sequence_length, ids)
    for signature, info in meta["signatures"].items():
        length = info.get("sequence_length") or primary
        if info["input"] == "text_pair":
            # Classifiers' pair signature: each text paired with itself on
            # the first texts is enough to prove the in-graph pair packing.
            sub = a[:SECONDARY_TEXTS]
            texts_by_name["pair_a"] = sub
            texts_by_name["pair_b"] = sub
            feeds = {"text": "pair_a", "text_b": "pair_b"}
            run_ids = tokenize(tokenizer, list(zip(sub, sub)), length)
        elif info["input"] == "text":
            feeds = {"text": "text"}
            if b is not None:
                feeds["text_b"] = "text_b"
            run_ids = ids
        else:
            # A text-in model's serve_ids is the same graph as serving_default
            # minus tokenization: its first texts suffice. Ids-only (TPU)
            # models run every text through their primary bucket.
            count = SECONDARY_TEXTS if (length != primary or text_model) else len(texts)
            run_ids = {k: v[:count] for k, v in ids.items()}
            if length != primary:
                run_ids = tokenize(tokenizer, texts[:count], length)
            name = f"L{length}n{count}"
            inputs.update({f"{name}/{k}": v for k, v in run_ids.items()})
            feeds = {k: f"{name}/{k}" for k in ("token_ids", "segment_ids", "padding_mask")}
        requests.append(
            {
                "signature": signature,
                "feeds": feeds,
                "batch_size": info.get("batch_size") or 32,
                "fixed_batch": bool(info.get("batch_size")),
                "latency": signature == meta["latency_signature"],
            }
        )
        plan.append(
            (signature, info["input"], length, run_ids, info.get("role", "predict"))
        )
    numeric, strings, info = run_tf1(artifact_dir, requests, texts_by_name, inputs)
    runs = []
    for signature, kind, length, run_ids, role in plan:
        outputs = _outputs_of(numeric, signature)
        runs.append(
            {
                "file": "saved_model.pb",
                "signature": signature,
                "role": role,
                "sequence_length": length,
                "input": kind,
                "ids": run_ids,
                "outputs": outputs,
                "strings": {
                    k[len(signature) + 1 :]: v
                    for k, v in strings.items()
                    if k.startswith(signature + "/")
                },
                "latency": _latency(
                    info["latency"].get(signature, []),
                    meta["signatures"][signature].get("batch_size") or 1,
                ),
            }
        )
    return runs, info["signatures"]


# --- the report ------------------------------------------------------------------


def _file_sizes(artifact_dir, meta):
    sizes = {}
    for name in meta.get("files", {}):
        path = pathlib.Path(artifact_dir) / name
        if path.is_file():
            sizes[name] = path.stat().st_size
    if meta["kind"] != "tflite":
        total = sum(
            p.stat().st_size
            for p in pathlib.Path(artifact_dir).rglob("*")
            if p.is_file() and (p.name == "saved_model.pb" or "variables" in p.parts)
        )
        sizes["saved_model (pb + variables)"] = total
    return sizes


def _load_reference_from_metadata(meta):
    """The source model, when metadata names a model directory that still
    holds the same `model.keras` (by sha256); else None."""
    source = meta.get("source_model", {})
    path, digest = source.get("path"), source.get("model_keras_sha256")
    if not path or not digest:
        return None
    model_file = pathlib.Path(path) / "model.keras"
    if not model_file.is_file() or mf.sha256_file(model_file) != digest:
        return None
    from zoo.checkpoints import load_model_dir

    model, _, _ = load_model_dir(path)
    return model


def validate_artifact(
    artifact_dir,
    texts,
    labels=None,
    reference_model=None,
    tokenizer=None,
    *,
    allow_degraded=False,
):
    """Load the artifact in its runtime, run `texts` through it and compare.

    Args:
        artifact_dir: a `zoo export` artifact (TFLite directory, or a
            SavedModel version directory `BASE/NAME/VERSION`).
        texts: at least `MIN_VALIDATION_TEXTS` str, or `(text, text_b)` pairs.
        labels: optional gold labels (names), for the accuracy delta.
        reference_model: the Keras model to compare with. None: the source
            model named in metadata.json if it still exists unchanged, else
            the report holds the artifact's own figures only.
        tokenizer: the project tokenizer for host-side ids. None: built from
            the artifact's vocab.txt and metadata's lower-casing.
        allow_degraded: record threshold misses in the report instead of
            raising `ExportValidationError`.

    Returns the report dict (see `format_report`).
    """
    artifact_dir = pathlib.Path(artifact_dir)
    texts = _check_texts(texts, "validate_artifact")
    if labels is not None and len(labels) != len(texts):
        raise ValueError(
            f"validate_artifact: {len(labels)} labels for {len(texts)} texts; pass one per text."
        )
    mf.verify_manifest(artifact_dir)
    meta = mf.read_metadata(artifact_dir)
    if tokenizer is None:
        from zoo.text.tokenizer import WordPieceTokenizer

        tokenizer = WordPieceTokenizer(
            str(artifact_dir / mf.VOCABULARY), lowercase=meta["lowercase"]
        )
    if mf.vocabulary_sha256(tokenizer.vocabulary) != meta["vocabulary_sha256"]:
        raise ValueError(
            f"{artifact_dir}: the tokenizer's vocabulary is not the one the artifact was exported "
            "with (sha256 differs from metadata.json); pass the model's own tokenizer."
        )
    reference_source = "given"
    if reference_model is None:
        reference_model = _load_reference_from_metadata(meta)
        reference_source = "metadata source_model" if reference_model is not None else None
    task = meta["task"]
    t0 = time.time()
    signatures_seen = None
    if meta["kind"] == "tflite":
        runtime = "LiteRT Interpreter (ai_edge_litert), num_threads=1"
        runs = run_tflite(artifact_dir, meta, texts, tokenizer)
    else:
        runtime = (
            "tf.compat.v1.saved_model.loader in a fresh process (TF Serving's restore path)"
        )
        runs, signatures_seen = run_saved_model(artifact_dir, meta, texts, tokenizer)
    cache = {}
    results = []
    for run in runs:
        result = {
            "file": run["file"],
            "signature": run["signature"],
            "sequence_length": run["sequence_length"],
            "input": run["input"],
            "latency": run["latency"],
        }
        outputs = run["outputs"]
        if task == "classification" and "logits" in outputs:
            # Per-text predicted class indices: lets a caller compare two
            # artifacts (e.g. a student with its teacher) on the same texts.
            result["predictions"] = outputs["logits"].argmax(-1).astype(int).tolist()
        run_labels = None if labels is None else labels[: len(run["ids"]["token_ids"])]
        if run["input"] in ("text", "text_pair") and "token_ids" in outputs:
            # The artifact tokenized in-graph: how often its ids are the host's.
            same = (outputs["token_ids"] == run["ids"]["token_ids"]).all(1)
            result["token_ids_match"] = float(same.mean())
        if run.get("role") == "tokenize":
            result["metrics"] = {"token_ids_match": result.pop("token_ids_match")}
        elif reference_model is not None:
            key = (run["sequence_length"], len(run["ids"]["token_ids"]), run["input"])
            if key not in cache:
                cache[key] = keras_outputs(reference_model, run["ids"])
            reference = cache[key]
            keep = np.ones(len(run["ids"]["token_ids"]), bool)
            if run["file"].endswith(".tflite") and "token_ids_match" in result:
                # The text-in .tflite tokenizes with FastBertTokenizer, which
                # differs from the project tokenizer on some inputs (see
                # export/tflite.py): numbers compare where the ids agree.
                keep = (outputs["token_ids"] == run["ids"]["token_ids"]).all(1)
            sub = lambda d, keep=keep: {k: v[keep] for k, v in d.items()}  # noqa: E731
            metrics = compare(
                task,
                sub(outputs),
                sub(reference),
                sub(run["ids"]),
                labels=None
                if run_labels is None
                else [x for x, k in zip(run_labels, keep) if k],
                label_names=meta.get("labels"),
                sep_id=meta["special_tokens"]["sep"],
            )
            if "token_ids_match" in result:
                metrics["token_ids_match"] = result.pop("token_ids_match")
            if "label" in run.get("strings", {}) and task == "classification":
                names = meta["labels"]
                expected = [names[i] for i in reference["logits"].argmax(-1)]
                metrics["label_string_agreement"] = float(
                    np.mean([x == y for x, y in zip(run["strings"]["label"], expected)])
                )
            result["metrics"] = metrics
        else:
            result["metrics"] = artifact_only_metrics(
                task, outputs, run_labels, meta.get("labels")
            )
        results.append(result)
    profile = meta["validation_profile"]
    failures = check_thresholds(profile, results) if reference_model is not None else []
    report = {
        "artifact": str(artifact_dir),
        "kind": meta["kind"],
        "task": task,
        "quantization": meta.get("quantization"),
        "validation_profile": profile,
        "runtime": runtime,
        "reference": reference_source,
        "num_texts": len(texts),
        "thresholds": THRESHOLDS.get(profile, {}),
        "file_sizes": _file_sizes(artifact_dir, meta),
        "ops": {f: i.get("ops") for f, i in meta.get("files", {}).items() if i.get("ops")},
        "results": results,
        "failures": failures,
        "passed": not failures,
        "degraded": bool(failures) and allow_degraded,
        "seconds": round(time.time() - t0, 1),
    }
    if signatures_seen is not None:
        report["signature_defs"] = signatures_seen
        missing = sorted(set(meta["signatures"]) - set(signatures_seen))
        if missing:
            failures.append(f"signatures missing from the loaded MetaGraphDef: {missing}")
            report["passed"] = False
    if reference_model is None:
        report["note"] = (
            "no reference model: artifact-only figures (pass the Keras model, or keep the "
            "source model directory named in metadata.json, to compare)"
        )
    if failures and not allow_degraded:
        raise ExportValidationError(
            f"{artifact_dir} failed validation ({profile} thresholds):\n  "
            + "\n  ".join(failures)
            + "\n\n"
            + format_report(report)
            + "\nFix the export (or accept it with allow_degraded=True / --allow-degraded).",
            report,
        )
    return report


def format_report(report):
    """The report as a text table, one row per (file, signature)."""
    lines = [
        f"{report['artifact']}  [{report['kind']}, {report['task']}, profile "
        f"{report['validation_profile']}]",
        f"runtime: {report['runtime']}; {report['num_texts']} texts; reference: "
        f"{report['reference'] or 'none'}",
    ]
    header = (
        f"{'file:signature':<34} {'L':>4} {'max|d|':>9} {'mean|d|':>9} {'cos_min':>8} "
        f"{'agree':>7} {'acc':>7} {'d_acc':>7} {'ids=':>6} {'p50 ms':>8} {'batch':>5}"
    )
    lines += [header, "-" * len(header)]

    def cell(value, spec, width):
        return ("-" if value is None else format(value, spec)).rjust(width)

    for r in report["results"]:
        m = r.get("metrics", {})
        latency = (r.get("latency") or {}).get("p50_ms")
        lines.append(
            f"{(r['file'] + ':' + r['signature'])[:34]:<34} {r['sequence_length']:>4} "
            f"{cell(m.get('max_abs_diff'), '.2e', 9)} {cell(m.get('mean_abs_diff'), '.2e', 9)} "
            f"{cell(m.get('cosine_min'), '.5f', 8)} {cell(m.get('label_agreement'), '.4f', 7)} "
            f"{cell(m.get('accuracy_artifact'), '.4f', 7)} {cell(m.get('accuracy_delta'), '+.4f', 7)} "
            f"{cell(m.get('token_ids_match'), '.3f', 6)} {cell(latency, '.2f', 8)} "
            f"{cell((r.get('latency') or {}).get('batch'), 'd', 5)}"
        )
    sizes = ", ".join(f"{k} {v / 1e6:.2f} MB" for k, v in report["file_sizes"].items())
    lines.append(f"sizes: {sizes}")
    if report["failures"]:
        state = "DEGRADED (recorded, allowed)" if report["degraded"] else "FAILED"
        lines.append(f"{state}: " + "; ".join(report["failures"]))
    else:
        lines.append(
            f"passed ({report['validation_profile']} thresholds {report['thresholds']})"
        )
    return "\n".join(lines)


def write_report(report, path):
    return mf.write_json(path, report)


def validate_new_artifact(tmp, model, texts, labels, tokenizer, allow_degraded):
    """The last step of every exporter, on the artifact still in its temporary
    directory: manifest, validation in the artifact's runtime against `model`
    (or, without `texts`, a load-and-run check on probe sentences, said so in
    the report), `validation.json`, then the final manifest."""
    import warnings

    mf.write_manifest(tmp)
    probe = texts is None
    if probe:
        warnings.warn(
            "No validation_texts: the export is only load-checked on a few probe sentences. "
            "Pass >= 200 real texts (e.g. --data bbc) to validate it.",
            stacklevel=3,
        )
        texts = (PROBE_TEXTS * (MIN_VALIDATION_TEXTS // len(PROBE_TEXTS) + 1))[
            :MIN_VALIDATION_TEXTS
        ]
        labels = None
    report = validate_artifact(
        tmp, texts, labels, reference_model=model, tokenizer=tokenizer,
        allow_degraded=allow_degraded,
    )
    if probe:
        report["note"] = "probe sentences only: load-and-run check, not a validation"
    report["artifact"] = "(this directory)"
    write_report(report, tmp / "validation.json")
    mf.write_manifest(tmp)
    mf.make_readable(tmp)
    return report
