"""The runtimes that serve an exported artifact, as the validator and every
loader use them: LiteRT's interpreter for `.tflite` files, and for
SavedModels the TF1 session loader (the restore path of TF Serving's C++
loader) in a fresh process running `export/tf1_worker.py`. Every loader
checks manifest.json first.

    interpreter = load_interpreter("exports/bbc_dyn")
    runs = run_tflite("exports/bbc_dyn", metadata, texts, tokenizer)
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401  registers the text signatures' ops
from google.protobuf.message import DecodeError
from tensorflow_text import tflite_registrar

from export import manifest as mf
from export.consistency import check_artifact
from export.mediapipe import same_graph_as_source
from export.tf1_worker import MANIFEST_MISMATCH
from zoo.models import INPUT_NAMES, InvalidInputError, check_ids
from zoo.text.tokenizer import check_text, split_pairs, tokenize_texts
from zoo.utils import children
from zoo.utils.atomic import remove_stale

try:
    from ai_edge_litert import interpreter as litert
except ImportError:  # the retired runtime: numpy 1 only, old op versions (BUILD_NOTES.md)
    from tflite_runtime import interpreter as litert

MODEL_FILE = "model.tflite"
SECONDARY_TEXTS = 32
LATENCY_RUNS = 20
# Texts a derived file (mediapipe.tflite) runs itself, the latency calls
# included, before its outputs must equal its source's (run_tflite).
DERIVED_SAMPLE_TEXTS = 64
# Validation interpreters per file at most: each holds a copy of the weights.
MAX_VALIDATION_WORKERS = 4
# The SavedModel check runs this file as a script, not as a module of the
# package: the fresh process then imports TensorFlow and tensorflow-text only,
# as TF Serving does.
TF1_WORKER = pathlib.Path(__file__).parent.with_name("tf1_worker.py")


class ArtifactLoadError(ValueError):
    """An artifact that passed its checks failed to load or run in its runtime."""


def open_artifact(artifact_dir) -> dict:
    """The checks every loader runs before a model file is touched: the
    manifest (every file listed, none changed), metadata.json's fields, and
    metadata.json against what the model files say themselves
    (`export.consistency`). Returns the metadata."""
    artifact_dir = pathlib.Path(artifact_dir)
    mf.verify_manifest(artifact_dir)
    meta = mf.read_metadata(artifact_dir)
    check_artifact(artifact_dir, meta)
    return meta


# --- LiteRT ---------------------------------------------------------------------


def load_interpreter(artifact_dir, file=MODEL_FILE, num_threads=1, *, meta=None):
    """A LiteRT interpreter for `artifact_dir/file`, after `open_artifact`'s
    checks (skipped when the caller ran them and passes their `meta`).

    A file whose metadata lists custom (tensorflow-text) ops gets
    `InterpreterWithCustomOps` with tensorflow-text's registrar. One
    interpreter runs one call at a time: `CheckedSignature` holds its lock
    for the whole call, so sharing it between threads is safe but serial
    (for parallel calls, load one interpreter per thread).
    """
    artifact_dir = pathlib.Path(artifact_dir)
    if meta is None:
        meta = open_artifact(artifact_dir)
    info = meta.get("files", {}).get(file)
    if info is None:
        raise FileNotFoundError(
            f"{artifact_dir}: metadata.json lists no {file!r} (files: {sorted(meta.get('files', {}))})."
        )
    path = str(artifact_dir / file)
    try:
        if info.get("custom_ops"):
            interpreter = litert.InterpreterWithCustomOps(
                model_path=path,
                custom_op_registerers=tflite_registrar.SELECT_TFTEXT_OPS,
                num_threads=num_threads,
            )
        else:
            interpreter = litert.Interpreter(model_path=path, num_threads=num_threads)
    except (RuntimeError, ValueError) as e:
        raise ArtifactLoadError(
            f"{path}: LiteRT cannot load it ({str(e).strip()[:300]}); re-export the artifact."
        ) from None
    interpreter.zoo_lock = threading.Lock()
    if info.get("input") == "text":
        # LiteRT's own runner resizes the text-in file's [1] string input to
        # whatever it is fed, and the graph, packed to [1, L], then answers
        # for the first text only; every runner of this file loops instead.
        raw_runner = interpreter.get_signature_runner
        interpreter.get_signature_runner = lambda signature_key=None: TextBatchRunner(
            raw_runner(signature_key), signature_key or "the signature"
        )
    return interpreter


class TextBatchRunner:
    """A signature runner of a text-in `.tflite` (string inputs of shape
    [1]) that takes a batch of N texts and answers N times: the file's
    graph tokenizes and packs one text, so the batch is run one text at a
    time and the outputs are stacked on their first (batch) axis. N = 0
    gives outputs with 0 rows. Everything else is the LiteRT runner's."""

    def __init__(self, raw, signature):
        self._raw = raw
        self.signature = signature

    def __getattr__(self, name):
        return getattr(self._raw, name)

    def __call__(self, **inputs):
        batches = {}
        for name, value in inputs.items():
            value = np.asarray(value, dtype=object)
            if value.ndim == 0:  # one text, not in a list: a batch of one
                value = value.reshape(1)
            if value.ndim != 1:
                raise InvalidInputError(
                    f"{name}: {self.signature} takes a 1-D array of texts (shape [N]; the "
                    f"file's own input is [1], one text per call); received shape "
                    f"{list(value.shape)}."
                )
            batches[name] = value
        sizes = {len(v) for v in batches.values()}
        if len(sizes) > 1:
            raise InvalidInputError(
                f"{self.signature}: inputs {sorted(batches)} hold different numbers of texts "
                f"({sorted(sizes)}); give each the same N."
            )
        count = sizes.pop() if sizes else 1
        answers = [
            self._raw(**{k: np.array([v[i]], dtype=object) for k, v in batches.items()})
            for i in range(count)
        ]
        if answers:
            return {k: np.concatenate([a[k] for a in answers]) for k in answers[0]}
        details = self._raw.get_output_details()
        return {
            k: np.zeros((0, *d["shape"][1:]), dtype=d["dtype"]) for k, d in details.items()
        }


