"""WordPieceTokenizer: parity with HF BertTokenizerFast, packing, graph use, errors.

The reference is `transformers.BertTokenizerFast` on the same vocab.txt,
called with `split_special_tokens=True`: our tokenizer treats a typed
"[CLS]" as text (no special-token injection), and that flag makes the
reference do the same.
"""

from __future__ import annotations

import json
import random
import unicodedata

import keras
import numpy as np
import pytest
import tensorflow as tf
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zoo.datasets import corpora
from zoo.text.tokenizer import WordPieceTokenizer

from .conftest import TINY_VOCAB, make_reference, require_asset

# --- hard cases: one per class of difference found between tensorflow-text's
# FastBertTokenizer and the reference, plus the usual suspects.
HARD_CASES = [
    # accents, NFD and case
    "Café déjà vu naïve résumé Ångström ØRESUND straße İstanbul ǅ ﬁne ﬀ ½ ² ™ ℌ",
    "e\u0301 combining a\u0308 word\u0300 \u0300start ß ẞ ŉ ǰ ῼ ᾳ Ω K Å ΟΔΟΣ Σίσυφος",
    # compatibility characters: lowercased only, never NFKC-folded
    "Ｆｕｌｌｗｉｄｔｈ ＡＢＣ ① Ⅻ ㍱ ǈ ﷺ \U0001d400 math bold",
    # CJK and other scripts
    "中文字符测试 日本語のテキスト 한국어 텍스트 豈 更 \U00020000 ไทย हिन्दी العربية",
    # emoji, joiners, variation selectors
    "emoji 😀👍🏽 family 👨\u200d👩\u200d👧 flags 🇬🇧 ❤\ufe0f",
    # control and format characters inside words are deleted, not spaces
    "ctrl\x00in\x01side wo\x7frd ab\x80cd \x85next nul\x00byte",
    "zwsp\u200bx zwj\u200dx bom\ufeffx soft\u00adhyphen a\u2060b \ue000 private use",
    # U+FFFD is deleted
    "rep\ufffdlace \ufffd alone",
    # UTF-8 and Windows-1252 bytes decoded as Latin-1 (mojibake)
    "“smart quotes” in word".encode().decode("latin-1"),
    "it’s a “test” — yes…".encode("cp1252").decode("latin-1"),
    # whitespace of every kind
    "tab\there new\nline cr\rhere nbsp\u00a0x \u2028line sep\u2029para sep \u3000ideographic\u202fnarrow",
    # the 100-character word limit counts characters, not bytes
    "x" * 99, "x" * 100, "x" * 101, "é" * 100, "é" * 101, "ж" * 60, "ж" * 100, "ж" * 101,
    "中" * 150, "ab" + "é" * 99, "a" * 50 + "é" * 51, "😀" * 101,
    # punctuation runs and symbols
    "!!!???...,,,;;;:::---((()))[[[]]]", "a.b,c;d:e!f?g", "$100 #tag @user ^_^ `code` ~tilde~ |pipe| \\back",
    "¿Qué? ¡Sí! «guillemets» „low“ ‹›", "1,000.50 3.14e-10 2024-01-01 12:30",
    # special tokens typed as text
    "[CLS] [SEP] [MASK] [PAD] [UNK] hello [unused1] [cls]",
    # empty and blank
    "", " ", "\x00", "\ufffd\u200b",
]  # fmt: skip


def _mismatches(ours, reference):
    return [
        i
        for i, (a, b) in enumerate(zip(ours, reference, strict=True))
        if list(a) != list(b)
    ]


@pytest.fixture(scope="module")
def real_texts():
    """Over 2,000 real texts of every kind, plus the hard cases."""
    bbc = [text for text, _ in require_asset(corpora.bbc_news)]
    austen = require_asset(corpora.austen_sentences)[::20]
    glosses = [gloss for gloss, _ in require_asset(corpora.wordnet_glosses)[::100]]
    # Mojibake of real text: the BBC's pound signs and quotes, misdecoded.
    mojibake = [t.encode("utf-8").decode("latin-1") for t in bbc[::10]]
    texts = bbc + austen + glosses + mojibake + HARD_CASES
    assert len(texts) >= 2000
    return texts


