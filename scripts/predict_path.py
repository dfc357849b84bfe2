"""The path a text takes through `zoo predict`, traced: which rooms of the
house (scripts/import_graph.py) `open_predictor(ARTIFACT).predict(TEXTS)`
enters, in order.

    python scripts/predict_path.py ARTIFACT_DIR [--calls]

Every Python call into zoo/ or export/ is recorded (`sys.setprofile`) and
mapped to its room; consecutive calls in one room are one stop, and a climb
is a stop on a higher floor than the stop before it (a return from a helper
below, or a call back up). Prints the counts as JSON, then the stops (with
--calls, each stop's first function)."""

from __future__ import annotations

import argparse
import collections
import importlib.util
import json
import os
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
TEXTS = ["the match ended in a draw", "shares fell sharply on friday"]


def _module_of(filename):
    path = pathlib.Path(filename)
    for package in ("zoo", "export"):
        if str(path).startswith(str(ROOT / package) + os.sep):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
    return None


def _import_graph():
    """scripts/import_graph.py, loaded by path (scripts/ is not a package)."""
    spec = importlib.util.spec_from_file_location(
        "import_graph", ROOT / "scripts" / "import_graph.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def trace(artifact, texts=TEXTS):
    """{"calls": [(module, function)], "stops": [(room, module, function)],
    "rooms": Counter, "climbs": int} of one open-and-predict."""
    import_graph = _import_graph()
    from zoo.predict import open_predictor

    calls = []

    def record(frame, event, arg):
        if event == "call":
            module = _module_of(frame.f_code.co_filename)
            if module:
                calls.append((module, frame.f_code.co_name))

    sys.setprofile(record)
    try:
        open_predictor(artifact).predict(list(texts))
    finally:
        sys.setprofile(None)
    stops = []
    for module, function in calls:
        room = import_graph.room_of(module)
        if not stops or stops[-1][0] != room:
            stops.append((room, module, function))
    floor = import_graph.ROOMS
    climbs = sum(floor[b[0]] > floor[a[0]] for a, b in zip(stops, stops[1:]))
    return {
        "calls": calls,
        "stops": stops,
        "rooms": collections.Counter(room for room, _, _ in stops),
        "climbs": climbs,
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "artifact", help="a .tflite or text-in SavedModel artifact directory"
    )
    parser.add_argument("--calls", action="store_true", help="name each stop's function")
    args = parser.parse_args(argv)
    found = trace(args.artifact)
    summary = {
        "calls into zoo/ and export/": len(found["calls"]),
        "stops": len(found["stops"]),
        "rooms": len(found["rooms"]),
        "climbs back up": found["climbs"],
        "stops per room": dict(found["rooms"].most_common()),
    }
    print(json.dumps(summary, indent=1))
    for room, module, function in found["stops"]:
        print(f"{room:20} {module}.{function}" if args.calls else room)
    return 0


if __name__ == "__main__":
    sys.exit(main())