class CheckedSignature:
    """One signature of a `.tflite`, called by input name, that checks its
    inputs first: LiteRT has no assert op, so an out-of-range id would
    otherwise come back as wrong logits. `metadata.json`'s `input_contract`
    says what is allowed; the phone app applies the same checks.

        classify = load_signature("exports/bbc_dyn")       # the primary length
        out = classify(token_ids=..., segment_ids=..., padding_mask=...)

    A runner may be shared between threads: each call holds its
    interpreter's lock from the input check to the copy of the outputs (an
    interpreter keeps one set of input and output buffers, so two
    interleaved calls would read each other's results).
    """

    def __init__(self, interpreter, signature, sequence_length, kind, contract):
        self.raw = interpreter.get_signature_runner(signature)
        self._lock = getattr(interpreter, "zoo_lock", None) or threading.Lock()
        self.signature = signature
        self.sequence_length = sequence_length
        self.kind = kind
        self.contract = contract

    def check(self, inputs):
        """Raise `InvalidInputError` unless `inputs` fit this signature."""
        if self.kind == "text":
            # N texts, each run on its own (TextBatchRunner): N answers.
            for name, value in inputs.items():
                value = np.asarray(value, dtype=object)
                if value.ndim > 1:
                    raise InvalidInputError(
                        f"{name}: {self.signature} takes a 1-D array of texts (shape [N]); "
                        f"received shape {list(value.shape)}."
                    )
                for i, text in enumerate(value.reshape(-1)):
                    if not isinstance(text, (str, bytes)):
                        raise InvalidInputError(
                            f"{name}[{i}]: {self.signature} takes texts (str or UTF-8 "
                            f"bytes); received {type(text).__name__}."
                        )
                    if isinstance(text, str):
                        check_text(text, f"{name}[{i}]")
            return
        check_ids(inputs, self.contract, sequence_length=self.sequence_length, batch_size=1)

    def __call__(self, **inputs):
        self.check(inputs)
        if self.kind != "text":
            # Checked in range above, so int32 loses nothing (int64, tf tensors).
            inputs = {k: np.asarray(v).astype(np.int32) for k, v in inputs.items()}
        with self._lock:
            return invoke(self, inputs)


