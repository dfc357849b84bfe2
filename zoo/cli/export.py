"""`zoo export` and `zoo validate`: thin argument parsing over export/.

    zoo export --model runs/bbc --format tflite --quantize dynamic_int8 \\
        --sequence-lengths 64,128,256 --data bbc --out exports/bbc_dyn
    zoo export --model runs/bbc --format saved_model --data bbc --out serving
    zoo validate exports/bbc_dyn --data bbc

--data is read by `zoo.text.readers` as every command reads it; which texts
calibrate and which validate is `calibration_and_validation`'s rule (export)
and `validation_data`'s (validate).

`register(subparsers)` adds both to the `zoo` parser. Each command returns an
exit status: 0 passed (or degraded and allowed), 1 failed validation; user
errors raise ValueError / FileNotFoundError, which `zoo` prints (exit 2).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import textwrap
import time

from export import manifest as mf
from export import serving_config
from export.saved_model import export_saved_model, export_tpu_saved_model
from export.serving_config import check_serving_base
from export.specs import ServingVersion, Signatures, TpuBuckets, Validation
from export.tflite import CALIBRATED_MODES, QUANTIZATION_MODES, Quantization, export_tflite
from export.validate import (
    MIN_VALIDATION_TEXTS,
    ExportValidationError,
    format_report,
    validate_artifact,
    write_report,
)
from zoo.checkpoints.model_dir import load_model_dir, read_model_dir_meta
from zoo.cli.runs import (
    OUT_RULES,
    HelpFormatter,
    add_data,
    check_out_apart,
    check_replace_output,
    data_path,
    help_examples,
    output_path,
)
from zoo.configs import DEFAULT_SEQUENCE_LENGTH
from zoo.models import task_of
from zoo.text.readers import CALIBRATION_TEXTS, calibration_and_validation, validation_data

DEFAULT_LENGTHS = {
    "saved_model": [DEFAULT_SEQUENCE_LENGTH],
    "tflite": [DEFAULT_SEQUENCE_LENGTH],
    "tpu": [128, 256, 512],
}


def _lengths(value):
    try:
        lengths = [int(x) for x in value.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{value!r}: give comma-separated integers, e.g. 64,128,256"
        ) from None
    if not lengths:
        raise argparse.ArgumentTypeError("give at least one sequence length, e.g. 128")
    return lengths


def _positive_int(value):
    """An argparse type: the flag's own error for 0, -3 or "x" (the specs'
    checks name their fields, which a command-line user never typed)."""
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"{value!r}: give a positive integer, e.g. 8")
    return number


EXPORT_DESCRIPTION = textwrap.dedent(
    f"""\
    Export a zoo model directory and prove the artifact in the runtime that will
    serve it: the .tflite in LiteRT's interpreter, the SavedModel through the TF1
    session loader (TF Serving's restore path) in a fresh process. Every validation
    text goes through the artifact and the Keras model; a miss of the per-mode
    thresholds fails the export (exit 1) and publishes nothing, unless
    --allow-degraded.

    --data with its own split (bbc, a folder with train/ and test/ entries):
    validation on the test split (validation/ or dev/ when there is no test),
    int8 calibration on the first {CALIBRATION_TEXTS} texts of the train split.
    A single file or folder: the last {CALIBRATION_TEXTS} texts calibrate and the rest
    validate, or all texts do both when fewer than 200 would be left to validate.
    The command prints which split or texts it uses for each.

    --format saved_model  text-in SavedModel at OUT/NAME/VERSION/ (+ models.config,
                          batching_parameters.txt, README.md with the server command)
    --format tflite       OUT/model.tflite (+ vocab.txt, metadata.json, manifest.json,
                          validation.json); one [1, L] signature per length
    --format tpu          ids-in SavedModel at fixed [batch, L] buckets, XLA-compiled

    saved_model/tpu add to a TF Serving base (docs/outputs.md): OUT/models.config
    gets NAME's entry and keeps every other entry verbatim; an entry NAME with
    another base_path, or versions under OUT/NAME that zoo did not write, are
    refused unless --force; a models.config it cannot read is refused.
    batching_parameters.txt and README.md are written only when absent or
    written by zoo (a file of yours is kept: ours goes to
    batching_parameters.zoo.txt / README.zoo.md).
    """
)
EXPORT_EXAMPLES = help_examples(
    """
    zoo export --model runs/bbc_teacher --format tflite --quantize dynamic_int8 \\
        --sequence-lengths 64,128,256 --data bbc --out exports/bbc_dyn
    # data/reviews/ holds train/ and test/ (class folders or .csv): int8
    # calibrates on train, validation runs the test split
    zoo export --model runs/reviews/model --format tflite --quantize int8 \\
        --data data/reviews/ --out exports/reviews_int8 --allow-degraded
    zoo export --model runs/bbc_teacher --format saved_model --data bbc \\
        --out serving --name bbc
    zoo export --model runs/bbc_teacher --format tpu --sequence-lengths 128,256 \\
        --batch-size 8 --bfloat16 --data bbc --out serving_tpu
    """
)
VALIDATE_DESCRIPTION = textwrap.dedent(
    """\
    Verify ARTIFACT_DIR's manifest, load it in its runtime and run --data's texts
    through it: the test split (validation/ or dev/ when there is no test) of data
    with its own split (bbc, a folder with train/ and test/ entries), the texts
    `zoo export` validated on; every text of a single file or folder. The
    reference is --model, else the source model directory recorded
    in metadata.json if it still holds the same model.keras; without one, only the
    artifact's own figures (accuracy when --data has labels) are reported. The
    report is printed (a table, or JSON with --json) and saved as
    ARTIFACT_DIR/validation-TIMESTAMP.json (outside the manifest).
    """
)
VALIDATE_EXAMPLES = help_examples(
    """
    zoo validate exports/bbc_dyn --data bbc
    zoo validate serving/bbc/1 --data data/holdout.csv --model runs/bbc_teacher --json
    """
)


def register(subparsers):
    """Add `export` and `validate` to the `zoo` command's subparsers."""
    _register_export(subparsers)
    _register_validate(subparsers)


def _register_export(subparsers):
    p = subparsers.add_parser(
        "export",
        help="export a zoo model as a validated SavedModel (TF Serving / TPU) or .tflite",
        formatter_class=HelpFormatter,
        description=EXPORT_DESCRIPTION,
        epilog=EXPORT_EXAMPLES,
    )
    p.add_argument("--model", type=pathlib.Path, required=True, help="zoo model directory")
    p.add_argument(
        "--format",
        required=True,
        choices=("saved_model", "tflite", "tpu"),
        help="artifact kind",
    )
    p.add_argument(
        "--quantize",
        choices=QUANTIZATION_MODES,
        default="float32",
        help="tflite only: float32; float16 weights; dynamic_int8 (int8 weights); "
        "int8 (int8 weights and activations in the dense layers, for NPUs/DSPs; "
        "calibrated on --data's calibration texts, see above); int4 (int4 dense weights and "
        "token table, activations quantized on the fly: the smallest and fastest file)",
    )
    p.add_argument(
        "--sequence-lengths",
        type=_lengths,
        default=None,
        metavar="L1,L2",
        help="tflite: one signature per length (first = primary); saved_model: one length; "
        "tpu: the buckets (defaults: the length the model was fine-tuned or distilled at, "
        "zoo_model.json's sequence_length, else 128; the same; 128,256,512)",
    )
    add_data(p)
    p.add_argument(
        "--out",
        type=output_path,
        required=True,
        help="tflite: the artifact directory; saved_model/tpu: TF Serving's base "
        f"directory, added to (see above). {OUT_RULES}",
    )
    _add_serving_options(p)
    p.add_argument(
        "--text-in",
        action="store_true",
        help="tflite: also write model_text.tflite (tokenizer inside; needs tensorflow-text ops)",
    )
    p.add_argument(
        "--allow-degraded",
        action="store_true",
        help="publish an artifact that misses the thresholds, recording the miss",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="tflite: replace --out when zoo wrote it (its .zoo-output marker, no file "
        "zoo did not write); saved_model/tpu: replace an existing --version that zoo "
        "wrote, and take NAME over from another entry of models.config. Never "
        "removes files zoo did not write",
    )
    p.set_defaults(func=run_export)


def _add_serving_options(p):
    """The TF Serving entry (saved_model, tpu) and the TPU's fixed shapes."""
    p.add_argument(
        "--name", help="saved_model/tpu: model name (default: the model directory's)"
    )
    p.add_argument(
        "--version", type=_positive_int, help="saved_model/tpu: version (default: next)"
    )
    p.add_argument("--batch-size", type=_positive_int, default=8, help="tpu: fixed batch")
    p.add_argument("--bfloat16", action="store_true", help="tpu: compute in bfloat16")


def _register_validate(subparsers):
    p = subparsers.add_parser(
        "validate",
        help="re-check an exported artifact in its runtime against its Keras model",
        formatter_class=HelpFormatter,
        description=VALIDATE_DESCRIPTION,
        epilog=VALIDATE_EXAMPLES,
    )
    p.add_argument("artifact", type=pathlib.Path, metavar="ARTIFACT_DIR")
    add_data(p)
    p.add_argument("--model", type=pathlib.Path, help="zoo model directory to compare with")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument(
        "--allow-degraded", action="store_true", help="exit 0 on a threshold miss"
    )
    p.set_defaults(func=run_validate)


def _load_model(path):
    read_model_dir_meta(path)  # FileNotFoundError with the way to make one
    model, tokenizer, meta = load_model_dir(path)
    return model, tokenizer, meta


def _trained_length(args, meta, lengths):
    """--sequence-lengths as given; when it is not, for tflite and
    saved_model the length the model was trained at (a fine-tuned or
    distilled model directory records it), else the format's default."""
    trained = meta.get("sequence_length")
    if args.sequence_lengths is None and args.format != "tpu" and isinstance(trained, int):
        return [trained]
    return lengths


def _fail(error):
    print(str(error), file=sys.stderr)
    return 1


def _print_tokenizer_refusals(path):
    """One line per runtime that refuses the model's tokenizer (metadata.json
    `tokenizer_runtimes`): the file is written, but that runtime will not
    run it, and says why when it opens it."""
    meta = json.loads((path / "metadata.json").read_text(encoding="utf-8"))
    for runtime, verdict in (meta.get("tokenizer_runtimes") or {}).items():
        if verdict != "exact":
            print(f"note: {runtime.replace('_', ' ')}: {verdict}")


def run_export(args):
    lengths = _check_format_flags(args)
    check_out_apart(args.out, [("--model", args.model), ("--data", data_path(args.data))])
    if args.out.exists() and not args.out.is_dir():
        raise ValueError(
            f"--out {args.out} is a file; give a directory (the artifact for "
            "tflite, TF Serving's base directory for saved_model/tpu)."
        )
    name = args.name or args.model.resolve().name
    # Everything that would refuse the output is checked before the model
    # is loaded (and, for a serving base, before the version is built).
    if args.format == "tflite":
        check_replace_output(args.out, args.force, "export")
    else:
        _check_serving_base(args.out, name, args.version, args.force)
    model, tokenizer, meta = _load_model(args.model)
    lengths = _trained_length(args, meta, lengths)
    calibrated = args.format == "tflite" and args.quantize in CALIBRATED_MODES
    calibration, texts, labels, note = calibration_and_validation(
        args.data, task=task_of(model)
    )
    if len(texts) < MIN_VALIDATION_TEXTS:  # refused here, before the export is built
        raise ValueError(
            f"--data {args.data}: {len(texts)} texts to validate on; validation needs at least "
            f"{MIN_VALIDATION_TEXTS} real texts to say anything about label agreement. "
            "Pass more (e.g. --data bbc)."
        )
    print(
        f"exporting {type(model).__name__} from {args.model} as {args.format}"
        f"{' ' + args.quantize if args.format == 'tflite' else ''}, lengths {lengths}; "
        f"validating on {note['validation']}"
        + (f"; calibrating on {note['calibration']}" if calibrated else "")
    )
    t0 = time.time()
    common = dict(
        validation=Validation(texts, labels, allow_degraded=args.allow_degraded),
        source_dir=args.model,
    )
    try:
        if args.format == "tflite":
            path = export_tflite(
                model,
                tokenizer,
                args.out,
                quantization=Quantization(
                    args.quantize, calibration if calibrated else None
                ),
                signatures=Signatures(lengths, text_in=args.text_in),
                **common,
            )
        else:
            path = _export_serving(args, model, tokenizer, name, lengths, common)
    except ExportValidationError as e:
        return _fail(f"zoo export: {e}\nNothing was published.")
    report = json.loads((path / "validation.json").read_text(encoding="utf-8"))
    report["artifact"] = str(path)
    print(format_report(report))
    _print_tokenizer_refusals(path)
    print(f"wrote {path} ({time.time() - t0:.0f} s)")
    if args.format != "tflite":
        _print_serving_files(args.out)
    return 0


def _check_format_flags(args):
    """The sequence lengths, once every flag given applies to --format."""
    if args.format != "tflite" and args.quantize != "float32":
        raise ValueError(
            f"--quantize {args.quantize} applies to --format tflite only; for TPU use --bfloat16."
        )
    if args.format != "tflite" and args.text_in:
        raise ValueError("--text-in applies to --format tflite only.")
    if args.format != "tpu" and (args.bfloat16 or args.batch_size != 8):
        raise ValueError("--bfloat16 and --batch-size apply to --format tpu only.")
    lengths = args.sequence_lengths or DEFAULT_LENGTHS[args.format]
    if args.format == "saved_model" and len(lengths) != 1:
        raise ValueError(
            f"--format saved_model takes one sequence length (its text signatures pad to it); "
            f"received {lengths}. serve_ids accepts any length up to the encoder's maximum."
        )
    return lengths


def _export_serving(args, model, tokenizer, name, lengths, common):
    """--format saved_model or tpu: a new version NAME/VERSION in the TF
    Serving base --out; an existing version is refused with the way out."""
    serving = ServingVersion(name, args.version, overwrite=args.force)
    try:
        if args.format == "saved_model":
            return export_saved_model(
                model,
                tokenizer,
                args.out,
                serving=serving,
                sequence_length=lengths[0],
                **common,
            )
        buckets = TpuBuckets(
            lengths,
            batch_size=args.batch_size,
            compute_dtype="bfloat16" if args.bfloat16 else "float32",
        )
        return export_tpu_saved_model(
            model, tokenizer, args.out, serving=serving, buckets=buckets, **common
        )
    except FileExistsError as e:
        raise ValueError(f"{e} (choose another --version, or --force)") from e


def _check_serving_base(base, name, version, force):
    try:
        check_serving_base(base, name, version, overwrite=force)
    except FileExistsError as e:  # NAME/VERSION exists (ours without --force, or not ours)
        raise ValueError(f"--version {version}: {e}") from e
    except ValueError as e:
        message = str(e)
        raise ValueError(
            message if message.startswith("--") else f"--out {base}: {e}"
        ) from e


def _print_serving_files(base):
    readme = base / "README.md"
    if not readme.is_file() or not readme.read_text(errors="replace").startswith(
        serving_config.README_HEADER
    ):
        readme = base / serving_config.OWN_README
    print(
        f"TF Serving: {base / 'models.config'} (merged; other entries kept); the server "
        f"command: {readme}"
    )


def run_validate(args):
    if not args.artifact.is_dir():
        raise FileNotFoundError(
            f"{args.artifact}: no such directory. Give the directory `zoo export` wrote (for a "
            "SavedModel, BASE/NAME/VERSION)."
        )
    meta = mf.read_metadata(args.artifact)
    texts, labels, described = validation_data(args.data, meta["task"])
    if not args.json:
        print(f"validating {args.artifact} on {described}")
    reference = tokenizer = None
    if args.model is not None:
        reference, tokenizer, _ = _load_model(args.model)
    try:
        report = validate_artifact(
            args.artifact,
            texts,
            labels,
            reference_model=reference,
            tokenizer=tokenizer,
            allow_degraded=args.allow_degraded,
        )
        status = 0
    except ExportValidationError as e:
        report, status = e.report, 1
    report["data"] = described
    path = args.artifact / f"validation-{time.strftime('%Y%m%dT%H%M%S')}.json"
    write_report(report, path)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(format_report(report))
        print(f"report: {path}")
    return status
