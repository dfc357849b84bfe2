"""Reliability corpus, areas "SavedModel calls", ".tflite calls" and
"corrupted artifacts": ids that break the input contract, valid ids that
must give the Keras model's answer, and artifacts damaged on disk or edited
(with a regenerated manifest, the case the manifest cannot see).

One tiny classifier is exported once per module in both formats, from a zoo
model directory (so metadata.json names its source). SavedModel calls run
in one fresh process through the TF1 session loader, TF Serving's restore
path: a contract violation there is an InvalidArgument error, which TF
Serving answers with HTTP 400.

Each case is its own pytest item, its name the id (a failure names its case,
and `pytest -k` reruns it alone). The inputs come from fixed seeds, so the
ids exist at collection; the exports and the TF1 process's answers to every
SavedModel request are made once per module (fixtures), and each item
checks one answer."""

import json
import shutil
import subprocess
import sys

import numpy as np
import pytest

from export import ServingVersion, Signatures, Validation, runtime, validate
from export import manifest as mf
from export.saved_model import export_saved_model
from export.tflite import export_tflite
from tests.export.conftest import TINY_LABELS, VOCABULARY, make_tiny, sentences
from tests.reliability.corpus import CaseTable, answer, check_case, error
from zoo.checkpoints import load_model_dir, save_model_dir
from zoo.models import InvalidInputError
from zoo.text.tokenizer import WordPieceTokenizer, vocabulary_sha256

# Slow (exports, and a TF1-loader process for the SavedModel calls: minutes on 2
# cores): `make test` runs the corpus, `make test-quick` does not.
pytestmark = pytest.mark.slow

L = 16  # the phone file's length
V = len(VOCABULARY)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    root = tmp_path_factory.mktemp("reliability")
    tokenizer = WordPieceTokenizer(VOCABULARY)
    save_model_dir(make_tiny(), root / "model", tokenizer)
    model, tokenizer, _ = load_model_dir(root / "model")
    texts = sentences(200, seed=11)
    labels = [TINY_LABELS[i % 3] for i in range(200)]
    tfl = export_tflite(
        model,
        tokenizer,
        root / "phone",
        signatures=Signatures((L,)),
        validation=Validation(texts, labels),
        source_dir=root / "model",
    )
    sm = export_saved_model(
        model,
        tokenizer,
        root / "serving",
        serving=ServingVersion("tiny"),
        sequence_length=L,
        validation=Validation(texts, labels),
        source_dir=root / "model",
    )
    other = make_tiny(seed=99)  # the same shapes, other weights
    other_tfl = export_tflite(other, tokenizer, root / "other", signatures=Signatures((L,)))
    return {
        "root": root,
        "model": model,
        "tokenizer": tokenizer,
        "texts": texts,
        "labels": labels,
        "tflite": tfl,
        "saved_model": sm,
        "other_tflite": other_tfl,
    }


