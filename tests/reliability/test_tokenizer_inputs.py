"""Reliability corpus, area "tokenizer": texts and arguments a user feeds the
tokenizer. Valid text must give BertTokenizerFast's ids exactly; anything
else a clear error naming the argument.

Each case is its own pytest item, its name the id (`CASES`: name -> a
function of the module's `tools` that builds the case), so a failure names
its case and one case reruns alone; the tokenizer, HF's reference and the
BBC texts are loaded once per module."""

import types

import numpy as np
import pytest
import tensorflow as tf

from tests.reliability.corpus import CaseTable, answer, check_case, error
from zoo.text.tokenizer import WordPieceTokenizer

pytestmark = pytest.mark.assets

HARD = [
    "",
    " ",
    "\t\n  \r",
    "Hello, World!",
    "HELLO",
    "naïve café résumé",
    "Ǆemal ǅemal",
    "İstanbul ıi",
    "straße STRASSE",
    "ﬁne ﬂow",
    "①②③ ⅫⅪ",
    "Ｆｕｌｌｗｉｄｔｈ",
    "Ωμέγα ΣΊΣΥΦΟΣ",
    "Москва ЁЖИК",
    "東京都 北京",
    "カタカナ ひらがな",
    "한국어 텍스트",
    "𠀀𠀁 supplementary",
    "emoji 👍🏽 👨‍👩‍👧 🇫🇷",
    "ctrl\x00null\x01\x1f",
    "zero\u200bwidth\u200d",
    "bidi \u202eevil\u202c",
    "\ufffd replacement",
    "\ue000 private",
    "a" * 100,
    "b" * 101,
    "word " * 600,
    "Arabic العربية",
    "देवनागरी हिन्दी",
    "ภาษาไทย",
    "עברית",
    "[CLS] typed [SEP] [MASK]",
    "##suffix ##",
    "mixed123numbers456",
    "e-mail@example.com https://x.org/a?b=c",
    "tab\tseparated\tvalues",
    "combining e\u0301 a\u0308\u0301",
    "Å Å Ω Ω",
    "\u00ad soft\u00adhyphen",
    "line\u2028separator\u2029para",
    "£100 €5 ¥3",
    "quotes “curly” ‘single’ «guillemets»",
]


def _hf_ids(hf, texts):
    return hf(texts, add_special_tokens=False, split_special_tokens=True)["input_ids"]


def _packed_equal(tok, hf, a, b, length):
    ours = tok(a, text_b=b, sequence_length=length)
    ref = hf(
        a,
        b,
        truncation=True,
        max_length=length,
        padding="max_length",
        split_special_tokens=True,
        return_tensors="np",
    )
    return all(
        np.array_equal(ours[k].numpy(), ref[r])
        for k, r in [
            ("token_ids", "input_ids"),
            ("segment_ids", "token_type_ids"),
            ("padding_mask", "attention_mask"),
        ]
    )


AREA = "tokenizer"
REAL = 20  # the first BBC texts, cut to 600 characters, tried besides HARD
PACKED = [(8, False), (16, True), (3, True), (2, False), (64, True), (512, False)]
CASES = CaseTable(AREA)  # name -> make(tools) -> Case


def _case(name, make):
    """Register `make(tools)`, which builds the case `name`; a name once."""
    CASES[name] = make


def _answers(name, run, check):
    """`run(tools)` must return, and `check(tools, got)` hold."""
    _case(name, lambda t: answer(name, lambda: run(t), lambda got: check(t, got)))


def _refuses(name, run, *names):
    """`run(tools)` must raise a clear error naming every one of `names`."""
    _case(name, lambda t: error(name, lambda: run(t), *names))


@pytest.fixture(scope="module")
def tools(minilm_dir, hf_tokenizer, bbc_texts):
    """What the cases run on: our tokenizer on MiniLM's vocab.txt, HF's on
    the same file, and the BBC texts."""
    return types.SimpleNamespace(
        vocab=str(minilm_dir / "vocab.txt"),
        tok=WordPieceTokenizer(str(minilm_dir / "vocab.txt")),
        hf=hf_tokenizer,
        real=[t[:600] for t in bbc_texts[:REAL]],
    )


