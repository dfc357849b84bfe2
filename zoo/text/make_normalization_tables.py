"""Derive the Unicode tables of BERT's normalizer from the reference tokenizer.

    python -m zoo.text.make_normalization_tables   # rewrites normalization_tables.py

`WordPieceTokenizer` must give the ids of Hugging Face's `BertTokenizerFast`
(the `tokenizers` Rust library). That library's view of Unicode is a mix of
versions: its control/mark/punctuation classes come from an old table, its
NFD and canonical combining classes from another, its lowercasing from the
Rust standard library. ICU (`tensorflow_text.normalize_utf8`), RE2
(`tf.strings.regex_replace`) and Python's `unicodedata` each hold yet another
version, and using them left about 1,600 code points (marks, format
characters and letters added to Unicode after 2016) tokenized differently.

So the tables are not computed from a Unicode database: they are measured
on every code point with the reference tokenizer's own normalizers and
pre-tokenizer, and written as range tables that `normalization.py` applies
with TensorFlow ops. `tests/text/test_normalization.py` re-measures them, so
an upgrade of `tokenizers` that changes its Unicode view fails loudly.

Needs the `tokenizers` package (installed with `transformers`).
"""

from __future__ import annotations

import pathlib
import unicodedata

import numpy as np

# Per-code-point map kinds (see normalization.py for how each is applied).
OFFSET, DROP, SEQUENCE, PAD, HANGUL = range(5)
# Pre-tokenizer classes.
OTHER, WHITESPACE, PUNCTUATION = range(3)

_MAX_CODE_POINT = 0x10FFFF
_SURROGATES = range(0xD800, 0xE000)
_HANGUL_FIRST, _HANGUL_LAST = 0xAC00, 0xD7A3


def _code_points():
    return [cp for cp in range(_MAX_CODE_POINT + 1) if cp not in _SURROGATES]


def _apply_all(normalize, texts, separator="|"):
    """`[normalize(t) for t in texts]`, in few calls.

    Joining texts with a separator that every step keeps as is (and that no
    other character maps to) gives the same result as one call per text for
    per-character steps; a chunk whose pieces do not line up (the separator
    itself) is redone one text at a time.
    """
    out = []
    for i in range(0, len(texts), 4096):
        chunk = texts[i : i + 4096]
        pieces = normalize(separator.join(chunk)).split(separator)
        out.extend(pieces if len(pieces) == len(chunk) else [normalize(t) for t in chunk])
    return out