def invoke(runner, inputs):
    """`runner.raw(**inputs)` with its outputs copied; a LiteRT failure as an
    `ArtifactLoadError` naming the signature. The caller holds the runner's
    interpreter (its lock, or one interpreter per thread)."""
    try:
        outputs = runner.raw(**inputs)
    except RuntimeError as e:
        raise ArtifactLoadError(
            f"{runner.signature}: LiteRT failed to run it ({str(e).strip()[:300]}); the file "
            "does not fit its metadata.json or is damaged. Re-export the artifact."
        ) from None
    return {k: np.array(v) for k, v in outputs.items()}


def load_signature(
    artifact_dir, signature=None, file=MODEL_FILE, num_threads=1, *, meta=None
):
    """A `CheckedSignature` of `artifact_dir/file` (default: its primary,
    first-listed signature), after `open_artifact`'s checks (skipped when the
    caller ran them and passes their `meta`)."""
    artifact_dir = pathlib.Path(artifact_dir)
    meta = open_artifact(artifact_dir) if meta is None else meta
    interpreter = load_interpreter(artifact_dir, file, num_threads=num_threads, meta=meta)
    info = meta["files"][file]
    names = info["signatures"]
    signature = names[0] if signature is None else signature
    if signature not in names:
        raise ValueError(
            f"{artifact_dir / file}: no signature {signature!r}; it has {names}."
        )
    length = info["sequence_lengths"][names.index(signature)]
    runner = CheckedSignature(
        interpreter, signature, length, info.get("input", "ids"), meta["input_contract"]
    )
    details = runner.raw.get_output_details()
    logits = details.get("logits", details.get("probabilities"))
    if (
        logits is not None
        and meta["labels"] is not None
        and int(logits["shape"][-1]) != len(meta["labels"])
    ):
        raise mf.MetadataError(
            f"{artifact_dir / mf.METADATA}: `labels` names {len(meta['labels'])} classes but "
            f"{file}:{signature} outputs {int(logits['shape'][-1])}; re-export the artifact."
        )
    return runner


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


def validation_workers(workers=None):
    """How many 1-thread interpreters validate a file: `workers`, else the
    cores this process may run on (`os.sched_getaffinity`), at most
    `MAX_VALIDATION_WORKERS`. Each one holds its own copy of the file's
    (XNNPACK-packed) weights."""
    if workers is None:
        try:
            cores = len(os.sched_getaffinity(0))
        except AttributeError:  # not Linux
            cores = os.cpu_count() or 1
        return max(1, min(cores, MAX_VALIDATION_WORKERS))
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(
            f"workers: the number of validation interpreters must be an int >= 1; received "
            f"{workers!r}. Pass None to use one per available core."
        )
    return workers


def _feeds(info, ids, subset):
    """The per-text input dicts of one signature, in text order."""
    a, b = split_pairs(subset)
    feeds = []
    for i in range(len(subset)):
        if info.get("input") == "text":
            feed = {"text": np.array([a[i]], dtype=object)}
            if b is not None:
                feed["text_b"] = np.array([b[i]], dtype=object)
        else:
            # By name, never by position: LiteRT sorts inputs by name.
            feed = {k: v[i : i + 1] for k, v in ids.items()}
        feeds.append(feed)
    return feeds


def _run_parallel(runners, feeds, results, stop=None):
    """Fill `results[i]` with the outputs of `feeds[i]` for every i < `stop`
    (default: all) whose slot is None, each runner (one interpreter each) in
    its own thread taking the next text from a shared counter. LiteRT
    releases the GIL inside `Invoke`, so the threads run on separate cores."""
    pending = iter([i for i, r in enumerate(results[:stop]) if r is None])
    lock = threading.Lock()
    errors = []

    def work(runner):
        while not errors:
            with lock:
                i = next(pending, None)
            if i is None:
                return
            try:
                runner.check(feeds[i])
                results[i] = invoke(runner, feeds[i])
            except BaseException as e:  # re-raised in the caller's thread
                errors.append(e)

    if len(runners) == 1:
        work(runners[0])
    else:
        threads = [threading.Thread(target=work, args=(r,), daemon=True) for r in runners]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    if errors:
        raise errors[0]


