"""Every signature of a (TPU) SavedModel run in the TF1 session loader (the
restore path of TF Serving's C++ loader), in a fresh process running
`export/tf1_worker.py` that never outlives the call (`run_worker`), with
the texts each signature takes tokenized on the host for the comparison."""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import subprocess
import sys
import tempfile

import numpy as np

from export import manifest as mf
from export.runtime.budget import LATENCY_RUNS, SECONDARY_TEXTS, _latency
from export.runtime.loading import ArtifactLoadError
from export.runtime.opened import open_artifact
from export.tf1_worker import MANIFEST_MISMATCH
from zoo.models import INPUT_NAMES
from zoo.text.tokenizer import split_pairs, tokenize_texts
from zoo.utils import children
from zoo.utils.atomic import remove_stale

# The SavedModel check runs export/tf1_worker.py (one folder up from this
# package) as a script, not as a module of the package: the fresh process
# then imports TensorFlow and tensorflow-text only, as TF Serving does.
TF1_WORKER = pathlib.Path(__file__).parent.with_name("tf1_worker.py")


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


def run_saved_model(artifact, texts):
    """Run every signature of a (TPU) SavedModel, `artifact` (an
    `OpenedArtifact`, or a version directory, opened first), in the TF1
    session loader; the texts are tokenized on the host with
    `artifact.tokenizer` for the comparison."""
    artifact = open_artifact(artifact)
    meta, tokenizer = artifact.meta, artifact.tokenizer
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
    numeric, strings, info = run_tf1(artifact.directory, requests, texts_by_name, inputs)
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
