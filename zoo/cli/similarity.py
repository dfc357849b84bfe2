"""`zoo similarity`: cosine similarity of sentence embeddings (mean pooling
over real tokens, L2-normalised) from any checkpoint's encoder, with the
flags of `zoo predict`."""

from __future__ import annotations

import json
import pathlib
import sys

from zoo.checkpoints import load_checkpoint
from zoo.cli.predict import read_inputs
from zoo.cli.runs import CliError, HelpFormatter, help_examples
from zoo.models.sentence_embedding import cosine, embed_texts
from zoo.text.tokenizer import check_text


def _chunks(records, size):
    chunk = []
    for record in records:
        chunk.append(record)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _text(record, field, where):
    value = record.get(field)
    if not isinstance(value, str) or not value.strip():
        raise CliError(
            f'{where}: "{field}" must be a non-empty string; received {value!r:.60}.'
        )
    try:
        check_text(value, field)
    except ValueError as e:
        raise CliError(f"{where}: {e}") from None
    return value


def run(args):
    if args.text is None and args.input is None:
        raise CliError(
            'give --text "..." (with --text-b, or repeated with --embeddings) or '
            "--input FILE."
        )
    if args.text is not None and args.input is not None:
        raise CliError("give --text or --input, not both.")
    if args.text is not None and args.text_b is not None and len(args.text) != 1:
        raise CliError("--text-b goes with exactly one --text.")
    if args.text_b is not None and args.input is not None:
        raise CliError(
            "--text-b goes with --text; an --input file gives each pair's second text "
            "in its text_b column."
        )
    if args.text_b is not None and args.embeddings:
        raise CliError(
            "--embeddings prints each --text's vector and compares nothing; drop "
            "--text-b, or --embeddings for the pair's cosine."
        )
    if args.batch_size < 1:
        raise CliError(f"--batch-size must be >= 1; received {args.batch_size}.")
    if args.input is not None:
        records = read_inputs(args.input)
    else:
        records = (
            (i, {"text": t, "text_b": args.text_b}) for i, t in enumerate(args.text, 1)
        )
    encoder, tokenizer = load_checkpoint(args.model)
    longest = encoder.max_sequence_length
    if not 3 <= args.sequence_length <= longest:
        raise CliError(
            f"--sequence-length {args.sequence_length}: this model takes 3 to "
            f"{longest} tokens."
        )
    done = 0
    for chunk in _chunks(records, args.batch_size):
        where = [
            f"--input {args.input}, line {n}" if args.input else f"--text {n}"
            for n, _ in chunk
        ]
        texts = [_text(r, "text", w) for (_, r), w in zip(chunk, where)]
        if args.embeddings:
            vectors = embed_texts(
                encoder, tokenizer, texts, args.sequence_length, args.batch_size
            )
            for (n, _), vector in zip(chunk, vectors):
                done += 1
                print(
                    json.dumps(
                        {
                            "input": n if args.input else done,
                            "embedding": [round(float(x), 7) for x in vector],
                        }
                    )
                )
            continue
        texts_b = []
        for (_, r), w in zip(chunk, where):
            if r.get("text_b") is None:
                raise CliError(
                    f"{w}: no text_b to compare with; give pairs (--text-b, or a "
                    "text_b column), or --embeddings for the vectors."
                )
            texts_b.append(_text(r, "text_b", w))
        vectors = embed_texts(
            encoder, tokenizer, texts + texts_b, args.sequence_length, args.batch_size
        )
        scores = cosine(vectors[: len(texts)], vectors[len(texts) :])
        for (n, _), score in zip(chunk, scores):
            done += 1
            if args.json:
                print(
                    json.dumps(
                        {
                            "input": n if args.input else done,
                            "cosine": round(float(score), 6),
                        }
                    )
                )
            else:
                print((f"{n}\t" if args.input else "") + f"{score:.4f}")
        sys.stdout.flush()
    if done == 0:
        raise CliError(f"--input {args.input}: no inputs in the file.")
    return 0


def register(subparsers):
    p = subparsers.add_parser(
        "similarity",
        help="cosine similarity of sentence embeddings (mean pooling) from any checkpoint",
        formatter_class=HelpFormatter,
        description="Embed texts with a checkpoint's encoder (any format `zoo convert` reads, "
        "or a zoo model directory: its encoder) as sentence-transformers models are used: the "
        "mean of the token vectors over real tokens, L2-normalised. Prints the cosine of each "
        "text with its text_b, or, with --embeddings, each text's vector as a JSON line. For "
        "all-MiniLM-L6-v2 this reproduces the model card's similarities. Not a fine-tuned "
        "score: for a trained similarity model, `zoo finetune --task regress` and `zoo "
        "predict`.",
        epilog=help_examples(
            """
            zoo similarity --model models/minilm --text "A man is playing a guitar." \\
                --text-b "Someone is strumming a guitar."   # 0.7186 (published 0.719)
            zoo similarity --model models/minilm --input pairs.csv --json  # text,text_b columns
            zoo similarity --model models/minilm --input texts.txt --embeddings > vectors.jsonl
            """
        ),
    )
    p.add_argument(
        "--model",
        type=pathlib.Path,
        required=True,
        help="any checkpoint (HF, TF1, Garden) or zoo model directory",
    )
    p.add_argument(
        "--text",
        action="append",
        default=None,
        help="a text (repeat with --embeddings for several)",
    )
    p.add_argument("--text-b", default=None, help="the text to compare --text with")
    p.add_argument(
        "--input",
        type=pathlib.Path,
        default=None,
        help=".txt (one text per line; with --embeddings), .jsonl or .csv (columns "
        "text, text_b)",
    )
    p.add_argument(
        "--embeddings",
        action="store_true",
        help="print each text's embedding (JSON lines) instead of cosines",
    )
    p.add_argument("--json", action="store_true", help="one JSON object per input")
    p.add_argument(
        "--sequence-length",
        type=int,
        default=128,
        help="tokens per text (longer texts are truncated)",
    )
    p.add_argument("--batch-size", type=int, default=32, help="inputs per step")
    p.set_defaults(func=run)
