"""scripts/import_graph.py: the project's own imports pass, and the check
fails on each kind of violation planted in a copy of a small tree."""

import importlib.util
import pathlib
import subprocess
import sys
import textwrap

ROOT = pathlib.Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "import_graph.py"


def run(root):
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--root", str(root)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_project_has_no_cycles_and_no_upward_imports():
    result = run(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "module import cycles: 0" in result.stdout
    assert "upward imports: 0" in result.stdout


def _tree(tmp_path, files):
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\ndependencies = ["numpy>=1"]\n'
    )
    for package in ("zoo", "export", "bench"):
        (tmp_path / package).mkdir(exist_ok=True)
        (tmp_path / package / "__init__.py").touch()
    return tmp_path


def test_each_violation_is_reported(tmp_path):
    root = _tree(
        tmp_path,
        {
            "zoo/text/__init__.py": "",
            # upward: floor 0 importing floor 3, hidden in a function
            "zoo/text/reader.py": "def f():\n    from zoo.train import fit\n",
            "zoo/train/__init__.py": "",
            "zoo/train/fit.py": "import numpy as np\nfrom zoo.distill import run\n",
            "zoo/distill/__init__.py": "",
            # a cycle through train <-> distill, and a core dependency in a function
            "zoo/distill/run.py": "from zoo.train import fit\n\ndef g():\n    import numpy\n",
            "export/__init__.py": "",
            "export/tflite.py": "from export import saved_model\n",
            "export/saved_model.py": "",
            "zoo/elsewhere.py": "",
        },
    )
    result = run(root)
    out = result.stdout
    assert result.returncode == 1, out
    assert "module import cycles: 1" in out and "zoo.distill.run -> zoo.train.fit" in out
    assert "zoo.text (floor 0) -> zoo.train (floor 3)" in out
    assert "export.tflite -> export.saved_model: forbidden" in out
    assert "zoo.distill.run:4 imports numpy (core dependency) inside a function" in out
    assert "zoo.elsewhere: belongs to no room" in out


def test_the_tokenizers_do_not_import_the_datasets():
    """zoo.datasets (the repository's corpora) sits beside zoo.text on floor
    0 and zoo.text's readers name it (`--data bbc`, `wordnet-sts`); the
    tokenizers must not reach it, directly or through another module: a
    tokenizer is what a saved model and an export load."""
    spec = importlib.util.spec_from_file_location("import_graph", SCRIPT)
    graph = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(graph)
    modules, imports = graph.scan()
    edges = {}
    for i in imports:
        if i.target in modules:
            edges.setdefault(i.source, set()).add(i.target)
    for start in ("zoo.text.tokenizer", "zoo.text.sentencepiece_tokenizer"):
        seen, todo = set(), [start]
        while todo:
            module = todo.pop()
            if module not in seen:
                seen.add(module)
                todo.extend(edges.get(module, ()))
        assert not {m for m in seen if graph.room_of(m) == "zoo.datasets"}, start
        assert not any(
            m == "zoo.text.readers" or m.startswith("zoo.text.readers.") for m in seen
        ), start
