"""Prints the corpus's counts per area after the run (`pytest tests/reliability`)."""

from tests.reliability import corpus


def pytest_terminal_summary(terminalreporter):
    if corpus.COUNTS:
        terminalreporter.section("reliability corpus: outcomes per area")
        for line in corpus.summary_lines():
            terminalreporter.write_line(line)
