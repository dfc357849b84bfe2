"""Every signature of every `.tflite` in an artifact run over the
validation texts (`run_tflite`): the texts tokenized once per length, the
latency calls alone in one interpreter, the rest shared among 1-thread
interpreters in threads, and a file derived from another checked on a
sample when it holds its source's graph."""

from __future__ import annotations

import threading
import time

import numpy as np

from export.consistency.registry import same_graph_as_source
from export.runtime.budget import (
    DERIVED_SAMPLE_TEXTS,
    LATENCY_RUNS,
    SECONDARY_TEXTS,
    _latency,
    validation_workers,
)
from export.runtime.loading import CheckedSignature, invoke, load_interpreter
from export.runtime.opened import open_artifact
from zoo.text.tokenizer import split_pairs, tokenize_texts


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


def run_tflite(artifact, texts, *, workers=None):
    """Run every signature of every `.tflite` of `artifact` (an
    `OpenedArtifact`, or a directory, opened first) over `texts`, tokenized
    on the host with `artifact.tokenizer`.

    The first `3 + LATENCY_RUNS` texts of a signature run alone, in one
    1-thread interpreter, and give its batch-1 latency; the remaining texts
    are shared among `validation_workers(workers)` 1-thread interpreters of
    the same file, in threads. A 1-thread XNNPACK interpreter is
    deterministic, so the outputs are the ones a single interpreter gives,
    in text order.

    A file that metadata.json says was derived from another
    (`derived_from`: mediapipe.tflite, the primary signature of model.tflite
    cut out with its weights untouched) runs after its source. When the
    finder registered for it (`export.consistency.registry`; for
    mediapipe.tflite, `export.mediapipe.same_graph_as_source`) finds the
    source's operators and tensors in it (weights compared byte for byte),
    it runs the first
    `DERIVED_SAMPLE_TEXTS` texts only; if its outputs there equal the
    source's bit for bit, the source's outputs stand for the rest. Otherwise
    it runs every text, like any file. The run says which (`texts_run`,
    `same_as`, `note`).

    Returns a list of runs: `{file, signature, sequence_length, ids, outputs,
    latency, workers, texts_run, same_as, note}`; the text-in file also
    returns the ids it made (`token_ids`).
    """
    workers = validation_workers(workers)
    artifact = open_artifact(artifact)
    meta, tokenizer = artifact.meta, artifact.tokenizer
    runs = []
    by_signature = {}  # (file, signature) -> run
    tokenized = {}  # (length, count): host ids, shared by the files
    for file, info in _files_to_run(meta, texts):
        source = same_graph_as_source(artifact.directory, meta, file)
        source_run = None if source is None else by_signature.get(source)
        interpreters = _Interpreters(artifact, file)
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

    def __init__(self, artifact, file):
        self.artifact, self.file = artifact, file
        self.loaded = [load_interpreter(artifact, file)]

    def runners(self, count, signature, length, kind):
        """`count` checked runners of `signature`, one per interpreter."""
        while len(self.loaded) < count:
            self.loaded.append(load_interpreter(self.artifact, self.file))
        contract = self.artifact.meta["input_contract"]
        return [
            CheckedSignature(x, signature, length, kind, contract)
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