def _char_map_table(outputs):
    """Range table of a per-code-point map, from its output for every code point.

    `outputs[i]` is what the map makes of the i-th of `_code_points()`.
    Returns `(starts, kinds, args, sequences)`: code point `cp` falls in the
    range `i` with `starts[i] <= cp < starts[i + 1]` and maps to

    - OFFSET: `[cp + args[i]]` (0 = unchanged),
    - DROP: nothing,
    - PAD: `[32, cp + args[i], 32]` (BERT's spaces around CJK characters),
    - HANGUL: the algorithmic Hangul decomposition,
    - SEQUENCE: `sequences[args[i]]`.
    """
    cps = np.asarray(_code_points(), np.int64)
    lengths = np.fromiter(map(len, outputs), np.int64, len(cps))
    flat = np.frombuffer("".join(outputs).encode("utf-32-le"), np.uint32).astype(np.int64)
    begin = np.cumsum(lengths) - lengths

    def nth(n):  # n-th output code point of every entry (0 where too short)
        return np.where(lengths > n, flat[np.minimum(begin + n, max(len(flat) - 1, 0))], 0)

    first, second, third = nth(0), nth(1), nth(2)
    syllable = cps - _HANGUL_FIRST
    trail = syllable % 28
    is_hangul = (
        (cps >= _HANGUL_FIRST)
        & (cps <= _HANGUL_LAST)
        & (lengths == np.where(trail > 0, 3, 2))
        & (first == 0x1100 + syllable // 588)
        & (second == 0x1161 + (syllable % 588) // 28)
        & ((trail == 0) | (third == 0x11A7 + trail))
    )
    is_pad = (lengths == 3) & (first == 32) & (third == 32)
    kinds = np.select(
        [is_hangul, lengths == 0, lengths == 1, is_pad],
        [HANGUL, DROP, OFFSET, PAD],
        SEQUENCE,
    )
    is_sequence = kinds == SEQUENCE
    sequence_index = np.cumsum(is_sequence) - 1
    args = np.select(
        [kinds == OFFSET, kinds == PAD, is_sequence],
        [first - cps, second - cps, sequence_index],
        0,
    )
    sequences = [tuple(ord(c) for c in outputs[i]) for i in np.flatnonzero(is_sequence)]
    # Consecutive code points with the same rule share one range; every
    # SEQUENCE entry and the first code point after the surrogates start one.
    new_range = np.ones(len(cps), bool)
    new_range[1:] = (
        (kinds[1:] != kinds[:-1])
        | (args[1:] != args[:-1])
        | is_sequence[1:]
        | (cps[1:] - 1 != cps[:-1])
    )
    keep = np.flatnonzero(new_range)
    return cps[keep].tolist(), kinds[keep].tolist(), args[keep].tolist(), sequences


def _value_table(values):
    """Run-length encode `{cp: value}` into `(starts, values)` ranges."""
    starts, out = [], []
    for cp in _code_points():
        v = values.get(cp, 0)
        if not out or v != out[-1]:
            starts.append(cp)
            out.append(v)
    return starts, out


def _combining_classes(nfd):
    """Canonical combining classes as the reference's NFD sees them.

    The class of `x` is known to be non-zero iff NFD moves it across a
    mark of a lower class (U+0334, class 1), or, for class-1 marks, moves a
    class-230 mark (U+0301) after it. The value itself is taken from
    `unicodedata` (classes never change once assigned); a code point that
    the reference reorders but `unicodedata` gives class 0 is an error.
    """
    chars = [chr(cp) for cp in _code_points()]
    decomposed = _apply_all(nfd, chars)
    low = _apply_all(nfd, [x + "\u0334" for x in chars])
    high = _apply_all(nfd, ["\u0301" + x for x in chars])
    ccc = {}
    for x, d, lo, hi in zip(chars, decomposed, low, high, strict=True):
        if d != x:
            continue  # decomposed before reordering; its pieces are probed
        py = unicodedata.combining(x)
        moves_low = lo == "\u0334" + x
        moves_high = hi == x + "\u0301"
        if (moves_low or moves_high) and py == 0:
            raise RuntimeError(
                f"U+{ord(x):04X}: reordered by the reference NFD but class 0 in unicodedata"
            )
        if py and (moves_low if py > 1 else moves_high):
            ccc[ord(x)] = py
    return ccc


def _pre_tokenizer_classes(pre_tokenize):
    """Whitespace / punctuation / other, from how `a{x}b` is split into words."""

    def classify(x, words):
        if words == ["a", "b"]:
            return WHITESPACE
        if words == ["a", x, "b"]:
            return PUNCTUATION
        if words == ["a" + x + "b"]:
            return OTHER
        return None

    chars = [chr(cp) for cp in _code_points()]
    classes = {}
    for i in range(0, len(chars), 65536):
        chunk = chars[i : i + 65536]
        # One call on the chunk as one string: a character inside a word of
        # two or more characters is OTHER. The rest (in no word, or a word
        # by itself) are probed one at a time.
        inside_word = np.zeros(len(chunk), bool)
        for _, (start, end) in pre_tokenize("".join(chunk)):
            if end - start > 1:
                inside_word[start:end] = True
        for j in np.flatnonzero(~inside_word):
            x = chunk[j]
            cls = classify(x, [w for w, _ in pre_tokenize(f"a{x}b")])
            if cls is None:
                raise RuntimeError(f"U+{ord(x):04X}: unexpected pre-tokenization of a{x}b")
            if cls != OTHER:
                classes[ord(x)] = cls
    return classes


def measure():
    """Measure every table on the installed `tokenizers`; return a dict."""
    # optional: the reference tokenizer, a test dependency (the `test` extra)
    import tokenizers
    from tokenizers import normalizers, pre_tokenizers

    clean_pad = normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=True, strip_accents=False, lowercase=False
    ).normalize_str
    nfd = normalizers.NFD().normalize_str
    # BertNormalizer drops marks with its own (older) table, not the one of
    # the StripAccents normalizer, so measure it on BertNormalizer itself.
    bert_strip = normalizers.BertNormalizer(
        clean_text=False, handle_chinese_chars=False, strip_accents=True, lowercase=False
    ).normalize_str
    lowercase = normalizers.Lowercase().normalize_str
    chars = [chr(cp) for cp in _code_points()]
    clean = _apply_all(clean_pad, chars)
    decomposed = _apply_all(nfd, chars)
    # A decomposable character never reaches the strip step (NFD runs
    # first), so it maps to itself there.
    strip = [
        s if d == x else x
        for x, d, s in zip(chars, decomposed, _apply_all(bert_strip, chars), strict=True)
    ]
    # Per-character steps that follow each other with no reordering between
    # them are measured as one table each, so the graph runs fewer passes:
    # CLEAN_NFD before canonical ordering, STRIP_ACCENTS_LOWERCASE after.
    return {
        "TOKENIZERS_VERSION": tokenizers.__version__,
        "CLEAN": _char_map_table(clean),
        "CLEAN_NFD": _char_map_table(_apply_all(nfd, clean)),
        "STRIP_ACCENTS": _char_map_table(strip),
        "LOWERCASE": _char_map_table(_apply_all(lowercase, chars)),
        "STRIP_ACCENTS_LOWERCASE": _char_map_table(_apply_all(lowercase, strip)),
        "COMBINING_CLASS": _value_table(_combining_classes(nfd)),
        "PRE_TOKENIZER_CLASS": _value_table(
            _pre_tokenizer_classes(pre_tokenizers.BertPreTokenizer().pre_tokenize_str)
        ),
    }


def _wrap(items, indent="    ", width=100):
    lines, line = [], indent
    for item in items:
        piece = (
            f"{item!r}, ".replace(" ", "") + " " if isinstance(item, tuple) else f"{item}, "
        )
        if len(line) + len(piece.rstrip()) > width:
            lines.append(line.rstrip())
            line = indent
        line += piece
    lines.append(line.rstrip())
    return "\n".join(lines)


def render(tables):
    lines = [
        '"""Unicode tables of BERT normalization, measured on the reference tokenizer.',
        "",
        "Generated by `python -m zoo.text.make_normalization_tables`; do not edit.",
        "See that module for the format and for why these are measured, not computed.",
        '"""',
        "",
        "# fmt: off",
        "",
    ]
    for name, value in tables.items():
        if isinstance(value, str):
            lines.append(f"{name} = {value!r}")
            lines.append("")
            continue
        lines.append(f"{name} = (")
        for part in value:
            lines.append("    (")
            lines.append(_wrap(part, indent="        "))
            lines.append("    ),")
        lines.append(")")
        lines.append("")
    return "\n".join(lines)


def main():
    path = pathlib.Path(__file__).with_name("normalization_tables.py")
    path.write_text(render(measure()), encoding="utf-8")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
