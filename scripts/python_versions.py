"""Which Python versions the project installs on: resolve its runtime
dependencies (pyproject.toml's `[project] dependencies`) for each version
with binary wheels only, as pip would on a Linux x86_64 machine of that
version, without installing anything.

    python scripts/python_versions.py                  # 3.10 .. 3.14
    python scripts/python_versions.py 3.12 3.13 --extras test

For each version it runs `pip install --dry-run --only-binary :all:
--python-version X --platform manylinux_2_17..2_36_x86_64 --report ...` (pip
reads each wheel's metadata, not the wheel) and prints whether the set
resolves and the versions of the packages that matter. `requires-python` in
pyproject.toml should cover exactly the versions that resolve; the script
exits 1 when it does not. It needs the package index (PyPI), nothing else.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import re
import subprocess
import sys
import tempfile
import tomllib

ROOT = pathlib.Path(__file__).resolve().parents[1]
VERSIONS = ("3.10", "3.11", "3.12", "3.13", "3.14")
# glibc 2.17 (manylinux2014) up to Debian 12's 2.36: pip takes the tags it
# is given literally, so every compatible one is listed.
PLATFORMS = ["manylinux2014_x86_64"] + [f"manylinux_2_{m}_x86_64" for m in range(17, 37)]
SHOWN = (
    "tensorflow",
    "tensorflow-text",
    "keras",
    "ai-edge-litert",
    "ai-edge-quantizer",
    "numpy",
    "huggingface-hub",
    "torch",
    "transformers",
    "keras-hub",
)


def _project():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def requirements(extras=()):
    """The runtime dependencies (and `extras`) as pyproject.toml lists them."""
    project = _project()
    found = list(project["dependencies"])
    for extra in extras:
        found += project["optional-dependencies"][extra]
    return found


def requires_python():
    return _project().get("requires-python", "")


def admitted(version, spec):
    """Whether `version` ("3.12") satisfies a simple `>=a,<b` specifier."""
    key = tuple(int(x) for x in version.split("."))
    for part in filter(None, (p.strip() for p in spec.split(","))):
        op, number = re.match(r"(>=|<=|<|>|==)\s*([\d.]+)", part).groups()
        other = tuple(int(x) for x in number.split("."))[:2]
        ok = {
            ">=": key >= other,
            "<=": key <= other,
            "<": key < other,
            ">": key > other,
            "==": key == other,
        }[op]
        if not ok:
            return False
    return True


def resolve(version, reqs):
    """`(ok, {name: version} or the error's last lines)` for one Python."""
    with tempfile.TemporaryDirectory() as tmp:
        report = pathlib.Path(tmp) / "report.json"
        command = [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--quiet",
            "--ignore-installed",
            "--only-binary",
            ":all:",
            "--python-version",
            version,
            "--target",
            str(pathlib.Path(tmp) / "target"),
            "--report",
            str(report),
        ]
        for platform in PLATFORMS:
            command += ["--platform", platform]
        proc = subprocess.run(command + list(reqs), capture_output=True, text=True)
        if proc.returncode != 0:
            lines = [x for x in proc.stderr.splitlines() if "is ignored" not in x]
            return False, "\n".join(lines[-3:])
        installed = json.loads(report.read_text())["install"]
        return True, {
            i["metadata"]["name"].lower(): i["metadata"]["version"] for i in installed
        }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "versions",
        nargs="*",
        default=list(VERSIONS),
        help=f"Python versions to resolve for (default: {' '.join(VERSIONS)})",
    )
    parser.add_argument(
        "--extras",
        nargs="*",
        default=[],
        help="optional-dependency groups to add (e.g. test)",
    )
    args = parser.parse_args(argv)
    reqs = requirements(args.extras)
    spec = requires_python()
    print(
        f"resolving {len(reqs)} requirements"
        f"{' + ' + ', '.join(args.extras) if args.extras else ''}; "
        f"requires-python {spec!r}"
    )
    wrong = []
    for version in args.versions:
        ok, result = resolve(version, reqs)
        if ok:
            shown = ", ".join(f"{n} {result[n]}" for n in SHOWN if n in result)
            print(f"Python {version}: resolves ({len(result)} packages): {shown}")
        else:
            print(f"Python {version}: does not resolve:\n  " + result.replace("\n", "\n  "))
        if ok != admitted(version, spec):
            wrong.append(version)
    if wrong:
        print(f"requires-python {spec!r} disagrees with the resolution for {wrong}")
        return 1
    print(f"requires-python {spec!r} admits exactly the versions that resolve")
    return 0


if __name__ == "__main__":
    sys.exit(main())
