"""Run bookkeeping shared by the commands: args.json (arguments, versions,
git revision), what a training command does with an existing --out (resume,
refuse, start over), the user-facing error type, and the --data help every
data-reading command shares."""

from __future__ import annotations

import json
import pathlib
import shutil
import sys
import textwrap
import time

from zoo.text.readers import DATA_FORMS
from zoo.utils.atomic import atomic_file
from zoo.utils.jsonfile import read_json_object
from zoo.utils.provenance import git_revision, versions


class CliError(Exception):
    """A user-facing error: printed without a traceback, exit status 2."""


BATCH_HELP = (
    "global batch per step: all replicas of all workers together, the same "
    "under every --strategy (each of R replicas computes batch/R)"
)
ACCUMULATION_HELP = (
    "average the gradients of N steps into one update: N x --batch-size "
    "examples per update (e.g. --batch-size 32 --gradient-accumulation 8 "
    "trains at BERT's 256 on a small machine); default 1"
)


def plain_arguments(args):
    """The command's arguments as args.json stores them (paths as strings)."""
    return {k: _plain(v) for k, v in vars(args).items() if k not in ("func", "parser")}


def _plain(value):
    """A value as args.json stores it (paths as strings, tuples as lists)."""
    return json.loads(
        json.dumps(str(value) if isinstance(value, pathlib.Path) else value, default=str)
    )


def run_info(args):
    """What args.json records: command, arguments, versions, git revision, time."""
    return {
        "command": sys.argv[0:2],
        "arguments": plain_arguments(args),
        "versions": versions(),
        "git_revision": git_revision(),
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def write_run_info(out_dir, args):
    """`args.json` beside a command's outputs (see `run_info`)."""
    info = run_info(args)
    with atomic_file(pathlib.Path(out_dir) / "args.json", "w") as f:
        json.dump(info, f, indent=2)


# What a training command writes under --out; --force removes these (and
# nothing else) to start over.
TRAINING_OUTPUTS = ("backup", "model", "args.json", "history.json", "metrics.json")
# Arguments that may differ between a run and its resume.
_RESUME_FREE_ARGUMENTS = {"force", "verbose"}
# The --data help of every command that reads task data (finetune, evaluate,
# distill, prune, export, validate): one text, so the forms cannot drift apart.
DATA_HELP = (
    f"{DATA_FORMS}. export and validate also take unlabelled texts (rows with `text` and "
    "optional `text_b`); zoo distill --mode general takes raw text as zoo pretrain does. "
    "Which split the command trains, scores, calibrates or validates on: see its description."
)
FORCE_HELP = (
    "start over: remove this command's outputs in --out (backup/, model/, "
    "args.json, history.json, metrics.json) instead of resuming or refusing"
)


def training_output(out, args, force, *, remove=True):
    """What a training command (pretrain, finetune, distill) does with --out:
    "new" (empty or --force: earlier outputs removed), "resume" (our run,
    same arguments, not finished) or "finished" (metrics.json written and no
    backup left). A directory we did not write, or our run with other
    arguments, is refused: resuming it would mix two runs' weights.
    `remove=False` is for the non-chief workers of a multi-worker run: it
    deletes nothing, and a --out without args.json (the chief writes it, and
    may not have yet) counts as the chief's run to resume."""
    out = pathlib.Path(out)
    if out.exists() and not out.is_dir():
        raise CliError(
            f"--out {out} is a file; give a directory (new, or this command's "
            "earlier --out)."
        )
    if not out.exists() or not any(out.iterdir()):
        return "new"
    if force:
        for name in TRAINING_OUTPUTS if remove else ():
            path = out / name
            if path.is_dir():
                shutil.rmtree(path)
            elif path.exists():
                path.unlink()
        return "new"
    if not (out / "args.json").is_file():
        if not remove:
            return "resume"
        if any((out / m).exists() for m in ("backup", "model")):
            raise CliError(
                f"--out {out} holds a run without its args.json; pass --force to "
                "start over there, or choose another --out."
            )
        raise CliError(
            f"--out {out} is not empty and was not written by this command; "
            "choose another directory or pass --force."
        )
    saved = read_json_object(out / "args.json", "pass --force to start over").get(
        "arguments", {}
    )
    now = plain_arguments(args)
    parser = getattr(args, "parser", None)

    def unchanged(k):
        if k in _RESUME_FREE_ARGUMENTS or saved.get(k) == now.get(k):
            return True
        # A flag added after that run was started: the run had its default.
        return (
            k not in saved
            and parser is not None
            and now.get(k) == _plain(parser.get_default(k))
        )

    changed = sorted(k for k in set(saved) | set(now) if not unchanged(k))
    if changed:
        listed = "; ".join(
            f"--{k.replace('_', '-')} {saved.get(k)!r} there, {now.get(k)!r} now"
            for k in changed
        )
        raise CliError(
            f"--out {out} holds a run with other arguments ({listed}). Re-run with "
            "the same arguments to resume it, choose another --out, or pass "
            "--force to start over."
        )
    if (out / "metrics.json").is_file() and not (out / "backup").exists():
        return "finished"
    return "resume"


def report_finished(out):
    """Print a finished run's metrics instead of training it again."""
    out = pathlib.Path(out)
    print(
        json.dumps(
            read_json_object(out / "metrics.json", "pass --force to train again"), indent=2
        )
    )
    print(
        f"{out} holds this run, finished (metrics above, model in {out / 'model'}); "
        "nothing to do. Pass --force to train again."
    )
    return 0


VERBOSE_HELP = (
    "Keras progress: 0 silent, 1 a progress bar, 2 one line per epoch (default: 1 "
    "on a terminal, 2 otherwise)"
)


def add_verbose(parser):
    """The same --verbose for every training command."""
    parser.add_argument(
        "--verbose", type=int, default=None, choices=(0, 1, 2), help=VERBOSE_HELP
    )


def keras_verbosity(value):
    """--verbose, or 1 on a terminal and 2 in a log file."""
    return value if value is not None else (1 if sys.stdout.isatty() else 2)


def help_examples(text):
    return "examples:\n" + textwrap.indent(textwrap.dedent(text).strip(), "  ")