# --- (a) parity on real text ----------------------------------------------


@pytest.mark.assets
def test_wordpieces_equal_reference_on_real_text(
    minilm_tokenizer, reference_tokenizer, real_texts
):
    ours = minilm_tokenizer.tokenize(real_texts).to_list()
    reference = reference_tokenizer(
        real_texts, add_special_tokens=False, split_special_tokens=True
    )["input_ids"]
    bad = _mismatches(ours, reference)
    assert not bad, (
        f"{len(bad)} of {len(real_texts)} texts differ, e.g. {[real_texts[i][:60] for i in bad[:3]]}"
    )


@pytest.mark.assets
@pytest.mark.parametrize("pairs", [False, True], ids=["single", "pair"])
def test_packed_batches_equal_reference(
    minilm_tokenizer, reference_tokenizer, real_texts, pairs
):
    # 800 characters (~160 pieces) still overflow 128; whole BBC bodies
    # only slow the reference, which keeps every overflowing piece.
    texts = [t[:800] for t in real_texts]
    # Pair each text with another of a different length and kind.
    text_b = texts[len(texts) // 2 :] + texts[: len(texts) // 2] if pairs else None
    ours = minilm_tokenizer(texts, text_b=text_b, sequence_length=128)
    reference = reference_tokenizer(
        texts,
        text_b,
        truncation=True,
        max_length=128,
        padding="max_length",
        split_special_tokens=True,
        return_tensors="np",
    )
    for name, ref_name in [
        ("token_ids", "input_ids"),
        ("segment_ids", "token_type_ids"),
        ("padding_mask", "attention_mask"),
    ]:
        assert ours[name].dtype == tf.int32
        assert ours[name].shape == (len(texts), 128)
        bad = np.flatnonzero((ours[name].numpy() != reference[ref_name]).any(axis=1))
        assert bad.size == 0, (
            f"{name}: {bad.size} rows differ, e.g. {[texts[i][:60] for i in bad[:3]]}"
        )


@pytest.mark.assets
@pytest.mark.slow
def test_every_code_point_equals_reference(minilm_tokenizer, reference_tokenizer):
    """Each of the 1,112,064 code points, inside a word and alone."""
    code_points = [cp for cp in range(0x110000) if not 0xD800 <= cp < 0xE000]
    # 1,024 code points per text keeps the reference's per-call cost low.
    texts = [
        " ".join(f"a{chr(cp)}b {chr(cp)}" for cp in code_points[i : i + 1024])
        for i in range(0, len(code_points), 1024)
    ]
    ours = minilm_tokenizer.tokenize(texts)
    reference = reference_tokenizer(
        texts, add_special_tokens=False, split_special_tokens=True
    )["input_ids"]
    np.testing.assert_array_equal(ours.row_lengths().numpy(), [len(r) for r in reference])
    np.testing.assert_array_equal(
        ours.flat_values.numpy(), np.concatenate([np.asarray(r) for r in reference])
    )


@pytest.mark.assets
def test_truncation_equals_reference_for_all_small_lengths(
    minilm_tokenizer, reference_tokenizer
):
    """Every split of the budget between two segments, at every small length."""
    for sequence_length in range(3, 16):
        cases = [(n1, n2) for n1 in range(16) for n2 in range(16)]
        a = [" ".join(["a"] * n1) for n1, _ in cases]
        b = [" ".join(["b"] * n2) for _, n2 in cases]
        ours = minilm_tokenizer(a, text_b=b, sequence_length=sequence_length)
        reference = reference_tokenizer(
            a,
            b,
            truncation=True,
            max_length=sequence_length,
            padding="max_length",
            return_tensors="np",
        )
        np.testing.assert_array_equal(ours["token_ids"].numpy(), reference["input_ids"])
        np.testing.assert_array_equal(
            ours["segment_ids"].numpy(), reference["token_type_ids"]
        )


# --- (b) property tests on random text --------------------------------------

# Random Unicode reaches marks, format characters and new scripts rarely;
# mix in pools of the characters where the two tokenizers could differ.
_MARKS = [chr(cp) for cp in range(0x300, 0x370)] + [
    "\U0001d165",
    "\U0001d16d",
    "\u0f71",
    "\u0f72",
    "\u05b0",
]
_TRICKY = list("aAeEıİΣσß \t\n.,!?[]#") + [
    "\x00",
    "\x85",
    "\ufffd",
    "\u200b",
    "\u00ad",
    "\ue000",
    "中",
    "한",
]
_text = st.text(
    alphabet=st.one_of(
        st.characters(exclude_categories=("Cs",)), st.sampled_from(_MARKS + _TRICKY)
    ),
    max_size=40,
)
_settings = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)


