"""WordPieceTokenizer(flavor="keras_hub"): keras-hub's ids, exactly.

The reference is keras-hub's own `WordPieceTokenizer` (`BertTokenizer` is
one) run on its TensorFlow path: the path keras-hub takes inside `tf.data`,
a `tf.function` and `Task.predict` (which batches through `tf.data` when
`grain` is not installed). keras-hub 0.32's eager calls take a pure-Python
path instead, which agrees with its TensorFlow path except on text holding
NUL, where tensorflow-text's `regex_split` (and so keras-hub's TensorFlow
path, and the zoo's keras_hub flavor) drops the rest of the text;
`test_keras_hub_python_path_differs_only_at_nul` pins that.

Texts: the project's multilingual probes (`zoo.text.probes.ALL`) and a few
thousand random strings drawn from every code point plus pools of the
characters where the rules part ways (marks, controls, format characters,
non-ASCII spaces, CJK, NFKC compatibility characters), in every
lowercase / strip_accents / split_on_cjk setting.
"""

from __future__ import annotations

import random

import keras
import keras_hub
import numpy as np
import pytest
import tensorflow as tf

from zoo.text import description as td
from zoo.text import probes
from zoo.text.tokenizer import WordPieceTokenizer

from .conftest import TINY_VOCAB

SETTINGS = [
    (lowercase, strip, cjk)
    for lowercase in (True, False)
    for strip in (True, False)
    for cjk in (True, False)
]

_POOL = (
    [chr(cp) for cp in range(0x300, 0x370)]  # combining marks
    + list("aAeEıİΣσßé \t\n\r\f\v.,!?[]#$^`~")
    + ["\x00", "\x07", "\x85", "\xa0", "\xad", "\u200b", "\u200d", "\u2028", "\u3000"]
    + ["\ufeff", "\ufffd", "\ue000", "\u034f", "\u0301", "\u1e9e", "\u212a", "\u2460"]
    + ["ﬁ", "Ｆ", "²", "½", "⑴", "中", "国", "한", "の", "\U00020000", "\uf900", "😀"]
)


def random_texts(count, seed):
    """Random strings: a code point from all of Unicode (surrogates aside)
    or one from `_POOL`, 0 to 30 of them; every tenth a long run of one
    letter, near the 100-byte word limit."""
    rng = random.Random(seed)
    texts = []
    for i in range(count):
        if i % 10 == 9:
            texts.append(rng.choice("aéж中😀") * rng.randint(20, 110))
            continue
        chars = []
        for _ in range(rng.randint(0, 30)):
            if rng.random() < 0.5:
                chars.append(rng.choice(_POOL))
            else:
                cp = rng.randrange(0x30000)
                chars.append(chr(cp if not 0xD800 <= cp < 0xE000 else 0x41))
        texts.append("".join(chars))
    return texts


def reference(vocabulary, lowercase, strip, cjk):
    return keras_hub.tokenizers.WordPieceTokenizer(
        vocabulary=vocabulary, lowercase=lowercase, strip_accents=strip, split_on_cjk=cjk
    )


def reference_ids(tokenizer, texts):
    """keras-hub's ids on its TensorFlow path (taken inside a tf.function)."""
    graph = tf.function(tokenizer, input_signature=[tf.TensorSpec([None], tf.string)])
    return graph(tf.constant(texts, dtype=tf.string)).to_list()


def mismatches(texts, ours, theirs):
    return [(t, a, b) for t, a, b in zip(texts, ours, theirs) if a != b][:5]


@pytest.fixture(scope="module")
def vocabulary(minilm_vocab_path):
    """The real MiniLM vocabulary, with a few accented and cased pieces
    added so that every setting changes ids, not only [UNK]s."""
    tokens = minilm_vocab_path.read_text(encoding="utf-8").split("\n")[:-1]
    extra = ["café", "naïve", "Café", "Straße", "straße", "##é", "##ß", "Ｆ", "ﬁ", "⑴"]
    return tokens + [t for t in extra if t not in set(tokens)]


