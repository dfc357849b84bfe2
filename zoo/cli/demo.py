"""`zoo demo`: the main job end to end on the real default (the zoo.demo package)."""

from __future__ import annotations

import argparse
import dataclasses
import pathlib

from zoo.cli.runs import (
    OUT_RULES,
    CliError,
    HelpFormatter,
    check_out_apart,
    help_examples,
    output_path,
    run_info,
    write_run_info,
)
from zoo.demo import DemoConfig, DemoError, input_paths, run_demo


def _students(value):
    try:
        layers = tuple(int(v) for v in value.split(",") if v.strip())
    except ValueError:
        layers = ()
    if not layers or any(k < 1 or k > 5 for k in layers):
        raise argparse.ArgumentTypeError(
            f"--students {value!r}: give student depths below the teacher's 6 layers, "
            "e.g. 3 or 3,2"
        )
    return layers


def run(args):
    check_out_apart(args.out, input_paths())
    config = DemoConfig.fast() if args.fast else DemoConfig()
    if args.students:
        config = dataclasses.replace(config, students=args.students)
    if args.student_intermediate_dim is not None:
        width = args.student_intermediate_dim
        if not 1 <= width <= 1536:
            raise CliError(
                f"--student-intermediate-dim {width}: the students keep some of "
                "the teacher's 1536 feed-forward units per layer; give 1..1536."
            )
        config = dataclasses.replace(config, student_intermediate_dim=width)
    if args.student_hidden_dim is not None:
        width = args.student_hidden_dim
        if not (32 <= width <= 384 and width % 32 == 0):
            raise CliError(
                f"--student-hidden-dim {width}: the students keep whole heads of the "
                "teacher's 32 features each; give a multiple of 32 up to 384."
            )
        config = dataclasses.replace(config, student_hidden_dim=width)
    assets = args.android_assets
    if assets is None:
        default = (
            pathlib.Path(__file__).resolve().parents[2] / "android_demo/app/src/main/assets"
        )
        assets = default if default.is_dir() and not args.fast else None
    elif str(assets) == "none":
        assets = None
    info = run_info(args)
    try:
        run_demo(args.out, config, force=args.force, android_assets=assets, args_info=info)
    except DemoError as e:
        raise CliError(str(e)) from e
    write_run_info(args.out, args)
    return 0


def register(subparsers):
    p = subparsers.add_parser(
        "demo",
        help="the main job: fine-tune, distil, export and measure the real default",
        formatter_class=HelpFormatter,
        description="On the real all-MiniLM-L6-v2 checkpoint and BBC News (installed by "
        "`make setup`): convert it, fine-tune it as the teacher, distil a 2-layer student "
        "(teacher layers 0,3; hidden width 256 of 384, feed-forward 384 of 1536), prune its vocabulary to the word pieces BBC's training "
        "articles need, export teacher and student as text-in SavedModels (TF Serving "
        "layout) and the pruned student as .tflite in float32, float16, dynamic_int8, int8 "
        "and int4 (each with a MediaPipe Tasks file), validate every artifact in its runtime "
        "on the BBC test split, measure size, batch-1 latency and accuracy, and write "
        "OUT/report.md, report.json and PNG plots. "
        "About 7-14 minutes on a 2-core CPU (--fast: a few minutes, capped training). A "
        "re-run skips stages whose outputs exist and verify; --force redoes them; a killed "
        "training stage resumes at its last epoch.",
        epilog=help_examples(
            """
            zoo demo                          # runs/demo/report.md
            zoo demo --fast --out /tmp/demo   # the CI-sized run
            zoo demo --students 3,2 --out runs/demo32 --force
            """
        ),
    )
    p.add_argument(
        "--out",
        type=output_path,
        default=pathlib.Path("runs/demo"),
        help="output directory (default: %(default)s): "
        + OUT_RULES
        + "; one not empty is refused unless zoo demo made it",
    )
    p.add_argument(
        "--fast",
        action="store_true",
        help="CI-sized: sequence 64, one capped epoch per training stage",
    )
    p.add_argument(
        "--students",
        type=_students,
        default=None,
        help="student depths, e.g. 2 or 3,2 (default 2); the first one is "
        "pruned and gets every .tflite mode",
    )
    p.add_argument(
        "--student-intermediate-dim",
        type=int,
        default=None,
        metavar="N",
        help="the students' feed-forward width: the N strongest of each copied "
        "layer's 1536 units (default 384, a quarter: the narrowest whose int4 "
        "phone file kept 99%% of the teacher's validation accuracy on BBC; "
        "--fast: 768; 1536 keeps them all); as "
        "zoo distill --student-intermediate-dim",
    )
    p.add_argument(
        "--student-hidden-dim",
        type=int,
        default=None,
        metavar="N",
        help="the students' hidden width, a multiple of the teacher's 32-wide "
        "heads (default 256: 8 of 12 heads, the narrowest whose int4 phone file kept "
        "99%% of the teacher's validation accuracy on BBC; --fast and 384: the "
        "teacher's); as zoo distill --student-hidden-dim",
    )
    p.add_argument(
        "--android-assets",
        type=pathlib.Path,
        default=None,
        help="folder for the phone model the report picks (its model.tflite), "
        "vocab.txt and metadata.json, copied after the report (default: "
        "android_demo/app/src/main/assets when it exists, not with --fast; "
        "`none` to skip)",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="redo every stage (each removes only its own outputs in --out; other "
        "files there stay)",
    )
    p.set_defaults(func=run)