@pytest.mark.assets
@_settings
@given(texts=st.lists(_text, min_size=1, max_size=8))
def test_random_text_equals_reference(minilm_tokenizer, reference_tokenizer, texts):
    ours = minilm_tokenizer.tokenize(texts).to_list()
    reference = reference_tokenizer(
        texts, add_special_tokens=False, split_special_tokens=True
    )["input_ids"]
    assert ours == reference


@pytest.fixture(scope="module")
def configured_pairs(minilm_vocab_path):
    """(ours, reference) for every lowercase / strip_accents setting."""
    settings_ = [(True, None), (False, None), (True, False), (False, True)]
    return {
        s: (
            WordPieceTokenizer(minilm_vocab_path, lowercase=s[0], strip_accents=s[1]),
            make_reference(minilm_vocab_path, lowercase=s[0], strip_accents=s[1]),
        )
        for s in settings_
    }


@pytest.mark.assets
@_settings
@given(
    texts=st.lists(_text, min_size=1, max_size=6),
    setting=st.sampled_from([(True, None), (False, None), (True, False), (False, True)]),
)
def test_random_text_equals_reference_in_every_setting(configured_pairs, texts, setting):
    ours, reference = configured_pairs[setting]
    assert (
        ours.tokenize(texts).to_list()
        == reference(texts, add_special_tokens=False, split_special_tokens=True)[
            "input_ids"
        ]
    )


@pytest.mark.assets
@_settings
@given(
    pairs=st.lists(st.tuples(_text, _text), min_size=1, max_size=6),
    sequence_length=st.integers(3, 24),
    pair=st.booleans(),
)
def test_random_packing_equals_reference(
    minilm_tokenizer, reference_tokenizer, pairs, sequence_length, pair
):
    a = [p[0] for p in pairs]
    b = [p[1] for p in pairs] if pair else None
    ours = minilm_tokenizer(a, text_b=b, sequence_length=sequence_length)
    reference = reference_tokenizer(
        a,
        b,
        truncation=True,
        max_length=sequence_length,
        padding="max_length",
        split_special_tokens=True,
        return_tensors="np",
    )
    np.testing.assert_array_equal(ours["token_ids"].numpy(), reference["input_ids"])
    np.testing.assert_array_equal(ours["segment_ids"].numpy(), reference["token_type_ids"])
    np.testing.assert_array_equal(ours["padding_mask"].numpy(), reference["attention_mask"])


@pytest.mark.assets
def test_mark_heavy_random_strings_equal_reference(minilm_tokenizer, reference_tokenizer):
    """Canonical reordering: runs of combining marks in every order."""
    rng = random.Random(0)
    marks = [
        chr(cp)
        for cp in range(0x110000)
        if not 0xD800 <= cp < 0xE000 and unicodedata.combining(chr(cp))
    ]
    pool = marks + list("aAeEıİΣ ") + ["\U0001d165", "\U0001d16d"]
    texts = [
        "".join(rng.choice(pool) for _ in range(rng.randint(1, 12))) for _ in range(5000)
    ]
    ours = minilm_tokenizer.tokenize(texts).to_list()
    reference = reference_tokenizer(
        texts, add_special_tokens=False, split_special_tokens=True
    )["input_ids"]
    assert not _mismatches(ours, reference)


