# The README's two commands are `make demo` and `make test`; both set up first.
#   make setup   create/reuse .venv/, install the project editable (runtime
#                dependencies only) and the real assets (scripts/install_assets.sh):
#                all `make demo` needs
#   make setup-test  setup plus the `test` and `garden` extras (the oracles:
#                torch, transformers, keras-hub, Model Garden; ruff, pytest)
#   make mediapipe-venv  .venv-mediapipe/ with MediaPipe Tasks (tests; export's agreement check)
#   make test    setup (+ the test extras and .venv-mediapipe), ruff (lint and format
#                check), the house check,
#                the test suite except `full` tests, then `make android-test` (what CI
#                runs)
#   make demo    setup, then the main job on the real default checkpoint
#   make android-test  the Android app's JVM tests, JNA end-to-end, debug APK
#   make test-quick    the inner loop while editing (4 to 6 minutes on 2 cores):
#                ruff, the house check and the tests that need no real asset and
#                are not marked slow, garden or full (`make test` runs those too)
#   make test-durations  the test suite, recording each file's seconds in
#                tests/durations.json (the longest files run first)
#   make test-full     the opt-in full-recipe checks (`-m full`, 10-25 min each)
#   make lint    ruff over the sources, and the house check (scripts/import_graph.py)
#   make docs    the docs site (mkdocs.yml, docs/) with `mkdocs build --strict` into
#                build/site/ (a broken link fails); `make docs-check` also checks
#                docs/cli.md against the parsers and runs tests/docs
#   make bench   the project against keras-hub, HF torch, ONNX Runtime and LiteRT in one
#                run (bench/peers.py; BENCH_ARGS=--quick for a few minutes;
#                --training-only for the training rows, in float32 and, where the
#                CPU has AVX-512 BF16 or AMX, bfloat16 with an accuracy check);
#                writes bench/results.md, results.json, results.png
#   make bench-backends  fine-tuning throughput per Keras backend (TensorFlow, JAX,
#                PyTorch) against HF transformers on PyTorch (bench/backends.py;
#                BENCH_BACKENDS_ARGS=--steps 20 ...); its section of bench/results.md

PYTHON ?= python3
VENV ?= .venv
# MediaPipe Tasks, for the test that runs the phone file through its
# TextClassifier: its own venv, since mediapipe needs absl-py 2 and the
# garden extra's tensorflow-model-optimization pins absl-py 1 (BUILD_NOTES).
MPVENV ?= .venv-mediapipe
PY := $(VENV)/bin/python
ASSETS ?= .assets
STAMP := $(VENV)/.zoo-setup-stamp
TEST_STAMP := $(VENV)/.zoo-test-stamp
# Two pytest workers (pytest-xdist), a file per worker at a time so that a
# file's module fixtures (the fast demo, the exports) are built once. Most
# tests are Python-bound (tracing, tiny models), so two processes use both
# cores better than one (two kept 1.65 of 2 cores busy, yet three ran the
# suite in 1,223 s against two's 1,122-1,175 s on 2 cores: the third adds
# more contention than it fills); `make test PYTEST_WORKERS=0` runs in one
# process. `--no-loadscope-reorder` keeps the files in the order
# tests/conftest.py gives them (longest first): xdist 3.6+ otherwise re-sorts
# them by their number of tests, which started the 10-minute demo file 27
# minutes into a 61-minute run.
PYTEST_WORKERS ?= 2
XDIST := -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder
PYTEST_ARGS ?= $(XDIST) --durations=25

.PHONY: setup setup-test test test-quick test-durations test-full demo lint clean android-test mediapipe-venv bench bench-backends docs docs-check

setup: $(STAMP)

setup-test: $(TEST_STAMP)

mediapipe-venv: $(MPVENV)/.zoo-mediapipe-stamp

$(MPVENV)/.zoo-mediapipe-stamp:
	test -x $(MPVENV)/bin/python || $(PYTHON) -m venv $(MPVENV)
	$(MPVENV)/bin/python -m pip install --quiet --upgrade "pip>=24"
	$(MPVENV)/bin/python -m pip install --quiet "mediapipe==1.2.2"
	touch $@

# Re-run setup when the dependency list or the asset installer changes.
$(STAMP): pyproject.toml scripts/install_assets.sh
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade "pip>=24"
	$(PY) -m pip install --quiet -e '.[austen]'
	bash scripts/install_assets.sh $(PY) $(ASSETS)
	$(PY) scripts/pip_check.py
	touch $@

# The test-only packages (reference implementations, lint): `make demo` does
# without them, which keeps a fresh clone's demo setup short.
$(TEST_STAMP): $(STAMP)
	$(PY) -m pip install --quiet -e '.[test,garden,docs]'
	$(PY) scripts/pip_check.py
	touch $@

LINTED := zoo export tests bench scripts android_demo/tools

test: setup-test mediapipe-venv
	$(PY) -m ruff check $(LINTED)
	$(PY) -m ruff format --check $(LINTED)
	$(MKDOCS) build --strict
	$(PY) scripts/import_graph.py
	$(PY) -m pytest $(PYTEST_ARGS)
	$(MAKE) android-test

# The inner loop: what catches most mistakes in a few minutes. Tests that
# need the real assets or the garden extra, and those marked slow (minutes
# each: worker processes, validated exports, the reliability corpus), are
# left to `make test`, which runs them all.
QUICK_MARKERS := not slow and not assets and not garden and not full
test-quick: setup-test
	$(PY) -m ruff check $(LINTED)
	$(PY) -m ruff format --check $(LINTED)
	$(PY) scripts/import_graph.py
	$(PY) -m pytest $(XDIST) -m "$(QUICK_MARKERS)" --durations=10

# The seconds each test file takes, into tests/durations.json, which orders
# the files longest first (tests/conftest.py): run after adding a long file.
test-durations: setup-test mediapipe-venv
	ZOO_RECORD_DURATIONS=tests/durations.json $(PY) -m pytest $(PYTEST_ARGS)

# Checks too long for CI (marked `full`, deselected by default in pyproject).
test-full: setup-test mediapipe-venv
	$(PY) -m pytest -m full $(PYTEST_ARGS)

# The Android app's pure-Java core on the JVM, the real .tflite through
# LiteRT's C library via JNA, and a signed debug APK (see android_demo/README.md).
# Installs the Debian packages it needs when run as root.
android-test: setup-test
	bash android_demo/scripts/android_test.sh $(PY)

demo: setup
	$(VENV)/bin/zoo demo

BENCH_ARGS ?=
bench: setup-test
	$(PY) -m pip install --quiet -e '.[test,bench]'
	$(PY) bench/peers.py $(BENCH_ARGS)

BENCH_BACKENDS_ARGS ?=
bench-backends: setup-test
	$(PY) bench/backends.py --results-md bench/results.md $(BENCH_BACKENDS_ARGS)

# The docs site; --strict: a broken link, a page missing from the nav or a
# griffe warning fails the build (never with --quiet, which hides the warnings).
MKDOCS := NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs
docs: setup-test
	$(MKDOCS) build --strict

docs-check: docs
	$(PY) scripts/cli_docs.py --check
	$(PY) -m pytest tests/docs -q

lint: setup-test
	$(PY) -m ruff check $(LINTED)
	$(PY) -m ruff format --check $(LINTED)
	$(PY) scripts/import_graph.py

clean:
	rm -rf $(VENV) $(MPVENV) $(ASSETS) .pytest_cache
