"""`zoo convert`: any checkpoint the zoo reads -> a zoo model directory (or HF /
TF1 files, or a keras-hub preset)."""

from __future__ import annotations

import pathlib

from zoo.checkpoints import (
    detect_format,
    hub,
    keras_hub,
    load_checkpoint,
    load_model_dir,
    save_hf,
    save_model_dir,
    save_tf1,
)
from zoo.cli.runs import (
    OUT_RULES,
    REPLACE_HELP,
    CliError,
    HelpFormatter,
    check_out_apart,
    check_replace_output,
    checkpoint_path,
    help_examples,
    output_path,
    run_info,
)


def source(value):
    """SRC: `checkpoint_path`'s (a path or a Hub name), or a keras-hub preset
    name kept as written (a Path would fold kaggle://'s double slash)."""
    return value if keras_hub.is_preset_name(value) else checkpoint_path(value)


def _labels(args, fmt):
    if args.labels is None:
        return None
    if fmt != "keras-hub" or args.to != "zoo":
        raise CliError(
            f"--labels names a keras-hub classifier's classes when it becomes a zoo model "
            f"directory; SRC is a {fmt} checkpoint and --to is {args.to}."
        )
    return [name.strip() for name in args.labels.split(",")]


def _from_keras_hub(args, out, fmt):
    imported = keras_hub.read_keras_hub(
        args.src, labels=_labels(args, fmt), lowercase=args.lowercase
    )
    for note in imported.notes:
        print(f"note: {note}")
    keras_hub.save_imported(imported, out, run_info=run_info(args))
    labels = getattr(imported.model, "labels", None)
    head = f", head {imported.keras_hub_class} -> labels {labels}" if labels else ""
    return imported.encoder, imported.tokenizer, head


def _to_keras_hub(args, out, fmt):
    length = None
    if fmt == "zoo":
        # The whole model (a classifier's head too), not the encoder alone.
        model, tokenizer, meta = load_model_dir(args.src)
        length = meta.get("sequence_length")
    else:
        model, tokenizer = load_checkpoint(
            args.src, lowercase=args.lowercase, allow_partial=args.allow_partial
        )
    exported = keras_hub.save_keras_hub_preset(
        model, out, tokenizer, sequence_length=length, source=args.src
    )
    for note in exported.notes:
        print(f"note: {note}")
    return (
        getattr(model, "encoder", model),
        tokenizer,
        f", as {type(exported.model).__name__}",
    )


def run(args):
    out = pathlib.Path(args.out)
    # SRC may be a TF1 prefix (DIR/bert_model.ckpt): compared as a path, so
    # an --out of DIR (which holds the prefix's files) is refused too.
    named = keras_hub.is_preset_name(args.src)
    check_out_apart(out, [("SRC", None if named else args.src)])
    check_replace_output(out, args.force, "convert")
    fmt = detect_format(args.src)
    _labels(args, fmt)
    print(f"reading {fmt} checkpoint {args.src}")
    if args.to == "keras-hub" or (fmt == "keras-hub" and args.to == "zoo"):
        convert = _to_keras_hub if args.to == "keras-hub" else _from_keras_hub
        encoder, tokenizer, what = convert(args, out, fmt)
        print(
            f"wrote {args.to} checkpoint {out}{what}: {type(encoder).__name__} "
            f"L{encoder.num_layers} H{encoder.hidden_dim} A{encoder.num_heads}, "
            f"vocabulary {encoder.vocabulary_size}"
        )
        return 0
    # A Hub name is fetched once; the model directory records the commit.
    src, provenance = hub.resolve(args.src)
    encoder, tokenizer = load_checkpoint(
        src, lowercase=args.lowercase, allow_partial=args.allow_partial
    )
    if args.to == "zoo":
        # args.json goes inside the model directory, listed in its record.
        save_model_dir(
            encoder,
            out,
            tokenizer,
            extra=provenance or {"source": str(args.src), "source_format": fmt},
            run_info=run_info(args),
        )
    elif args.to == "hf" and encoder.config.family == "roberta":
        # RobertaModel with its byte-level BPE files (vocab.json, merges.txt).
        save_hf(encoder, out, tokenizer=tokenizer)
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
        help="turn a checkpoint (HF, google-research TF1, Model Garden, keras-hub, zoo) into a "
        "model directory",
        formatter_class=HelpFormatter,
        description="Read an HF BertModel, DistilBertModel or AlbertModel directory "
        "(config.json + model.safetensors; sentence-transformers layout too), an HF "
        "RobertaModel directory (with vocab.json + merges.txt, byte-level BPE), a "
        "google-research BERT "
        "release (bert_config.json + bert_model.ckpt.*), a TF Model Garden BertEncoder "
        "checkpoint (the garden extra), a keras-hub preset (a save_to_preset directory of "
        "a BertBackbone, DistilBertBackbone or AlbertBackbone, or of their TextClassifier "
        "with its head; or a preset name, keras_hub:NAME or kaggle://..., through "
        "keras-hub's loader; the keras-hub extra) or a zoo model directory, and "
        "write it as a zoo model directory (model.keras, vocab.txt, zoo_model.json), or "
        "as HF / TF1 files with --to. --to hf writes BERT encoders as BertModel and "
        "DistilBERT-style students (zoo distill) as DistilBertModel, ALBERT encoders as "
        "AlbertModel, with vocab.txt and tokenizer_config.json, RoBERTa encoders as "
        "RobertaModel with vocab.json and merges.txt; --to tf1 takes BERT "
        "encoders with exact GELU only. ALBERT needs a WordPiece vocab.txt beside the "
        "weights (released ALBERTs ship a SentencePiece spiece.model, which the zoo "
        "tokenizer does not read). --to keras-hub writes a preset that keras-hub's "
        "from_preset loads (a classifier as its *TextClassifier where the head maps; "
        "docs/keras_hub.md): BERT and ALBERT with tanh-approximate GELU, DistilBERT-style "
        "students with exact GELU (keras-hub hard-codes each).",
        epilog=help_examples(
            """
            zoo convert ~/ckpt/uncased_L-12_H-768_A-12 --out models/bert_base
            zoo convert ~/hf/all-MiniLM-L6-v2 --out models/minilm
            zoo convert models/minilm --to tf1 --out /tmp/minilm_tf1
            zoo convert runs/distil3/model --to hf --out /tmp/student_hf
            zoo convert presets/news_classifier --labels business,sport --out models/news
            zoo convert runs/distil3/model --to keras-hub --out /tmp/student_keras_hub
            """
        ),
    )
    p.add_argument(
        "src",
        type=source,
        help="checkpoint directory or TF1 prefix, or a keras-hub preset name "
        "(keras_hub:NAME, kaggle://...)",
    )
    p.add_argument(
        "--out", type=output_path, required=True, help=f"output directory: {OUT_RULES}"
    )
    p.add_argument(
        "--to",
        choices=("zoo", "hf", "tf1", "keras-hub"),
        default="zoo",
        help="output format (default: %(default)s); hf writes a student as DistilBertModel; "
        "keras-hub a preset directory",
    )
    p.add_argument(
        "--labels",
        metavar="A,B,...",
        help="a keras-hub classifier's class names, comma-separated in output order "
        "(default: those a zoo export recorded in the preset, else 0..N-1)",
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