# --- (c) packing, truncation, padding, graph use: tiny vocabulary -----------


@pytest.fixture(scope="module")
def tiny():
    return WordPieceTokenizer(TINY_VOCAB)


def _ids(tiny, *tokens):
    return [tiny.token_to_id(t) for t in tokens]


def test_special_ids_and_vocabulary_helpers(tiny):
    assert (tiny.pad_id, tiny.unk_id, tiny.cls_id, tiny.sep_id, tiny.mask_id) == (
        0,
        1,
        2,
        3,
        4,
    )
    assert tiny.vocabulary == TINY_VOCAB and tiny.vocabulary_size == len(TINY_VOCAB)
    assert tiny.id_to_token(10) == "hello" and tiny.token_to_id("hello") == 10
    with pytest.raises(IndexError, match="outside the vocabulary"):
        tiny.id_to_token(len(TINY_VOCAB))
    with pytest.raises(KeyError, match="not in the vocabulary"):
        tiny.token_to_id("nope")


def test_tokenize(tiny):
    ids = tiny.tokenize(["Hello, WORLD!", "abc cab", "ab\x00c", ""])
    assert ids.dtype == tf.int32
    assert ids.to_list() == [
        _ids(tiny, "hello", ",", "world", "!"),
        _ids(tiny, "a", "##b", "##c", "c", "##a", "##b"),
        _ids(tiny, "a", "##b", "##c"),  # the NUL is deleted, not a space
        [],
    ]


def test_typed_special_tokens_are_text(tiny):
    assert tiny.tokenize("[CLS]").to_list() == [_ids(tiny, "[", "cl", "##s", "]")]


def test_word_limit_counts_characters(tiny):
    # 100 two-byte characters (200 bytes) are still a word; 101 are [UNK].
    assert tiny.tokenize("ж" * 100).to_list() == [_ids(tiny, "ж", *["##ж"] * 99)]
    assert tiny.tokenize(["ж" * 101, "a" * 101]).to_list() == [[tiny.unk_id], [tiny.unk_id]]
    short = WordPieceTokenizer(TINY_VOCAB, max_chars_per_word=3)
    assert short.tokenize("aaa aaaa").to_list() == [_ids(tiny, "a", "##a", "##a", "[UNK]")]


def test_pack_single(tiny):
    batch = tiny(["a b c", "", "hello world"], sequence_length=6)
    cls, sep, pad = tiny.cls_id, tiny.sep_id, tiny.pad_id
    a, b, c, hello, world = _ids(tiny, "a", "b", "c", "hello", "world")
    np.testing.assert_array_equal(
        batch["token_ids"],
        [
            [cls, a, b, c, sep, pad],
            [cls, sep, pad, pad, pad, pad],
            [cls, hello, world, sep, pad, pad],
        ],
    )
    np.testing.assert_array_equal(batch["segment_ids"], np.zeros((3, 6)))
    np.testing.assert_array_equal(
        batch["padding_mask"], [[1, 1, 1, 1, 1, 0], [1, 1, 0, 0, 0, 0], [1, 1, 1, 1, 0, 0]]
    )
    assert all(v.dtype == tf.int32 and v.shape == (3, 6) for v in batch.values())


def test_pack_single_truncates_and_keeps_sep(tiny):
    batch = tiny("a b c a b c", sequence_length=4)
    np.testing.assert_array_equal(
        batch["token_ids"], [[tiny.cls_id, *_ids(tiny, "a", "b"), tiny.sep_id]]
    )
    np.testing.assert_array_equal(
        tiny("a b", sequence_length=2)["token_ids"], [[tiny.cls_id, tiny.sep_id]]
    )


