"""The project's house, checked from its own imports.

    python scripts/import_graph.py            # summary; exit 1 on any violation
    python scripts/import_graph.py --edges    # also every room-to-room arrow

Every module under zoo/, export/ and bench/ belongs to a room; rooms sit on
floors (docs/architecture.md, "The floors", draws them; tests/docs checks
that table against ROOMS). An import may point to its own room or to a room
on a lower floor. Checked, from the source with `ast` (nothing is
imported):

- upward imports (a room importing a room on a higher floor);
- import cycles between modules, whether the imports sit at module level
  or inside functions (a function-level import that closes a circle is a
  circle all the same);
- sideways imports that the design forbids (export formats never import
  each other);
- imports inside function bodies: allowed for optional dependencies (not in
  pyproject's core list) and, in the CLI package only, for the library (a
  sub-command may defer what only it uses), and for TensorFlow in the rooms
  that run on every Keras backend (`BACKEND_NEUTRAL`: its TensorFlow-only
  branches, so that JAX and PyTorch processes never load it); each one needs
  a comment on its line or the line above saying why. Deferring does not keep TensorFlow out
  of `zoo --help`: the `zoo` package's `__init__` imports the whole library
  before any CLI module runs (BUILD_NOTES.md, "Performance figures",
  start-up).
"""

from __future__ import annotations

import argparse
import ast
import pathlib
import re
import sys
import tomllib

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = ("zoo", "export", "bench")

# Longest prefix wins. Floors bottom (0) to top; docs/architecture.md's table
# restates them (tests/docs/test_facts.py compares the two).
ROOMS = {
    "zoo.utils": 0,
    "zoo.configs": 0,
    "zoo.text": 0,
    "zoo.datasets": 0,  # the repository's own corpora; zoo.text's readers name them
    "zoo.layers": 0,
    "zoo.models": 1,
    "zoo.checkpoints": 2,
    "zoo.train": 3,
    "zoo.distill": 3,
    "export.manifest": 3,
    "export.runtime": 3,
    "export.tf1_worker": 3,
    "export.validate": 3,
    "export.saved_model": 3,
    "export.serving_config": 3,
    "export.tflite": 3,
    "export.mediapipe": 3,
    "export.mediapipe_probes": 3,
    "export.consistency": 3,
    "export.specs": 3,  # the exporters' grouped arguments; imports nothing from export/
    "export": 3,  # the package's public names
    "zoo": 4,  # `import zoo`: the public API, above the library it re-exports
    "zoo.tasks": 4,
    "zoo.demo": 4,
    "zoo.predict": 4,
    "bench": 4,
    "zoo.cli": 5,
    "zoo.__main__": 6,  # `python -m zoo`
}
# Rooms on one floor that must not import each other (either direction).
FORBIDDEN = [
    ("export.saved_model", "export.tflite"),
]
# Within a floor, imports may only follow this order (left imports right).
SAME_FLOOR_ORDER = [
    ["zoo.text", "zoo.datasets", "zoo.layers", "zoo.configs", "zoo.utils"],
    ["zoo.distill", "zoo.train"],
    ["bench", "zoo.demo"],
    ["bench", "zoo"],  # bench/ imports `zoo` first: TensorFlow's environment
    ["zoo", "zoo.predict", "zoo.tasks"],
    # export.mediapipe registers its checks with export.consistency (registry),
    # which export.runtime runs without importing export.mediapipe.
    [
        "export",
        "export.saved_model",
        "export.serving_config",
        "export.tflite",
        "export.specs",
        "export.validate",
        "export.mediapipe_probes",
        "export.mediapipe",
        "export.runtime",
        "export.consistency",
        "export.tf1_worker",
        "export.manifest",
        "zoo.train",
    ],
]
# Packages allowed inside function bodies outside the CLI: optional
# dependencies only (test oracles, extras, peers in bench/).
STDLIB = set(sys.stdlib_module_names)
# Rooms whose code runs on the JAX and PyTorch backends too (issue #39): they
# may import TensorFlow inside a function, in a TensorFlow-only branch.
BACKEND_NEUTRAL = ("zoo.layers", "zoo.models", "zoo.utils", "zoo.distill")


