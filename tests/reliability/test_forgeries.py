"""Reliability corpus, areas "manifest bypass", "forged artifacts" and "forged
model directories": the files of an artifact or a model directory edited so
that they disagree with each other, each time with the checksums
regenerated (or the manifest entry of the changed file removed), so that
only a loader that re-derives what it can from the model itself refuses it.

Every forgery is tried where a user meets it: `zoo predict`'s library
(`zoo.predict.open_predictor(...).predict`), `zoo validate`'s
(`export.validate.validate_artifact`), and the runtime loaders. Each must
refuse with an error naming what is wrong; an answer is a silent wrong one.

One tiny classifier is exported once per module: a .tflite artifact (with
its mediapipe.tflite), the same model with a smaller vocabulary (as `zoo
prune` leaves it), and a text-in SavedModel. Each forgery is its own pytest
item (its name the id) over a fresh copy, so a failure names its forgery;
the threads run once per module and each call they made is an item."""

import json
import shutil
import threading

import numpy as np
import pytest

import zoo
from export import ServingVersion, Signatures, Validation, runtime, validate
from export import manifest as mf
from export.saved_model import export_saved_model
from export.tflite import export_tflite
from tests.export.conftest import TINY, TINY_LABELS, VOCABULARY, make_tiny, sentences
from tests.reliability.corpus import CaseTable, answer, check_case, error
from zoo.checkpoints import load_model_dir, save_model_dir
from zoo.predict import open_predictor
from zoo.text.tokenizer import WordPieceTokenizer, vocabulary_sha256

# Slow (exports, forges and reloads artifacts: minutes on 2 cores): `make
# test` runs the corpus, `make test-quick` does not.
pytestmark = pytest.mark.slow

