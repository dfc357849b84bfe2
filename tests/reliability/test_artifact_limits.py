"""Reliability corpus, areas "truncated model files", "text-in batches",
"metadata fields" and "vocabulary files": what comes inside an artifact's or
a checkpoint's files, each edited with its manifest regenerated (so only a
reader that checks the content can refuse it).

- truncated model files: a `.tflite` or `saved_model.pb` cut short, through
  `zoo predict`, `zoo validate` (the CLI: exit 1 or 2, one line, no
  traceback), `open_predictor`, `open_artifact`, and LiteRT's own loader in
  a fresh process (a segfault would take the caller with it);
- text-in batches: N strings through `model_text.tflite` give N answers,
  each the one that text gets alone;
- metadata fields: metadata.json's fields typed and bounded
  (`export.manifest.check_metadata_fields` says the ranges);
- vocabulary files: vocab.txt, vocab.json, merges.txt and spiece.model
  bounded in size, tokens and characters before any table is built.

One tiny classifier is exported once per module (a .tflite artifact with
its text-in file, and a SavedModel): ~13 s on 2 cores; the other cases take
~2 s together, and the three LiteRT-in-a-fresh-process cases ~16 s (slow
tier)."""

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import threading

import numpy as np
import pytest

from export import ServingVersion, Signatures, Validation, runtime, validate
from export import manifest as mf
from export.saved_model import export_saved_model
from export.tflite import export_tflite
from tests.export.conftest import TINY_LABELS, VOCABULARY, make_tiny, sentences
from tests.reliability.corpus import Case, answer, check_case, error
from zoo.checkpoints import load_model_dir, save_model_dir
from zoo.cli import main
from zoo.predict import open_predictor
from zoo.text.byte_pair_tokenizer import BytePairTokenizer
from zoo.text.sentencepiece_tokenizer import SentencePieceTokenizer
from zoo.text.tokenizer import WordPieceTokenizer, vocabulary_sha256

