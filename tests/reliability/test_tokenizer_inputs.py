"""Reliability corpus, area "tokenizer": texts and arguments a user feeds the
tokenizer. Valid text must give BertTokenizerFast's ids exactly; anything
else a clear error naming the argument."""

import numpy as np
import pytest
import tensorflow as tf

from tests.reliability.corpus import answer, error, run_area
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


def test_tokenizer_inputs(minilm_dir, hf_tokenizer, bbc_texts):
    tok = WordPieceTokenizer(str(minilm_dir / "vocab.txt"))
    hf = hf_tokenizer
    real = [t[:600] for t in bbc_texts[:20]]
    cases = []
    for i, text in enumerate(HARD + real):
        cases.append(
            answer(
                f"ids of text {i} ({text[:20]!r})",
                lambda t=text: tok.tokenize([t]).to_list(),
                lambda got, t=text: got == _hf_ids(hf, [t]),
            )
        )
    for i, (length, pair) in enumerate(
        [(8, False), (16, True), (3, True), (2, False), (64, True), (512, False)]
    ):
        a, b = real[i : i + 3], (real[i + 3 : i + 6] if pair else None)
        cases.append(
            answer(
                f"packed batch L{length} pair={pair}",
                lambda a=a, b=b, n=length: (a, b, n),
                lambda args: _packed_equal(tok, hf, *args),
            )
        )
    cases += [
        answer(
            "numpy array of str",
            lambda: tok.tokenize(np.array(["Hello there"])).to_list(),
            lambda got: got == _hf_ids(hf, ["Hello there"]),
        ),
        answer(
            "tf.string batch",
            lambda: tok.tokenize(tf.constant(["x y"])).to_list(),
            lambda got: got == _hf_ids(hf, ["x y"]),
        ),
        answer(
            "bytes, valid UTF-8",
            lambda: tok.tokenize([b"caf\xc3\xa9"]).to_list(),
            lambda got: got == _hf_ids(hf, ["café"]),
        ),
        answer(
            "empty batch",
            lambda: tok([], sequence_length=8)["token_ids"].shape,
            lambda shape: tuple(shape) == (0, 8),
        ),
    ]
    cases += [
        error(
            "lone surrogate",
            lambda: tok(["ok", "bad\udc80"], sequence_length=8),
            "`text[1]`",
            "surrogate",
        ),
        error(
            "lone surrogate in text_b",
            lambda: tok(["a"], text_b=["\ud800"], sequence_length=8),
            "`text_b[0]`",
        ),
        error("int in a list", lambda: tok(["a", 3], sequence_length=8), "`text`"),
        error("None", lambda: tok(None, sequence_length=8), "`text`"),
        error("None in a list", lambda: tok(["a", None], sequence_length=8), "`text`"),
        error("nested list", lambda: tok([["a", "b"]], sequence_length=8), "`text`"),
        error("dict", lambda: tok({"text": "a"}, sequence_length=8), "`text`"),
        error(
            "token ids instead of text",
            lambda: tok(np.array([[101, 102]]), sequence_length=8),
            "`text`",
        ),
        error("float tensor", lambda: tok(tf.constant([1.0]), sequence_length=8), "`text`"),
        error(
            "2-D string tensor",
            lambda: tok(tf.constant([["a", "b"]]), sequence_length=8),
            "`text`",
            "shape",
        ),
        error(
            "sequence_length 0", lambda: tok(["a"], sequence_length=0), "sequence_length"
        ),
        error(
            "sequence_length 1", lambda: tok(["a"], sequence_length=1), "sequence_length"
        ),
        error(
            "sequence_length 2 for a pair",
            lambda: tok(["a"], text_b=["b"], sequence_length=2),
            "sequence_length",
        ),
        error(
            "negative sequence_length",
            lambda: tok(["a"], sequence_length=-5),
            "sequence_length",
        ),
        error(
            "float sequence_length",
            lambda: tok(["a"], sequence_length=1.5),
            "sequence_length",
        ),
        error(
            "str sequence_length",
            lambda: tok(["a"], sequence_length="128"),
            "sequence_length",
        ),
        error(
            "bool sequence_length",
            lambda: tok(["a"], sequence_length=True),
            "sequence_length",
        ),
        error(
            "text_b shorter than text",
            lambda: tok(["a", "b"], text_b=["c"], sequence_length=8),
            "text_b",
        ),
        error(
            "unknown truncation",
            lambda: tok(["a"], sequence_length=8, truncation="middle"),
            "truncation",
        ),
        error(
            "vocabulary with a repeated token",
            lambda: WordPieceTokenizer(
                ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "a"]
            ),
            "twice",
        ),
        error(
            "vocabulary without [CLS]",
            lambda: WordPieceTokenizer(["[PAD]", "[UNK]", "[SEP]", "[MASK]"]),
            "[CLS]",
        ),
        error("vocabulary of ints", lambda: WordPieceTokenizer([1, 2, 3]), "vocabulary"),
        error(
            "missing vocab.txt",
            lambda: WordPieceTokenizer("/nonexistent/vocab.txt"),
            "/nonexistent/vocab.txt",
        ),
        error(
            "max_chars_per_word 0",
            lambda: WordPieceTokenizer(str(minilm_dir / "vocab.txt"), max_chars_per_word=0),
            "max_chars_per_word",
        ),
    ]
    problems = run_area("tokenizer", cases)
    assert not problems, "\n".join(problems)
