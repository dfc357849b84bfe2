"""Reliability corpus, areas "SavedModel calls", ".tflite calls" and
"corrupted artifacts": ids that break the input contract, valid ids that
must give the Keras model's answer, and artifacts damaged on disk or edited
(with a regenerated manifest, the case the manifest cannot see).

One tiny classifier is exported once per module in both formats, from a zoo
model directory (so metadata.json names its source). SavedModel calls run
in one fresh process through the TF1 session loader, TF Serving's restore
path: a contract violation there is an InvalidArgument error, which TF
Serving answers with HTTP 400."""

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
from tests.reliability.corpus import answer, error, run_area
from zoo.checkpoints import load_model_dir, save_model_dir
from zoo.models import InvalidInputError
from zoo.text.tokenizer import WordPieceTokenizer, vocabulary_sha256

# Slow (exports, and a TF1-loader process per SavedModel case: minutes on 2
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


def test_saved_model_calls(exported, tmp_path):
    model, tokenizer = exported["model"], exported["tokenizer"]
    rng = np.random.default_rng(0)
    requests, expected_ok, arrays = {}, {}, {}
    base = _valid_ids(rng, 2, 12, real=None)
    errors = contract_violations(base, max_length=64)
    for name, ids, _ in errors:
        requests[name] = ("serve_ids", list(ids))
        arrays.update({f"{name}/{k}": v for k, v in ids.items()})
    for i in range(30):
        batch, length = int(rng.integers(1, 5)), int(rng.integers(1, 65))
        ids = _valid_ids(rng, batch, length)
        name = f"valid ids {i} [{batch}, {length}]"
        requests[name] = ("serve_ids", list(ids))
        arrays.update({f"{name}/{k}": v for k, v in ids.items()})
        expected_ok[name] = np.asarray(model(ids, training=False)["logits"])
    texts = [
        "",
        "   ",
        "Émile’s café ☕ 東京",
        "x" * 300,
        "The bank vote was hot. " * 40,
        "\x00\x01 control",
        "\ufffd\ufffd",
        "match goal film",
    ] + exported["texts"][:4]
    for i, text in enumerate(texts):
        name = f"text {i} ({text[:15]!r})"
        requests[name] = ("serving_default", ["text"])
        arrays[f"{name}/text"] = np.array([text.encode("utf-8")], dtype=object)
        ids = tokenizer([text], sequence_length=L)
        expected_ok[name] = np.asarray(model(ids, training=False)["logits"])
    (tmp_path / "requests.json").write_text(json.dumps(requests))
    np.savez(tmp_path / "requests.json.npz", **arrays)
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            _TF1_CALLS,
            str(exported["saved_model"]),
            str(tmp_path / "requests.json"),
            str(tmp_path / "out.json"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads((tmp_path / "out.json").read_text())

    def served(name):
        result = results[name]
        if "invalid_argument" in result:  # what TF Serving returns as HTTP 400
            raise ValueError(result["invalid_argument"])
        if "other" in result:
            raise RuntimeError(result["other"])
        return np.asarray(result["ok"]["logits"])

    cases = [
        error(name, lambda n=name: served(n), *words, errors=(ValueError,))
        for name, _, words in errors
    ]
    cases += [
        answer(
            name,
            lambda n=name: served(n),
            lambda got, want=want: (
                got.shape == want.shape and np.abs(got - want).max() <= 1e-4
            ),
        )
        for name, want in expected_ok.items()
    ]
    problems = run_area("SavedModel calls", cases)
    assert not problems, "\n".join(problems)


# --- .tflite calls --------------------------------------------------------------------


def test_tflite_calls(exported):
    model = exported["model"]
    run = runtime.load_signature(exported["tflite"])
    rng = np.random.default_rng(1)
    cases = []
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
            one = {k: v[row : row + 1] for k, v in ids.items()}
            cases.append(
                error(
                    f"{name} (call {call})",
                    lambda one=one: run(**one),
                    *words,
                    errors=(InvalidInputError,),
                )
            )
    good = _valid_ids(rng, 1, L)
    cases += [
        error(
            "a batch of 2",
            lambda: run(**{k: np.repeat(v, 2, 0) for k, v in good.items()}),
            "batch",
            errors=(InvalidInputError,),
        ),
        error(
            "length 12 for the L16 signature",
            lambda: run(**{k: v[:, :12] for k, v in good.items()}),
            "16",
            errors=(InvalidInputError,),
        ),
        error(
            "float ids",
            lambda: run(**{**good, "token_ids": good["token_ids"] * 1.0}),
            "token_ids",
            "dtype",
            errors=(InvalidInputError,),
        ),
        error(
            "string ids",
            lambda: run(**{**good, "token_ids": good["token_ids"].astype(str)}),
            "token_ids",
            errors=(InvalidInputError,),
        ),
        error(
            "a missing input",
            lambda: run(token_ids=good["token_ids"], padding_mask=good["padding_mask"]),
            "segment_ids",
            errors=(InvalidInputError,),
        ),
        error(
            "an extra input",
            lambda: run(**good, attention_mask=good["padding_mask"]),
            "attention_mask",
            errors=(InvalidInputError,),
        ),
        error(
            "1-D ids",
            lambda: run(**{k: v[0] for k, v in good.items()}),
            "shape",
            errors=(InvalidInputError,),
        ),
    ]
    for i in range(36):
        ids = _valid_ids(rng, 1, L)
        want = np.asarray(model(ids, training=False)["logits"])
        cases.append(
            answer(
                f"valid ids {i}",
                lambda ids=ids: run(**ids)["logits"],
                lambda got, want=want: np.abs(got - want).max() <= 1e-4,
            )
        )
    problems = run_area(".tflite calls", cases)
    assert not problems, "\n".join(problems)


# --- corrupted and edited artifacts ----------------------------------------------------


def _copy(path, tmp_path, name):
    target = tmp_path / name
    shutil.copytree(path, target)
    return target


def _flip(file, offset):
    data = bytearray(file.read_bytes())
    data[offset % len(data)] ^= 0x10
    file.write_bytes(bytes(data))


def _edit_metadata(directory, change):
    meta = json.loads((directory / mf.METADATA).read_text())
    change(meta)
    (directory / mf.METADATA).write_text(json.dumps(meta))
    mf.write_manifest(directory)  # what a deliberate edit would do


def test_corrupted_and_edited_artifacts(exported, tmp_path):
    tfl, sm, texts = exported["tflite"], exported["saved_model"], exported["texts"]
    tfl_files = ["model.tflite", "metadata.json", "vocab.txt", "validation.json"]
    sm_files = [
        "saved_model.pb",
        "variables/variables.index",
        "variables/variables.data-00000-of-00001",
        "metadata.json",
        "vocab.txt",
        "assets/vocab.txt",
        "assets/labels.txt",
        "validation.json",
    ]
    counter = iter(range(10**6))
    cases = []

    def flipped(source, file, offset, load):
        def run():
            copy = _copy(source, tmp_path, f"c{next(counter)}")
            _flip(copy / file, offset)
            return load(copy)

        return run

    for file in tfl_files:
        size = (tfl / file).stat().st_size
        for k in range(19):
            offset = (k * 7919 + 13) % size
            cases.append(
                error(
                    f"tflite {file} byte {offset}",
                    flipped(tfl, file, offset, runtime.load_signature),
                    file,
                    errors=(mf.ManifestError,),
                )
            )
    for file in sm_files:
        size = (sm / file).stat().st_size
        for k in range(10):
            offset = (k * 104729 + 5) % size
            cases.append(
                error(
                    f"saved_model {file} byte {offset}",
                    flipped(sm, file, offset, runtime.load_saved_model),
                    file,
                    errors=(mf.ManifestError,),
                )
            )

    def edited(change, load=runtime.load_signature, source=None):
        def run():
            copy = _copy(source or tfl, tmp_path, f"e{next(counter)}")
            change(copy)
            return load(copy)

        return run

    def meta_edit(fn):
        return lambda d: _edit_metadata(d, fn)

    def validate_copy(d):
        return validate.validate_artifact(d, texts)

    def set_field(key, value):
        def fn(m):
            m[key] = value

        return fn

    reversed_labels = meta_edit(lambda m: m.update(labels=m["labels"][::-1]))

    def swap_vocab(d):
        tokens = (d / "vocab.txt").read_text().split("\n")[:-1]
        i, j = tokens.index("the"), tokens.index("market")
        tokens[i], tokens[j] = tokens[j], tokens[i]
        (d / "vocab.txt").write_text("\n".join(tokens) + "\n")
        mf.write_manifest(d)

    def cut_vocab(d):
        tokens = (d / "vocab.txt").read_text().split("\n")[:-1][:60]
        (d / "vocab.txt").write_text("\n".join(tokens) + "\n")
        _edit_metadata(
            d,
            lambda m: m.update(
                vocabulary_size=60, vocabulary_sha256=vocabulary_sha256(tokens)
            ),
        )

    def swap_model(d):
        # A careful forger: the other model's file, with the size metadata.json
        # records for it corrected (the embedded record's paths make the two
        # files' sizes differ by chance), so only the answers can tell.
        shutil.copyfile(exported["other_tflite"] / "model.tflite", d / "model.tflite")
        size = (d / "model.tflite").stat().st_size
        _edit_metadata(d, lambda m: m["files"]["model.tflite"].update(size=size))

    def raw_metadata(text):
        def fn(d):
            (d / mf.METADATA).write_bytes(text)
            mf.write_manifest(d)

        return fn

    MdE = (mf.MetadataError,)
    cases += [
        error(
            "labels reversed (validate)",
            edited(reversed_labels, validate_copy),
            "labels",
            errors=(validate.ExportValidationError, mf.MetadataError),
        ),
        error(
            "labels reversed (validate, no source model)",
            edited(
                lambda d: (
                    reversed_labels(d),
                    _edit_metadata(d, lambda m: m["source_model"].pop("path")),
                ),
                validate_copy,
            ),
            # The labels the model file was exported with (its embedded
            # record) refuse it before anything runs.
            "labels",
            errors=(validate.ExportValidationError, mf.MetadataError),
        ),
        error(
            "labels: 7", edited(meta_edit(set_field("labels", 7))), "`labels`", errors=MdE
        ),
        error(
            "labels: 4 names for 3 classes",
            edited(meta_edit(lambda m: m.update(labels=m["labels"] + ["x"]))),
            "labels",
            errors=MdE,
        ),
        error(
            "labels: a repeated name",
            edited(meta_edit(lambda m: m.update(labels=["a", "a", "b"]))),
            "`labels`",
            errors=MdE,
        ),
        error(
            "labels: an empty name",
            edited(meta_edit(lambda m: m.update(labels=["", "a", "b"]))),
            "`labels`",
            errors=MdE,
        ),
        error(
            "vocabulary_size: 100",
            edited(meta_edit(set_field("vocabulary_size", 100))),
            "vocabulary_size",
            errors=MdE,
        ),
        error(
            "lowercase: false",
            edited(meta_edit(set_field("lowercase", False))),
            "lowercase",
            errors=MdE,
        ),
        error(
            "lowercase: 'yes'",
            edited(meta_edit(set_field("lowercase", "yes"))),
            "`lowercase`",
            errors=MdE,
        ),
        error(
            "task: unknown",
            edited(meta_edit(set_field("task", "summarize"))),
            "`task`",
            errors=MdE,
        ),
        error(
            "task missing", edited(meta_edit(lambda m: m.pop("task"))), "`task`", errors=MdE
        ),
        error(
            "kind: unknown",
            edited(meta_edit(set_field("kind", "onnx"))),
            "`kind`",
            errors=MdE,
        ),
        error(
            "format_version 99",
            edited(meta_edit(set_field("format_version", 99))),
            "format",
            errors=MdE,
        ),
        error(
            "special token id outside the vocabulary",
            edited(meta_edit(lambda m: m["special_tokens"].update(sep=10**6))),
            "special_tokens",
            errors=MdE,
        ),
        error(
            "files: lengths do not match signatures",
            edited(
                meta_edit(
                    lambda m: m["files"]["model.tflite"].update(sequence_lengths=[16, 32])
                )
            ),
            "`files`",
            errors=MdE,
        ),
        error(
            "input_contract: token range widened",
            edited(meta_edit(lambda m: m["input_contract"]["token_ids"].update(max=10**6))),
            "input_contract",
            errors=MdE,
        ),
        error(
            "metadata.json holds a list",
            edited(raw_metadata(b"[1, 2]")),
            "metadata.json",
            "list",
            errors=MdE,
        ),
        error(
            "metadata.json is not JSON",
            edited(raw_metadata(b"{task: classify")),
            "metadata.json",
            "JSON",
            errors=MdE,
        ),
        error(
            "metadata.json is not UTF-8",
            edited(raw_metadata(b'{"task": "\xff"}')),
            "metadata.json",
            "UTF-8",
            errors=MdE,
        ),
        error(
            "vocab.txt lines swapped",
            edited(swap_vocab),
            "vocab.txt",
            "not the vocabulary",
            errors=MdE,
        ),
        error(
            "vocab.txt cut, size and hash updated",
            edited(cut_vocab),
            "input_contract",
            errors=MdE,
        ),
        error(
            "model.tflite replaced by another model's",
            edited(swap_model, validate_copy),
            "answers",
            errors=(validate.ExportValidationError, mf.MetadataError),
        ),
        error(
            "SavedModel labels reversed (validate)",
            edited(reversed_labels, validate_copy, source=sm),
            "labels",
            errors=(validate.ExportValidationError, mf.MetadataError),
        ),
        error(
            "SavedModel signatures: not an object",
            edited(meta_edit(set_field("signatures", [])), runtime.load_saved_model, sm),
            "`signatures`",
            errors=MdE,
        ),
        error(
            "manifest.json missing",
            edited(lambda d: (d / "manifest.json").unlink()),
            "manifest.json",
            errors=(mf.ManifestError,),
        ),
        error(
            "manifest.json holds a list",
            edited(lambda d: (d / "manifest.json").write_text("[]")),
            "manifest.json",
            errors=(mf.ManifestError,),
        ),
        error(
            "model.tflite missing",
            edited(lambda d: (d / "model.tflite").unlink()),
            "model.tflite",
            errors=(mf.ManifestError,),
        ),
    ]
    problems = run_area("corrupted artifacts", cases)
    assert not problems, "\n".join(problems)