def _same_outputs(results, source, count):
    """Whether the first `count` results equal the source run's outputs bit
    for bit (every output the derived file has)."""
    for i in range(count):
        for k, v in results[i].items():
            if k not in source or not np.array_equal(v, source[k][i : i + 1]):
                return False
    return True


def run_tflite(artifact_dir, meta, texts, tokenizer, workers=None):
    """Run every signature of every `.tflite` in the artifact over `texts`.

    The first `3 + LATENCY_RUNS` texts of a signature run alone, in one
    1-thread interpreter, and give its batch-1 latency; the remaining texts
    are shared among `validation_workers(workers)` 1-thread interpreters of
    the same file, in threads. A 1-thread XNNPACK interpreter is
    deterministic, so the outputs are the ones a single interpreter gives,
    in text order.

    A file that metadata.json says was derived from another
    (`derived_from`: mediapipe.tflite, the primary signature of model.tflite
    cut out with its weights untouched) runs after its source. When
    `export.mediapipe.same_graph_as_source` finds the source's operators and
    tensors in it (weights compared byte for byte), it runs the first
    `DERIVED_SAMPLE_TEXTS` texts only; if its outputs there equal the
    source's bit for bit, the source's outputs stand for the rest. Otherwise
    it runs every text, like any file. The run says which (`texts_run`,
    `same_as`, `note`).

    Returns a list of runs: `{file, signature, sequence_length, ids, outputs,
    latency, workers, texts_run, same_as, note}`; the text-in file also
    returns the ids it made (`token_ids`).
    """
    workers = validation_workers(workers)
    runs = []
    by_signature = {}  # (file, signature) -> run
    tokenized = {}  # (length, count): host ids, shared by the files
    for file, info in _files_to_run(meta, texts):
        source = same_graph_as_source(artifact_dir, meta, file)
        source_run = None if source is None else by_signature.get(source)
        interpreters = _Interpreters(artifact_dir, file, meta)
        for position, signature in enumerate(info["signatures"]):
            length = info["sequence_lengths"][position]
            subset = texts if position == 0 else texts[:SECONDARY_TEXTS]
            key = (length, len(subset))
            if key not in tokenized:
                tokenized[key] = tokenize_texts(tokenizer, subset, length)
            ids = tokenized[key]
            # A derived file's primary signature sees the ids its source saw:
            # a sample may then stand for every text.
            derived = source_run is not None and position == 0 and source_run["ids"] is ids
            run = _run_signature(
                interpreters,
                file,
                info,
                position,
                ids,
                _feeds(info, ids, subset),
                workers,
                (source, source_run) if derived else None,
            )
            by_signature[(file, signature)] = run
            runs.append(run)
    return runs


# The steps of `run_tflite`, in its order.


def _files_to_run(meta, texts):
    """(file, info) of every .tflite that takes `texts`, sources before the
    files derived from them. The text-in file takes single texts only."""
    files = sorted(
        meta["files"].items(), key=lambda item: bool(item[1].get("derived_from"))
    )
    pairs = split_pairs(texts)[1] is not None
    return [
        (file, info)
        for file, info in files
        if file.endswith(".tflite") and not (info.get("input") == "text" and pairs)
    ]


class _Interpreters:
    """The 1-thread interpreters of one .tflite file, the first loaded at
    once and more as needed (each holds its own copy of the weights)."""

    def __init__(self, artifact_dir, file, meta):
        self.artifact_dir, self.file, self.meta = artifact_dir, file, meta
        self.loaded = [load_interpreter(artifact_dir, file, meta=meta)]

    def runners(self, count, signature, length, kind):
        """`count` checked runners of `signature`, one per interpreter."""
        while len(self.loaded) < count:
            self.loaded.append(
                load_interpreter(self.artifact_dir, self.file, meta=self.meta)
            )
        return [
            CheckedSignature(x, signature, length, kind, self.meta["input_contract"])
            for x in self.loaded[:count]
        ]


