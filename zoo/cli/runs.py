"""Run bookkeeping shared by the commands: args.json (arguments, versions,
git revision), the rules for --out that every writing command follows, what
a training command does with an existing --out (resume, refuse, start
over), the user-facing error type, and what the commands' parsers share:
the --help layout (`HelpFormatter`: every default shown) and the flags of
more than one command (--data, a run's --out and --force, the training
schedule, how a training run runs).

The rules for --out (docs/outputs.md; each is checked before anything is
written or loaded):

- it is never empty: `--out ""` (an unset shell variable) is refused when
  the command line is parsed (`output_path`), instead of meaning the
  working directory;
- it is never equal to, inside, or around an input of the command
  (`check_out_apart`, resolved paths, symbolic links followed): the output
  would be written over the input, and --force would remove it;
- --force replaces only what zoo wrote (`check_replace_output` for a
  published directory, `training_output` for a run directory) and never
  files it did not write.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import pathlib
import shutil
import sys
import textwrap
import time

from zoo.configs import DEFAULT_SEQUENCE_LENGTH
from zoo.text.readers import DATA_FORMS
from zoo.train import distribute
from zoo.train.optimization import AUTO_EPOCHS, AUTO_MAX_EPOCHS, AUTO_MIN_UPDATES
from zoo.utils.atomic import (
    OUTPUT_MARKER,
    ForeignDirectoryError,
    atomic_file,
    check_replaceable,
    output_marker,
    write_run_marker,
)
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
    "trains at BERT's 256 on a small machine)"
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
    """What args.json records: command, arguments, versions, git revision,
    time, and for arguments given as Hub names the commit each resolved to
    (`resolved`)."""
    info = {
        "command": sys.argv[0:2],
        "arguments": plain_arguments(args),
        "versions": versions(),
        "git_revision": git_revision(),
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    resolved = hub_sources(args)
    if resolved:
        info["resolved"] = resolved
    return info


def write_run_info(out_dir, args):
    """`args.json` beside a command's outputs (see `run_info`)."""
    info = run_info(args)
    with atomic_file(pathlib.Path(out_dir) / "args.json", "w") as f:
        json.dump(info, f, indent=2)


# What a training command writes under --out; --force removes these (and
# nothing else) to start over.
TRAINING_OUTPUTS = ("backup", "model", "args.json", "history.json", "metrics.json")
TRAINING_COMMANDS = ("pretrain", "finetune", "distill")
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
    "args.json, history.json, metrics.json) instead of resuming or refusing; only in "
    "a run directory zoo wrote (its .zoo-output marker, or an older zoo's args.json of "
    "this kind of run), after the inputs were checked; other files there are kept"
)
REPLACE_HELP = (
    "replace --out when it is not empty: only a directory zoo wrote (its .zoo-output "
    "marker) holding no file zoo did not write; never anything else"
)
OUT_RULES = (
    "never empty, never equal to, inside or around an input; a new or empty directory, or "
    "one zoo wrote (docs/outputs.md)"
)
RUN_OUT_HELP = (
    "the run directory (backup/, model/, args.json, history.json, metrics.json): "
    + OUT_RULES
    + "; re-running the same command resumes it"
)


def output_path(value):
    """The argparse type of every --out: a path, never empty. argparse's
    `type=pathlib.Path` turns "" into "." (the working directory), and an
    unset shell variable (`--out "$OUT"`) gives "": with --force that
    removed the user's files in the working directory (issue #35)."""
    if not value.strip():
        raise argparse.ArgumentTypeError(
            f'received {value!r}, an empty path; an unset shell variable (--out "$OUT" '
            "with OUT unset) is the usual cause. Give the directory to write, e.g. "
            "--out runs/bbc (--out . names the working directory, if you mean it)."
        )
    return pathlib.Path(value)


HUB_PREFIX = "hf://"


def checkpoint_path(value):
    """The argparse type of a checkpoint (--model, --teacher, SRC): a path,
    or a name kept as written (a Path would fold its double slash): a Hub
    name `hf://OWNER/NAME[@REVISION]`, a keras-hub preset name. The library
    fetches names."""
    if not value.strip():
        raise argparse.ArgumentTypeError(
            f"received {value!r}, an empty path; give a checkpoint directory or a Hub name "
            "(hf://OWNER/NAME)."
        )
    # Names, not paths: Hub names and keras-hub preset names (keras_hub:NAME,
    # kaggle://...) go to the library as written.
    named = value.startswith((HUB_PREFIX, "keras_hub:")) or "://" in value
    return value if named else pathlib.Path(value)