def test_pack_pair(tiny):
    batch = tiny(["a"], text_b=["b c"], sequence_length=8)
    cls, sep, pad = tiny.cls_id, tiny.sep_id, tiny.pad_id
    a, b, c = _ids(tiny, "a", "b", "c")
    np.testing.assert_array_equal(batch["token_ids"], [[cls, a, sep, b, c, sep, pad, pad]])
    np.testing.assert_array_equal(batch["segment_ids"], [[0, 0, 0, 1, 1, 1, 0, 0]])
    np.testing.assert_array_equal(batch["padding_mask"], [[1, 1, 1, 1, 1, 1, 0, 0]])


def _kept(tiny, n1, n2, sequence_length, truncation):
    batch = tiny(
        [" ".join("a" * n1)],
        text_b=[" ".join("b" * n2)],
        sequence_length=sequence_length,
        truncation=truncation,
    )
    ids = batch["token_ids"].numpy()[0].tolist()
    return ids.count(tiny.token_to_id("a")), ids.count(tiny.token_to_id("b"))


@pytest.mark.parametrize(
    "n1, n2, sequence_length, longest_first, round_robin",
    [
        (2, 3, 8, (2, 3), (2, 3)),  # fits: untouched
        (5, 5, 10, (3, 4), (4, 3)),  # tie, odd budget 7: the reference favours the second
        (10, 6, 10, (4, 3), (4, 3)),  # both long: halves, the longer gets the odd token
        (6, 10, 10, (3, 4), (4, 3)),  # round robin: the first gets the odd token
        (10, 2, 10, (5, 2), (5, 2)),  # the short one fits in half: kept whole
        (2, 10, 10, (2, 5), (2, 5)),
        (4, 4, 11, (4, 4), (4, 4)),  # exactly fits
        (3, 3, 3, (0, 0), (0, 0)),  # no room: [CLS] [SEP] [SEP]
    ],
)
def test_truncation_strategies(tiny, n1, n2, sequence_length, longest_first, round_robin):
    assert _kept(tiny, n1, n2, sequence_length, "longest_first") == longest_first
    assert _kept(tiny, n1, n2, sequence_length, "round_robin") == round_robin


def test_sequence_length_none_pads_to_longest(tiny):
    batch = tiny(["a b c", "a"])
    assert batch["token_ids"].shape == (2, 5)
    np.testing.assert_array_equal(batch["padding_mask"], [[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]])
    assert tiny([], sequence_length=None)["token_ids"].shape == (0, 0)
    assert tiny([], sequence_length=8)["token_ids"].shape == (0, 8)


@pytest.mark.parametrize(
    "text",
    [
        "a b",
        b"a b",
        ["a b"],
        ("a b",),
        np.array(["a b"]),
        np.array([b"a b"]),
        np.array(["a b"], dtype=object),
        tf.constant("a b"),
        tf.constant(["a b"]),
        tf.constant([["a b"]]),
    ],
    ids=[
        "str",
        "bytes",
        "list",
        "tuple",
        "np_str",
        "np_bytes",
        "np_object",
        "tf_scalar",
        "tf_1d",
        "tf_column",
    ],
)
def test_accepted_inputs(tiny, text):
    batch = tiny(text, sequence_length=5)
    np.testing.assert_array_equal(
        batch["token_ids"], [[tiny.cls_id, *_ids(tiny, "a", "b"), tiny.sep_id, 0]]
    )


def _eager(tiny, texts, text_b=None):
    return {k: v.numpy() for k, v in tiny(texts, text_b=text_b, sequence_length=9).items()}


TEXTS = ["Hello, world!", "", "a b c a b c a b c a b c", "ab\x00c é"]


def test_inside_tf_data_map(tiny):
    single = (
        tf.data.Dataset.from_tensor_slices(TEXTS)
        .batch(2)
        .map(lambda x: tiny(x, sequence_length=9))
    )
    pairs = (
        tf.data.Dataset.from_tensor_slices((TEXTS, TEXTS[::-1]))
        .batch(3)
        .map(lambda a, b: tiny(a, text_b=b, sequence_length=9, truncation="round_robin"))
    )
    got = {
        k: np.concatenate([b[k].numpy() for b in single])
        for k in ("token_ids", "segment_ids", "padding_mask")
    }
    want = _eager(tiny, TEXTS)
    for k in want:
        np.testing.assert_array_equal(got[k], want[k])
    got = np.concatenate([b["token_ids"].numpy() for b in pairs])
    want = tiny(TEXTS, text_b=TEXTS[::-1], sequence_length=9, truncation="round_robin")[
        "token_ids"
    ]
    np.testing.assert_array_equal(got, want)


