"""Pointers in the sources (code, comments, scripts, READMEs) lead somewhere
a clone has: no document that lives outside the repository, and every
BUILD_NOTES.md section they name is a heading there. (tests/docs checks the
same of the docs pages; this covers everything else git tracks.)"""

from __future__ import annotations

import re
import subprocess

from tests.docs.blocks import ROOT

SUFFIXES = (".py", ".sh", ".md", ".toml", ".yml", ".java", ".kts", ".cfg", ".txt")
# Design and data notes that were shared beside the repository, never in it.
OUTSIDE = re.compile(r"\b(?:DESIGN|DATA)\.md\b")
# The notes' name (with or without .md, or as a link), then a comma, a space
# or an opening parenthesis, then the section's name in double quotes.
SECTION = re.compile(r"BUILD_NOTES(?:\.md)?(?:\]\([^)]*\))?(?:,\s*|\s+\(?|\()\"([^\"]+)\"")
# A comment or docstring wraps a section name over lines: join them.
WRAP = re.compile(r"[ \t]*\n[ \t]*(?:(?://|#)+[ \t]?)?")


def _sources():
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split("\0")
    for name in listed:
        path = ROOT / name
        if name and (path.suffix in SUFFIXES or path.name == "Makefile") and path.is_file():
            if not name.startswith("docs/"):  # the pages: tests/docs/test_docs_blocks.py
                yield name, path.read_text(encoding="utf-8", errors="replace")


def test_sources_point_inside_the_repository():
    headings = set(
        re.findall(
            r"^## (.+)$", (ROOT / "BUILD_NOTES.md").read_text(encoding="utf-8"), re.M
        )
    )
    problems = []
    for name, text in _sources():
        for line_number, line in enumerate(text.splitlines(), 1):
            if OUTSIDE.search(line):
                problems.append(
                    f"{name}:{line_number}: names a document a clone does not have: "
                    f"{line.strip()[:100]}"
                )
        for section in SECTION.findall(WRAP.sub(" ", text)):
            if section not in headings:
                problems.append(f'{name}: BUILD_NOTES.md has no section "{section}"')
    assert not problems, "\n".join(problems)