def hub_sources(args):
    """`{argument: "hf://OWNER/NAME@COMMIT"}` for every argument given as a
    Hub name, fetched (or found in the Hub cache) now: what args.json
    records, so a run names the exact weights it read."""
    names = {
        k: v
        for k, v in vars(args).items()
        if isinstance(v, str) and v.startswith(HUB_PREFIX)
    }
    if not names:
        return {}
    # Lazy: the checkpoints package imports TensorFlow, which `zoo --help`
    # and the commands without a Hub name need not load.
    from zoo.checkpoints import hub

    return {k: hub.fetch(v).source for k, v in names.items()}


def _resolved(path):
    """`path` absolute, with every symbolic link in it followed."""
    return pathlib.Path(os.path.abspath(pathlib.Path(path))).resolve()


def data_path(value):
    """The path a --data (or --config) value names, or None for a name
    (`bbc`, `austen+wordnet`, a preset): an existing file or folder, a value
    that looks like a path, or a glob's directory (the part before the first
    wildcard)."""
    text = str(value)
    if not text:
        return None
    if glob.has_magic(text):
        parts = pathlib.PurePath(text).parts
        fixed = []
        for part in parts:
            if glob.has_magic(part):
                break
            fixed.append(part)
        return pathlib.Path(*fixed) if fixed else pathlib.Path(".")
    if os.path.lexists(text) or os.sep in text or "/" in text:
        return pathlib.Path(text)
    return None


def check_out_apart(out, inputs):
    """Refuse an --out that is, lies inside, or contains one of `inputs`
    (`(flag, path)` pairs; a None path is skipped), compared as resolved
    paths: the command would write over what it reads, and --force would
    remove it (`finetune --model RUN/model --out RUN --force` deleted its own
    input before reading it)."""
    where = _resolved(out)
    for flag, path in inputs:
        if path is None or str(path).startswith(HUB_PREFIX):  # a Hub name: not a path here
            continue
        source = _resolved(path)
        if where == source:
            relation = "is"
        elif source in where.parents:
            relation = "lies inside"
        elif where in source.parents:
            relation = "contains"
        else:
            continue
        same = "" if str(out) == str(where) else f" ({where})"
        raise CliError(
            f"--out {out}{same} {relation} {flag} {path}: the command would write over "
            f"its own input (and --force would remove it). Give an --out outside every "
            f"input, e.g. a new directory beside {path}."
        )


def check_replace_output(out, force, command):
    """--out of a command that publishes one directory (convert, prune,
    export tflite): new or empty; with --force also a directory zoo wrote
    that holds no file zoo did not write. Checked before any input is
    loaded; the publishing `atomic_directory` checks again at the end."""
    out = pathlib.Path(out)
    if out.exists() and not out.is_dir():
        raise CliError(f"--out {out} is a file; give a directory (new, or one zoo wrote).")
    if not out.exists() or not any(out.iterdir()):
        return
    if not force:
        raise CliError(
            f"--out {out} exists and is not empty; pass --force to replace it (only a "
            "directory zoo wrote), or choose another --out."
        )
    try:
        check_replaceable(out, f"zoo {command}")
    except ForeignDirectoryError as e:
        raise CliError(f"--out {e}") from None


def _legacy_run(out):
    """The command of an older zoo's run in `out` (one written before run
    directories had a marker): its own args.json, readable, naming a
    training command. None for anything else (another tool's args.json)."""
    path = out / "args.json"
    if not path.is_file():
        return None
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
        command = info["arguments"]["command"]
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return None
    ours = isinstance(info.get("versions"), dict) and command in TRAINING_COMMANDS
    return command if ours else None


def _remove_entry(path):
    """Remove one output entry; a symbolic link is removed, not followed."""
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)


