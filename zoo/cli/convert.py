"""`zoo convert`: any checkpoint the zoo reads -> a zoo model directory (or HF / TF1 files)."""

from __future__ import annotations

import pathlib

from zoo.checkpoints import (
    detect_format,
    load_checkpoint,
    save_hf,
    save_model_dir,
    save_tf1,
)
from zoo.cli.runs import (
    OUT_RULES,
    REPLACE_HELP,
    HelpFormatter,
    check_out_apart,
    check_replace_output,
    help_examples,
    output_path,
    run_info,
)


def run(args):
    out = pathlib.Path(args.out)
    # SRC may be a TF1 prefix (DIR/bert_model.ckpt): compared as a path, so
    # an --out of DIR (which holds the prefix's files) is refused too.
    check_out_apart(out, [("SRC", args.src)])
    check_replace_output(out, args.force, "convert")
    fmt = detect_format(args.src)
    print(f"reading {fmt} checkpoint {args.src}")
    encoder, tokenizer = load_checkpoint(
        args.src, lowercase=args.lowercase, allow_partial=args.allow_partial
    )
    if args.to == "zoo":
        # args.json goes inside the model directory, listed in its record.
        save_model_dir(
            encoder,
            out,
            tokenizer,
            extra={"source": str(args.src), "source_format": fmt},
            run_info=run_info(args),
        )
    elif args.to == "hf":
        save_hf(
            encoder, out, vocabulary=tokenizer.vocabulary, lowercase=tokenizer.lowercase
        )
    else:
        save_tf1(encoder, out, vocabulary=tokenizer.vocabulary)
    print(
        f"wrote {args.to} checkpoint {out}: {type(encoder).__name__} "
        f"L{encoder.num_layers} H{encoder.hidden_dim} A{encoder.num_heads}, "
        f"{encoder.count_params():,} parameters, vocabulary {tokenizer.vocabulary_size}"
    )
    return 0


def register(subparsers):
    p = subparsers.add_parser(
        "convert",
        help="turn a checkpoint (HF, google-research TF1, Model Garden, zoo) into a model directory",
        formatter_class=HelpFormatter,
        description="Read an HF BertModel, DistilBertModel or AlbertModel directory "
        "(config.json + model.safetensors; sentence-transformers layout too), a "
        "google-research BERT "
        "release (bert_config.json + bert_model.ckpt.*), a TF Model Garden BertEncoder "
        "checkpoint (the garden extra) or a zoo model directory, and "
        "write it as a zoo model directory (model.keras, vocab.txt, zoo_model.json), or "
        "as HF / TF1 files with --to. --to hf writes BERT encoders as BertModel and "
        "DistilBERT-style students (zoo distill) as DistilBertModel, ALBERT encoders as "
        "AlbertModel, with vocab.txt and tokenizer_config.json; --to tf1 takes BERT "
        "encoders with exact GELU only. ALBERT needs a WordPiece vocab.txt beside the "
        "weights (released ALBERTs ship a SentencePiece spiece.model, which the zoo "
        "tokenizer does not read).",
        epilog=help_examples(
            """
            zoo convert ~/ckpt/uncased_L-12_H-768_A-12 --out models/bert_base
            zoo convert ~/hf/all-MiniLM-L6-v2 --out models/minilm
            zoo convert models/minilm --to tf1 --out /tmp/minilm_tf1
            zoo convert runs/distil3/model --to hf --out /tmp/student_hf
            """
        ),
    )
    p.add_argument("src", type=pathlib.Path, help="checkpoint directory or TF1 prefix")
    p.add_argument(
        "--out", type=output_path, required=True, help=f"output directory: {OUT_RULES}"
    )
    p.add_argument(
        "--to",
        choices=("zoo", "hf", "tf1"),
        default="zoo",
        help="output format (default: %(default)s); hf writes a student as DistilBertModel",
    )
    case = p.add_mutually_exclusive_group()
    case.add_argument(
        "--lowercase",
        dest="lowercase",
        action="store_true",
        default=None,
        help="the vocabulary is uncased (default: read from the checkpoint, else uncased)",
    )
    case.add_argument("--cased", dest="lowercase", action="store_false")
    p.add_argument(
        "--allow-partial",
        action="store_true",
        help="load the tensors that match even if some do not (lists the rest)",
    )
    p.add_argument("--force", action="store_true", help=REPLACE_HELP)
    p.set_defaults(func=run)
