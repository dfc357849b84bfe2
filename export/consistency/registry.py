"""Checks that belong to one kind of file, registered by the module that
knows that kind, so that the generic checks and loaders never import it.

    register("tflite", check)               # check(directory, meta, file) on every .tflite
    register("mediapipe.tflite", check)     # ... on that file only
    register_source_graph("mediapipe.tflite", same_graph)

`export.mediapipe` registers its checks when it is imported, and
`export/__init__.py` imports it, so they are in place as soon as any part
of `export` is (`import export.runtime` runs the package's `__init__`
first): no caller has to remember an import.

A file check refuses by raising (`export.consistency.refuse`); it runs in
`check_tflite_file` after the embedded record and before size and
operators, in the order registered. A source-graph finder answers
`(source_file, signature)` when a derived file (metadata.json
`derived_from`) computes exactly what that signature of its source
computes, else None; the validator then runs the derived file on a sample
only (`export.runtime.run_tflite`). With none registered for a file, it
runs every text."""

from __future__ import annotations

# Format ("tflite") or file name -> checks, in the order registered.
_FILE_CHECKS: dict[str, list] = {}
# File name -> its source-graph finder.
_SOURCE_GRAPHS: dict = {}


def _check_entry(who, key_arg, key_what, key, fn_arg, fn):
    """A registration's key is a non-empty str and its function callable as
    fn(directory, meta, file); a `TypeError` names the argument otherwise."""
    if not isinstance(key, str) or not key:
        raise TypeError(
            f"{who}: `{key_arg}` must be {key_what} (a non-empty str); received {key!r}."
        )
    if not callable(fn):
        raise TypeError(
            f"{who}: `{fn_arg}` must be callable as {fn_arg}(directory, meta, file); "
            f"received {type(fn).__name__}."
        )


def register(name, check):
    """Run `check(directory, meta, file)` on every file of format `name`
    ("tflite"), or on the file called `name`. Registering the same check
    twice (a module imported again) keeps one."""
    _check_entry("register", "name", "a format or a file name", name, "check", check)
    checks = _FILE_CHECKS.setdefault(name, [])
    if check not in checks:
        checks.append(check)


def file_checks(kind, file) -> list:
    """The checks registered for format `kind` and for the file `file`
    (the format's first)."""
    return [*_FILE_CHECKS.get(kind, ()), *_FILE_CHECKS.get(file, ())]


def register_source_graph(file, same_graph):
    """`same_graph(directory, meta, file)` says whether `file`, derived from
    another (metadata.json `derived_from`), holds its source's graph (see
    the module doc); one finder per file name, the last registered."""
    _check_entry(
        "register_source_graph", "file", "a file name", file, "same_graph", same_graph
    )
    _SOURCE_GRAPHS[file] = same_graph


def same_graph_as_source(directory, meta, file):
    """`(source_file, signature)` when the finder registered for `file`
    finds its source's graph in it, else None (also when none is
    registered: the file then runs every text, like any file)."""
    same_graph = _SOURCE_GRAPHS.get(file)
    return None if same_graph is None else same_graph(directory, meta, file)