def _listed(names, limit=6):
    names = sorted(names)
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def training_output(out, args, force, *, remove=True):
    """What a training command (pretrain, finetune, distill) does with --out:
    "new" (empty or --force: earlier outputs removed), "resume" (our run,
    same arguments, not finished) or "finished" (metrics.json written and no
    backup left). A directory we did not write is refused, --force or not
    (its files are not ours to remove); so is our run with other arguments
    (resuming it would mix two runs' weights) unless --force, or unless it
    holds nothing but its args.json (it stopped before training: "new").

    Ours: the run marker (`.zoo-output`, written by `start_run`) of a
    training command, or, for runs of an older zoo, our own readable
    args.json of one; --force removes only `TRAINING_OUTPUTS` there.
    `remove=False` is for the non-chief workers of a multi-worker run: it
    deletes nothing, and a --out without args.json (the chief writes it, and
    may not have yet) counts as the chief's run to resume."""
    out = pathlib.Path(out)
    if out.exists() and not out.is_dir():
        raise CliError(
            f"--out {out} is a file; give a directory (new, or this command's "
            "earlier --out)."
        )
    entries = {p.name for p in out.iterdir()} - {OUTPUT_MARKER} if out.exists() else set()
    if not entries:
        return "new"
    if not remove:
        if force:
            return "new"
        if not (out / "args.json").is_file():
            return "resume"
        return _compare_arguments(out, args, remove=False)
    marker = output_marker(out)
    if marker is None:
        legacy = _legacy_run(out)
        if legacy is None:
            raise CliError(
                f"--out {out} is not empty ({_listed(entries)}) and was not written by zoo "
                f"(no {OUTPUT_MARKER} marker, no args.json of a zoo run); --force never "
                "removes files zoo did not write. Choose another --out (new or empty)."
            )
    elif marker["kind"] != "run" or marker["command"] not in TRAINING_COMMANDS:
        what = (
            f"the run directory of `zoo {marker['command']}`"
            if marker["kind"] == "run"
            else "a model directory or artifact zoo wrote"
        )
        raise CliError(
            f"--out {out} is {what}, not a training run's directory; a run is never "
            "written into it, not even with --force. Choose another --out."
        )
    if force:
        for name in TRAINING_OUTPUTS:
            path = out / name
            if path.exists() or path.is_symlink():
                _remove_entry(path)
        return "new"
    if not (out / "args.json").is_file():
        if any((out / m).exists() for m in ("backup", "model")):
            raise CliError(
                f"--out {out} holds a run without its args.json; pass --force to "
                "start over there, or choose another --out."
            )
        return "new"
    return _compare_arguments(out, args)


def _compare_arguments(out, args, remove=True):
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
    trained = [n for n in TRAINING_OUTPUTS if n != "args.json" and (out / n).exists()]
    if changed and not trained:
        # Only args.json: that run stopped before training anything (a late
        # refusal, a kill while loading), so there are no weights to mix.
        if remove:
            (out / "args.json").unlink()
            print(f"--out {out}: its last run stopped before training; starting over")
        return "new"
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


def start_run(out, args, *, chief=True):
    """Create a training run's --out; the chief marks it as ours (so a
    later --force may start over there) and writes args.json."""
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if chief:
        write_run_marker(
            out, args.command, [f"{n}/" if "." not in n else n for n in TRAINING_OUTPUTS]
        )
        write_run_info(out, args)


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


def add_data(parser):
    """--data as every command that reads task data takes it (`DATA_HELP`)."""
    parser.add_argument("--data", required=True, help=DATA_HELP)


def add_run_output(parser):
    """--out and --force of a training command (pretrain, finetune, distill):
    a run directory that a re-run resumes (`training_output`)."""
    parser.add_argument("--out", type=output_path, required=True, help=RUN_OUT_HELP)
    parser.add_argument("--force", action="store_true", help=FORCE_HELP)