def _run_signature(interpreters, file, info, position, ids, feeds, workers, derived):
    """One signature's run over `feeds`: the latency calls alone, then the
    rest on up to `workers` interpreters. `derived`: (source, source_run)
    when a sample may stand for every text (see `run_tflite`)."""
    signature = info["signatures"][position]
    length = info["sequence_lengths"][position]
    kind = info.get("input", "ids")

    def runners(count):
        return interpreters.runners(count, signature, length, kind)

    results = [None] * len(feeds)
    # The latency calls run with nothing else in this process running.
    seconds = _latency_calls(runners(1)[0], feeds, results)
    stop = min(len(feeds), DERIVED_SAMPLE_TEXTS) if derived else len(feeds)
    used = min(workers, stop - len(seconds))
    if used > 0:
        _run_parallel(runners(used), feeds, results, stop)
    same_as, note = None, None
    if info.get("derived_from") and position == 0 and not derived:
        note = (
            f"not the graph of its source {info['derived_from']} (operators, "
            "tensors and weights compared): every text ran"
        )
    if derived and _same_outputs(results, derived[1]["outputs"], stop):
        source, source_run = derived
        same_as = f"{source[0]}:{source[1]}"
        for i in range(stop, len(feeds)):
            results[i] = {k: source_run["outputs"][k][i : i + 1] for k in results[0]}
    elif stop < len(feeds):  # not the same: every text, as for any file
        source = derived[0]
        note = (
            f"outputs differ from {source[0]}:{source[1]} on the first {stop} "
            "texts: every text ran"
        )
        _run_parallel(runners(min(workers, len(feeds) - stop)), feeds, results)
        stop = len(feeds)
    return {
        "file": file,
        "signature": signature,
        "sequence_length": length,
        "input": info.get("input", "ids"),
        "ids": ids,
        "outputs": {k: np.concatenate([r[k] for r in results]) for k in results[0]},
        # Steady state: the first calls allocate and pack weights.
        "latency": _latency(seconds[3 : 3 + LATENCY_RUNS]),
        "workers": max(1, used),
        "texts_run": stop,
        "same_as": same_as,
        "note": note,
    }


def _latency_calls(runner, feeds, results):
    """Fill `results[i]` for the first `3 + LATENCY_RUNS` feeds, one call at
    a time on `runner`; returns each call's seconds."""
    seconds = []
    for i in range(min(len(feeds), 3 + LATENCY_RUNS)):
        runner.check(feeds[i])
        t0 = time.perf_counter()
        results[i] = invoke(runner, feeds[i])
        seconds.append(time.perf_counter() - t0)
    return seconds


def run_tf1(artifact_dir, requests, texts_by_name, inputs, timeout=900):
    """Run `requests` against a SavedModel in a fresh process (TF1 session loader).

    `requests`: `[{signature, feeds: {input name: source name}, batch_size,
    fixed_batch, latency}]`; a source name refers to `texts_by_name` (lists of
    str) or `inputs` (numpy arrays). Returns `(numeric, strings, info)`.
    """
    # Request and outputs go through files; named with this process's id so
    # a later run removes what a killed one left (`remove_stale`).
    remove_stale(tempfile.gettempdir(), "zoo-tf1-")
    with tempfile.TemporaryDirectory(prefix=f"zoo-tf1-{os.getpid()}-") as tmp:
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
        proc = run_worker(
            [sys.executable, str(TF1_WORKER), str(tmp / "request.json")], env, timeout
        )
        if proc.returncode == MANIFEST_MISMATCH:
            # The worker's own manifest check failed: say which file, the
            # same way the in-process loaders do.
            mf.verify_manifest(artifact_dir)
        if proc.returncode != 0:
            tail = "\n".join(proc.stderr.strip().splitlines()[-15:])
            raise ArtifactLoadError(
                f"{artifact_dir}: the TF1 session loader (the restore path TF Serving uses) failed "
                f"in a fresh process (exit {proc.returncode}):\n{tail}"
            )
        numeric = dict(np.load(tmp / "outputs.npz", allow_pickle=False))
        info = json.loads((tmp / "result.json").read_text(encoding="utf-8"))
    return numeric, info["strings"], info