def test_inside_tf_function(tiny):
    @tf.function(
        input_signature=[tf.TensorSpec([None], tf.string), tf.TensorSpec([None], tf.string)]
    )
    def pack(a, b):
        return tiny(a, text_b=b, sequence_length=9)

    got = pack(tf.constant(TEXTS), tf.constant(TEXTS[::-1]))
    want = _eager(tiny, TEXTS, TEXTS[::-1])
    for k in want:
        np.testing.assert_array_equal(got[k], want[k])
    assert got["token_ids"].shape.as_list() == [4, 9]


def test_inside_saved_model(tiny, tmp_path):
    """Exported with Keras' ExportArchive (the project's SavedModel path) and reloaded."""
    archive = keras.export.ExportArchive()
    archive.track(tiny)
    archive.add_endpoint(
        "pack",
        lambda text: tiny(text, sequence_length=9),
        input_signature=[tf.TensorSpec([None], tf.string)],
    )
    archive.add_endpoint(
        "tokenize",
        lambda text: tiny.tokenize(text).to_tensor(default_value=-1),
        input_signature=[tf.TensorSpec([None], tf.string)],
    )
    archive.write_out(str(tmp_path / "tokenizer"), verbose=False)
    reloaded = tf.saved_model.load(str(tmp_path / "tokenizer"))
    got = reloaded.pack(tf.constant(TEXTS))
    want = _eager(tiny, TEXTS)
    for k in want:
        np.testing.assert_array_equal(got[k], want[k])
    np.testing.assert_array_equal(
        reloaded.tokenize(tf.constant(TEXTS)),
        tiny.tokenize(TEXTS).to_tensor(default_value=-1),
    )


# --- errors: each names the argument, what was received, what to do --------


def test_error_non_text_input(tiny):
    with pytest.raises(
        TypeError,
        match=r"`text` must be text: .* received a tf.Tensor of dtype int32 and shape \(2,\)\. .*token ids go to the encoder",
    ):
        tiny(tf.constant([1, 2]), sequence_length=8)
    with pytest.raises(
        TypeError,
        match=r"`text_b` must hold text \(str\); received a list of int \(first item 3\)",
    ):
        tiny(["a"], text_b=[3], sequence_length=8)
    with pytest.raises(
        TypeError,
        match=r"`text` must be text: .* received a numpy array of dtype float64 and shape \(2,\)",
    ):
        tiny.tokenize(np.zeros(2))
    with pytest.raises(
        ValueError,
        match=r"`text` must be a scalar or a 1-D batch of strings; received .* shape \(1, 2, 1\)",
    ):
        tiny(tf.constant([[["a"], ["b"]]]))


def test_error_sequence_length(tiny):
    with pytest.raises(
        ValueError,
        match=r"`sequence_length` must be an int >= 2 \(room for \[CLS\] A \[SEP\]\).*received 1\.",
    ):
        tiny(["a"], sequence_length=1)
    with pytest.raises(
        ValueError,
        match=r"`sequence_length` must be an int >= 3 \(room for \[CLS\] A \[SEP\] B \[SEP\]\).*received 2\.",
    ):
        tiny(["a"], text_b=["b"], sequence_length=2)
    with pytest.raises(ValueError, match=r"received 8\.0"):
        tiny(["a"], sequence_length=8.0)


def test_error_truncation(tiny):
    with pytest.raises(
        ValueError,
        match=r"`truncation` must be one of 'longest_first', 'round_robin'; received 'only_first'\.",
    ):
        tiny(["a"], text_b=["b"], sequence_length=8, truncation="only_first")