def add_schedule(
    parser,
    *,
    epochs=None,
    batch_size=16,
    sequence_length=DEFAULT_SEQUENCE_LENGTH,
    learning_rate=5e-5,
    warmup_fraction=0.1,
    weight_decay=0.01,
):
    """The training numbers of finetune and distill, with one meaning in
    both: epochs, global batch, accumulation, sequence length and the AdamW
    schedule (`zoo.train.optimization.make_adamw`). zoo pretrain takes its
    own: their defaults come from the --recipe."""
    parser.add_argument(
        "--epochs",
        type=int,
        default=epochs,
        help="passes over the data (default: chosen from the data's size: at least "
        f"{AUTO_EPOCHS} and {AUTO_MIN_UPDATES} updates, at most {AUTO_MAX_EPOCHS}, "
        "ending early when validation stops improving (--patience); "
        f"{AUTO_EPOCHS} with --steps-per-epoch)",
    )
    parser.add_argument("--batch-size", type=int, default=batch_size, help=BATCH_HELP)
    add_gradient_accumulation(parser)
    parser.add_argument(
        "--sequence-length",
        type=int,
        default=sequence_length,
        help="word pieces per example, [CLS] and [SEP] included",
    )
    parser.add_argument(
        "--learning-rate",
        type=float,
        default=learning_rate,
        help="peak AdamW rate, reached after the warmup, then decayed linearly to 0",
    )
    parser.add_argument(
        "--warmup-fraction",
        type=float,
        default=warmup_fraction,
        help="share of the updates warming the rate up from 0",
    )
    parser.add_argument(
        "--weight-decay",
        type=float,
        default=weight_decay,
        help="AdamW's decoupled weight decay (not on LayerNorm weights and biases)",
    )


def add_gradient_accumulation(parser):
    parser.add_argument(
        "--gradient-accumulation", type=int, default=1, metavar="N", help=ACCUMULATION_HELP
    )


BACKENDS = ("tensorflow", "jax", "torch")


def add_backend(parser):
    """--backend: the Keras backend a training command runs on (issue #39)."""
    parser.add_argument(
        "--backend",
        choices=BACKENDS,
        # What this process's Keras runs (KERAS_BACKEND, else tensorflow): the
        # `zoo` package sets KERAS_BACKEND before importing Keras.
        default=os.environ.get("KERAS_BACKEND", "tensorflow"),
        help="the Keras backend to train on (default: %(default)s: $KERAS_BACKEND when "
        "set, else tensorflow). Data pipelines stay tf.data on every backend; the model "
        "directory written loads on TensorFlow, where zoo export and zoo validate run. "
        "jax and torch need --strategy none",
    )


def check_backend(args):
    """A CliError unless --backend can run the rest of `args`."""
    if args.backend != "tensorflow" and args.strategy != "none":
        raise CliError(
            f"--backend {args.backend} with --strategy {args.strategy}: the strategies "
            "are TensorFlow's tf.distribute; use --backend tensorflow, or --strategy none."
        )


def add_run_control(parser):
    """--steps-per-epoch, --seed, --strategy, --tpu and --verbose: how every
    training command runs, whatever it trains."""
    parser.add_argument(
        "--steps-per-epoch",
        type=int,
        default=None,
        help="cap each epoch at its first N batches (default: a whole pass)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed of initialisation, data order and dropout: the same seed and "
        "arguments train the same weights",
    )
    parser.add_argument(
        "--strategy",
        choices=distribute.STRATEGIES,
        default="none",
        help=distribute.STRATEGY_HELP,
    )
    parser.add_argument("--tpu", default=None, help=distribute.TPU_HELP)
    add_verbose(parser)


def shows_default(action):
    """Whether `--help` states `action`'s default: an option that takes a
    value and whose default is a value. None and False mean "not given"
    (the help says what happens then); a flag's own default (store_true,
    store_false, store_const) is only the flag's absence: `--cased`'s True
    is not the default of `lowercase`, which `--lowercase` sets to None."""
    return (
        action.nargs != 0
        and action.default is not None
        and action.default is not False
        and action.default is not argparse.SUPPRESS
    )


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """The layout of every command's `--help`: descriptions as written (their
    line breaks and tables kept, as `RawDescriptionHelpFormatter`), and each
    option's default (`shows_default`) after its help, from the parser, so
    that the text cannot drift from the code. A help that says the default
    itself places `%(default)s`. Not `ArgumentDefaultsHelpFormatter`: it
    would add "(default: None)" and "(default: False)" to most options, and
    "(default: True)" to --cased."""

    def _get_help_string(self, action):
        text = action.help or ""
        if shows_default(action) and "%(default)" not in text:
            text += " (default: %(default)s)"
        return text


def keras_verbosity(value):
    """--verbose, or 1 on a terminal and 2 in a log file."""
    return value if value is not None else (1 if sys.stdout.isatty() else 2)


def help_examples(text):
    return "examples:\n" + textwrap.indent(textwrap.dedent(text).strip(), "  ")