L = 16
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REFUSALS = (ValueError, TypeError, OSError)
VALIDATE_REFUSALS = (*REFUSALS, validate.ExportValidationError)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("limits")
    save_model_dir(make_tiny(), root / "model", WordPieceTokenizer(VOCABULARY))
    model, tokenizer, _ = load_model_dir(root / "model")
    texts = sentences(200, seed=11)  # validation's minimum
    labels = [TINY_LABELS[i % 3] for i in range(len(texts))]
    tfl = export_tflite(
        model,
        tokenizer,
        root / "phone",
        signatures=Signatures((L,), text_in=True),
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
    data = root / "data.csv"
    data.write_text(
        "text,label\n" + "".join(f"{t},{y}\n" for t, y in zip(texts, labels)),
        encoding="utf-8",
    )
    return {"root": root, "tflite": tfl, "saved_model": sm, "texts": texts, "data": data}


_counter = iter(range(10**6))


def copy_of(source, root):
    target = root / f"copy{next(_counter)}"
    shutil.copytree(source, target)
    return target


# --- ways in --------------------------------------------------------------------------


class CliRefusal(ValueError):
    """`zoo` exited 1 or 2 with one line on stderr and no traceback."""


def cli(argv):
    """Run `zoo ARGV` in this process: a refusal (exit 1 or 2, one line on
    stderr, no traceback) is raised as CliRefusal; anything else returned."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main([str(a) for a in argv])
        except SystemExit as e:
            code = e.code
    lines = [x for x in err.getvalue().splitlines() if x.startswith("zoo ")]
    if code in (1, 2) and "Traceback" not in err.getvalue() and len(lines) >= 1:
        raise CliRefusal(lines[-1])
    return {"exit": code, "stderr": err.getvalue()[-400:]}


def ways(built):
    """{way name: (function of an artifact directory, errors it refuses with)}."""
    texts = built["texts"]
    return {
        "open_predictor": (lambda d: open_predictor(d).predict(texts[:4]), REFUSALS),
        "open_artifact": (runtime.open_artifact, REFUSALS),
        "validate_artifact": (
            lambda d: validate.validate_artifact(d, texts),
            VALIDATE_REFUSALS,
        ),
        "zoo predict": (
            lambda d: cli(["predict", "--model", d, "--text", texts[0]]),
            REFUSALS,
        ),
        "zoo validate": (lambda d: cli(["validate", d, "--data", built["data"]]), REFUSALS),
    }


# --- truncated model files ------------------------------------------------------------


def _cut(file, keep):
    """Cut `file` to `keep` bytes (an int) or that fraction of its length."""

    def change(d):
        path = d / file
        data = path.read_bytes()
        path.write_bytes(data[: keep if isinstance(keep, int) else int(len(data) * keep)])
        mf.write_manifest(d)

    return change


TRUNCATIONS = {
    "model.tflite at 50%": ("tflite", "model.tflite", 0.5),
    "model.tflite at 10%": ("tflite", "model.tflite", 0.1),
    "model.tflite first 8 bytes": ("tflite", "model.tflite", 8),
    "model.tflite empty": ("tflite", "model.tflite", 0),
    "model_text.tflite at 50%": ("tflite", "model_text.tflite", 0.5),
    "mediapipe.tflite at 50%": ("tflite", "mediapipe.tflite", 0.5),
    "saved_model.pb at 30%": ("saved_model", "saved_model.pb", 0.3),
    "saved_model.pb 0 bytes": ("saved_model", "saved_model.pb", 0),
    "variables.index at 50%": ("saved_model", "variables/variables.index", 0.5),
}
WAYS = (
    "open_predictor",
    "open_artifact",
    "validate_artifact",
    "zoo predict",
    "zoo validate",
)
TRUNCATED = [f"{name} ({way})" for name in TRUNCATIONS for way in WAYS]


@pytest.mark.parametrize("name", TRUNCATED)
def test_truncated_model_files(built, tmp_path, name):
    cut, way = name.rsplit(" (", 1)
    kind, file, keep = TRUNCATIONS[cut]
    run_way, errors = ways(built)[way.rstrip(")")]

    def run():
        d = copy_of(built[kind], tmp_path)
        _cut(file, keep)(d)
        return run_way(d)

    check_case(
        "truncated model files",
        error(name, run, os.path.basename(file), errors=errors),
    )


class LiteRTRefusal(ValueError):
    """LiteRT's loader, in a fresh process, refused the file with an error."""


# LiteRT's own loader given the damaged file directly (its checks skipped):
# its verifier must refuse it with an error, not crash the process.
LITERT = """
import json, pathlib, sys
from export import runtime
from export.runtime import OpenedArtifact
meta = json.loads(open(sys.argv[2]).read())
try:
    # Built directly, the object trusts its metadata: no checks run.
    runtime.load_interpreter(OpenedArtifact(pathlib.Path(sys.argv[1]), meta), sys.argv[3])
    print("LOADED")
except ValueError as e:
    print("REFUSED", e)
"""


@pytest.mark.slow  # a fresh process each (imports TensorFlow): ~5 s a case
@pytest.mark.parametrize(
    "name",
    ["model.tflite at 50%", "model.tflite first 8 bytes", "model_text.tflite at 50%"],
)
def test_truncated_tflite_in_litert_itself(built, tmp_path, name):
    _, file, keep = TRUNCATIONS[name]

    def run():
        d = copy_of(built["tflite"], tmp_path)
        _cut(file, keep)(d)
        meta = d / mf.METADATA
        proc = subprocess.run(
            [sys.executable, "-c", LITERT, str(d), str(meta), file],
            capture_output=True,
            text=True,
            cwd=REPO,
            timeout=300,
        )
        if proc.returncode == 0 and proc.stdout.strip().startswith("REFUSED"):
            raise LiteRTRefusal(proc.stdout.strip())
        return {
            "exit": proc.returncode,
            "out": proc.stdout[-300:],
            "err": proc.stderr[-300:],
        }

    check_case(
        "truncated model files",
        error(f"{name} (LiteRT loader, fresh process)", run, file, errors=(LiteRTRefusal,)),
    )


# --- text-in batches -----------------------------------------------------------------

BATCH_TEXTS = [
    "the market rose",
    "the team won the match",
    "a new phone game",
    "who said the film was long?",
    "vote",
]


@pytest.fixture(scope="module")
def text_runners(built):
    d = built["tflite"]
    artifact = runtime.open_artifact(d)
    raw = runtime.load_interpreter(artifact, "model_text.tflite").get_signature_runner(
        "serving_text_L16"
    )
    checked = runtime.load_signature(artifact, file="model_text.tflite")
    # Each text alone through LiteRT's own runner (under the batch runner, or
    # the runner itself before there was one): the answer a batch must repeat.
    litert = getattr(raw, "_raw", raw)
    alone = [
        {k: np.array(v) for k, v in litert(text=np.array([t], dtype=object)).items()}
        for t in BATCH_TEXTS
    ]
    return {"raw": raw, "checked": checked, "alone": alone}


def _same_as_alone(texts_count, alone):
    def check(out):
        if set(out) != set(alone[0]):
            return False
        for key in out:
            want = (
                np.concatenate([a[key] for a in alone[:texts_count]])
                if texts_count
                else np.zeros((0, *alone[0][key].shape[1:]))
            )
            if out[key].shape != want.shape or not np.allclose(out[key], want, atol=1e-6):
                return False
        return True

    return check


BATCHES = [
    f"{n} texts ({way})"
    for way in ("LiteRT runner", "load_signature")
    for n in (0, 1, 2, 5)
]
BATCH_ERRORS = [
    "a 2-D batch (LiteRT runner)",
    "a 2-D batch (load_signature)",
    "a number among the texts (load_signature)",
]
# One str, not in a list: answered as a batch of one, as LiteRT's runner does.
ONE_STR = ["one str, not a list (LiteRT runner)", "one str, not a list (load_signature)"]


@pytest.mark.parametrize("name", BATCHES + BATCH_ERRORS + ONE_STR)
def test_text_in_batches(text_runners, name):
    way = "raw" if "LiteRT runner" in name else "checked"
    runner = text_runners[way]
    if name in BATCH_ERRORS:
        feeds = {
            "a 2-D batch": np.array([BATCH_TEXTS[:2]], dtype=object),
            "a number among the texts": np.array(["a text", 7], dtype=object),
        }[name.rsplit(" (", 1)[0]]
        case = error(name, lambda: runner(text=feeds), "text")
    elif name in ONE_STR:
        case = answer(
            name,
            lambda: runner(text=BATCH_TEXTS[0]),
            _same_as_alone(1, text_runners["alone"]),
        )
    else:
        n = int(name.split()[0])
        case = answer(
            name,
            lambda: runner(text=np.array(BATCH_TEXTS[:n], dtype=object)),
            _same_as_alone(n, text_runners["alone"]),
        )
    check_case("text-in batches", case)


# --- metadata fields ------------------------------------------------------------------


def _meta(change):
    def edit(d):
        path = d / mf.METADATA
        meta = json.loads(path.read_text())
        change(meta)
        path.write_text(json.dumps(meta))
        mf.write_manifest(d)

    return edit


def _set(**fields):
    return _meta(lambda m: m.update(fields))


def _signature_length(value):
    return _meta(lambda m: m["signatures"]["serving_default"].update(sequence_length=value))


# name -> (artifact, edit, words the refusal must name)
METADATA_EDITS = {
    "sequence_lengths 1e9": ("tflite", _set(sequence_lengths=1e9), "sequence_lengths"),
    "sequence_lengths -1": ("tflite", _set(sequence_lengths=-1), "sequence_lengths"),
    'sequence_lengths "128"': ("tflite", _set(sequence_lengths="128"), "sequence_lengths"),
    "sequence_lengths true": ("tflite", _set(sequence_lengths=True), "sequence_lengths"),
    "sequence_lengths []": ("tflite", _set(sequence_lengths=[]), "sequence_lengths"),
    "sequence_lengths [1e9]": ("tflite", _set(sequence_lengths=[1e9]), "sequence_lengths"),
    "sequence_lengths [1000000000]": (
        "tflite",
        _set(sequence_lengths=[10**9]),
        "sequence_lengths",
    ),
    "sequence_lengths [16.0]": (
        "tflite",
        _set(sequence_lengths=[16.0]),
        "sequence_lengths",
    ),
    "sequence_lengths [true]": (
        "tflite",
        _set(sequence_lengths=[True]),
        "sequence_lengths",
    ),
    "sequence_lengths [16, 16]": (
        "tflite",
        _set(sequence_lengths=[L, L]),
        "sequence_lengths",
    ),
    "sequence_lengths [2]": ("tflite", _set(sequence_lengths=[2]), "sequence_lengths"),
    "sequence_lengths [65] over the encoder's 64": (
        "tflite",
        _set(sequence_lengths=[65]),
        "sequence_lengths",
    ),
    "files' sequence_lengths [10**9]": (
        "tflite",
        _meta(lambda m: m["files"]["model_text.tflite"].update(sequence_lengths=[10**9])),
        "files",
    ),
    "files key ../model.tflite": (
        "tflite",
        _meta(lambda m: m["files"].update({"../model.tflite": m["files"]["model.tflite"]})),
        "files",
    ),
    "vocabulary_file ../x": ("tflite", _set(vocabulary_file="../x"), "vocabulary_file"),
    "vocabulary_file /etc/passwd": (
        "tflite",
        _set(vocabulary_file="/etc/passwd"),
        "vocabulary_file",
    ),
    "vocabulary_file a missing name": (
        "tflite",
        _set(vocabulary_file="words.txt"),
        "vocabulary_file",
    ),
    "vocabulary_file 7": ("tflite", _set(vocabulary_file=7), "vocabulary_file"),
    "merges_file on a WordPiece artifact": (
        "tflite",
        _set(merges_file="merges.txt"),
        "merges_file",
    ),
    "unknown field": ("tflite", _set(labels_file="../labels.txt"), "labels_file"),
    "vocabulary_size 2**30": ("tflite", _set(vocabulary_size=2**30), "vocabulary_size"),
    "SavedModel sequence_lengths [1000000000]": (
        "saved_model",
        _set(sequence_lengths=[10**9]),
        "sequence_lengths",
    ),
    "SavedModel signature sequence_length 10**9": (
        "saved_model",
        _signature_length(10**9),
        "signatures",
    ),
    "SavedModel signature sequence_length 16.5": (
        "saved_model",
        _signature_length(16.5),
        "signatures",
    ),
    "SavedModel assets ../vocab.txt": (
        "saved_model",
        _set(assets=["../vocab.txt", "labels.txt"]),
        "assets",
    ),
    "SavedModel vocabulary_file /etc/passwd": (
        "saved_model",
        _set(vocabulary_file="/etc/passwd"),
        "vocabulary_file",
    ),
    "SavedModel unknown field": ("saved_model", _set(extra={"x": 1}), "extra"),
}
METADATA_CASES = [
    f"{name} ({way})"
    for name in METADATA_EDITS
    for way in ("open_predictor", "validate_artifact")
]


@pytest.mark.parametrize("name", METADATA_CASES)
def test_metadata_fields(built, tmp_path, name):
    edit_name, way = name.rsplit(" (", 1)
    kind, edit, word = METADATA_EDITS[edit_name]
    run_way, errors = ways(built)[way.rstrip(")")]

    def run():
        d = copy_of(built[kind], tmp_path)
        edit(d)
        return run_way(d)

    check_case("metadata fields", error(name, run, word, errors=errors))


# --- vocabulary files -----------------------------------------------------------------

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def _vocab_file(path, tokens=None, raw=None):
    if raw is None:
        raw = ("\n".join(tokens) + "\n").encode("utf-8")
    path.write_bytes(raw)
    return path


def _sparse(path, size):
    """A file of `size` bytes that takes no disk (a hole)."""
    with open(path, "wb") as f:
        f.truncate(size)
    return path


def _wordpiece(make):
    def run(tmp_path):
        return WordPieceTokenizer(str(make(tmp_path)))

    return run


def _tokens(*extra):
    return [*SPECIALS, "a", "##b", *extra]


def _artifact_vocab_with(extra):
    """An artifact whose vocab.txt gains a token, with its sha256 and size
    recorded in metadata.json and the manifest regenerated."""

    def edit(d):
        tokens = (d / "vocab.txt").read_text(encoding="utf-8").split("\n")[:-1]
        tokens[-1] = extra
        (d / "vocab.txt").write_bytes(("\n".join(tokens) + "\n").encode("utf-8"))
        _set(vocabulary_sha256=vocabulary_sha256(tokens))(d)

    return edit


# name -> (run(tmp_path, built), what the error must name, or "answer")
VOCABULARY_CASES = {
    "vocab.txt with a 10 MB token": (
        _wordpiece(lambda t: _vocab_file(t / "vocab.txt", _tokens("x" * 10_000_000))),
        ("vocab.txt", "line 8"),
    ),
    "vocab.txt with a 257-byte token": (
        _wordpiece(lambda t: _vocab_file(t / "vocab.txt", _tokens("y" * 257))),
        ("vocab.txt", "line 8", "256"),
    ),
    "vocab.txt with a ## token of 256 bytes after ##": (
        _wordpiece(lambda t: _vocab_file(t / "vocab.txt", _tokens("##" + "y" * 256))),
        "answer",
    ),
    "vocab.txt with a NUL in a token": (
        _wordpiece(lambda t: _vocab_file(t / "vocab.txt", _tokens("x\x00y"))),
        ("vocab.txt", "line 8", "U+0000"),
    ),
    "vocab.txt with a BEL in a token": (
        _wordpiece(lambda t: _vocab_file(t / "vocab.txt", _tokens("x\x07"))),
        ("vocab.txt", "line 8", "U+0007"),
    ),
    "vocab.txt with a tab in a token": (
        _wordpiece(lambda t: _vocab_file(t / "vocab.txt", _tokens("x\ty"))),
        ("vocab.txt", "line 8", "U+0009"),
    ),
    "vocab.txt with a C1 control in a token": (
        _wordpiece(lambda t: _vocab_file(t / "vocab.txt", _tokens("x\x85"))),
        ("vocab.txt", "line 8", "U+0085"),
    ),
    "vocab.txt of 2**24 + 1 lines": (
        _wordpiece(lambda t: _vocab_file(t / "vocab.txt", raw=b"\n" * ((1 << 24) + 1))),
        ("vocab.txt", "16,777,217 lines"),
    ),
    "vocab.txt of 65 MB": (
        _wordpiece(lambda t: _sparse(t / "vocab.txt", 65 << 20)),
        ("vocab.txt", "limit"),
    ),
    "vocab.txt empty": (
        _wordpiece(lambda t: _vocab_file(t / "vocab.txt", raw=b"")),
        ("vocab.txt",),
    ),
    "vocab.txt without [UNK]": (
        _wordpiece(
            lambda t: _vocab_file(t / "vocab.txt", [x for x in _tokens() if x != "[UNK]"])
        ),
        ("vocab.txt", "[UNK]"),
    ),
    "vocab.txt without [CLS]": (
        _wordpiece(
            lambda t: _vocab_file(t / "vocab.txt", [x for x in _tokens() if x != "[CLS]"])
        ),
        ("vocab.txt", "[CLS]"),
    ),
    "vocab.txt with a token twice": (
        _wordpiece(lambda t: _vocab_file(t / "vocab.txt", _tokens("a"))),
        ("vocab.txt", "twice"),
    ),
    "vocab.txt not UTF-8": (
        _wordpiece(lambda t: _vocab_file(t / "vocab.txt", raw=b"[PAD]\n\xff\xfe\n")),
        ("vocab.txt", "UTF-8"),
    ),
    "vocab.txt a directory": (
        _wordpiece(lambda t: (t / "vocab.txt").mkdir() or t / "vocab.txt"),
        ("vocab.txt", "regular file"),
    ),
    "vocabulary list with a NUL token": (
        lambda t: WordPieceTokenizer(_tokens("x\x00y")),
        ("token 7", "U+0000"),
    ),
    "vocabulary list with a 10 MB token": (
        lambda t: WordPieceTokenizer(_tokens("x" * 10_000_000)),
        ("token 7",),
    ),
    "artifact vocab.txt with a NUL token, sha256 and manifest regenerated": (
        "artifact",
        ("vocab.txt", "U+0000"),
    ),
    "vocab.json of 65 MB": (
        lambda t: BytePairTokenizer(
            str(_sparse(t / "vocab.json", 65 << 20)),
            str(_vocab_file(t / "merges.txt", raw=b"#version: 0.2\n")),
        ),
        ("vocab.json", "limit"),
    ),
    "vocab.json nested 100,000 deep": (
        lambda t: BytePairTokenizer(
            str(_vocab_file(t / "vocab.json", raw=b"[" * 100_000 + b"]" * 100_000)),
            str(_vocab_file(t / "merges.txt", raw=b"#version: 0.2\n")),
        ),
        ("vocab.json",),
    ),
    "merges.txt of 65 MB": (
        lambda t: BytePairTokenizer(
            str(_vocab_file(t / "vocab.json", raw=b'{"a": 0}')),
            str(_sparse(t / "merges.txt", 65 << 20)),
        ),
        ("merges.txt", "limit"),
    ),
    "spiece.model of 65 MB": (
        lambda t: SentencePieceTokenizer(str(_sparse(t / "spiece.model", 65 << 20))),
        ("spiece.model", "limit"),
    ),
}


@pytest.mark.parametrize("name", list(VOCABULARY_CASES) + ["vocab.txt a FIFO"])
def test_vocabulary_files(built, tmp_path, name):
    if name == "vocab.txt a FIFO":
        fifo = tmp_path / "vocab.txt"
        os.mkfifo(fifo)

        def release():
            # Unblock a reader stuck in open(): open the writing end.
            threading.Thread(target=lambda: open(fifo, "wb").close(), daemon=True).start()

        case = error(name, lambda: WordPieceTokenizer(str(fifo)), "vocab.txt")
        case.timeout, case.release = 20, release
        check_case("vocabulary files", case)
        return
    run, names = VOCABULARY_CASES[name]
    if run == "artifact":

        def run(t):
            d = copy_of(built["tflite"], t)
            _artifact_vocab_with("x\x00y")(d)
            return runtime.open_artifact(d)

    if names == "answer":
        case = answer(name, lambda: run(tmp_path), lambda tok: tok.vocabulary_size == 8)
    else:
        case = Case(name, lambda: run(tmp_path), "error", names)
    check_case("vocabulary files", case)
