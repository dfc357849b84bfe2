"""normalization.py against the reference's own normalizer and pre-tokenizer.

Needs only the `tokenizers` package (no assets): the tables were measured on
it, and these tests catch both a wrong graph implementation and a
`tokenizers` upgrade that changes its Unicode view.
"""

from __future__ import annotations

import random
import unicodedata

import pytest
import tensorflow as tf

from zoo.text import make_normalization_tables, normalization, normalization_tables

normalizers = pytest.importorskip("tokenizers.normalizers")
pre_tokenizers = pytest.importorskip("tokenizers.pre_tokenizers")

CODE_POINTS = [cp for cp in range(0x110000) if not 0xD800 <= cp < 0xE000]
SETTINGS = [(True, True), (False, False), (True, False), (False, True)]


def _reference(lowercase, strip_accents):
    return normalizers.BertNormalizer(
        clean_text=True,
        handle_chinese_chars=True,
        strip_accents=strip_accents,
        lowercase=lowercase,
    ).normalize_str


def test_examples():
    text = tf.constant(
        ["Héllo\x00 Wörld 中文", "ǅ İ\u200bx \ufffd", "e\u0301\U0001d16d\U0001d165"]
    )
    assert [t.decode() for t in normalization.normalize(text).numpy()] == [
        "hello world  中  文 ",
        "ǆ ix ",
        "e\U0001d165\U0001d16d",  # NFD reorders marks the reference keeps
    ]


@pytest.mark.slow
@pytest.mark.parametrize("lowercase, strip_accents", SETTINGS)
def test_every_code_point_normalizes_as_reference(lowercase, strip_accents):
    reference = _reference(lowercase, strip_accents)
    chars = [chr(cp) for cp in CODE_POINTS]
    ours = normalization.normalize(tf.constant(chars), lowercase, strip_accents).numpy()
    bad = [
        f"U+{ord(c):04X}"
        for c, o in zip(chars, ours, strict=True)
        if o.decode() != reference(c)
    ]
    assert not bad, f"{len(bad)} code points differ: {bad[:20]}"


@pytest.mark.parametrize("lowercase, strip_accents", SETTINGS)
def test_mark_sequences_normalize_as_reference(lowercase, strip_accents):
    """Sequences where canonical ordering of combining marks matters."""
    rng = random.Random(1)
    marks = [chr(cp) for cp in CODE_POINTS if unicodedata.combining(chr(cp))]
    pool = marks + list("aAeEıİΣσ ") + ["\U0001d165", "\U0001d16d", "\u00e9", "\uac00"]
    texts = [
        "".join(rng.choice(pool) for _ in range(rng.randint(0, 10))) for _ in range(3000)
    ]
    reference = _reference(lowercase, strip_accents)
    ours = normalization.normalize(tf.constant(texts), lowercase, strip_accents).numpy()
    assert [o.decode() for o in ours] == [reference(t) for t in texts]


def test_split_words_as_reference_pre_tokenizer():
    rng = random.Random(2)
    pool = list("ab c.,!?-'\"()[]") + [
        "\u3000",
        "\u00a0",
        "\u2028",
        "\u00bf",
        "\u2014",
        "\U0001f600",
        "\u0301",
    ]
    texts = [
        "".join(rng.choice(pool) for _ in range(rng.randint(0, 15))) for _ in range(2000)
    ]
    reference = pre_tokenizers.BertPreTokenizer()
    code_points = tf.strings.unicode_decode(tf.constant(texts), "UTF-8")
    words, per_text = normalization.split_words(code_points)
    words = iter(w.decode() for w in tf.strings.unicode_encode(words, "UTF-8").numpy())
    for text, n in zip(texts, per_text.numpy(), strict=True):
        assert [next(words) for _ in range(n)] == [
            w for w, _ in reference.pre_tokenize_str(text)
        ]


def test_empty_inputs():
    assert normalization.normalize(tf.constant([], tf.string)).shape == (0,)
    assert normalization.normalize(tf.constant(["", "\x00"])).numpy().tolist() == [b"", b""]
    words, per_text = normalization.split_words(
        tf.strings.unicode_decode(tf.constant(["", " "]), "UTF-8")
    )
    assert words.nrows() == 0 and per_text.numpy().tolist() == [0, 0]


@pytest.mark.slow
def test_tables_are_current_for_installed_tokenizers():
    """Re-measure every table; on failure run the command in the message."""
    measured = make_normalization_tables.measure()
    for name, value in measured.items():
        if name == "TOKENIZERS_VERSION":
            continue
        stored = getattr(normalization_tables, name)
        assert [list(part) for part in stored] == [list(part) for part in value], (
            f"Table {name} differs from what tokenizers {measured['TOKENIZERS_VERSION']} does "
            f"(stored tables are from {normalization_tables.TOKENIZERS_VERSION}). "
            "Run `python -m zoo.text.make_normalization_tables` and re-run the tests."
        )