def test_error_pair_sizes(tiny):
    with pytest.raises(
        ValueError,
        match=r"`text` and `text_b` must hold the same number of examples; received 2 and 1\.",
    ):
        tiny(["a", "b"], text_b=["c"], sequence_length=8)


def test_error_missing_special_token(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text(
        "\n".join(t for t in TINY_VOCAB if t != "[MASK]") + "\n", encoding="utf-8"
    )
    with pytest.raises(
        ValueError,
        match=r"Cannot find special token '\[MASK\]' \(`mask_token`\) in the vocabulary \(file '.*vocab.txt'\)\. .*pass `mask_token=`",
    ):
        WordPieceTokenizer(path)
    with pytest.raises(
        ValueError,
        match=rf"Cannot find special token '<s>' \(`cls_token`\) in the vocabulary \(list of {len(TINY_VOCAB)} tokens\)",
    ):
        WordPieceTokenizer(TINY_VOCAB, cls_token="<s>")


def test_error_bad_vocabulary_and_options():
    with pytest.raises(
        TypeError,
        match=r"`vocabulary` must be the path of a vocab.txt file .* received a dict",
    ):
        WordPieceTokenizer({"a": 0})
    with pytest.raises(
        ValueError, match=r"`max_chars_per_word` must be a positive int; received 0"
    ):
        WordPieceTokenizer(TINY_VOCAB, max_chars_per_word=0)


def test_vocabulary_file_round_trip(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("\r\n".join(TINY_VOCAB) + "\r\n", encoding="utf-8")
    assert WordPieceTokenizer(path).vocabulary == TINY_VOCAB


# --- (d) Keras serialization ------------------------------------------------


def test_get_config_round_trip(tiny):
    config = tiny.get_config()
    assert json.loads(json.dumps(config)) == config  # plain JSON
    assert config["vocabulary"] == TINY_VOCAB
    clone = WordPieceTokenizer.from_config(config)
    assert clone.get_config() == config
    for k, v in _eager(tiny, TEXTS, TEXTS[::-1]).items():
        np.testing.assert_array_equal(
            clone(TEXTS, text_b=TEXTS[::-1], sequence_length=9)[k], v
        )


def test_config_vocabulary_is_inline_and_a_path_there_is_refused_unread(tiny, tmp_path):
    """A .keras file is not trusted to name files: a config whose vocabulary
    is a path (a FIFO would hang the load) is refused before any open."""
    from zoo.text.preprocessor import TextPreprocessor

    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(TINY_VOCAB) + "\n")
    config = tiny.get_config()
    for value in (str(path), "/nonexistent/vocab.txt", {"path": str(path)}, 7):
        with pytest.raises(ValueError, match="`vocabulary` must be the list of tokens"):
            WordPieceTokenizer.from_config({**config, "vocabulary": value})
    pre = TextPreprocessor(tiny, 8).get_config()
    with pytest.raises(ValueError, match="`tokenizer` must be the serialized tokenizer"):
        TextPreprocessor.from_config({**pre, "tokenizer": str(path)})
    bad = {
        **pre["tokenizer"],
        "config": {**pre["tokenizer"]["config"], "vocabulary": str(path)},
    }
    with pytest.raises(ValueError, match="`vocabulary` must be the list of tokens"):
        TextPreprocessor.from_config({**pre, "tokenizer": bad})


def test_keras_serialization_round_trip():
    tok = WordPieceTokenizer(
        TINY_VOCAB, lowercase=False, strip_accents=True, max_chars_per_word=7, name="tok"
    )
    serialized = keras.saving.serialize_keras_object(tok)
    assert serialized["registered_name"] == "zoo>WordPieceTokenizer"
    clone = keras.saving.deserialize_keras_object(json.loads(json.dumps(serialized)))
    assert isinstance(clone, WordPieceTokenizer)
    assert (clone.lowercase, clone.strip_accents, clone.max_chars_per_word, clone.name) == (
        False,
        True,
        7,
        "tok",
    )
    assert clone.tokenize("Hello a").to_list() == tok.tokenize("Hello a").to_list()
