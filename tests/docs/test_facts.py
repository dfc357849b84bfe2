"""Tables in docs/ that restate the code: each is compared with the code it
restates, so a change there fails here until the page follows."""

from __future__ import annotations

import re

from tests.docs.blocks import ROOT
from tests.script_modules import load_script


def _tables(page, first_header):
    """Every table of `page` whose header row starts with `first_header`: a
    list of rows, each a list of cells."""
    lines = (ROOT / "docs" / page).read_text(encoding="utf-8").splitlines()
    tables = []
    for i, line in enumerate(lines):
        if line.startswith(f"| {first_header} |"):
            rows = []
            for row in lines[i + 2 :]:
                if not row.startswith("|"):
                    break
                rows.append([cell.strip() for cell in row.strip().strip("|").split("|")])
            tables.append(rows)
    return tables


def _rows(page, first_header):
    return _tables(page, first_header)[0]


def test_presets_table_is_the_presets():
    import zoo

    rows = {re.findall(r"`(\w+)`", r[0])[0]: r for r in _rows("library.md", "preset")}
    assert set(rows) == set(zoo.PRESETS)
    for name, config in zoo.PRESETS.items():
        _, layers, hidden, heads, params = rows[name]
        assert (int(layers), int(hidden), int(heads)) == (
            config.num_layers,
            config.hidden_dim,
            config.num_heads,
        ), name
        assert params == f"{config.num_parameters():,}", name


def _number(cell):
    match = re.search(r"([0-9.]+(?:e-?[0-9]+)?)", cell)
    return float(match.group(1)) if match else None


def test_validation_gates_are_the_thresholds():
    from export.validate import REGRESSION_THRESHOLDS, THRESHOLDS

    classifiers, regressors = _tables("export.md", "profile")
    for table, thresholds, second in (
        (classifiers, THRESHOLDS, "label_agreement"),
        (regressors, REGRESSION_THRESHOLDS, "score_pearson"),
    ):
        for profile, limits in thresholds.items():
            row = next(r for r in table if f"`{profile}`" in r[0])
            assert _number(row[1]) == limits.get("max_abs_diff"), profile
            assert _number(row[2]) == limits.get(second), profile


def test_floors_table_is_the_import_graph():
    graph = load_script("scripts/import_graph.py")
    documented = {}
    for floor, rooms in _rows("architecture.md", "floor"):
        for room in re.findall(r"`([\w.]+)`", rooms):
            documented[room] = int(floor)
    assert documented == graph.ROOMS
