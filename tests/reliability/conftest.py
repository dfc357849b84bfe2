"""The reliability corpus's shared setup: tests/conftest.py's seed once per
module instead of once per case, and the corpus's counts per area printed
after the run (`pytest tests/reliability`)."""

import keras
import pytest

from tests.reliability import corpus


@pytest.fixture(scope="module", autouse=True)
def _module_seed():
    keras.utils.set_random_seed(1234)


@pytest.fixture(autouse=True)
def _seed(_module_seed):
    """Replaces tests/conftest.py's per-test `_seed` here: every corpus case
    is its own item, and `keras.utils.set_random_seed` clears TensorFlow's
    eager caches, so seeding per case rebuilt the tokenizer's kernels at
    0.2-0.7 s a case (40 s for one file against 1 s for its corpus). A file
    runs its cases in one order on one worker (`--dist loadfile`), so one
    seed at its start keeps every run alike; the dtype policy is still put
    back after every case."""
    yield
    keras.config.set_dtype_policy("float32")


def pytest_terminal_summary(terminalreporter):
    if corpus.COUNTS:
        terminalreporter.section("reliability corpus: outcomes per area")
        for line in corpus.summary_lines():
            terminalreporter.write_line(line)
