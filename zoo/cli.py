"""The `zoo` command: thin argument parsing over library functions.

    zoo presets                              list presets and parameter counts
    zoo convert SRC --out DIR                any checkpoint -> zoo model directory
    zoo demo                                 the main job on the real default
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import textwrap
import time


class CliError(Exception):
    """A user-facing error: printed without a traceback, exit status 2."""


def _versions():
    import importlib.metadata as md

    out = {"python": sys.version.split()[0]}
    for name in ("tensorflow", "tensorflow-text", "keras", "ai-edge-litert", "numpy"):
        try:
            out[name] = md.version(name)
        except md.PackageNotFoundError:
            out[name] = None
    return out


def _git_revision():
    import subprocess

    try:
        return subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=pathlib.Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except Exception:  # not a checkout: an installed package
        return None


def write_run_info(out_dir, args):
    """`args.json` beside a command's outputs: arguments, versions, revision."""
    from zoo.utils.atomic import atomic_file

    info = {
        "command": sys.argv[0:2],
        "arguments": {k: (str(v) if isinstance(v, pathlib.Path) else v)
                      for k, v in vars(args).items() if k != "func"},
        "versions": _versions(),
        "git_revision": _git_revision(),
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    with atomic_file(pathlib.Path(out_dir) / "args.json", "w") as f:
        json.dump(info, f, indent=2)


# --- presets -----------------------------------------------------------------


def cmd_presets(args):
    from zoo.configs import PRESETS

    print(f"{'preset':<18} {'family':<10} {'L':>3} {'H':>5} {'A':>3} {'FF':>5} {'parameters':>13}")
    for name, c in PRESETS.items():
        print(
            f"{name:<18} {c.family:<10} {c.num_layers:>3} {c.hidden_dim:>5} "
            f"{c.num_heads:>3} {c.intermediate_dim:>5} {c.num_parameters():>13,}"
        )
    return 0


# --- convert -----------------------------------------------------------------


def cmd_convert(args):
    from zoo.checkpoints import (
        detect_format,
        load_checkpoint,
        save_hf,
        save_model_dir,
        save_tf1,
    )

    out = pathlib.Path(args.out)
    fmt = detect_format(args.src)
    if out.exists() and any(out.iterdir()) and not args.force:
        raise CliError(f"--out {out} exists and is not empty; pass --force to replace it.")
    print(f"reading {fmt} checkpoint {args.src}")
    encoder, tokenizer = load_checkpoint(
        args.src, lowercase=args.lowercase, allow_partial=args.allow_partial
    )
    if args.to == "zoo":
        save_model_dir(
            encoder, out, tokenizer, extra={"source": str(args.src), "source_format": fmt}
        )
        write_run_info(out, args)
    elif args.to == "hf":
        save_hf(encoder, out, vocabulary=tokenizer.vocabulary)
    else:
        save_tf1(encoder, out, vocabulary=tokenizer.vocabulary)
    print(
        f"wrote {args.to} checkpoint {out}: {type(encoder).__name__} "
        f"L{encoder.num_layers} H{encoder.hidden_dim} A{encoder.num_heads}, "
        f"{encoder.count_params():,} parameters, vocabulary {tokenizer.vocabulary_size}"
    )
    return 0


# --- demo --------------------------------------------------------------------

DEMO_SENTENCES = [
    "A man is playing a guitar.",
    "Someone is strumming a guitar.",
    "The stock market fell sharply today.",
    "Shares dropped steeply on Wall Street.",
    "A chef is cooking pasta in the kitchen.",
]


def cmd_demo(args):
    import numpy as np

    from zoo.checkpoints import load_checkpoint, save_model_dir
    from zoo.models.bert_encoder import padding_mean
    from zoo.text.corpora import minilm_checkpoint_dir

    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    model_dir = out / "minilm"
    t0 = time.time()
    if (model_dir / "zoo_model.json").is_file() and not args.force:
        print(f"[1/2] reusing converted checkpoint {model_dir}")
        encoder, tokenizer = load_checkpoint(model_dir)
    else:
        src = minilm_checkpoint_dir()
        print(f"[1/2] converting the real all-MiniLM-L6-v2 checkpoint from {src}")
        encoder, tokenizer = load_checkpoint(src)
        save_model_dir(encoder, model_dir, tokenizer, extra={"source": str(src)})
    print(
        f"      BertEncoder L{encoder.num_layers} H{encoder.hidden_dim} "
        f"A{encoder.num_heads}: {encoder.count_params():,} parameters "
        f"({time.time() - t0:.1f} s)"
    )
    print("[2/2] encoding sentences (mean pooling over real tokens, L2-normalised)")
    batch = tokenizer(DEMO_SENTENCES, sequence_length=32)
    out_t = encoder(batch)
    emb = np.array(padding_mean(out_t["sequence_output"], batch["padding_mask"]))
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    sim = emb @ emb.T
    width = max(len(s) for s in DEMO_SENTENCES)
    print("\ncosine similarity")
    print(" " * (width + 2) + " ".join(f"{i:>6}" for i in range(len(DEMO_SENTENCES))))
    for i, s in enumerate(DEMO_SENTENCES):
        print(f"{s:<{width}} {i} " + " ".join(f"{v:6.3f}" for v in sim[i]))
    print(
        "\npublished for this model: guitar/strumming 0.719, guitar/stock market -0.054;"
        f" here {sim[0, 1]:.3f} and {sim[0, 2]:.3f}"
    )
    result = {"sentences": DEMO_SENTENCES, "similarity": sim.round(6).tolist()}
    (out / "similarity.json").write_text(json.dumps(result, indent=2))
    write_run_info(out, args)
    return 0


# --- parser ------------------------------------------------------------------


def _examples(text):
    return "examples:\n" + textwrap.indent(textwrap.dedent(text).strip(), "  ")


def build_parser():
    parser = argparse.ArgumentParser(
        prog="zoo",
        description="BERT-family models in Keras 3: real checkpoints, training, "
        "distillation and validated export for phones and TF Serving.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=_examples(
            """
            zoo presets
            zoo convert path/to/all-MiniLM-L6-v2 --out models/minilm
            zoo demo
            """
        ),
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser(
        "presets",
        help="list encoder presets with parameter counts",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=_examples("zoo presets"),
    )
    p.set_defaults(func=cmd_presets)

    p = sub.add_parser(
        "convert",
        help="turn a checkpoint (HF, google-research TF1, zoo) into a model directory",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Read an HF BertModel directory (config.json + model.safetensors; "
        "sentence-transformers layout too), a google-research BERT release "
        "(bert_config.json + bert_model.ckpt.*) or a zoo model directory, and write it "
        "as a zoo model directory (model.keras, vocab.txt, zoo_model.json), or as HF / "
        "TF1 files with --to.",
        epilog=_examples(
            """
            zoo convert ~/ckpt/uncased_L-12_H-768_A-12 --out models/bert_base
            zoo convert ~/hf/all-MiniLM-L6-v2 --out models/minilm
            zoo convert models/minilm --to tf1 --out /tmp/minilm_tf1
            """
        ),
    )
    p.add_argument("src", type=pathlib.Path, help="checkpoint directory or TF1 prefix")
    p.add_argument("--out", type=pathlib.Path, required=True, help="output directory")
    p.add_argument(
        "--to", choices=("zoo", "hf", "tf1"), default="zoo", help="output format (default zoo)"
    )
    case = p.add_mutually_exclusive_group()
    case.add_argument(
        "--lowercase", dest="lowercase", action="store_true", default=None,
        help="the vocabulary is uncased (default: read from the checkpoint, else uncased)",
    )
    case.add_argument("--cased", dest="lowercase", action="store_false")
    p.add_argument(
        "--allow-partial", action="store_true",
        help="load the tensors that match even if some do not (lists the rest)",
    )
    p.add_argument("--force", action="store_true", help="replace a non-empty --out")
    p.set_defaults(func=cmd_convert)

    p = sub.add_parser(
        "demo",
        help="the main job on the real default checkpoint (all-MiniLM-L6-v2)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Converts the real all-MiniLM-L6-v2 checkpoint (installed by "
        "`make setup`) into a zoo model directory, encodes sentences and prints their "
        "cosine similarities next to the published figures for this model.",
        epilog=_examples("zoo demo\nzoo demo --out /tmp/demo --force"),
    )
    p.add_argument("--out", type=pathlib.Path, default=pathlib.Path("runs/demo"))
    p.add_argument("--force", action="store_true", help="redo finished stages")
    p.set_defaults(func=cmd_demo)
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return args.func(args)
    except CliError as e:
        print(f"zoo {args.command}: error: {e}", file=sys.stderr)
        return 2
    except (FileNotFoundError, ValueError, ImportError) as e:
        print(f"zoo {args.command}: error: {e}", file=sys.stderr)
        return 2
