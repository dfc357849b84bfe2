"""A counted corpus of hostile-but-ordinary inputs, one `Case` each.

Each case says what it feeds and what must happen: an `error` case must
raise one of the project's user-facing errors whose message contains every
string in `names` (the field or file, so a user knows what to fix); an
`answer` case must return, and `check(result)` must hold. Running a case
gives one of four outcomes:

    clear error      the expected kind of error, naming what it must name
    correct answer   returned, and the check holds
    crash            any other exception (a traceback, an internal error),
                     or an error whose message does not name the field/file
    silent wrong     returned where an error was due, or a wrong answer
    hang             still running after the case's `timeout` (seconds)
    data lost        whatever it returned or raised, a file of the user's
                     that the case watches (`kept`) was removed or changed

Every case is its own pytest item (`check_case`; an area's table of cases
is a `CaseTable`, or `case_ids` gives the parametrize ids), so a failure
names its case; the item fails on any crash, silent wrong result, hang or
lost file, and the suite prints the counts per area at the end
(tests/reliability/conftest.py).
"""

from __future__ import annotations

import dataclasses
import traceback
from collections.abc import Callable
from typing import Any

OUTCOMES = ("clear error", "correct answer", "crash", "silent wrong", "hang", "data lost")
FAILURES = ("crash", "silent wrong", "hang", "data lost")
COUNTS: dict[str, dict[str, int]] = {}
PROBLEMS: dict[str, list[str]] = {}


@dataclasses.dataclass
class Case:
    name: str
    run: Callable[[], Any]
    expect: str = "error"  # "error" or "answer"
    names: tuple = ()  # strings the error message must contain
    check: Callable[[Any], bool] | None = None
    errors: tuple = (ValueError, TypeError, FileNotFoundError, OSError)
    # The user's files this case must leave alone: a function returning the
    # ones removed or changed after the run (empty when all survived).
    kept: Callable[[], list] | None = None
    # Seconds the run may take before it counts as a hang (None: no limit).
    # The run goes on in a daemon thread, which the case must be able to
    # release (e.g. by opening the other end of a FIFO) in `release`.
    timeout: float | None = None
    release: Callable[[], None] | None = None


def error(name, run, *names, errors=None):
    case = Case(name, run, "error", tuple(names))
    if errors is not None:
        case.errors = errors
    return case


def answer(name, run, check):
    return Case(name, run, "answer", (), check)


def error_or_same(name, run, check, *names, errors=None):
    """Damage the loader may not see (a byte no reader uses): a clear error
    naming `names`, or an answer `check` proves unchanged. Anything else is
    a crash or silently wrong."""
    case = Case(name, run, "either", tuple(names), check)
    if errors is not None:
        case.errors = errors
    return case


def outcome(case):
    """(outcome, detail) of running `case`."""
    result, detail = _outcome_in_time(case) if case.timeout else _outcome(case)
    lost = case.kept() if case.kept is not None else []
    if lost:
        return "data lost", f"{', '.join(map(str, lost))[:300]} ({result}: {detail[:200]})"
    return result, detail


def _outcome_in_time(case):
    import threading

    found = []
    worker = threading.Thread(target=lambda: found.append(_outcome(case)), daemon=True)
    worker.start()
    worker.join(case.timeout)
    if worker.is_alive():
        if case.release is not None:
            case.release()
            worker.join(10)
        return "hang", f"still running after {case.timeout} s"
    return found[0]


def _outcome(case):
    try:
        result = case.run()
    except case.errors as e:
        if case.expect == "answer":
            return "crash", f"raised {type(e).__name__}: {str(e)[:300]}"
        message = str(e)
        missing = [n for n in case.names if n not in message]
        if missing:
            return "crash", (
                f"{type(e).__name__} without {missing} in its message: {message[:300]}"
            )
        return "clear error", message[:200]
    except Exception as e:  # noqa: BLE001 - any other exception is the finding
        return (
            "crash",
            f"{type(e).__name__}: {str(e)[:300]}\n{traceback.format_exc()[-800:]}",
        )
    if case.expect == "error":
        return "silent wrong", f"returned {str(result)[:200]} instead of an error"
    # "answer", or "either" that returned: the answer must be right.
    try:
        ok = case.check(result)
    except Exception as e:  # noqa: BLE001
        return "crash", f"the check raised {type(e).__name__}: {e}"
    return (
        ("correct answer", "")
        if ok
        else ("silent wrong", f"wrong answer: {str(result)[:300]}")
    )


class CaseTable(dict):
    """An area's cases by name, each name once: a plain dict would keep only
    the later of two cases named alike, and the id would hide the other."""

    def __init__(self, area=""):
        super().__init__()
        self.area = area

    def __setitem__(self, name, case):
        if name in self:
            raise AssertionError(f"{self.area or 'corpus'}: case name {name!r} twice")
        super().__setitem__(name, case)

    def update(self, cases):
        for name, case in dict(cases).items():
            self[name] = case


def case_ids(cases):
    """pytest ids for parametrized cases: each case's name."""
    return [case.name for case in cases]


def check_case(area, case):
    """Run one case as its own test item: count it under `area` and fail the
    item (naming the case) on a crash, a silent wrong answer, a hang or a
    lost file."""
    counts = COUNTS.setdefault(area, dict.fromkeys(OUTCOMES, 0))
    result, detail = outcome(case)
    counts[result] += 1
    if result in FAILURES:
        PROBLEMS.setdefault(area, []).append(f"{case.name}: {result}: {detail}")
        raise AssertionError(f"{area}: {case.name}: {result}: {detail}")
    return result


def summary_lines():
    header = f"{'area':<28} {'cases':>6} " + " ".join(f"{o:>15}" for o in OUTCOMES)
    lines = [header, "-" * len(header)]
    for area, counts in COUNTS.items():
        lines.append(
            f"{area:<28} {sum(counts.values()):>6} "
            + " ".join(f"{counts[o]:>15}" for o in OUTCOMES)
        )
    return lines
