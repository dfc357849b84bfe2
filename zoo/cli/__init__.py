"""The `zoo` command: one module per sub-command, each thin (parse -> library
-> report), with the run bookkeeping they share in `zoo.cli.runs`.

    zoo presets                              list presets and parameter counts
    zoo convert SRC --out DIR                any checkpoint -> zoo model directory
    zoo pretrain / finetune / evaluate       training through model.fit
    zoo distill                              teacher -> student
    zoo prune                                keep the word pieces a task needs
    zoo export / validate                    SavedModel and TFLite artifacts, proven
    zoo predict                              answers on new text from any format
    zoo similarity                           sentence-embedding cosines (mean pooling)
    zoo demo                                 the main job on the real default
"""

from __future__ import annotations

import argparse
import gc
import os
import signal
import sys

import keras

from zoo.cli import (
    convert,
    demo,
    distill,
    evaluate,
    export,
    finetune,
    interrupts,
    predict,
    presets,
    pretrain,
    prune,
    similarity,
)
from zoo.cli.runs import CliError, HelpFormatter, check_backend, help_examples
from zoo.models import NotATaskModelError
from zoo.utils import children

# Where every writing command may write (zoo.cli.runs; docs/outputs.md).
OUTPUT_RULES = """\
where zoo writes (docs/outputs.md):
  --out is never empty: --out "" (an unset shell variable) is refused, not read as
    the working directory.
  --out is never an input, inside one or around one (--model, --teacher, SRC,
    --config, --data; symbolic links followed): refused before anything is written.
  --force replaces only what zoo wrote: a directory holding its .zoo-output marker
    (and no file zoo did not write there) or an empty one; in a run directory
    (pretrain, finetune, distill, demo) only the entries the command writes, after
    its inputs were checked. Files zoo did not write are never removed.
  zoo export --format saved_model|tpu adds to a TF Serving base: NAME's entry is
    merged into models.config (other entries kept verbatim); a conflicting entry
    needs --force; your README.md and batching_parameters.txt are kept.

exit status: 0 done; 1 an artifact failed validation (export, validate); 2 a bad
  input, a missing file or a full disk (one line naming it); 130 / 143 interrupted
  by SIGINT (Ctrl-C) / SIGTERM: temporaries removed, nothing published, and the
  same command run again starts over (pretrain, finetune, distill, demo: resume).

files read are checked before anything is built (docs/reliability.md): config
  sizes and types in range, and the model's memory within ZOO_MEMORY_LIMIT (bytes,
  or 48G; default half of this machine's memory): raise it for a model you trust."""

# In `zoo --help` order.
COMMANDS = (
    presets,
    convert,
    demo,
    pretrain,
    finetune,
    evaluate,
    distill,
    prune,
    export,
    predict,
    similarity,
)


