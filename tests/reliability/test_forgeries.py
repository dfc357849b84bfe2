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
prune` leaves it), and a text-in SavedModel."""

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
from tests.reliability.corpus import answer, error, run_area
from zoo.checkpoints import load_model_dir, save_model_dir
from zoo.predict import open_predictor
from zoo.text.tokenizer import WordPieceTokenizer, vocabulary_sha256

# Slow (exports, forges and reloads artifacts: minutes on 2 cores): `make
# test` runs the corpus, `make test-quick` does not.
pytestmark = pytest.mark.slow

L = 16
PRUNED = 30
CALLS = 100  # per thread, on one shared runner  # word pieces the "pruned" model lacks


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

    def edit(d):
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


def test_manifest_bypass_and_forged_artifacts(built, tmp_path):
    texts = built["texts"]
    counter = iter(range(10**6))

    def copy_of(source):
        target = tmp_path / f"a{next(counter)}"
        shutil.copytree(source, target, symlinks=True)
        return target

    def case(change, way, source):
        def run():
            d = copy_of(source)
            change(d)
            return way(d, texts[:8] if way is predict else texts)

        return run

    tfl, small, sm = built["tflite"], built["small_tflite"], built["saved_model"]
    weights = {
        "tflite": (tfl, "model.tflite"),
        "saved_model": (sm, "variables/variables.data-00000-of-00001"),
    }

    def unlisted_and_flipped(file):
        def change(d):
            manifest = _manifest(d)
            manifest["files"].pop(file)
            _write_manifest_json(d, manifest)
            _flip(d / file)

        return change

    def empty_files_and_flipped(file):
        def change(d):
            manifest = _manifest(d)
            manifest["files"] = {}
            _write_manifest_json(d, manifest)
            _flip(d / file)

        return change

    def entry(file, value):
        def change(d):
            manifest = _manifest(d)
            manifest["files"][file] = value
            _write_manifest_json(d, manifest)

        return change

    def extra_file(name, data=b"x"):
        def change(d):
            (d / name).parent.mkdir(parents=True, exist_ok=True)
            (d / name).write_bytes(data)

        return change

    def outside_entry(d):
        manifest = _manifest(d)
        outside = d.parent / f"outside{next(counter)}"
        outside.write_bytes(b"secret")
        manifest["files"][f"../{outside.name}"] = {
            "sha256": mf.sha256_file(outside),
            "size": 6,
        }
        _write_manifest_json(d, manifest)

    def symlinked(file):
        def change(d):
            target = d.parent / f"elsewhere{next(counter)}"
            shutil.copyfile(d / file, target)
            (d / file).unlink()
            (d / file).symlink_to(target)

        return change

    cases = []
    for kind, (source, file) in weights.items():
        for way in (predict, validate_dir):
            w = way.__name__
            cases += [
                error(
                    f"{kind}: {file} unlisted and flipped ({w})",
                    case(unlisted_and_flipped(file), way, source),
                    file,
                    errors=REFUSALS[w],
                ),
                error(
                    f'{kind}: "files": {{}} and {file} flipped ({w})',
                    case(empty_files_and_flipped(file), way, source),
                    file,
                    errors=REFUSALS[w],
                ),
            ]
    for kind, source in (("tflite", tfl), ("saved_model", sm)):
        cases += [
            error(
                f'{kind}: entry "vocab.txt": "abc"',
                case(entry("vocab.txt", "abc"), predict, source),
                "vocab.txt",
            ),
            error(
                f"{kind}: entry size a string",
                case(
                    entry("vocab.txt", {"sha256": "0" * 64, "size": "12"}),
                    predict,
                    source,
                ),
                "vocab.txt",
            ),
            error(
                f"{kind}: entry without sha256",
                case(entry("metadata.json", {"size": 3}), predict, source),
                "metadata.json",
            ),
            error(
                f"{kind}: an unlisted file model2.tflite",
                case(extra_file("model2.tflite", b"TFL3" * 10), predict, source),
                "model2.tflite",
            ),
            error(
                f"{kind}: an unlisted file in a sub-directory",
                case(extra_file("assets/extra.txt"), validate_dir, source),
                "extra.txt",
            ),
            error(
                f"{kind}: an entry outside the directory",
                case(outside_entry, predict, source),
                "..",
            ),
            error(
                f"{kind}: vocab.txt a symlink to a copy elsewhere",
                case(symlinked("vocab.txt"), predict, source),
                "vocab.txt",
            ),
        ]

    def swap_file(source_dir, file):
        def change(d):
            shutil.copyfile(source_dir / file, d / "model.tflite")
            mf.write_manifest(d)

        return change

    def set_field(key, value):
        return _meta(lambda m: m.update({key: value}))

    def file_info(change):
        return _meta(lambda m: change(m["files"]["model.tflite"]))

    def drop_mediapipe(d):
        (d / "mediapipe.tflite").unlink()
        _edit_json(d / mf.METADATA, lambda m: m["files"].pop("mediapipe.tflite"))
        mf.write_manifest(d)

    def saved_asset_labels_reversed(d):
        path = d / "assets" / "labels.txt"
        path.write_text("\n".join(path.read_text().split("\n")[:-1][::-1]) + "\n")
        mf.write_manifest(d)

    def saved_variables(change):
        def edit(d):
            change(d / "variables" / "variables.data-00000-of-00001")
            mf.write_manifest(d)

        return edit

    def truncate(file):
        file.write_bytes(file.read_bytes()[: file.stat().st_size // 2])

    def index_flip(d):
        _flip(d / "variables" / "variables.index", 40)
        mf.write_manifest(d)

    forged = {
        "pruned model.tflite in the full artifact": (
            swap_file(small, "model.tflite"),
            tfl,
            ("vocab",),
        ),
        "full model.tflite in the pruned artifact": (
            swap_file(tfl, "model.tflite"),
            small,
            ("vocab",),
        ),
        "mediapipe.tflite over model.tflite": (
            swap_file(tfl, "mediapipe.tflite"),
            tfl,
            ("model.tflite",),
        ),
        "task: tag on a classifier": (set_field("task", "tag"), tfl, ("task",)),
        "task: regress on a classifier": (
            _meta(lambda m: m.update(task="regress", labels=None)),
            tfl,
            ("task",),
        ),
        "task: qa on a classifier": (
            _meta(lambda m: m.update(task="qa", labels=None)),
            tfl,
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
            tfl,
            ("sequence_length",),
        ),
        "one label left": (
            _meta(lambda m: m.update(labels=m["labels"][:1])),
            tfl,
            ("labels",),
        ),
        "a label added": (
            _meta(lambda m: m.update(labels=[*m["labels"], "extra"])),
            tfl,
            ("labels",),
        ),
        "signature renamed in metadata": (
            file_info(lambda i: i.update(signatures=["serving_L99"])),
            tfl,
            ("signature",),
        ),
        "input: text for the ids file": (
            file_info(lambda i: i.update(input="text")),
            tfl,
            ("input",),
        ),
        "kind: saved_model on a .tflite": (
            set_field("kind", "saved_model"),
            tfl,
            ("kind",),
        ),
        "files lists a file not there": (
            _meta(
                lambda m: m["files"].update(
                    {"other.tflite": dict(m["files"]["model.tflite"])}
                )
            ),
            tfl,
            ("other.tflite",),
        ),
        "mediapipe.tflite removed with its entries": (drop_mediapipe, tfl, None),
        "vocab lines swapped, sha256 updated": (_vocab_swap, tfl, ("vocab",)),
        "SavedModel sequence_lengths [8]": (
            set_field("sequence_lengths", [L // 2]),
            sm,
            ("sequence_length",),
        ),
        "SavedModel assets/labels.txt reversed": (
            saved_asset_labels_reversed,
            sm,
            ("labels",),
        ),
        "SavedModel labels reversed": (
            _meta(lambda m: m.update(labels=m["labels"][::-1])),
            sm,
            ("labels",),
        ),
        "SavedModel vocab swapped in vocab.txt and assets, sha256 updated": (
            lambda d: _vocab_swap(d, files=("vocab.txt", "assets/vocab.txt")),
            sm,
            ("vocab",),
        ),
        "SavedModel task: tag": (set_field("task", "tag"), sm, ("task",)),
        "SavedModel one label left": (
            _meta(lambda m: m.update(labels=m["labels"][:1])),
            sm,
            ("labels",),
        ),
        "SavedModel signature that is not there": (
            _meta(
                lambda m: m["signatures"].update(
                    serve_more=dict(m["signatures"]["serve_ids"])
                )
            ),
            sm,
            ("serve_more",),
        ),
        "SavedModel variables truncated": (saved_variables(truncate), sm, ("variables",)),
        "SavedModel variables.index flipped": (index_flip, sm, ("variables",)),
    }
    for name, (change, source, words) in forged.items():
        for way in (predict, validate_dir):
            label = f"{name} ({way.__name__})"
            if words is None:
                # A consistent subset of the artifact: it must still answer
                # as the original does.
                want = way(source, texts[:8] if way is predict else texts)
                cases.append(_same_answer(label, case(change, way, source), want, way))
            else:
                cases.append(
                    error(
                        label,
                        case(change, way, source),
                        *words,
                        errors=REFUSALS[way.__name__],
                    )
                )
    problems = run_area("forged artifacts", cases)
    assert not problems, "\n".join(problems)


def _same_answer(name, run, want, way):
    if way is predict:
        return answer(name, run, lambda got: got == want)
    return answer(name, run, lambda got: got["passed"])


# --- model directories ------------------------------------------------------------------


def test_forged_model_directories(built, tmp_path):
    source = built["model_dir"]
    counter = iter(range(10**6))
    texts = built["texts"][:8]

    def broken(change, way):
        def run():
            d = tmp_path / f"m{next(counter)}"
            shutil.copytree(source, d)
            change(d)
            return way(d)

        return run

    def meta(fn):
        return lambda d: _edit_json(d / "zoo_model.json", fn)

    ways = {
        "load": load_model_dir,
        "predict": lambda d: predict(d, texts),
        "TextClassifier": lambda d: zoo.TextClassifier.from_checkpoint(d).predict_labels(
            texts
        ),
    }

    def record_dropped_and_flipped(d):
        def drop(m):
            for key in ("files", "record"):
                if isinstance(m.get(key), dict):
                    m[key].pop("model.keras", None)

        _edit_json(d / "zoo_model.json", drop)
        data = bytearray((d / "model.keras").read_bytes())
        data[len(data) // 3] ^= 0x08
        (d / "model.keras").write_bytes(bytes(data))

    edits = {
        "labels reversed": (meta(lambda m: m.update(labels=m["labels"][::-1])), "labels"),
        "a label added": (
            meta(lambda m: m.update(labels=[*m["labels"], "extra"])),
            "labels",
        ),
        "one label left": (meta(lambda m: m.update(labels=m["labels"][:1])), "labels"),
        "lowercase flipped": (meta(lambda m: m.update(lowercase=False)), "lowercase"),
        "sequence_length 2": (
            meta(lambda m: m.update(sequence_length=2)),
            "sequence_length",
        ),
        "sequence_length 10**6": (
            meta(lambda m: m.update(sequence_length=10**6)),
            "sequence_length",
        ),
        "sequence_length 'long'": (
            meta(lambda m: m.update(sequence_length="long")),
            "sequence_length",
        ),
        "max_windows 0": (meta(lambda m: m.update(max_windows=0)), "max_windows"),
        "model_class edited": (
            meta(lambda m: m.update(model_class="TokenClassifier")),
            "model_class",
        ),
        "encoder_config num_layers edited": (
            meta(lambda m: m["encoder_config"].update(num_layers=1)),
            "encoder_config",
        ),
        "num_parameters edited": (
            meta(lambda m: m.update(num_parameters=5)),
            "num_parameters",
        ),
        "an unlisted model2.keras": (
            lambda d: shutil.copyfile(d / "model.keras", d / "model2.keras"),
            "model2.keras",
        ),
        "model.keras unrecorded and flipped": (record_dropped_and_flipped, "model.keras"),
    }
    cases = []
    for name, (change, word) in edits.items():
        for way, fn in ways.items():
            cases.append(error(f"{name} ({way})", broken(change, fn), word))
    problems = run_area("forged model directories", cases)
    assert not problems, "\n".join(problems)


def test_the_originals_answer(built):
    """The forgeries above are refused, not the originals: each original
    answers and validates."""
    texts = built["texts"]
    for d in (built["tflite"], built["small_tflite"], built["saved_model"]):
        assert validate_dir(d, texts)["passed"], d
        assert len(predict(d, texts[:4])) == 4
    assert np.isfinite(load_model_dir(built["model_dir"])[0].count_params())


# --- threads ----------------------------------------------------------------------------


def test_shared_runners_in_threads(built):
    """One `export.runtime` runner, and one `zoo.predict` Predictor per
    format, shared by 4 threads: every call must answer what the same call
    answers alone (an interpreter has one set of buffers; unguarded, the
    threads read each other's outputs)."""
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
    alone = [run(**f)["logits"] for f in feeds]
    texts = built["texts"][:4]
    predictors = {
        fmt: open_predictor(path)
        for fmt, path in (
            ("model", built["model_dir"]),
            ("tflite", built["tflite"]),
            ("saved_model", built["saved_model"]),
        )
    }
    answers = {fmt: [p.predict([t]) for t in texts] for fmt, p in predictors.items()}
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
    cases = []
    for (who, k, call), got in sorted(results.items(), key=lambda x: str(x[0])):
        want = alone[k] if who == "runner" else answers[who][k]
        check = (
            (lambda g, w=want: np.array_equal(g, w))
            if who == "runner"
            else (lambda g, w=want: g == w)
        )
        cases.append(answer(f"{who} thread {k} call {call}", lambda g=got: g, check))
    problems = run_area("shared runners, 4 threads", cases)
    assert len(cases) == 4 * (CALLS + 3 * len(predictors))
    assert not problems, "\n".join(problems)