def core_dependencies():
    """Import names of pyproject's `[project] dependencies`."""
    with open(ROOT / "pyproject.toml", "rb") as f:
        specs = tomllib.load(f)["project"]["dependencies"]
    names = set()
    for spec in specs:
        name = re.split(r"[=<>!~\[; ]", spec, maxsplit=1)[0]
        names.add(name.strip().lower().replace("-", "_"))
    return names


def module_name(path):
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


# Package facades: the `__init__` alone, not everything under the package
# (a new sub-package must be given its own room and floor).
EXACT = {"zoo", "export"}


def room_of(module):
    best = None
    for room in ROOMS:
        if module == room or (room not in EXACT and module.startswith(room + ".")):
            if best is None or len(room) > len(best):
                best = room
    return best


class Import:
    def __init__(self, source, target, line, in_function, commented, top):
        self.source, self.target, self.line = source, target, line
        self.in_function, self.commented, self.top = in_function, commented, top


def resolve(node, module, is_package):
    """Absolute names imported by an Import/ImportFrom node."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    base = node.module or ""
    if node.level:
        parts = module.split(".")
        if not is_package:
            parts = parts[:-1]
        parts = parts[: len(parts) - (node.level - 1)]
        base = ".".join(parts + ([base] if base else []))
    out = []
    for a in node.names:
        # `from pkg import sub` may import a submodule: keep the longer name
        # when it is a module of ours, else the package.
        out.append(f"{base}.{a.name}" if base else a.name)
    return out


def _commented(lines, line):
    """A comment on the import's line, or in the run of import / comment /
    `try:` lines directly above it (one comment may explain a block)."""
    i = line - 1
    if "#" in lines[i]:
        return True
    i -= 1
    while i >= 0:
        text = lines[i].strip()
        if text.startswith("#") or ("#" in text and text.startswith("try:")):
            return True
        if not (text.startswith(("import ", "from ")) or text == "try:"):
            return False
        i -= 1
    return False


def _visit(node, in_function, type_checking, where, imports):
    """Collect the imports under `node`; `where` = (module, is_package, lines, modules)."""
    module, is_package, lines, modules = where
    for child in ast.iter_child_nodes(node):
        fn = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
        tc = type_checking or (
            isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test)
        )
        if isinstance(child, (ast.Import, ast.ImportFrom)) and not type_checking:
            line = child.lineno
            commented = _commented(lines, line)
            for name in resolve(child, module, is_package):
                target = name
                # `from zoo.text import tokenizer`: the submodule if it exists.
                while target and target not in modules and "." in target:
                    if (
                        target.rsplit(".", 1)[0] in modules
                        or target.split(".")[0] in PACKAGES
                    ):
                        target = target.rsplit(".", 1)[0]
                    else:
                        break
                top = name.split(".")[0]
                imports.append(
                    Import(
                        module,
                        target if top in PACKAGES else name,
                        line,
                        in_function,
                        commented,
                        top,
                    )
                )
        _visit(child, fn, tc, where, imports)


def scan():
    modules = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            modules[module_name(path)] = path
    imports = []
    for module, path in modules.items():
        text = path.read_text()
        tree = ast.parse(text, str(path))
        where = (module, path.name == "__init__.py", text.splitlines(), modules)
        _visit(tree, False, False, where, imports)
    return modules, imports


def strongly_connected(nodes, edges):
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in nodes:
        if v not in index:
            strong(v)
    return out


def check(show_edges=False):
    """The house checked from its imports and reported; 1 on any violation."""
    modules, imports = scan()
    core = core_dependencies()
    problems = []
    unroomed = [m for m in modules if room_of(m) is None]
    for m in unroomed:
        problems.append(f"{m}: belongs to no room (add it to ROOMS)")
    ours, arrows = _arrows(modules, imports)
    upward, sideways = _floor_violations(arrows)
    cycles, room_cycles = _cycles(modules, ours, arrows)
    in_function = _function_imports(imports, core)
    sections = [
        ("module import cycles", [" -> ".join(c) for c in cycles]),
        ("room cycles", [" <-> ".join(c) for c in room_cycles]),
        ("upward imports", upward),
        ("sideways imports", sideways),
        ("imports inside functions", in_function),
        ("unplaced modules", problems),
    ]
    return _report(modules, imports, arrows, show_edges, sections)


def _arrows(modules, imports):
    """The imports of our own modules, and those between rooms keyed by (from, to)."""
    ours = [i for i in imports if i.top in PACKAGES and i.target in modules]
    # Package `__init__` re-exports are the package's own room; a module
    # importing its own package's facade counts as importing that room.
    arrows = {}
    for i in ours:
        a, b = room_of(i.source), room_of(i.target)
        if a == b or a is None or b is None:
            continue
        arrows.setdefault((a, b), []).append(i)
    return ours, arrows


def _floor_violations(arrows):
    """The upward arrows, and the sideways ones that SAME_FLOOR_ORDER or FORBIDDEN bar."""
    order = {}
    for chain in SAME_FLOOR_ORDER:
        for rank, room in enumerate(chain):
            order.setdefault(room, {})[id(chain)] = rank
    upward, sideways = [], []
    for (a, b), items in sorted(arrows.items()):
        fa, fb = ROOMS[a], ROOMS[b]
        where = ", ".join(f"{i.source}:{i.line}" for i in items)
        if fb > fa:
            upward.append(f"{a} (floor {fa}) -> {b} (floor {fb}): {where}")
        elif fb == fa:
            shared = set(order.get(a, {})) & set(order.get(b, {}))
            ok = any(order[a][c] < order[b][c] for c in shared)
            if not ok:
                sideways.append(f"{a} -> {b} (both floor {fa}): {where}")
    for a, b in FORBIDDEN:
        for x, y in ((a, b), (b, a)):
            if (x, y) in arrows:
                sideways.append(f"{x} -> {y}: forbidden (formats never import each other)")
    return upward, sideways


def _cycles(modules, ours, arrows):
    """The import cycles between modules, and those between rooms."""
    graph = {}
    for i in ours:
        if i.source != i.target:
            graph.setdefault(i.source, set()).add(i.target)
    cycles = strongly_connected(sorted(modules), {k: sorted(v) for k, v in graph.items()})
    room_graph = {}
    for a, b in arrows:
        room_graph.setdefault(a, set()).add(b)
    room_cycles = strongly_connected(
        sorted(ROOMS), {k: sorted(v) for k, v in room_graph.items()}
    )
    return cycles, room_cycles


def _function_imports(imports, core):
    """The imports inside functions not allowed there or without a comment saying why."""
    in_function = []
    for i in imports:
        if not i.in_function:
            continue
        room = room_of(i.source) or ""
        lazy_cli = room in ("zoo.cli", "zoo.__main__") and i.top in PACKAGES
        optional = (
            i.top not in PACKAGES
            and i.top not in STDLIB
            and i.top.lower() not in core
            and i.top != "__future__"
        )
        tf_branch = room in BACKEND_NEUTRAL and i.top == "tensorflow"
        if not (lazy_cli or optional or tf_branch):
            kind = (
                "project module"
                if i.top in PACKAGES
                else "standard library"
                if i.top in STDLIB
                else "core dependency"
            )
            in_function.append(
                f"{i.source}:{i.line} imports {i.target} ({kind}) inside a "
                "function; import it at the top of the module"
            )
        elif not i.commented:
            in_function.append(
                f"{i.source}:{i.line} imports {i.target} inside a function "
                "without a comment saying why"
            )
    return in_function


def _report(modules, imports, arrows, show_edges, sections):
    """The summary, the arrows when asked, and each section printed; 1 on any violation."""
    n_imports = len({(i.source, i.line) for i in imports})
    n_function = len({(i.source, i.line) for i in imports if i.in_function})
    print(
        f"{len(modules)} modules in {len({room_of(m) for m in modules})} rooms on "
        f"{len(set(ROOMS.values()))} floors; {len(arrows)} room-to-room arrows; "
        f"{n_imports} import statements, {n_function} inside functions"
    )
    if show_edges:
        for (a, b), items in sorted(arrows.items()):
            print(f"  {a} -> {b} ({len(items)})")
    bad = 0
    for title, items in sections:
        print(f"{title}: {len(items)}")
        for item in items:
            print(f"  {item}")
        bad += len(items)
    return 1 if bad else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--edges", action="store_true", help="list every room-to-room arrow"
    )
    parser.add_argument(
        "--root",
        type=pathlib.Path,
        default=ROOT,
        help="the checkout to read (default: this one)",
    )
    options = parser.parse_args()
    ROOT = options.root.resolve()
    sys.exit(check(options.edges))