def _valid_texts():
    for i, text in enumerate(HARD):
        _answers(
            f"ids of text {i} ({text[:20]!r})",
            lambda t, s=text: t.tok.tokenize([s]).to_list(),
            lambda t, got, s=text: got == _hf_ids(t.hf, [s]),
        )
    for j in range(REAL):
        _answers(
            f"ids of BBC text {j}",
            lambda t, j=j: t.tok.tokenize([t.real[j]]).to_list(),
            lambda t, got, j=j: got == _hf_ids(t.hf, [t.real[j]]),
        )
    for i, (length, pair) in enumerate(PACKED):
        _answers(
            f"packed batch L{length} pair={pair}",
            lambda t, i=i, n=length, pair=pair: (
                t.real[i : i + 3],
                t.real[i + 3 : i + 6] if pair else None,
                n,
            ),
            lambda t, args: _packed_equal(t.tok, t.hf, *args),
        )
    _answers(
        "numpy array of str",
        lambda t: t.tok.tokenize(np.array(["Hello there"])).to_list(),
        lambda t, got: got == _hf_ids(t.hf, ["Hello there"]),
    )
    _answers(
        "tf.string batch",
        lambda t: t.tok.tokenize(tf.constant(["x y"])).to_list(),
        lambda t, got: got == _hf_ids(t.hf, ["x y"]),
    )
    _answers(
        "bytes, valid UTF-8",
        lambda t: t.tok.tokenize([b"caf\xc3\xa9"]).to_list(),
        lambda t, got: got == _hf_ids(t.hf, ["café"]),
    )
    _answers(
        "empty batch",
        lambda t: t.tok([], sequence_length=8)["token_ids"].shape,
        lambda t, shape: tuple(shape) == (0, 8),
    )


def _bad_inputs():
    _refuses(
        "lone surrogate",
        lambda t: t.tok(["ok", "bad\udc80"], sequence_length=8),
        "`text[1]`",
        "surrogate",
    )
    _refuses(
        "lone surrogate in text_b",
        lambda t: t.tok(["a"], text_b=["\ud800"], sequence_length=8),
        "`text_b[0]`",
    )
    _refuses("int in a list", lambda t: t.tok(["a", 3], sequence_length=8), "`text`")
    _refuses("None", lambda t: t.tok(None, sequence_length=8), "`text`")
    _refuses("None in a list", lambda t: t.tok(["a", None], sequence_length=8), "`text`")
    _refuses("nested list", lambda t: t.tok([["a", "b"]], sequence_length=8), "`text`")
    _refuses("dict", lambda t: t.tok({"text": "a"}, sequence_length=8), "`text`")
    _refuses(
        "token ids instead of text",
        lambda t: t.tok(np.array([[101, 102]]), sequence_length=8),
        "`text`",
    )
    _refuses(
        "float tensor", lambda t: t.tok(tf.constant([1.0]), sequence_length=8), "`text`"
    )
    _refuses(
        "2-D string tensor",
        lambda t: t.tok(tf.constant([["a", "b"]]), sequence_length=8),
        "`text`",
        "shape",
    )
    for name, kwargs in [
        ("sequence_length 0", dict(sequence_length=0)),
        ("sequence_length 1", dict(sequence_length=1)),
        ("sequence_length 2 for a pair", dict(text_b=["b"], sequence_length=2)),
        ("negative sequence_length", dict(sequence_length=-5)),
        ("float sequence_length", dict(sequence_length=1.5)),
        ("str sequence_length", dict(sequence_length="128")),
        ("bool sequence_length", dict(sequence_length=True)),
    ]:
        _refuses(name, lambda t, kw=kwargs: t.tok(["a"], **kw), "sequence_length")
    _refuses(
        "text_b shorter than text",
        lambda t: t.tok(["a", "b"], text_b=["c"], sequence_length=8),
        "text_b",
    )
    _refuses(
        "unknown truncation",
        lambda t: t.tok(["a"], sequence_length=8, truncation="middle"),
        "truncation",
    )


def _bad_vocabularies():
    _refuses(
        "vocabulary with a repeated token",
        lambda t: WordPieceTokenizer(
            ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "a"]
        ),
        "twice",
    )
    _refuses(
        "vocabulary without [CLS]",
        lambda t: WordPieceTokenizer(["[PAD]", "[UNK]", "[SEP]", "[MASK]"]),
        "[CLS]",
    )
    _refuses("vocabulary of ints", lambda t: WordPieceTokenizer([1, 2, 3]), "vocabulary")
    _refuses(
        "missing vocab.txt",
        lambda t: WordPieceTokenizer("/nonexistent/vocab.txt"),
        "/nonexistent/vocab.txt",
    )
    _refuses(
        "max_chars_per_word 0",
        lambda t: WordPieceTokenizer(t.vocab, max_chars_per_word=0),
        "max_chars_per_word",
    )


_valid_texts()
_bad_inputs()
_bad_vocabularies()


@pytest.mark.parametrize("name", list(CASES))
def test_tokenizer_inputs(name, tools):
    check_case(AREA, CASES[name](tools))