L = 16
PRUNED = 30  # word pieces the "pruned" model lacks
CALLS = 100  # per thread, on one shared runner


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    import keras

    root = tmp_path_factory.mktemp("forgeries")
    tokenizer = WordPieceTokenizer(VOCABULARY)
    save_model_dir(make_tiny(), root / "model", tokenizer)
    model, tokenizer, _ = load_model_dir(root / "model")
    texts = sentences(200, seed=5)
    labels = [TINY_LABELS[i % 3] for i in range(200)]
    tfl = export_tflite(
        model,
        tokenizer,
        root / "phone",
        signatures=Signatures((L,)),
        validation=Validation(texts, labels),
        source_dir=root / "model",
    )
    keras.utils.set_random_seed(3)
    small_tokenizer = WordPieceTokenizer(VOCABULARY[:-PRUNED])
    small = zoo.Classifier(
        zoo.BertEncoder(vocabulary_size=len(VOCABULARY) - PRUNED, **TINY),
        3,
        pooling="mean",
        labels=TINY_LABELS,
    )
    save_model_dir(small, root / "small_model", small_tokenizer)
    small_tfl = export_tflite(
        small,
        small_tokenizer,
        root / "small_phone",
        signatures=Signatures((L,)),
        validation=Validation(texts),
        source_dir=root / "small_model",
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
    return {
        "root": root,
        "texts": texts,
        "labels": labels,
        "tflite": tfl,
        "small_tflite": small_tfl,
        "saved_model": sm,
        "model_dir": root / "model",
    }


# --- ways in ------------------------------------------------------------------------


def predict(directory, texts):
    """What `zoo predict --model DIR` answers."""
    return open_predictor(directory).predict(texts)


def validate_dir(directory, texts):
    """What `zoo validate DIR` answers (the source model from metadata.json)."""
    return validate.validate_artifact(directory, texts)


# What each way in may refuse with: `zoo validate` reports a failed
# validation (exit 1) as well as a refused artifact (exit 2).
REFUSALS = {
    "predict": (ValueError, TypeError, OSError),
    "validate_dir": (ValueError, TypeError, OSError, validate.ExportValidationError),
}


# --- edits ----------------------------------------------------------------------------


def _manifest(d):
    return json.loads((d / mf.MANIFEST).read_text())


def _write_manifest_json(d, manifest):
    (d / mf.MANIFEST).write_text(json.dumps(manifest))


def _flip(file, offset=None):
    data = bytearray(file.read_bytes())
    offset = len(data) // 2 if offset is None else offset
    data[offset] ^= 0x40
    file.write_bytes(bytes(data))


def _edit_json(path, change):
    meta = json.loads(path.read_text())
    change(meta)
    path.write_text(json.dumps(meta))


def _meta(change):
    """Edit metadata.json and regenerate the manifest, as a deliberate edit would."""

    def edit(d, built):
        _edit_json(d / mf.METADATA, change)
        mf.write_manifest(d)

    return edit


def _vocab_swap(d, files=("vocab.txt",), a="the", b="market"):
    for name in files:
        tokens = (d / name).read_text(encoding="utf-8").split("\n")[:-1]
        i, j = tokens.index(a), tokens.index(b)
        tokens[i], tokens[j] = tokens[j], tokens[i]
        (d / name).write_text("\n".join(tokens) + "\n", encoding="utf-8")
    tokens = (d / "vocab.txt").read_text(encoding="utf-8").split("\n")[:-1]
    _edit_json(
        d / mf.METADATA, lambda m: m.update(vocabulary_sha256=vocabulary_sha256(tokens))
    )
    mf.write_manifest(d)


# Each edit is `change(d, built)`: `d` the artifact's copy to edit, `built`
# the module's artifacts (for the files one forgery takes from another).


def _unlisted_and_flipped(file):
    def change(d, built):
        manifest = _manifest(d)
        manifest["files"].pop(file)
        _write_manifest_json(d, manifest)
        _flip(d / file)

    return change


def _empty_files_and_flipped(file):
    def change(d, built):
        manifest = _manifest(d)
        manifest["files"] = {}
        _write_manifest_json(d, manifest)
        _flip(d / file)

    return change


def _entry(file, value):
    def change(d, built):
        manifest = _manifest(d)
        manifest["files"][file] = value
        _write_manifest_json(d, manifest)

    return change


def _extra_file(name, data=b"x"):
    def change(d, built):
        (d / name).parent.mkdir(parents=True, exist_ok=True)
        (d / name).write_bytes(data)

    return change


def _outside_entry(d, built):
    manifest = _manifest(d)
    outside = d.parent / "outside"
    outside.write_bytes(b"secret")
    manifest["files"][f"../{outside.name}"] = {
        "sha256": mf.sha256_file(outside),
        "size": 6,
    }
    _write_manifest_json(d, manifest)


def _symlinked(file):
    def change(d, built):
        target = d.parent / "elsewhere"
        shutil.copyfile(d / file, target)
        (d / file).unlink()
        (d / file).symlink_to(target)

    return change


def _swap_file(kind, file):
    """model.tflite replaced by `file` of the `kind` artifact, manifest regenerated."""

    def change(d, built):
        shutil.copyfile(built[kind] / file, d / "model.tflite")
        mf.write_manifest(d)

    return change


def _set_field(key, value):
    return _meta(lambda m: m.update({key: value}))


def _file_info(change):
    return _meta(lambda m: change(m["files"]["model.tflite"]))


def _drop_mediapipe(d, built):
    (d / "mediapipe.tflite").unlink()
    _edit_json(d / mf.METADATA, lambda m: m["files"].pop("mediapipe.tflite"))
    mf.write_manifest(d)


def _saved_asset_labels_reversed(d, built):
    path = d / "assets" / "labels.txt"
    path.write_text("\n".join(path.read_text().split("\n")[:-1][::-1]) + "\n")
    mf.write_manifest(d)


def _saved_variables_truncated(d, built):
    file = d / "variables" / "variables.data-00000-of-00001"
    file.write_bytes(file.read_bytes()[: file.stat().st_size // 2])
    mf.write_manifest(d)


def _index_flip(d, built):
    _flip(d / "variables" / "variables.index", 40)
    mf.write_manifest(d)


WAYS = {"predict": predict, "validate_dir": validate_dir}
WEIGHTS = {
    "tflite": "model.tflite",
    "saved_model": "variables/variables.data-00000-of-00001",
}
# name -> (change, way in, the artifact edited, words the error must name,
# errors): the manifest bypassed (files it does not list, entries it should
# not hold)...
FORGERIES = CaseTable()
for kind, file in WEIGHTS.items():
    for w in WAYS:
        FORGERIES[f"{kind}: {file} unlisted and flipped ({w})"] = (
            _unlisted_and_flipped(file),
            w,
            kind,
            (file,),
            REFUSALS[w],
        )
        FORGERIES[f'{kind}: "files": {{}} and {file} flipped ({w})'] = (
            _empty_files_and_flipped(file),
            w,
            kind,
            (file,),
            REFUSALS[w],
        )
for kind in ("tflite", "saved_model"):
    FORGERIES.update(
        {
            f'{kind}: entry "vocab.txt": "abc"': (
                _entry("vocab.txt", "abc"),
                "predict",
                kind,
                ("vocab.txt",),
                None,
            ),
            f"{kind}: entry size a string": (
                _entry("vocab.txt", {"sha256": "0" * 64, "size": "12"}),
                "predict",
                kind,
                ("vocab.txt",),
                None,
            ),
            f"{kind}: entry without sha256": (
                _entry("metadata.json", {"size": 3}),
                "predict",
                kind,
                ("metadata.json",),
                None,
            ),
            f"{kind}: an unlisted file model2.tflite": (
                _extra_file("model2.tflite", b"TFL3" * 10),
                "predict",
                kind,
                ("model2.tflite",),
                None,
            ),
            f"{kind}: an unlisted file in a sub-directory": (
                _extra_file("assets/extra.txt"),
                "validate_dir",
                kind,
                ("extra.txt",),
                None,
            ),
            f"{kind}: an entry outside the directory": (
                _outside_entry,
                "predict",
                kind,
                ("..",),
                None,
            ),
            f"{kind}: vocab.txt a symlink to a copy elsewhere": (
                _symlinked("vocab.txt"),
                "predict",
                kind,
                ("vocab.txt",),
                None,
            ),
        }
    )
# ... and files that disagree with each other, checksums regenerated, tried
# both ways in: name -> (change, the artifact edited, words the error must
# name, or None for a consistent subset that must answer as the original).
FORGED = {
    "pruned model.tflite in the full artifact": (
        _swap_file("small_tflite", "model.tflite"),
        "tflite",
        ("vocab",),
    ),
    "full model.tflite in the pruned artifact": (
        _swap_file("tflite", "model.tflite"),
        "small_tflite",
        ("vocab",),
    ),
    "mediapipe.tflite over model.tflite": (
        _swap_file("tflite", "mediapipe.tflite"),
        "tflite",
        ("model.tflite",),
    ),
    "task: tag on a classifier": (_set_field("task", "tag"), "tflite", ("task",)),
    "task: regress on a classifier": (
        _meta(lambda m: m.update(task="regress", labels=None)),
        "tflite",
        ("task",),
    ),
    "task: qa on a classifier": (
        _meta(lambda m: m.update(task="qa", labels=None)),
        "tflite",
        ("task",),
    ),
    "primary length halved": (
        _meta(
            lambda m: (
                m.update(sequence_lengths=[L // 2]),
                m["files"]["model.tflite"].update(sequence_lengths=[L // 2]),
                m["files"]["mediapipe.tflite"].update(sequence_lengths=[L // 2]),
            )
        ),
        "tflite",
        ("sequence_length",),
    ),
    "one label left": (
        _meta(lambda m: m.update(labels=m["labels"][:1])),
        "tflite",
        ("labels",),
    ),
    "a label added": (
        _meta(lambda m: m.update(labels=[*m["labels"], "extra"])),
        "tflite",
        ("labels",),
    ),
    "signature renamed in metadata": (
        _file_info(lambda i: i.update(signatures=["serving_L99"])),
        "tflite",
        ("signature",),
    ),
    "input: text for the ids file": (
        _file_info(lambda i: i.update(input="text")),
        "tflite",
        ("input",),
    ),
    "kind: saved_model on a .tflite": (
        _set_field("kind", "saved_model"),
        "tflite",
        ("kind",),
    ),
    "files lists a file not there": (
        _meta(
            lambda m: m["files"].update({"other.tflite": dict(m["files"]["model.tflite"])})
        ),
        "tflite",
        ("other.tflite",),
    ),
    "mediapipe.tflite removed with its entries": (_drop_mediapipe, "tflite", None),
    "vocab lines swapped, sha256 updated": (
        lambda d, built: _vocab_swap(d),
        "tflite",
        ("vocab",),
    ),
    "SavedModel sequence_lengths [8]": (
        _set_field("sequence_lengths", [L // 2]),
        "saved_model",
        ("sequence_length",),
    ),
    "SavedModel assets/labels.txt reversed": (
        _saved_asset_labels_reversed,
        "saved_model",
        ("labels",),
    ),
    "SavedModel labels reversed": (
        _meta(lambda m: m.update(labels=m["labels"][::-1])),
        "saved_model",
        ("labels",),
    ),
    "SavedModel vocab swapped in vocab.txt and assets, sha256 updated": (
        lambda d, built: _vocab_swap(d, files=("vocab.txt", "assets/vocab.txt")),
        "saved_model",
        ("vocab",),
    ),
    "SavedModel task: tag": (_set_field("task", "tag"), "saved_model", ("task",)),
    "SavedModel one label left": (
        _meta(lambda m: m.update(labels=m["labels"][:1])),
        "saved_model",
        ("labels",),
    ),
    "SavedModel signature that is not there": (
        _meta(
            lambda m: m["signatures"].update(serve_more=dict(m["signatures"]["serve_ids"]))
        ),
        "saved_model",
        ("serve_more",),
    ),
    "SavedModel variables truncated": (
        _saved_variables_truncated,
        "saved_model",
        ("variables",),
    ),
    "SavedModel variables.index flipped": (_index_flip, "saved_model", ("variables",)),
    # Fields the validator, the reports and the benches read, typed and
    # compared with the files: a wrong type is not a crash, and a profile,
    # quantization, contract or special id that the files contradict is
    # refused rather than honoured.
    "validation_profile unknown": (
        _set_field("validation_profile", "bogus"),
        "tflite",
        ("validation_profile",),
    ),
    "quantization and profile int4 on a file without int4 weights": (
        _meta(lambda m: m.update(quantization="int4", validation_profile="int4")),
        "tflite",
        ("quantization",),
    ),
    "source_model a string": (_set_field("source_model", "x"), "tflite", ("source_model",)),
    "source_model.path a number": (
        _meta(lambda m: m["source_model"].update(path=123)),
        "tflite",
        ("source_model",),
    ),
    "encoder_config num_layers a string": (
        _meta(lambda m: m["source_model"]["encoder_config"].update(num_layers="x")),
        "tflite",
        ("source_model",),
    ),
    "format_version 1 with a list for task": (
        _meta(lambda m: m.update(format_version=1, task=["classify"])),
        "tflite",
        ("task",),
    ),
    "format_version true": (_set_field("format_version", True), "tflite", ("version",)),
    "input_contract null": (
        _set_field("input_contract", None),
        "tflite",
        ("input_contract",),
    ),
    "input_contract dtype int64": (
        _meta(lambda m: m["input_contract"].update(dtype="int64")),
        "tflite",
        ("input_contract",),
    ),
    "validated a list": (_set_field("validated", [1]), "tflite", ("validated",)),
    "special tokens cls and sep swapped": (
        _meta(
            lambda m: m["special_tokens"].update(
                cls=m["special_tokens"]["sep"], sep=m["special_tokens"]["cls"]
            )
        ),
        "tflite",
        ("special_tokens",),
    ),
    "sequence_lengths with a length no file serves": (
        _set_field("sequence_lengths", [L, L // 2]),
        "tflite",
        ("sequence_lengths",),
    ),
    "SavedModel latency_signature a number": (
        _set_field("latency_signature", 5),
        "saved_model",
        ("latency_signature",),
    ),
    "SavedModel version a string": (
        _set_field("version", "x"),
        "saved_model",
        ("version",),
    ),
}
for name, (change, kind, words) in FORGED.items():
    for w in WAYS:
        errors = None if words is None else REFUSALS[w]
        FORGERIES[f"{name} ({w})"] = (change, w, kind, words, errors)


@pytest.mark.parametrize("name", list(FORGERIES), ids=str)
def test_manifest_bypass_and_forged_artifacts(name, built, tmp_path):
    change, w, kind, words, errors = FORGERIES[name]
    way, source = WAYS[w], built[kind]
    texts = built["texts"][:8] if way is predict else built["texts"]

    def run():
        d = tmp_path / "artifact"
        shutil.copytree(source, d, symlinks=True)
        change(d, built)
        return way(d, texts)

    if words is None:
        # A consistent subset of the artifact: it must still answer as the
        # original does.
        case = _same_answer(name, run, way(source, texts), way)
    else:
        case = error(name, run, *words, errors=errors)
    check_case("forged artifacts", case)


def _same_answer(name, run, want, way):
    if way is predict:
        return answer(name, run, lambda got: got == want)
    return answer(name, run, lambda got: got["passed"])


# --- model directories ------------------------------------------------------------------


def _model_meta(fn):
    return lambda d: _edit_json(d / "zoo_model.json", fn)


def _record_dropped_and_flipped(d):
    def drop(m):
        for key in ("files", "record"):
            if isinstance(m.get(key), dict):
                m[key].pop("model.keras", None)

    _edit_json(d / "zoo_model.json", drop)
    data = bytearray((d / "model.keras").read_bytes())
    data[len(data) // 3] ^= 0x08
    (d / "model.keras").write_bytes(bytes(data))


# name -> (change(d), the word the error must name)
MODEL_DIR_EDITS = {
    "labels reversed": (
        _model_meta(lambda m: m.update(labels=m["labels"][::-1])),
        "labels",
    ),
    "a label added": (
        _model_meta(lambda m: m.update(labels=[*m["labels"], "extra"])),
        "labels",
    ),
    "one label left": (_model_meta(lambda m: m.update(labels=m["labels"][:1])), "labels"),
    "lowercase flipped": (_model_meta(lambda m: m.update(lowercase=False)), "lowercase"),
    "sequence_length 2": (
        _model_meta(lambda m: m.update(sequence_length=2)),
        "sequence_length",
    ),
    "sequence_length 10**6": (
        _model_meta(lambda m: m.update(sequence_length=10**6)),
        "sequence_length",
    ),
    "sequence_length 'long'": (
        _model_meta(lambda m: m.update(sequence_length="long")),
        "sequence_length",
    ),
    "max_windows 0": (_model_meta(lambda m: m.update(max_windows=0)), "max_windows"),
    # Each window is a forward pass: a recorded 10**12 would make every long
    # text cost thousands of them (a 20 KB text with doc_stride 1: 3,875).
    "max_windows 10**12, doc_stride 1": (
        _model_meta(lambda m: m.update(max_windows=10**12, doc_stride=1)),
        "max_windows",
    ),
    "task pretrain on a classifier": (
        _model_meta(lambda m: m.update(task="pretrain")),
        "task",
    ),
    "model_class edited": (
        _model_meta(lambda m: m.update(model_class="TokenClassifier")),
        "model_class",
    ),
    "encoder_config num_layers edited": (
        _model_meta(lambda m: m["encoder_config"].update(num_layers=1)),
        "encoder_config",
    ),
    "num_parameters edited": (
        _model_meta(lambda m: m.update(num_parameters=5)),
        "num_parameters",
    ),
    "an unlisted model2.keras": (
        lambda d: shutil.copyfile(d / "model.keras", d / "model2.keras"),
        "model2.keras",
    ),
    "model.keras unrecorded and flipped": (_record_dropped_and_flipped, "model.keras"),
}
MODEL_DIR_WAYS = {
    "load": lambda d, texts: load_model_dir(d),
    "predict": predict,
    "TextClassifier": lambda d, texts: zoo.TextClassifier.from_checkpoint(d).predict_labels(
        texts
    ),
}
FORGED_DIRS = {
    f"{name} ({way})": (change, word, way)
    for name, (change, word) in MODEL_DIR_EDITS.items()
    for way in MODEL_DIR_WAYS
}


@pytest.mark.parametrize("name", list(FORGED_DIRS), ids=str)
def test_forged_model_directories(name, built, tmp_path):
    change, word, way = FORGED_DIRS[name]

    def run():
        d = tmp_path / "model"
        shutil.copytree(built["model_dir"], d)
        change(d)
        return MODEL_DIR_WAYS[way](d, built["texts"][:8])

    check_case("forged model directories", error(name, run, word))


def test_the_originals_answer(built):
    """The forgeries above are refused, not the originals: each original
    answers and validates."""
    texts = built["texts"]
    for d in (built["tflite"], built["small_tflite"], built["saved_model"]):
        assert validate_dir(d, texts)["passed"], d
        assert len(predict(d, texts[:4])) == 4
    assert np.isfinite(load_model_dir(built["model_dir"])[0].count_params())


# --- threads ----------------------------------------------------------------------------

FORMATS = ("model", "tflite", "saved_model")
# One id per call: (who, thread, call), who the shared runner or a format's
# Predictor (3 calls each per thread).
THREAD_CALLS = [("runner", k, call) for k in range(4) for call in range(CALLS)] + [
    (fmt, k, call) for fmt in FORMATS for k in range(4) for call in range(3)
]


@pytest.fixture(scope="module")
def threaded(built):
    """One `export.runtime` runner, and one `zoo.predict` Predictor per
    format, shared by 4 threads that call at once: what each call answered,
    and what the same call answers alone."""
    rng = np.random.default_rng(4)
    run = runtime.load_signature(built["tflite"])
    feeds = []
    for _ in range(4):
        n = int(rng.integers(3, L + 1))
        mask = (np.arange(L) < n).astype(np.int32)[None]
        ids = rng.integers(5, len(VOCABULARY), size=(1, L)).astype(np.int32) * mask
        ids[0, 0] = 2
        feeds.append(
            {"token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": mask}
        )
    alone = {"runner": [run(**f)["logits"] for f in feeds]}
    texts = built["texts"][:4]
    predictors = {
        fmt: open_predictor(built["model_dir" if fmt == "model" else fmt])
        for fmt in FORMATS
    }
    alone.update({fmt: [p.predict([t]) for t in texts] for fmt, p in predictors.items()})
    results = {}
    start = threading.Barrier(4)

    def work(k):
        start.wait()  # all four threads call at once
        for call in range(CALLS):
            results[("runner", k, call)] = run(**feeds[k])["logits"]
        for fmt, p in predictors.items():
            for call in range(3):
                results[(fmt, k, call)] = p.predict([texts[k]])

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == sorted(THREAD_CALLS), "a thread stopped early"
    return results, alone


@pytest.mark.parametrize(
    "who, k, call",
    THREAD_CALLS,
    ids=[f"{w} thread {k} call {c}" for w, k, c in THREAD_CALLS],
)
def test_shared_runners_in_threads(who, k, call, threaded):
    """Every call of a runner or Predictor shared by 4 threads answers what
    the same call answers alone (an interpreter has one set of buffers;
    unguarded, the threads read each other's outputs)."""
    results, alone = threaded
    want = alone[who][k]
    if who == "runner":
        check = lambda got: np.array_equal(got, want)  # noqa: E731
    else:
        check = lambda got: got == want  # noqa: E731
    name = f"{who} thread {k} call {call}"
    check_case(
        "shared runners, 4 threads", answer(name, lambda: results[(who, k, call)], check)
    )