def _valid_ids(rng, batch, length, real=None):
    real = rng.integers(1, length + 1, size=batch) if real is None else np.full(batch, real)
    mask = (np.arange(length)[None, :] < real[:, None]).astype(np.int32)
    ids = rng.integers(5, V, size=(batch, length)).astype(np.int32)
    ids[:, 0] = 2
    segments = ((np.arange(length)[None, :] >= (real[:, None] // 2)) * mask).astype(
        np.int32
    )
    return {"token_ids": ids * mask, "segment_ids": segments, "padding_mask": mask}


def _broken(base, **edits):
    """A copy of `base` ids with `edits`: name -> (function of the array)."""
    out = {k: v.copy() for k, v in base.items()}
    for name, change in edits.items():
        out[name] = change(out[name])
    return out


def _set(index, value):
    def change(a):
        a[index] = value
        return a

    return change


def contract_violations(base, max_length):
    """(name, ids, words the error must name) breaking each rule, at several places."""
    b, n = base, base["token_ids"].shape[1]
    cases = []
    for where in ((0, 1), (1, n // 2), (0, 0)):
        cases.append(
            (
                f"token_ids -1 at {where}",
                _broken(b, token_ids=_set(where, -1)),
                ("token_ids",),
            )
        )
        cases.append(
            (
                f"token_ids = vocabulary size at {where}",
                _broken(b, token_ids=_set(where, V)),
                ("token_ids",),
            )
        )
    cases += [
        ("token_ids 10**6", _broken(b, token_ids=_set((1, 1), 10**6)), ("token_ids",)),
        ("segment_ids -1", _broken(b, segment_ids=_set((0, 2), -1)), ("segment_ids",)),
        (
            "segment_ids -1 row 1",
            _broken(b, segment_ids=_set((1, 0), -1)),
            ("segment_ids",),
        ),
        ("segment_ids 2", _broken(b, segment_ids=_set((0, 1), 2)), ("segment_ids",)),
        ("segment_ids 2 row 1", _broken(b, segment_ids=_set((1, 3), 2)), ("segment_ids",)),
        ("padding_mask 7", _broken(b, padding_mask=_set((0, 1), 7)), ("padding_mask",)),
        ("padding_mask -1", _broken(b, padding_mask=_set((1, 1), -1)), ("padding_mask",)),
        ("padding_mask 2", _broken(b, padding_mask=_set((0, 0), 2)), ("padding_mask",)),
        (
            "all-zero padding_mask row",
            _broken(b, padding_mask=_set((1, slice(None)), 0)),
            ("padding_mask",),
        ),
        (
            "padding_mask starts with 0",
            _broken(b, padding_mask=_set((0, 0), 0)),
            ("padding_mask",),
        ),
        (
            "padding_mask 1 after 0",
            _broken(b, padding_mask=_set((1, n - 1), 1)),
            ("padding_mask",),
        ),
        ("length 0", {k: v[:, :0] for k, v in b.items()}, ("length",)),
        (
            "segment_ids shorter",
            {**b, "segment_ids": b["segment_ids"][:, : n // 2]},
            ("segment_ids",),
        ),
        (
            "padding_mask longer",
            {**b, "padding_mask": np.pad(b["padding_mask"], ((0, 0), (0, 3)))},
            ("padding_mask",),
        ),
    ]
    if max_length is not None:
        long = {k: np.pad(v, ((0, 0), (0, max_length + 4 - n))) for k, v in b.items()}
        cases.append(("longer than the model's maximum", long, ("length",)))
    return cases


# --- SavedModel calls -----------------------------------------------------------------

SERVED_TEXTS = [
    "",
    "   ",
    "Émile’s café ☕ 東京",
    "x" * 300,
    "The bank vote was hot. " * 40,
    "\x00\x01 control",
    "\ufffd\ufffd",
    "match goal film",
] + sentences(200, seed=11)[:4]  # the first validation texts of `exported`


def _saved_model_requests():
    """name -> (signature, {input: array}, words the error must name, or None
    where the Keras model's answer is due). Fixed seeds: the same requests at
    collection (the ids) and in the `served` fixture."""
    rng = np.random.default_rng(0)
    requests = CaseTable()
    base = _valid_ids(rng, 2, 12, real=None)
    for name, ids, words in contract_violations(base, max_length=64):
        requests[name] = ("serve_ids", ids, words)
    for i in range(30):
        batch, length = int(rng.integers(1, 5)), int(rng.integers(1, 65))
        requests[f"valid ids {i} [{batch}, {length}]"] = (
            "serve_ids",
            _valid_ids(rng, batch, length),
            None,
        )
    for i, text in enumerate(SERVED_TEXTS):
        feeds = {"text": np.array([text.encode("utf-8")], dtype=object)}
        requests[f"text {i} ({text[:15]!r})"] = ("serving_default", feeds, None)
    return requests


SAVED_MODEL_REQUESTS = _saved_model_requests()

_TF1_CALLS = r"""
import json, sys
import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401
directory, requests_path, out_path = sys.argv[1:]
requests = json.load(open(requests_path))
arrays = dict(np.load(requests_path + ".npz", allow_pickle=True))
results = {}
with tf.compat.v1.Session(graph=tf.Graph()) as session:
    graph = tf.compat.v1.saved_model.loader.load(session, ["serve"], directory)
    for name, (signature, feeds) in requests.items():
        sig = graph.signature_def[signature]
        fetch = {k: v.name for k, v in sig.outputs.items() if v.dtype != tf.string.as_datatype_enum}
        feed = {sig.inputs[k].name: arrays[f"{name}/{k}"] for k in feeds}
        try:
            out = session.run(fetch, feed)
            results[name] = {"ok": {k: v.tolist() for k, v in out.items()}}
        except tf.errors.InvalidArgumentError as e:
            results[name] = {"invalid_argument": e.message[:3000]}
        except Exception as e:
            results[name] = {"other": f"{type(e).__name__}: {str(e)[:400]}"}
json.dump(results, open(out_path, "w"))
"""


@pytest.fixture(scope="module")
def served(exported, tmp_path_factory):
    """Every request's result, from one TF1-loader process (a process per
    request would take minutes): name -> {"ok" | "invalid_argument" | "other": ...}."""
    work = tmp_path_factory.mktemp("saved_model_calls")
    requests, arrays = {}, {}
    for name, (signature, feeds, _) in SAVED_MODEL_REQUESTS.items():
        requests[name] = (signature, list(feeds))
        arrays.update({f"{name}/{k}": v for k, v in feeds.items()})
    (work / "requests.json").write_text(json.dumps(requests))
    np.savez(work / "requests.json.npz", **arrays)
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            _TF1_CALLS,
            str(exported["saved_model"]),
            str(work / "requests.json"),
            str(work / "out.json"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads((work / "out.json").read_text())
    assert set(results) == set(SAVED_MODEL_REQUESTS), "the process skipped requests"
    return results


@pytest.mark.parametrize("name", list(SAVED_MODEL_REQUESTS), ids=str)
def test_saved_model_calls(name, served, exported):
    signature, feeds, words = SAVED_MODEL_REQUESTS[name]

    def call():
        result = served[name]
        if "invalid_argument" in result:  # what TF Serving returns as HTTP 400
            raise ValueError(result["invalid_argument"])
        if "other" in result:
            raise RuntimeError(result["other"])
        return np.asarray(result["ok"]["logits"])

    if words is not None:
        case = error(name, call, *words, errors=(ValueError,))
    else:
        if signature == "serving_default":
            text = feeds["text"][0].decode("utf-8")
            feeds = exported["tokenizer"]([text], sequence_length=L)
        want = np.asarray(exported["model"](feeds, training=False)["logits"])
        case = answer(
            name,
            call,
            lambda got: got.shape == want.shape and np.abs(got - want).max() <= 1e-4,
        )
    check_case("SavedModel calls", case)


# --- .tflite calls --------------------------------------------------------------------


def _tflite_calls():
    """name -> (the phone file's inputs, words the error must name, or None
    where the Keras model's answer is due); fixed seeds, as above."""
    rng = np.random.default_rng(1)
    calls = CaseTable()
    for call in range(2):
        base = _valid_ids(rng, 2, L)
        for name, ids, words in contract_violations(base, None):
            # The phone file takes one row per call: the row with the violation.
            row = 0
            if all(ids[k].shape == base[k].shape for k in ids):
                row = int(
                    np.argwhere(
                        np.any(np.stack([ids[k] != base[k] for k in ids]), axis=(0, 2))
                    )[0][0]
                )
            calls[f"{name} (call {call})"] = (
                {k: v[row : row + 1] for k, v in ids.items()},
                words,
            )
    good = _valid_ids(rng, 1, L)
    calls.update(
        {
            "a batch of 2": ({k: np.repeat(v, 2, 0) for k, v in good.items()}, ("batch",)),
            "length 12 for the L16 signature": (
                {k: v[:, :12] for k, v in good.items()},
                ("16",),
            ),
            "float ids": (
                {**good, "token_ids": good["token_ids"] * 1.0},
                ("token_ids", "dtype"),
            ),
            "string ids": (
                {**good, "token_ids": good["token_ids"].astype(str)},
                ("token_ids",),
            ),
            "a missing input": (
                {"token_ids": good["token_ids"], "padding_mask": good["padding_mask"]},
                ("segment_ids",),
            ),
            "an extra input": (
                {**good, "attention_mask": good["padding_mask"]},
                ("attention_mask",),
            ),
            "1-D ids": ({k: v[0] for k, v in good.items()}, ("shape",)),
        }
    )
    for i in range(36):
        calls[f"valid ids {i}"] = (_valid_ids(rng, 1, L), None)
    return calls


TFLITE_CALLS = _tflite_calls()


@pytest.fixture(scope="module")
def phone_runner(exported):
    return runtime.load_signature(exported["tflite"])


@pytest.mark.parametrize("name", list(TFLITE_CALLS), ids=str)
def test_tflite_calls(name, phone_runner, exported):
    inputs, words = TFLITE_CALLS[name]
    if words is not None:
        case = error(
            name, lambda: phone_runner(**inputs), *words, errors=(InvalidInputError,)
        )
    else:
        want = np.asarray(exported["model"](inputs, training=False)["logits"])
        case = answer(
            name,
            lambda: phone_runner(**inputs)["logits"],
            lambda got: np.abs(got - want).max() <= 1e-4,
        )
    check_case(".tflite calls", case)


# --- corrupted and edited artifacts ----------------------------------------------------

TFLITE_FILES = ["model.tflite", "metadata.json", "vocab.txt", "validation.json"]
SAVED_MODEL_FILES = [
    "saved_model.pb",
    "variables/variables.index",
    "variables/variables.data-00000-of-00001",
    "metadata.json",
    "vocab.txt",
    "assets/vocab.txt",
    "assets/labels.txt",
    "validation.json",
]
# id -> (format, file, k): the k-th flipped byte of the file (its offset
# depends on the file's size, so the case's name, not its id, shows it).
FLIPS = {
    f"{kind} {file} flip {k}": (kind, file, k)
    for kind, files, flips in (
        ("tflite", TFLITE_FILES, 19),
        ("saved_model", SAVED_MODEL_FILES, 10),
    )
    for file in files
    for k in range(flips)
}


def _copy(path, tmp_path, name):
    target = tmp_path / name
    shutil.copytree(path, target)
    return target


def _flip(file, offset):
    data = bytearray(file.read_bytes())
    data[offset % len(data)] ^= 0x10
    file.write_bytes(bytes(data))


@pytest.mark.parametrize("name", list(FLIPS), ids=str)
def test_flipped_bytes(name, exported, tmp_path):
    kind, file, k = FLIPS[name]
    source = exported[kind]
    size = (source / file).stat().st_size
    if kind == "tflite":
        offset, load = (k * 7919 + 13) % size, runtime.load_signature
    else:
        offset, load = (k * 104729 + 5) % size, runtime.load_saved_model

    def run():
        copy = _copy(source, tmp_path, "copy")
        _flip(copy / file, offset)
        return load(copy)

    case = error(f"{kind} {file} byte {offset}", run, file, errors=(mf.ManifestError,))
    check_case("corrupted artifacts", case)


def _edit_metadata(directory, change):
    meta = json.loads((directory / mf.METADATA).read_text())
    change(meta)
    (directory / mf.METADATA).write_text(json.dumps(meta))
    mf.write_manifest(directory)  # what a deliberate edit would do


def _meta_edit(fn):
    return lambda d, art: _edit_metadata(d, fn)


def _set_field(key, value):
    def fn(m):
        m[key] = value

    return _meta_edit(fn)


_reversed_labels = _meta_edit(lambda m: m.update(labels=m["labels"][::-1]))


def _swap_vocab(d, art):
    tokens = (d / "vocab.txt").read_text().split("\n")[:-1]
    i, j = tokens.index("the"), tokens.index("market")
    tokens[i], tokens[j] = tokens[j], tokens[i]
    (d / "vocab.txt").write_text("\n".join(tokens) + "\n")
    mf.write_manifest(d)


def _cut_vocab(d, art):
    tokens = (d / "vocab.txt").read_text().split("\n")[:-1][:60]
    (d / "vocab.txt").write_text("\n".join(tokens) + "\n")
    _edit_metadata(
        d,
        lambda m: m.update(vocabulary_size=60, vocabulary_sha256=vocabulary_sha256(tokens)),
    )


def _swap_model(d, art):
    # A careful forger: the other model's file, with the size metadata.json
    # records for it corrected (the embedded record's paths make the two
    # files' sizes differ by chance), so only the answers can tell.
    shutil.copyfile(art["other_tflite"] / "model.tflite", d / "model.tflite")
    size = (d / "model.tflite").stat().st_size
    _edit_metadata(d, lambda m: m["files"]["model.tflite"].update(size=size))


def _raw_metadata(text):
    def fn(d, art):
        (d / mf.METADATA).write_bytes(text)
        mf.write_manifest(d)

    return fn


def _unlink(name):
    return lambda d, art: (d / name).unlink()


_VALIDATION = (validate.ExportValidationError, mf.MetadataError)
_MDE = (mf.MetadataError,)
_ME = (mf.ManifestError,)
# name -> (edit(d, art), way in, the artifact edited, words the error must
# name, errors); ways in: "load" (runtime.load_signature), "load_saved_model",
# "validate" (validate.validate_artifact on the validation texts).
EDITS = {
    "labels reversed (validate)": (
        _reversed_labels,
        "validate",
        "tflite",
        ("labels",),
        _VALIDATION,
    ),
    "labels reversed (validate, no source model)": (
        lambda d, art: (
            _reversed_labels(d, art),
            _edit_metadata(d, lambda m: m["source_model"].pop("path")),
        ),
        "validate",
        "tflite",
        # The labels the model file was exported with (its embedded
        # record) refuse it before anything runs.
        ("labels",),
        _VALIDATION,
    ),
    "labels: 7": (_set_field("labels", 7), "load", "tflite", ("`labels`",), _MDE),
    "labels: 4 names for 3 classes": (
        _meta_edit(lambda m: m.update(labels=m["labels"] + ["x"])),
        "load",
        "tflite",
        ("labels",),
        _MDE,
    ),
    "labels: a repeated name": (
        _meta_edit(lambda m: m.update(labels=["a", "a", "b"])),
        "load",
        "tflite",
        ("`labels`",),
        _MDE,
    ),
    "labels: an empty name": (
        _meta_edit(lambda m: m.update(labels=["", "a", "b"])),
        "load",
        "tflite",
        ("`labels`",),
        _MDE,
    ),
    "vocabulary_size: 100": (
        _set_field("vocabulary_size", 100),
        "load",
        "tflite",
        ("vocabulary_size",),
        _MDE,
    ),
    "lowercase: false": (
        _set_field("lowercase", False),
        "load",
        "tflite",
        ("lowercase",),
        _MDE,
    ),
    "lowercase: 'yes'": (
        _set_field("lowercase", "yes"),
        "load",
        "tflite",
        ("`lowercase`",),
        _MDE,
    ),
    "task: unknown": (_set_field("task", "summarize"), "load", "tflite", ("`task`",), _MDE),
    "task missing": (
        _meta_edit(lambda m: m.pop("task")),
        "load",
        "tflite",
        ("`task`",),
        _MDE,
    ),
    "kind: unknown": (_set_field("kind", "onnx"), "load", "tflite", ("`kind`",), _MDE),
    "format_version 99": (
        _set_field("format_version", 99),
        "load",
        "tflite",
        ("format",),
        _MDE,
    ),
    "special token id outside the vocabulary": (
        _meta_edit(lambda m: m["special_tokens"].update(sep=10**6)),
        "load",
        "tflite",
        ("special_tokens",),
        _MDE,
    ),
    "files: lengths do not match signatures": (
        _meta_edit(lambda m: m["files"]["model.tflite"].update(sequence_lengths=[16, 32])),
        "load",
        "tflite",
        ("`files`",),
        _MDE,
    ),
    "input_contract: token range widened": (
        _meta_edit(lambda m: m["input_contract"]["token_ids"].update(max=10**6)),
        "load",
        "tflite",
        ("input_contract",),
        _MDE,
    ),
    "metadata.json holds a list": (
        _raw_metadata(b"[1, 2]"),
        "load",
        "tflite",
        ("metadata.json", "list"),
        _MDE,
    ),
    "metadata.json is not JSON": (
        _raw_metadata(b"{task: classify"),
        "load",
        "tflite",
        ("metadata.json", "JSON"),
        _MDE,
    ),
    "metadata.json is not UTF-8": (
        _raw_metadata(b'{"task": "\xff"}'),
        "load",
        "tflite",
        ("metadata.json", "UTF-8"),
        _MDE,
    ),
    "vocab.txt lines swapped": (
        _swap_vocab,
        "load",
        "tflite",
        ("vocab.txt", "not the vocabulary"),
        _MDE,
    ),
    # The recorded encoder (source_model) and its input contract both still
    # say the old size; the first to disagree is named.
    "vocab.txt cut, size and hash updated": (
        _cut_vocab,
        "load",
        "tflite",
        ("vocabulary_size",),
        _MDE,
    ),
    "model.tflite replaced by another model's": (
        _swap_model,
        "validate",
        "tflite",
        ("answers",),
        _VALIDATION,
    ),
    "SavedModel labels reversed (validate)": (
        _reversed_labels,
        "validate",
        "saved_model",
        ("labels",),
        _VALIDATION,
    ),
    "SavedModel signatures: not an object": (
        _set_field("signatures", []),
        "load_saved_model",
        "saved_model",
        ("`signatures`",),
        _MDE,
    ),
    "manifest.json missing": (
        _unlink("manifest.json"),
        "load",
        "tflite",
        ("manifest.json",),
        _ME,
    ),
    "manifest.json holds a list": (
        lambda d, art: (d / "manifest.json").write_text("[]"),
        "load",
        "tflite",
        ("manifest.json",),
        _ME,
    ),
    "model.tflite missing": (
        _unlink("model.tflite"),
        "load",
        "tflite",
        ("model.tflite",),
        _ME,
    ),
}


@pytest.mark.parametrize("name", list(EDITS), ids=str)
def test_edited_artifacts(name, exported, tmp_path):
    edit, way, kind, words, errors = EDITS[name]
    load = {
        "load": runtime.load_signature,
        "load_saved_model": runtime.load_saved_model,
        "validate": lambda d: validate.validate_artifact(d, exported["texts"]),
    }[way]

    def run():
        copy = _copy(exported[kind], tmp_path, "copy")
        edit(copy, exported)
        return load(copy)

    check_case("corrupted artifacts", error(name, run, *words, errors=errors))
