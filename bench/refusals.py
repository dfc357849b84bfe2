"""Time and peak memory of refusing a lying config.

    python bench/refusals.py                       # every case, this checkout
    python bench/refusals.py --checkout /tmp/old   # the same cases on another checkout
    python bench/refusals.py --cases "vocab_size 10**10" --cap-gb 6

Each case of tests/reliability/bombs.py (BOMBS and TYPED: an HF, zoo or
keras-hub source with one config field edited) runs in a fresh process,
after `import zoo`, so the figures are the refusal's own: seconds from the
load call to its answer, and the process's peak resident memory (VmHWM)
including TensorFlow's import. The parent watches each worker's resident
memory and stops it past `--cap-gb` (reported as "over the cap") or past
`--timeout` seconds ("hang"), so the old code's bombs cannot take the machine
down. The sources are written once by this checkout's code; `--checkout`
runs the workers on another tree's `zoo` (copy tests/reliability/bombs.py
and corpus.py there first). Not a test: figures depend on the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]

WORKER = r"""
import json, resource, sys, time
import zoo
from tests.reliability import bombs
from tests.reliability.corpus import outcome
sources = {k: __import__("pathlib").Path(v) for k, v in json.loads(sys.argv[1]).items()}
spec = next(s for s in bombs.BOMBS + bombs.TYPED if s[0] == sys.argv[2])
case = bombs.make_case(spec, sources, sys.argv[3])
start = time.perf_counter()
result, detail = outcome(case)
seconds = time.perf_counter() - start
print("RESULT " + json.dumps({"outcome": result, "detail": detail[:300], "seconds": seconds}))
"""

SOURCES = r"""
import json, sys
import zoo
from tests.reliability import bombs
print("SOURCES " + json.dumps({k: str(v) for k, v in bombs.make_sources(sys.argv[1]).items()}))
"""


def _peak_rss(pid):
    try:
        for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def run_case(python, checkout, sources, name, workdir, cap, timeout):
    process = subprocess.Popen(
        [python, "-c", WORKER, json.dumps(sources), name, workdir],
        cwd=checkout,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    start, peak, verdict = time.monotonic(), 0, None
    while process.poll() is None:
        peak = max(peak, _peak_rss(process.pid))
        if peak > cap:
            verdict = "over the cap"
        elif time.monotonic() - start > timeout:
            verdict = "hang"
        if verdict:
            process.kill()
            break
        time.sleep(0.05)
    out, err = process.communicate()
    line = next((x for x in out.splitlines() if x.startswith("RESULT ")), None)
    if verdict or line is None:
        tail = (err.strip().splitlines() or ["no output"])[-1]
        return {
            "outcome": verdict or "crash",
            "detail": tail[:200],
            "seconds": None,
            "peak_bytes": peak,
        }
    result = json.loads(line[len("RESULT ") :])
    result["peak_bytes"] = peak
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--checkout", default=str(ROOT), help="tree whose zoo runs the cases"
    )
    parser.add_argument("--cases", nargs="*", help="case names (default: all)")
    parser.add_argument("--cap-gb", type=float, default=6.0)
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    # After the path is set: the case list lives beside the tests that use it.
    from tests.reliability import bombs

    names = args.cases or [s[0] for s in bombs.BOMBS + bombs.TYPED]
    work = tempfile.mkdtemp(prefix="zoo-refusals-")
    made = subprocess.run(
        [sys.executable, "-c", SOURCES, work + "/sources"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    sources = json.loads(
        next(x for x in made.stdout.splitlines() if x.startswith("SOURCES "))[8:]
    )
    results = {}
    print(f"{'case':<42} {'outcome':<15} {'seconds':>8} {'peak MB':>8}")
    for name in names:
        result = run_case(
            sys.executable,
            args.checkout,
            sources,
            name,
            os.path.join(work, "cases"),
            args.cap_gb * (1 << 30),
            args.timeout,
        )
        results[name] = result
        seconds = f"{result['seconds']:.3f}" if result["seconds"] is not None else "-"
        print(
            f"{name:<42} {result['outcome']:<15} {seconds:>8} "
            f"{result['peak_bytes'] / (1 << 20):>8.0f}",
            flush=True,
        )
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
