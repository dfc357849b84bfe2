"""`zoo predict`: labels, entities or answers for new text from a zoo model
directory, a `.tflite` artifact or a SavedModel (`zoo.predict`)."""

from __future__ import annotations

import json
import pathlib
import sys
import time

from zoo.cli.runs import CliError, HelpFormatter, help_examples
from zoo.predict import PredictError, open_predictor
from zoo.text.readers import delimited_rows, json_lines, open_text, utf8_error

INPUT_SUFFIXES = (".txt", ".jsonl", ".csv")
PROGRESS_SECONDS = 2.0


def read_inputs(path):
    """`(line number, record)` pairs of an input file, streamed: .txt one
    text per line (blank lines skipped), .jsonl one object per line
    ("text", optional "text_b"; "question"/"context" for QA), .csv with a
    header naming the same columns. Read as `--data` files are
    (`zoo.text.readers`): UTF-8 with or without a byte-order mark, fields
    of any length. The path is checked now, the lines as they are read;
    a bad line is a `CliError` naming the file and line."""
    path = pathlib.Path(path)
    if path.suffix not in INPUT_SUFFIXES:
        raise CliError(
            f"--input {path}: expected a .txt (one text per line), .jsonl or .csv "
            f"file; received {path.suffix or 'no suffix'}."
        )
    if not path.is_file():
        raise CliError(f"--input {path}: no such file.")
    return _records(path)


def _records(path):
    where = f"--input {path}"

    def at(n):
        return f"{where}, line {n}"

    n = 0
    try:
        with open_text(path, newline="" if path.suffix == ".csv" else None) as f:
            if path.suffix == ".csv":
                header, rows = delimited_rows(f, where=where, at=at)
                columns = set(header)
                if not columns & {"text", "question"}:
                    raise CliError(
                        f'{where}: the header needs a "text" column (and '
                        f'optionally "text_b"); it has {sorted(columns)}.'
                    )
                yield from rows
                return
            if path.suffix == ".jsonl":
                for n, record in json_lines(f, where=where, at=at):
                    if not isinstance(record, dict):
                        raise CliError(
                            f'{at(n)}: expected an object with "text"; received '
                            f"{type(record).__name__}."
                        )
                    yield n, record
                return
            for n, line in enumerate(f, 1):
                if line.strip():
                    yield n, {"text": line.rstrip("\r\n")}
    except UnicodeDecodeError:  # a .txt line (the other readers name the line)
        raise CliError(str(utf8_error(f, where, at, n))) from None
    except ValueError as e:
        # The readers' errors already name the file and line.
        raise CliError(str(e)) from None


def _chunks(items, size):
    chunk = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _line(answer, task):
    """One human-readable line for an answer."""
    if task == "classify":
        return "  ".join(
            f"{label} {score:.4f}" for label, score in answer["scores"].items()
        )
    if task == "regress":
        return f"{answer['score']:.4f}"
    if task == "tag":
        if not answer["entities"]:
            return "(no entities)"
        return "  ".join(
            f"{e['label']}: {e['text']!r} [{e['start']}:{e['end']}] {e['score']:.3f}"
            for e in answer["entities"]
        )
    if not answer["answer"]:
        return "(no answer)"
    return f"{answer['answer']!r} [{answer['start']}:{answer['end']}] {answer['score']:.4f}"