def run_worker(command, env, timeout):
    """`subprocess.run(command)`, except that the worker never outlives this
    call: on any exception (an interrupt included) it is killed and waited
    for. `subprocess.run` waits only 0.25 s after a KeyboardInterrupt, so a
    SIGINT/SIGTERM could leave the TF1 worker running past `zoo export`; and
    a signal during `Popen` itself is held back until the handle is ours
    (`zoo.utils.children`)."""
    process, pending = children.start(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    try:
        children.redeliver(pending)  # a signal during Popen: now, inside this try
        stdout, stderr = process.communicate(timeout=timeout)
    except BaseException:
        process.kill()
        with contextlib.suppress(BaseException):  # a second signal: still reap it
            process.wait(timeout=30)
        raise
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


def _outputs_of(numeric, signature):
    prefix = signature + "/"
    return {k[len(prefix) :]: v for k, v in numeric.items() if k.startswith(prefix)}


def run_saved_model(artifact_dir, meta, texts, tokenizer):
    """Run every signature of a (TPU) SavedModel in the TF1 session loader."""
    primary = meta["sequence_lengths"][0]
    ids = tokenize_texts(tokenizer, texts, primary)
    a, b = split_pairs(texts)
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
            # The pair signature of classifiers, taggers and regressors, on
            # the first texts: their own pairs when the texts are pairs, else
            # each text paired with itself (enough to prove the in-graph
            # pair packing).
            sub = a[:SECONDARY_TEXTS]
            sub_b = sub if b is None else b[:SECONDARY_TEXTS]
            texts_by_name["pair_a"] = sub
            texts_by_name["pair_b"] = sub_b
            feeds = {"text": "pair_a", "text_b": "pair_b"}
            run_ids = tokenize_texts(tokenizer, list(zip(sub, sub_b)), length)
        elif info["input"] == "text":
            feeds = {"text": "text"}
            run_ids = ids
            if b is not None and meta["task"] == "qa":
                # QA's text signatures (serving_default, tokenize) take the
                # question and the context.
                feeds["text_b"] = "text_b"
            elif b is not None:
                # A one-text signature (serving_default of a pair model) has
                # no text_b input: it is compared on the first texts alone.
                run_ids = tokenize_texts(tokenizer, a, length)
        else:
            # A text-in model's serve_ids is the same graph as serving_default
            # minus tokenization: its first texts suffice. Ids-only (TPU)
            # models run every text through their primary bucket.
            count = SECONDARY_TEXTS if (length != primary or text_model) else len(texts)
            run_ids = {k: v[:count] for k, v in ids.items()}
            if length != primary:
                run_ids = tokenize_texts(tokenizer, texts[:count], length)
            name = f"L{length}n{count}"
            inputs.update({f"{name}/{k}": v for k, v in run_ids.items()})
            feeds = {k: f"{name}/{k}" for k in INPUT_NAMES}
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


def load_saved_model(version_dir, *, meta=None):
    """`tf.saved_model.load` after `open_artifact`'s checks (skipped when the
    caller ran them and passes their `meta`); returns `(loaded, metadata)`."""
    meta = open_artifact(version_dir) if meta is None else meta
    try:
        loaded = tf.saved_model.load(str(version_dir))
    except (tf.errors.OpError, ValueError, IndexError, OSError, DecodeError) as e:
        first = (str(getattr(e, "message", e)).strip().splitlines() or [""])[0][:300]
        raise ArtifactLoadError(
            f"{version_dir}: TensorFlow cannot load the SavedModel ({type(e).__name__}: "
            f"{first}); it is damaged. Restore it from the original export or re-export it."
        ) from None
    return loaded, meta
