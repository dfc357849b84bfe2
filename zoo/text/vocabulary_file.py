"""A WordPiece vocabulary file (vocab.txt) and the limits every tokenizer
file is held to: a checkpoint's or an artifact's tokenizer files are not
trusted, so each is read bounded (a regular file, at most 64 MB) and each
token checked before tensorflow-text builds a table from it."""

from __future__ import annotations

import hashlib
import re

from zoo.utils.safe_files import read_bounded

# Limits on a tokenizer's files, which come with a checkpoint or an artifact
# and are not trusted. A real BERT vocab.txt is 230 kB (30,522 tokens, the
# longest 18 bytes); multilingual ones reach a few MB and 250k tokens; a
# SentencePiece model is under 5 MB. The limits sit far above that and far
# below what would exhaust memory or build a table for minutes.
MAX_TOKENIZER_FILE_BYTES = 64 << 20
MAX_VOCABULARY_TOKENS = 1 << 24
# tensorflow-text's FastWordpieceTokenizer refuses a token longer than 256
# UTF-8 bytes (not counting the "##" suffix indicator) with a RuntimeError;
# the project tokenizer's words are at most 100 characters anyway.
MAX_TOKEN_BYTES = 256
SUFFIX_INDICATOR = "##"


def read_tokenizer_file(path, what, limit=MAX_TOKENIZER_FILE_BYTES) -> bytes:
    """The bytes of a tokenizer file (`what`: "vocab.txt", "merges.txt",
    ...), once it is known to be a regular file of at most `limit` bytes
    (`zoo.utils.safe_files.read_bounded`): a FIFO would block the read,
    /dev/zero or a huge file fill memory before any token is checked."""
    try:
        return read_bounded(path, limit, f"pass the checkpoint's own {what}")
    except FileNotFoundError:
        raise FileNotFoundError(
            f"{path}: no such file; pass the checkpoint's own {what}."
        ) from None


def read_vocabulary(path) -> list:
    """The tokens of a vocab.txt (one per line, id = line number), checked
    (`check_vocabulary_tokens`): at most 64 MB and 2**24 tokens, each at
    most 256 UTF-8 bytes (beside a leading "##"), none with a control
    character."""
    data = read_tokenizer_file(path, "vocab.txt")
    # Counted on the bytes, before a list of 16M strings is built.
    lines = data.count(b"\n")
    if lines > MAX_VOCABULARY_TOKENS:
        raise ValueError(
            f"{path}: {lines:,} lines, over the limit of "
            f"{MAX_VOCABULARY_TOKENS:,} tokens; it is not a vocab.txt. Use the "
            "checkpoint's own vocab.txt."
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(
            f"{path}: not UTF-8 text (byte {e.start}); a vocab.txt is UTF-8, one token per "
            "line. Use the checkpoint's own vocab.txt."
        ) from None
    # Split on "\n" only: str.splitlines would also split at U+2028, U+0085,
    # ... which can occur in tokens.
    tokens = text.split("\n")
    if tokens and tokens[-1] == "":
        tokens.pop()
    tokens = [t.rstrip("\r") for t in tokens]
    check_vocabulary_tokens(tokens, str(path), lines=True)
    return tokens


# Unicode category Cc, exactly: NUL, tab and the other C0 controls, DEL, C1.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def check_vocabulary_tokens(tokens, source, lines=False):
    """Raise ValueError naming the token (by `lines`: its line in `source`,
    else its index) unless every token fits tensorflow-text's WordPiece
    table: at most MAX_VOCABULARY_TOKENS of them; each at most
    MAX_TOKEN_BYTES UTF-8 bytes beside a leading "##" (longer ones make
    FastWordpieceTokenizer fail with a RuntimeError); no control character
    (NUL breaks its trie with a RuntimeError; the others can never be
    produced, since normalization deletes control characters from text,
    and real vocabularies have none). Duplicates are refused by the
    tokenizer, which names both ids."""
    remedy = "Use the checkpoint's own vocab.txt."
    if len(tokens) > MAX_VOCABULARY_TOKENS:
        raise ValueError(
            f"{source}: {len(tokens):,} tokens, over the limit of "
            f"{MAX_VOCABULARY_TOKENS:,}. {remedy}"
        )
    for i, token in enumerate(tokens):
        where = f"{source}, line {i + 1}" if lines else f"{source}, token {i}"
        word = token.removeprefix(SUFFIX_INDICATOR)
        size = len(word.encode("utf-8", "surrogatepass"))
        if size > MAX_TOKEN_BYTES:
            raise ValueError(
                f"{where}: a token of {size:,} UTF-8 bytes ({token[:40]!r}...); WordPiece "
                f"tokens are at most {MAX_TOKEN_BYTES} bytes (real ones under 100). {remedy}"
            )
        control = _CONTROL.search(token)
        if control is not None:
            ch = control.group()
            raise ValueError(
                f"{where}: the token {token[:60]!r} holds the control character "
                f"U+{ord(ch):04X}; no text can produce it (normalization deletes control "
                f"characters) and tensorflow-text cannot build its table with NUL. {remedy}"
            )


def vocabulary_text(tokens) -> str:
    """The vocab.txt text of `tokens`: one per line, a final newline."""
    tokens = list(tokens)
    bad = [i for i, t in enumerate(tokens) if "\n" in t or "\r" in t]
    if bad:
        raise ValueError(
            f"Vocabulary tokens {bad[:5]} contain a line break; vocab.txt holds one token per "
            "line, so such a vocabulary cannot be written. Fix the vocabulary."
        )
    return "\n".join(tokens) + "\n"


def vocabulary_sha256(tokens) -> str:
    """sha256 of the vocabulary as vocab.txt stores it (`vocabulary_text`)."""
    return hashlib.sha256(vocabulary_text(tokens).encode("utf-8")).hexdigest()
