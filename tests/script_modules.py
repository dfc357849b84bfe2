"""The repository's scripts (scripts/, bench/) as modules for tests: they are
files to run, not packages to import, so each is loaded by its path."""

from __future__ import annotations

import importlib.util
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]


def load_script(relative_path):
    """The module of `ROOT / relative_path`, executed once per call and not
    entered in `sys.modules` (two loads are two independent modules)."""
    path = ROOT / relative_path
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