def build_parser():
    parser = argparse.ArgumentParser(
        prog="zoo",
        description="BERT-family models in Keras 3: real checkpoints, training, "
        "distillation and validated export for phones and TF Serving.",
        formatter_class=HelpFormatter,
        epilog=help_examples(
            """
            zoo presets
            zoo convert path/to/all-MiniLM-L6-v2 --out models/minilm
            zoo demo
            """
        )
        + "\n\n"
        + OUTPUT_RULES,
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    for command in COMMANDS:
        command.register(sub)
    for sub_parser in sub.choices.values():
        # Its defaults, for `runs.training_output` (a run resumed after a
        # flag was added had that flag's default).
        sub_parser.set_defaults(parser=sub_parser)
    return parser


def main(argv=None):
    """Run `zoo ARGV` (sys.argv's when None) and return its exit status;
    the caller's signal handlers are as they were afterwards."""
    return _main(argv, restore=True)


def program():
    """The `zoo` executable and `python -m zoo`: as `main`, except that a
    signal that comes after the command has returned (its output published)
    changes nothing while Python exits, instead of ending in a traceback,
    and that Python's collector leaves alone what lives for the whole run."""
    # The modules just imported (TensorFlow's and Keras's half a million
    # objects) live until the process ends: the collector's full passes
    # during the command skip them (0.28 s of a tiny finetune's one pass).
    gc.freeze()
    try:
        return _main(None, restore=False)
    finally:
        # Python's exit puts back the default action of every signal with a
        # Python handler before it is over: a SIGTERM in that window would
        # kill a process whose command has published its output and whose
        # status is decided. Ignored, it changes nothing, as promised.
        for signum in (signal.SIGINT, signal.SIGTERM):
            if signal.getsignal(signum) not in (signal.SIG_IGN, None):
                signal.signal(signum, signal.SIG_IGN)
        # The process ends next. Python's exit still frees every object by
        # its reference count and runs the atexit functions (temporary
        # directories among them), but its final collections no longer walk
        # TensorFlow's whole object graph: 0.9-1.5 s of every command
        # (`zoo predict` 5.7 -> 4.8 s, a one-epoch tiny finetune 10.9 ->
        # 9.4 s on 2 cores). Only objects a reference cycle keeps alive go
        # unfinalized, and the commands publish and close what they write
        # before they return.
        gc.freeze()


def _main(argv, restore):
    # Installed first: an interrupt while the command parses or imports is
    # the same one line as one during its work.
    command = "command"
    with interrupts.handled(restore=restore) as handling:
        try:
            parser = build_parser()
            args = parser.parse_args(argv)
            command = args.command or command
            status = _run(parser, args, argv)
            handling.check()  # an interrupt a library swallowed is still one
            handling.done = True
            return status
        except BaseException as e:
            # Ctrl-C (KeyboardInterrupt) or SIGTERM (`Interrupted`), perhaps
            # wrapped by C code or a library on its way: the writers removed
            # their temporaries on the way up.
            interrupt = interrupts.raised_in(e)
            if interrupt is None:
                raise
            signum = getattr(interrupt, "signum", signal.SIGINT)
            print(interrupts.interrupted_line(command, signum), file=sys.stderr)
            return interrupts.exit_status(signum)


def _run(parser, args, argv):
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        backend = getattr(args, "backend", None)
        if backend is not None:
            # What the backend cannot run is refused before anything starts.
            check_backend(args)
            if backend != keras.backend.backend():
                return _run_on(backend, argv)
        return args.func(args)
    except CliError as e:
        print(f"zoo {args.command}: error: {e}", file=sys.stderr)
        return 2
    except Exception as e:
        if interrupts.raised_in(e) is not None:
            raise  # an interrupt in a wrapper: `_main` reports it as one
        # A full disk first: whichever layer raised it (an OSError, or
        # TensorFlow's error from a SavedModel or checkpoint write), one line
        # naming the path and the free space there.
        line = interrupts.disk_full_line(args.command, e, getattr(args, "out", None))
        if line is not None:
            print(line, file=sys.stderr)
            return 2
        if isinstance(e, (OSError, ValueError, ImportError, NotATaskModelError)):
            # Bad input, a missing or damaged file, a missing package: each
            # message names what and where; a traceback would only hide it.
            print(f"zoo {args.command}: error: {e}", file=sys.stderr)
            return 2
        raise


def _run_on(backend, argv):
    """The command again in a process started on `backend`: the backend is
    fixed when Keras is imported (it already is, by the `zoo` package). The
    child gets our signals and reports them itself; its status is ours."""
    argv = sys.argv[1:] if argv is None else list(argv)
    env = dict(os.environ, KERAS_BACKEND=backend)
    child, pending = children.start([sys.executable, "-m", "zoo", *argv], env=env)
    with interrupts.forwarded_to(child):
        children.redeliver(pending)  # a signal during Popen goes to the child too
        # wait() returns only when the child is gone; a forwarded
        # signal interrupts it only to run the forwarding handler.
        return interrupts.child_status(child.wait())