@pytest.mark.assets
@pytest.mark.parametrize(
    "setting", SETTINGS, ids=lambda s: "lower{:d}-strip{:d}-cjk{:d}".format(*s)
)
def test_ids_equal_keras_hub(vocabulary, setting):
    lowercase, strip, cjk = setting
    ours = WordPieceTokenizer(
        vocabulary, lowercase=lowercase, strip_accents=strip, cjk=cjk, flavor="keras_hub"
    )
    theirs = reference(vocabulary, lowercase, strip, cjk)
    texts = list(probes.ALL) + random_texts(
        3000, seed=sum(s << i for i, s in enumerate(setting))
    )
    got = ours.tokenize(texts).to_list()
    expected = reference_ids(theirs, texts)
    assert not mismatches(texts, got, expected)
    # The probes are where the rules part ways: the BERT flavor differs there.
    if setting == (True, False, True):
        bert = WordPieceTokenizer(vocabulary, lowercase=True, strip_accents=False)
        assert bert.tokenize(list(probes.ALL)).to_list() != expected[: len(probes.ALL)]


@pytest.mark.assets
def test_ids_equal_keras_hub_inside_tf_data(vocabulary):
    """Batches of the probes and random text through `tf.data.Dataset.map`,
    ours and keras-hub's BertTokenizer side by side (keras-hub runs its
    TensorFlow path there), and ours packed by `__call__`."""
    ours = WordPieceTokenizer(
        vocabulary, lowercase=True, strip_accents=False, flavor="keras_hub"
    )
    theirs = keras_hub.models.BertTokenizer(vocabulary=vocabulary, lowercase=True)
    texts = list(probes.ALL) + random_texts(500, seed=7)
    data = tf.data.Dataset.from_tensor_slices(texts).batch(64)
    got = [row for batch in data.map(ours.tokenize) for row in batch.to_list()]
    expected = [row for batch in data.map(theirs) for row in batch.to_list()]
    assert not mismatches(texts, got, expected)
    packed = np.concatenate(
        [b["token_ids"].numpy() for b in data.map(lambda t: ours(t, sequence_length=16))]
    )
    for row, ids in zip(packed, expected):
        body = [ours.cls_id] + ids[:14] + [ours.sep_id]
        assert list(row[: len(body)]) == body


@pytest.mark.assets
def test_keras_hub_python_path_differs_only_at_nul(vocabulary):
    """keras-hub's eager pure-Python path is the TensorFlow path's twin
    except after a NUL, which tensorflow-text's regex_split stops at."""
    theirs = keras_hub.models.BertTokenizer(vocabulary=vocabulary, lowercase=True)
    texts = list(probes.ALL) + random_texts(1000, seed=11)
    python = [list(map(int, row)) for row in theirs(texts)]
    tf_path = reference_ids(reference(vocabulary, True, False, True), texts)
    for text, a, b in zip(texts, python, tf_path):
        if a != b:
            assert "\x00" in text, (text, a, b)


# --- arguments, description, config, graph use: tiny vocabulary -------------


def test_keras_hub_rule_on_tiny_vocabulary():
    tok = WordPieceTokenizer(
        TINY_VOCAB, lowercase=True, strip_accents=False, flavor="keras_hub"
    )
    pieces = lambda text: [tok.id_to_token(i) for i in tok.tokenize(text).to_list()[0]]  # noqa: E731
    # Controls and format characters split words (the BERT flavor deletes them).
    assert pieces("hel\u200blo") == ["[UNK]", "[UNK]"]
    assert WordPieceTokenizer(TINY_VOCAB).tokenize("hel\u200blo").to_list() == [[10]]
    # NFKC case folding: full-width letters become ASCII.
    assert pieces("ＨＥＬＬＯ") == ["hello"]
    # The word limit counts UTF-8 bytes: 51 two-byte letters are 102 bytes.
    assert pieces("ж" * 50) != ["[UNK]"] and pieces("ж" * 51) == ["[UNK]"]
    assert WordPieceTokenizer(TINY_VOCAB).tokenize("ж" * 51).to_list() != [[1]]


def test_flavor_arguments_are_checked():
    with pytest.raises(
        ValueError, match=r"`flavor` must be one of 'bert', 'keras_hub'; received 'hf'"
    ):
        WordPieceTokenizer(TINY_VOCAB, flavor="hf")
    for name in ("lowercase", "strip_accents", "cjk"):
        with pytest.raises(TypeError, match=rf"`{name}` must be True.*received 'false'"):
            WordPieceTokenizer(
                TINY_VOCAB,
                flavor="keras_hub",
                **{"strip_accents": False, name: "false"},
            )
    with pytest.raises(
        ValueError, match=r"`strip_accents` must be True or False with flavor='keras_hub'"
    ):
        WordPieceTokenizer(TINY_VOCAB, flavor="keras_hub")
    with pytest.raises(
        ValueError, match=r"`cjk` must be True with flavor='bert'.*cjk=False"
    ):
        WordPieceTokenizer(TINY_VOCAB, cjk=False)