def run(args):
    if args.text is None and args.input is None:
        raise CliError('give --text "..." (repeatable) or --input FILE.')
    if args.text is not None and args.input is not None:
        raise CliError("give --text or --input, not both.")
    if args.text_b is not None and (args.text is None or len(args.text) != 1):
        raise CliError("--text-b goes with exactly one --text.")
    if args.top_k is not None and args.top_k < 1:
        raise CliError(f"--top-k must be >= 1; received {args.top_k}.")
    if args.batch_size < 1:
        raise CliError(f"--batch-size must be >= 1; received {args.batch_size}.")
    if args.threads < 1:
        raise CliError(f"--threads must be >= 1; received {args.threads}.")
    if args.input is not None:
        records = read_inputs(args.input)
    else:
        records = (
            (i, {"text": t, "text_b": args.text_b}) for i, t in enumerate(args.text, 1)
        )
    predictor = open_predictor(
        args.model,
        sequence_length=args.sequence_length,
        max_windows=args.max_windows,
        num_threads=args.threads,
        batch_size=args.batch_size,
    )
    top_k = args.top_k if args.top_k is not None else (None if args.json else 3)
    started = last = time.time()
    done = 0
    show_progress = args.input is not None and not args.quiet
    for chunk in _chunks(records, args.batch_size):
        try:
            answers = predictor.predict([r for _, r in chunk], top_k=top_k)
        except PredictError as e:
            # Name the line of the file rather than the position in the chunk.
            lines = [n for n, _ in chunk]
            message = str(e)
            if message.startswith("input "):
                index, _, rest = message[len("input ") :].partition(":")
                where = (
                    f"--input {args.input}, line {lines[int(index) - 1]}"
                    if args.input
                    else f"--text {lines[int(index) - 1]}"
                )
                message = where + ":" + rest
            raise CliError(message) from None
        for (n, _), answer in zip(chunk, answers):
            done += 1
            if args.json:
                print(
                    json.dumps(
                        {"input": n if args.input else done, **answer}, ensure_ascii=False
                    )
                )
            else:
                prefix = f"{n}\t" if args.input else ""
                print(prefix + _line(answer, predictor.task))
        sys.stdout.flush()
        now = time.time()
        if show_progress and now - last >= PROGRESS_SECONDS:
            print(
                f"zoo predict: {done:,} inputs, {done / (now - started):.1f}/s",
                file=sys.stderr,
                flush=True,
            )
            last = now
    if show_progress:
        seconds = time.time() - started
        print(
            f"zoo predict: {done:,} inputs in {seconds:.1f} s ({predictor.format}, "
            f"{predictor.task}, {predictor.sequence_length} tokens)",
            file=sys.stderr,
        )
    if done == 0:
        raise CliError(f"--input {args.input}: no inputs in the file.")
    return 0


def register(subparsers):
    p = subparsers.add_parser(
        "predict",
        help="labels, entities, answers or scores for new text, from any model format",
        formatter_class=HelpFormatter,
        description="Run a fine-tuned model on new text: a zoo model directory, a .tflite "
        "artifact directory (LiteRT) or a text-in SavedModel (BASE/NAME or BASE/NAME/VERSION). "
        "Classifiers print labels with probabilities, taggers entities with character "
        "offsets, QA models (--text the question, --text-b the context) answers with "
        "offsets, regressors (--text and optionally --text-b) their score. Every format "
        "uses the model's own vocab.txt and the same host-side steps, so a text gets the same "
        "answer from each.",
        epilog=help_examples(
            """
            zoo predict --model runs/bbc/model --text "Shares fell 3% in Tokyo."
            zoo predict --model exports/phone --input articles.txt --json > answers.jsonl
            zoo predict --model serving/bbc --input news.csv --top-k 1
            zoo predict --model runs/squad/model --text "Who wrote it?" --text-b "Austen wrote it."
            """
        ),
    )
    p.add_argument(
        "--model",
        type=pathlib.Path,
        required=True,
        help="zoo model directory, .tflite artifact directory or SavedModel",
    )
    p.add_argument(
        "--text",
        action="append",
        default=None,
        help="a text to run (repeat for several); QA: the question",
    )
    p.add_argument(
        "--text-b", default=None, help="the second text of a pair; QA: the context"
    )
    p.add_argument(
        "--input",
        type=pathlib.Path,
        default=None,
        help=".txt (one text per line), .jsonl or .csv (columns text[, text_b]; "
        "QA: question, context); answers stream as they are computed",
    )
    p.add_argument(
        "--top-k",
        type=int,
        default=None,
        help="classifiers: labels to show (default 3; with --json all)",
    )
    p.add_argument("--json", action="store_true", help="one JSON object per input")
    p.add_argument(
        "--sequence-length",
        type=int,
        default=None,
        help="tokens per window (default: as fine-tuned for a model directory, "
        "the primary length of an artifact)",
    )
    p.add_argument(
        "--max-windows",
        type=int,
        default=None,
        help="classifiers: windows per long text (at most 64), logits averaged "
        "(default: as fine-tuned for a model directory, 1 for an artifact)",
    )
    p.add_argument("--batch-size", type=int, default=32, help="inputs per step")
    p.add_argument(
        "--threads",
        type=int,
        default=1,
        help=".tflite: LiteRT threads (default: %(default)s, as on a phone)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    p.set_defaults(func=run)
