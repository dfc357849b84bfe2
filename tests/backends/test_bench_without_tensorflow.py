"""bench/backends.py on a machine without TensorFlow (issue #39): its JAX,
PyTorch and HF workers run with `import tensorflow` made to fail, as on a
GPU machine that has only jax, torch, transformers and keras."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.backends.conftest import ROOT, worker_env

# sitecustomize.py, first on the path: every finder answers "not found" for
# TensorFlow's packages (`import` and `importlib.util.find_spec` alike), as
# where they are not installed.
BLOCKER = """
import sys

def hidden(name):
    return name.split(".")[0].startswith(("tensorflow", "tf_keras"))

class Hide:
    def __init__(self, finder):
        self.finder = finder

    def find_spec(self, name, path=None, target=None):
        if hidden(name):
            return None
        find = getattr(self.finder, "find_spec", None)
        return None if find is None else find(name, path, target)

    def __getattr__(self, attribute):
        return getattr(self.finder, attribute)

sys.meta_path[:] = [Hide(finder) for finder in sys.meta_path]
"""


@pytest.mark.slow  # three worker processes
@pytest.mark.parametrize("engine", ["jax", "torch", "hf"])
def test_bench_worker_runs_without_tensorflow(engine, tmp_path):
    (tmp_path / "sitecustomize.py").write_text(BLOCKER)
    env = worker_env("torch" if engine == "hf" else engine)
    env["PYTHONPATH"] = f"{tmp_path}:{ROOT}"
    command = [sys.executable, str(ROOT / "bench" / "backends_worker.py"), engine, "tiny"]
    proc = subprocess.run(
        [*command, "2", "16", "1", "1"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["tensorflow_loaded"] is False
    assert result["examples_per_s"] > 0 and result["device"].endswith(":0")
    # The blocker works: the same interpreter cannot import TensorFlow.
    probe = subprocess.run(
        [sys.executable, "-c", "import tensorflow"], env=env, capture_output=True, text=True
    )
    assert probe.returncode != 0 and "No module named 'tensorflow'" in probe.stderr


def test_results_md_section_is_replaced_not_repeated(tmp_path):
    from bench.backends import MARK_BEGIN, MARK_END, write_results_md

    path = tmp_path / "results.md"
    path.write_text("# peers\n\nrow\n")
    write_results_md(path, "table one")
    write_results_md(path, "table two")
    text = path.read_text()
    assert text.startswith("# peers\n\nrow\n")
    assert text.count(MARK_BEGIN) == text.count(MARK_END) == 1
    assert "table two" in text and "table one" not in text