@pytest.mark.parametrize("setting", SETTINGS[:4], ids=str)
def test_description_round_trip(setting):
    lowercase, strip, cjk = setting
    tok = WordPieceTokenizer(
        TINY_VOCAB, lowercase=lowercase, strip_accents=strip, cjk=cjk, flavor="keras_hub",
        max_chars_per_word=40,
    )  # fmt: skip
    desc = td.check(tok.description)
    assert desc["pre_tokenizer"]["type"] == "keras_hub_bert"
    assert desc["model"]["max_word_unit"] == "bytes" and desc["model"]["max_word"] == 40
    again = WordPieceTokenizer.from_description(TINY_VOCAB, desc)
    assert (again.flavor, again.lowercase, again.strip_accents, again.cjk) == (
        "keras_hub",
        lowercase,
        strip,
        cjk,
    )
    assert again.max_chars_per_word == 40 and again.max_word_unit == "bytes"
    assert td.check(again.description) == desc


def test_bert_description_round_trip_and_refusals():
    tok = WordPieceTokenizer(TINY_VOCAB, lowercase=True, strip_accents=False)
    desc = td.check(tok.description)
    assert desc["pre_tokenizer"]["type"] == "bert"
    assert desc["model"]["max_word_unit"] == "characters"
    again = WordPieceTokenizer.from_description(TINY_VOCAB, desc)
    assert (again.flavor, again.lowercase, again.strip_accents) == ("bert", True, False)
    assert td.check(again.description) == desc
    nfkc = dict(desc, normalizer=desc["normalizer"] + [{"type": "nfkc"}])
    with pytest.raises(td.DescriptionError, match="normalizer step 'nfkc'"):
        WordPieceTokenizer.from_description(TINY_VOCAB, nfkc)


def test_config_round_trip_and_old_configs():
    tok = WordPieceTokenizer(
        TINY_VOCAB, lowercase=True, strip_accents=True, cjk=False, flavor="keras_hub"
    )
    config = tok.get_config()
    assert (config["flavor"], config["cjk"]) == ("keras_hub", False)
    clone = WordPieceTokenizer.from_config(config)
    assert (clone.flavor, clone.cjk, clone.strip_accents) == ("keras_hub", False, True)
    text = ["Ｈｅｌｌｏ, wörld 中文!"]
    assert clone.tokenize(text).to_list() == tok.tokenize(text).to_list()
    # A config written before the flavor existed loads as BERT's rule.
    old = {k: v for k, v in config.items() if k not in ("flavor", "cjk")}
    old["strip_accents"] = None
    legacy = WordPieceTokenizer.from_config(old)
    assert (legacy.flavor, legacy.cjk) == ("bert", True)


def test_keras_hub_flavor_in_a_saved_model(tmp_path):
    tok = WordPieceTokenizer(
        TINY_VOCAB, lowercase=True, strip_accents=False, flavor="keras_hub"
    )
    module = tf.Module()
    module.tok = tok
    module.f = tf.function(
        lambda t: tok(t, sequence_length=12)["token_ids"],
        input_signature=[tf.TensorSpec([None], tf.string)],
    )
    tf.saved_model.save(module, str(tmp_path / "sm"))
    loaded = tf.saved_model.load(str(tmp_path / "sm"))
    text = tf.constant(["ＨＥＬＬＯ wor\u200bld, the cat!", ""])
    np.testing.assert_array_equal(
        loaded.f(text).numpy(), tok(text, sequence_length=12)["token_ids"].numpy()
    )


def test_keras_serialization_keeps_the_flavor():
    tok = WordPieceTokenizer(
        TINY_VOCAB, lowercase=False, strip_accents=False, flavor="keras_hub", name="kh"
    )
    again = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(tok))
    assert (again.flavor, again.lowercase, again.strip_accents) == (
        "keras_hub",
        False,
        False,
    )
