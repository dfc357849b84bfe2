"""BytePairTokenizer against transformers' RobertaTokenizerFast: ids, packing,
graph use, SavedModel (TF2 and TF1 loaders), configs and errors.

Why the vocabulary is trained here: no RoBERTa vocabulary installs offline
(the Hub is out of reach and no package ships one), so the module fixture
trains a small byte-level BPE (3,000 tokens) with `tokenizers` on real text
(even-numbered BBC articles and the first Austen sentences), with RoBERTa's
special tokens, saves vocab.json, merges.txt and tokenizer.json, and loads
them in `RobertaTokenizerFast`, the oracle. The reference's pre-tokenizer,
BPE and RoBERTa post-processor are the same code whatever vocabulary they
run on; a small vocabulary only makes long merge chains rarer, so the
adversarial strings and every code point are checked as well. Parity texts
are held out from training: odd-numbered BBC articles, the last Austen
sentences and WordNet glosses.

The reference is called with `split_special_tokens=True`: this tokenizer
treats a typed "<s>" as text (no special-token injection), and that flag
makes the reference do the same.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest
import tensorflow as tf

from zoo.datasets import corpora
from zoo.text import description as td
from zoo.text import packing
from zoo.text.byte_pair_tokenizer import BytePairTokenizer, byte_alphabet

from .conftest import require_asset

VOCABULARY_SIZE = 3000

# One per class of trouble for a GPT-2 pre-tokenizer written without
# lookahead, plus the usual suspects.
HARD_CASES = [
    # apostrophe contractions, and what only looks like one
    "I'm sure it's the cat's; we're, you've, they'll, she'd, can't, don't",
    "IT'S SHOUTED 'S 'T 'RE 'Ve 'M 'LL 'D", "''s ''t '' ' 's 'sx 'tis 'red 'velvet 'mm 'lld",
    "x 's x  's x   's x\t's x\n's '", "rock'n'roll o'clock ma'am y'all'd've",
    # whitespace: runs, mixes, every Unicode space, leading and trailing
    "   leading", "trailing   ", "  both  ", " ", "  ", "\t", "\n", "\n\n\n", " \n ", "\r\n\r\n",
    "a  b   c    d", "a\n\nb\n\n\nc", "a\t\tb\t \tc", "a \tb\t c\n d \n\ne",
    "x" + " " * 40 + "y" + "\n" * 30 + "z" + "\t" * 20, " " * 50, "\n" * 50 + " ",
    "nbsp\u00a0x\u00a0\u00a0y \u00a0z", "vt\x0bx ff\x0cx nel\x85x ogham\u1680x",
    "en\u2000x\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200ax",
    "ls\u2028x ps\u2029x nnbsp\u202fx mmsp\u205fx ideo\u3000x \u3000\u3000 y",
    "zwsp\u200bx zwj\u200dx bom\ufeffx soft\u00adhyphen",
    # control characters and NUL
    "\x00", "nul\x00byte \x00 \x00\x00", "ctrl\x01\x02\x03 \x1b[31mred\x1b[0m \x7f\x80\x9f",
    # emoji: ZWJ sequences, skin tones, flags, keycaps, variation selectors
    "family 👨\u200d👩\u200d👧\u200d👦 and 👩🏽\u200d💻 👍🏻👍🏿 🇬🇧🇺🇸 1\ufe0f\u20e3 ❤\ufe0f 😀😀😀",
    "🏳\ufe0f\u200d🌈 🧑\u200d🤝\u200d🧑 👁\u200d🗨",
    # combining marks, precomposed and decomposed
    "Café déjà vu naïve résumé e\u0301 a\u0308 \u0300start Z\u0351\u0352\u0353algo",
    # CJK, Arabic, Hebrew, Thai, Devanagari (U+0966 is a digit), non-BMP
    "中文字符测试 日本語のテキスト 한국어 텍스트 豈 更 \U00020000\U0002a6d6",
    "مرحبا بالعالم ١٢٣ שלום עולם ไทย हिन्दी \u0966\u0967 x\u0966y",
    "\U0001d400\U0001d401 math 𝔘𝔫𝔦 \U00010348 gothic \U0001f600",
    # letters and digits new in Unicode 15.1 and 16.0 (RE2's tables lack them)
    "a\U000105c0b \U00016d40\U00016d41 \u1c89x \U0001ccf0\U0001ccf1 1\U0001e5f1 \U0002ebf0x",
    # numbers and punctuation runs
    "1,000.50 3.14e-10 2024-01-01 12:30 $100 #tag @user 0x1F 1st 2nd",
    "!!!???...,,,;;;:::---((()))[[[]]] ... --- !?!? ¿¡ «» „“ ‹› …",
    "12345678901234567890 ①②③ ½ ² Ⅻ",
    # special tokens typed as text, and U+00FF, the separator byte's Latin-1 twin
    "<s> </s> <pad> <unk> <mask> hello<mask>world <s>x</s>", "ÿ ÿÿ naïveÿ \u00ff\u00ff",
    # mojibake
    "“smart quotes” — yes…".encode().decode("latin-1"),
    # very long words
    "a" * 1000, "ab" * 500, "Supercalifragilisticexpialidocious" * 20, "😀" * 300,
    "x" * 5000 + " y", "é" * 700, "中" * 500,
    # empty
    "",
]  # fmt: skip

# Pieces of the random strings: every class the split distinguishes, joined
# at random so runs and boundaries meet in every order.
PIECES = [
    " ", " ", "  ", "\t", "\n", "\r", "\x0b", "\u3000", "\u00a0", "\u2028", "\x85",
    "'", "'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "s", "t",
    "a", "the", "The", "é", "e\u0301", "ж", "中", "ع", "ש", "\U000105c0",
    "1", "42", "١", "\u0966", "\U0001ccf0", "½",
    ".", "!", "?", "(", ")", "-", "...", "$", "\"", "—",
    "😀", "👍🏽", "\u200d", "\ufe0f", "\x00", "\x01", "ÿ", "<s>", "<mask>",
]  # fmt: skip


def _random_texts(count, seed):
    rng = random.Random(seed)
    return [
        "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 30))) for _ in range(count)
    ]


def _mismatches(ours, theirs):
    return [
        i for i, (a, b) in enumerate(zip(ours, theirs, strict=True)) if list(a) != list(b)
    ]


@pytest.fixture(scope="module")
def corpus():
    bbc = [text for text, _ in require_asset(corpora.bbc_news)]
    austen = require_asset(corpora.austen_sentences)
    glosses = [gloss for gloss, _ in require_asset(corpora.wordnet_glosses)]
    training = bbc[::2][:600] + austen[:3000]
    seen = set(training)  # BBC News repeats 98 articles: drop the copies
    held_out = {
        "bbc": [t for t in bbc[1::2] if t not in seen],
        "austen": [t for t in austen[-1000:] if t not in seen],
        "wordnet": glosses[::200],
    }
    return training, held_out


@pytest.fixture(scope="module")
def bpe_files(corpus, tmp_path_factory):
    """vocab.json, merges.txt and tokenizer.json of a byte-level BPE trained
    here, laid out as RoBERTa's: <s> 0, <pad> 1, </s> 2, <unk> 3, <mask> last."""
    import tokenizers
    from tokenizers import decoders, models, pre_tokenizers, processors, trainers

    training, _ = corpus
    bpe = tokenizers.Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCABULARY_SIZE - 1,
        special_tokens=["<s>", "<pad>", "</s>", "<unk>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(training, trainer)
    # <mask> after training, as RoBERTa's is the last id: tokenizer.json then
    # lists it among the added tokens only, vocab.json (written below) holds it.
    bpe.add_special_tokens(["<mask>"])
    bpe.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0))
    directory = tmp_path_factory.mktemp("roberta_like")
    bpe.save(str(directory / "tokenizer.json"))
    bpe.model.save(str(directory))  # vocab.json and merges.txt
    vocab = json.loads((directory / "vocab.json").read_text(encoding="utf-8"))
    vocab["<mask>"] = len(vocab)
    (directory / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), "utf-8")
    assert len(vocab) == VOCABULARY_SIZE
    return directory


def _reference(directory, add_prefix_space):
    from transformers import RobertaTokenizerFast

    reference = RobertaTokenizerFast(
        vocab=str(directory / "vocab.json"),
        merges=str(directory / "merges.txt"),
        add_prefix_space=add_prefix_space,
    )
    # It read the files (transformers 5 ignores some file arguments silently).
    assert (
        len(reference) == VOCABULARY_SIZE and reference.mask_token_id == VOCABULARY_SIZE - 1
    )
    return reference


@pytest.fixture(scope="module", params=[False, True], ids=["no_prefix", "prefix_space"])
def pair(request, bpe_files):
    """(ours, reference) with one add_prefix_space setting."""
    import transformers  # noqa: F401

    ours = BytePairTokenizer(
        bpe_files / "vocab.json", bpe_files / "merges.txt", add_prefix_space=request.param
    )
    return ours, _reference(bpe_files, request.param)


def _reference_ids(reference, texts):
    return reference(texts, add_special_tokens=False, split_special_tokens=True)[
        "input_ids"
    ]


# --- ids equal the reference's ---------------------------------------------


@pytest.mark.assets
def test_ids_equal_reference_on_held_out_text(pair, corpus):
    ours, reference = pair
    training, held_out = corpus
    for name, texts in held_out.items():
        assert not set(texts) & set(training), name
        bad = _mismatches(ours.tokenize(texts).to_list(), _reference_ids(reference, texts))
        assert not bad, (
            f"{name}: {len(bad)} of {len(texts)} differ, e.g. {texts[bad[0]][:80]!r}"
        )
    # Mojibake of real text: BBC pound signs and quotes decoded as Latin-1.
    mojibake = [t.encode("utf-8").decode("latin-1") for t in held_out["bbc"][::20]]
    assert not _mismatches(
        ours.tokenize(mojibake).to_list(), _reference_ids(reference, mojibake)
    )


@pytest.mark.assets
def test_ids_equal_reference_on_adversarial_text(pair):
    ours, reference = pair
    for name, texts in (("hard cases", HARD_CASES), ("random", _random_texts(3000, 7))):
        bad = _mismatches(ours.tokenize(texts).to_list(), _reference_ids(reference, texts))
        assert not bad, (
            f"{name}: {len(bad)} differ, e.g. {[texts[i][:60] for i in bad[:3]]}"
        )


@pytest.mark.assets
@pytest.mark.slow
def test_ids_equal_reference_on_whole_corpora(pair, corpus, bpe_files):
    """Every text of the three corpora not trained on (~20,000 Austen
    sentences, ~1,600 BBC articles, ~117,000 WordNet glosses)."""
    ours, reference = pair
    training, _ = corpus
    seen = set(training)
    texts = [t for t, _ in corpora.bbc_news()] + corpora.austen_sentences()
    texts += [g for g, _ in corpora.wordnet_glosses()]
    texts = [t for t in texts if t not in seen]
    assert len(texts) > 130_000
    for start in range(0, len(texts), 20_000):
        chunk = texts[start : start + 20_000]
        bad = _mismatches(ours.tokenize(chunk).to_list(), _reference_ids(reference, chunk))
        assert not bad, f"{len(bad)} differ, e.g. {chunk[bad[0]][:80]!r}"


@pytest.mark.assets
def test_every_code_point_splits_as_the_reference(bpe_files):
    """Pre-tokens of every code point after a letter, a digit, a
    punctuation mark and a space: the character classes (letters, digits,
    whitespace, the rest) are the reference's, Unicode 15.1 and 16.0 included."""
    from tokenizers import pre_tokenizers

    reference = pre_tokenizers.ByteLevel(add_prefix_space=False)
    ours = BytePairTokenizer(bpe_files / "vocab.json", bpe_files / "merges.txt")
    points = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    texts = [
        "".join(f"a{chr(c)}1{chr(c)}!{chr(c)} {chr(c)}\n" for c in points[i : i + 8192])
        for i in range(0, len(points), 8192)
    ]
    ours_lengths = tf.strings.length(ours.pre_tokenize(texts)).to_list()
    for text, lengths in zip(texts, ours_lengths, strict=True):
        # Byte-level pre-tokens have one character per byte, so equal
        # lengths in order are equal boundaries.
        theirs = [len(piece) for piece, _ in reference.pre_tokenize_str(text)]
        if lengths != theirs:
            first = next(
                i for i, (a, b) in enumerate(zip(lengths, theirs, strict=False)) if a != b
            )
            offset = sum(lengths[:first])
            context = text.encode("utf-8")[offset : offset + 24].decode("utf-8", "replace")
            pytest.fail(f"pre-tokens differ at byte {offset}: {context!r}")


def test_unordered_merges_follow_the_reference_heap():
    """A merges list where a merge creates a better-ranked pair ("ab a"
    ranks before "a b"): merged one pair at a time, as the reference does;
    merging every "a b" at once would give "ab ab" for "abab"."""
    import transformers

    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    vocabulary = specials + byte_alphabet() + ["ab", "aba", "abab", "Ġa"]
    merges = ["ab a", "a b", "Ġ a", "ab ab"]
    ours = BytePairTokenizer(vocabulary, merges)
    reference = transformers.RobertaTokenizerFast(
        vocab={t: i for i, t in enumerate(vocabulary)},
        merges=[tuple(m.split(" ")) for m in merges],
    )
    texts = ["abab", "ababab", "aabab abab", "babababa", "a b ab aba"]
    ids = ours.tokenize(texts).to_list()
    assert ids == _reference_ids(reference, texts)
    assert [ours.id_to_token(i) for i in ids[0]] == ["aba", "b"]


def test_a_merge_listed_twice_keeps_its_last_rank():
    """As the reference's pair -> rank map: "a b" ranks after "b c" here."""
    import transformers

    vocabulary = (
        ["<s>", "<pad>", "</s>", "<unk>", "<mask>"] + byte_alphabet() + ["ab", "bc"]
    )
    merges = ["a b", "b c", "a b"]
    ours = BytePairTokenizer(vocabulary, merges)
    reference = transformers.RobertaTokenizerFast(
        vocab={t: i for i, t in enumerate(vocabulary)},
        merges=[tuple(m.split(" ")) for m in merges],
    )
    assert ours.tokenize(["abc"]).to_list() == _reference_ids(reference, ["abc"])
    assert [ours.id_to_token(i) for i in ours.tokenize("abc")[0].numpy()] == ["a", "bc"]


# --- packing ------------------------------------------------------------------


@pytest.mark.assets
@pytest.mark.parametrize("pairs", [False, True], ids=["single", "pair"])
def test_packed_batches_equal_reference(pair, corpus, pairs):
    ours, reference = pair
    _, held_out = corpus
    texts = [t[:600] for t in held_out["bbc"][:150]] + held_out["austen"][:150] + HARD_CASES
    # Each text paired with one of another length and kind.
    text_b = texts[len(texts) // 2 :] + texts[: len(texts) // 2] if pairs else None
    for length in [64, None] + ([4, 5, 6, 7, 9] if pairs else [2, 3, 5]):
        if length is not None and length < 10:
            # The edges of the truncation rule. The reference keeps every
            # overflowing window, which at these lengths costs it seconds per
            # long text: short texts suffice.
            texts = [t[:100] for t in texts[::5]]
            text_b = None if text_b is None else [t[:100] for t in text_b[::5]]
        got = ours(texts, text_b=text_b, sequence_length=length)
        want = reference(
            texts,
            text_b,
            truncation=length is not None,
            max_length=length,
            padding="max_length" if length else "longest",
            split_special_tokens=True,
            return_token_type_ids=True,
            return_tensors="np",
        )
        for name, ref_name in [
            ("token_ids", "input_ids"),
            ("segment_ids", "token_type_ids"),
            ("padding_mask", "attention_mask"),
        ]:
            assert got[name].dtype == tf.int32
            np.testing.assert_array_equal(
                got[name].numpy(), want[ref_name], err_msg=f"{name}, length {length}"
            )


def test_packing_layout(tiny):
    both = tiny(["the cat"], text_b=["the hat"], sequence_length=12)
    tokens = [tiny.id_to_token(i) for i in both["token_ids"][0].numpy()]
    assert (
        tokens
        == ["<s>", "the", "Ġcat", "</s>", "</s>", "the", "Ġh", "at", "</s>"] + ["<pad>"] * 3
    )
    assert both["padding_mask"][0].numpy().tolist() == [1] * 9 + [0] * 3
    assert not both["segment_ids"].numpy().any()
    one = tiny("the cat", sequence_length=3)  # a str is a batch of one; truncated
    assert [tiny.id_to_token(i) for i in one["token_ids"][0].numpy()] == [
        "<s>",
        "the",
        "</s>",
    ]
    empty = tiny([], sequence_length=8)
    assert empty["token_ids"].shape == (0, 8)


def test_pack_ids_packs_tokenized_text_as_the_call_does(tiny):
    texts = ["the cat", "", "the hat the cat the hat", "x"]
    texts_b = ["the hat the hat", "the", "", "cat cat cat cat cat"]
    for length in (4, 5, 9, 16):
        want = tiny(texts, text_b=texts_b, sequence_length=length)
        got = tiny.pack_ids(tiny.tokenize(texts), tiny.tokenize(texts_b), length)
        shared = packing.pack_segments(
            tiny.tokenize(texts),
            tiny.tokenize(texts_b),
            length,
            layout="roberta",
            cls_id=tiny.cls_id,
            sep_id=tiny.sep_id,
            pad_id=tiny.pad_id,
        )
        for name in want:
            np.testing.assert_array_equal(got[name], want[name])
            np.testing.assert_array_equal(shared[name], want[name])
    with pytest.raises(ValueError, match=r"`sequence_length` must be an int >= 4"):
        tiny.pack_ids(tiny.tokenize(texts), tiny.tokenize(texts_b), 3)
    with pytest.raises(ValueError, match="`truncation` must be 'longest_first'"):
        tiny.pack_ids(tiny.tokenize(texts), tiny.tokenize(texts_b), 8, "round_robin")


def test_a_vocabulary_without_merges_tokenizes_to_bytes():
    tok = BytePairTokenizer(_vocabulary(), [])
    assert [tok.id_to_token(i) for i in tok.tokenize("a b")[0].numpy()] == ["a", "Ġ", "b"]


# --- graph use, detokenize ----------------------------------------------------


@pytest.fixture(scope="module")
def tiny():
    """A hand-made vocabulary: no assets, no training."""
    vocabulary = ["<s>", "<pad>", "</s>", "<unk>"] + byte_alphabet()
    merges = ["Ġ c", "a t", "Ġc at", "t h", "th e", "Ġ h"]
    vocabulary += ["Ġc", "at", "Ġcat", "th", "the", "Ġh", "<mask>"]
    return BytePairTokenizer(vocabulary, merges)


def test_same_ids_eagerly_in_tf_function_and_tf_data(tiny):
    texts = ["the cat", "  the  hat\n", "", "ÿ\x00😀 caté"] * 3
    eager = tiny(texts, sequence_length=16)
    traced = tf.function(lambda t: tiny(t, sequence_length=16))(tf.constant(texts))
    dataset = tf.data.Dataset.from_tensor_slices(texts).batch(5)
    mapped = list(dataset.map(lambda t: tiny(t, sequence_length=16)))
    for name in eager:
        np.testing.assert_array_equal(eager[name], traced[name])
        np.testing.assert_array_equal(
            eager[name], np.concatenate([m[name] for m in mapped])
        )
    ragged = list(dataset.map(tiny.tokenize))
    assert sum((r.to_list() for r in ragged), []) == tiny.tokenize(texts).to_list()


@pytest.mark.assets
def test_detokenize_inverts_tokenize(pair, corpus):
    ours, reference = pair
    texts = HARD_CASES + corpus[1]["austen"][:50]
    ids = ours.tokenize(texts)
    back = [t.decode("utf-8") for t in ours.detokenize(ids).numpy()]
    prefix = " " if ours.add_prefix_space else ""
    assert back == [prefix + t if t and not t.startswith(" ") else t for t in texts]
    assert back == reference.batch_decode(ids.to_list(), clean_up_tokenization_spaces=False)


def test_invalid_utf8_becomes_replacement_character(tiny):
    ids = tiny.tokenize(tf.constant([b"a\xffb", b"a\xef\xbf\xbdb"]))
    assert ids[0].numpy().tolist() == ids[1].numpy().tolist()


# --- SavedModel: TF2 and TF1 (TF Serving's) loaders ---------------------------


class _TextModel(tf.Module):
    def __init__(self, tokenizer):
        super().__init__()
        self.tokenizer = tokenizer

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="text")])
    def serve(self, text):
        return self.tokenizer(text, sequence_length=32)


TF1_LOAD = textwrap.dedent(
    """
    import json, sys
    import tensorflow as tf
    directory, texts = sys.argv[1], json.loads(sys.stdin.read())
    with tf.compat.v1.Session(graph=tf.Graph()) as session:
        meta_graph = tf.compat.v1.saved_model.loader.load(session, ["serve"], directory)
        signature = meta_graph.signature_def["serving_default"]
        fetches = {k: v.name for k, v in signature.outputs.items()}
        out = session.run(fetches, {signature.inputs["text"].name: texts})
    # Core TensorFlow ops only: stock TF Serving loads it without tensorflow-text.
    assert "tensorflow_text" not in sys.modules
    print(json.dumps({k: v.tolist() for k, v in out.items()}))
    """
)


@pytest.mark.assets
def test_saved_model_text_in_loads_in_tf2_and_tf1(bpe_files, tmp_path):
    tok = BytePairTokenizer.from_tokenizer_json(bpe_files / "tokenizer.json")
    model = _TextModel(tok)
    directory = str(tmp_path / "text_in")
    tf.saved_model.save(model, directory, signatures={"serving_default": model.serve})
    texts = HARD_CASES[:30] + ["The Bank of England raised rates.", ""]
    want = {k: v.numpy() for k, v in tok(texts, sequence_length=32).items()}

    loaded = tf.saved_model.load(directory)
    got = loaded.signatures["serving_default"](text=tf.constant(texts))
    for name in want:
        np.testing.assert_array_equal(got[name].numpy(), want[name])

    # A fresh process with the TF1 session loader, as TF Serving loads.
    proc = subprocess.run(
        [sys.executable, "-c", TF1_LOAD, directory],
        input=json.dumps(texts),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    for name in want:
        np.testing.assert_array_equal(np.asarray(got[name]), want[name])


# --- construction: files, tokenizer.json, configs -----------------------------


@pytest.mark.assets
def test_tokenizer_json_gives_the_files_tokenizer(bpe_files):
    from_files = BytePairTokenizer(bpe_files / "vocab.json", bpe_files / "merges.txt")
    from_json = BytePairTokenizer.from_tokenizer_json(bpe_files / "tokenizer.json")
    assert from_json.vocabulary == from_files.vocabulary
    assert from_json.merges == from_files.merges
    assert from_json.mask_id == VOCABULARY_SIZE - 1  # from the added tokens only
    assert not from_json.add_prefix_space
    spec = json.loads((bpe_files / "tokenizer.json").read_text(encoding="utf-8"))
    spec["pre_tokenizer"]["add_prefix_space"] = True
    assert BytePairTokenizer.from_tokenizer_json(spec).add_prefix_space
    spec["normalizer"] = {"type": "Lowercase"}
    with pytest.raises(ValueError, match="normalizer is"):
        BytePairTokenizer.from_tokenizer_json(spec)
    spec["normalizer"] = None
    spec["model"]["continuing_subword_prefix"] = "##"
    with pytest.raises(ValueError, match="model.continuing_subword_prefix"):
        BytePairTokenizer.from_tokenizer_json(spec)


def test_config_round_trip_holds_the_data(tiny):
    config = keras.saving.serialize_keras_object(tiny)
    again = keras.saving.deserialize_keras_object(config, safe_mode=True)
    assert type(again) is BytePairTokenizer
    assert again.vocabulary == tiny.vocabulary and again.merges == tiny.merges
    assert again.tokenize(["the cat"]).to_list() == tiny.tokenize(["the cat"]).to_list()
    assert json.loads(json.dumps(tiny.get_config())) == tiny.get_config()


@pytest.mark.parametrize("add_prefix_space", [False, True])
def test_description_says_what_the_tokenizer_does(add_prefix_space):
    tok = BytePairTokenizer(
        _vocabulary("<cls>", "<sep>", "<oov>", "<blank>", "<hole>"),
        [],
        add_prefix_space=add_prefix_space,
        cls_token="<cls>",
        sep_token="<sep>",
        unk_token="<oov>",
        pad_token="<blank>",
        mask_token="<hole>",
    )
    description = td.check(tok.description)
    assert description == tok.description
    assert description["pre_tokenizer"] == {
        "type": "byte_level",
        "add_prefix_space": add_prefix_space,
    }
    assert description["normalizer"] == [] and description["word_normalizer"] == []
    assert description["model"] == {"type": "BPE", "unk_token": "<oov>"}
    assert description["post_processor"] == {
        "type": "roberta",
        "cls": "<cls>",
        "sep": "<sep>",
        "pad": "<blank>",
        "mask": "<hole>",
    }
    assert td.check(BytePairTokenizer(_vocabulary(), []).description) == td.byte_pair()


def test_from_config_refuses_paths(tiny, tmp_path):
    for field in ("vocabulary", "merges"):
        config = tiny.get_config()
        config[field] = str(tmp_path / "vocab.json")
        with pytest.raises(ValueError, match=f"`{field}` must be.*not opened"):
            BytePairTokenizer.from_config(config)


# --- errors -------------------------------------------------------------------


def _vocabulary(*extra):
    return ["<s>", "<pad>", "</s>", "<unk>", "<mask>"] + byte_alphabet() + list(extra)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(merges=None), TypeError, "`merges` must be the path of a merges.txt"),
        (
            dict(merges=["a b"]),
            ValueError,
            r"merge 0 \(a b\): 'ab' is not in the vocabulary",
        ),
        (dict(merges=["ab"]), ValueError, r"`merges\[0\]` is 'ab'; each merge"),
        (
            dict(vocabulary=_vocabulary()[1:]),
            ValueError,
            r"special token '<s>' \(`cls_token`\)",
        ),
        (dict(mask_token="[MASK]"), ValueError, r"'\[MASK\]' \(`mask_token`\)"),
        (
            dict(vocabulary=_vocabulary()[:-10]),
            ValueError,
            "lacks 10 of the 256 byte symbols",
        ),
        (
            dict(vocabulary={"<s>": 0, "<pad>": 2}),
            ValueError,
            "ids must be the ints 0 to 1",
        ),
        (dict(vocabulary=_vocabulary("a")), ValueError, "lists 'a' twice"),
        (dict(vocabulary=7), TypeError, "`vocabulary` must be the path of a vocab.json"),
        (
            dict(add_prefix_space="yes"),
            TypeError,
            "`add_prefix_space` must be True or False",
        ),
    ],
)
def test_construction_errors_name_the_argument(kwargs, error, match):
    arguments = dict(vocabulary=_vocabulary(), merges=[]) | kwargs
    with pytest.raises(error, match=match):
        BytePairTokenizer(**arguments)


def test_file_errors_name_the_file_and_line(tmp_path):
    merges = tmp_path / "merges.txt"
    merges.write_text("#version: 0.2\nĠ t\nbad line here\n", encoding="utf-8")
    vocab = tmp_path / "vocab.json"
    vocab.write_text(json.dumps({t: i for i, t in enumerate(_vocabulary())}), "utf-8")
    with pytest.raises(
        ValueError, match=r"merges.txt, line 3: 'bad line here' is not a merge"
    ):
        BytePairTokenizer(vocab, merges)
    vocab.write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(ValueError, match="holds a JSON list, not an object"):
        BytePairTokenizer(vocab, [])


def test_call_errors_name_the_argument(tiny):
    with pytest.raises(ValueError, match=r"int >= 4 \(room for <s> A </s> </s> B </s>\)"):
        tiny(["a"], text_b=["b"], sequence_length=3)
    with pytest.raises(ValueError, match=r"int >= 2 \(room for <s> A </s>\).*received 1"):
        tiny(["a"], sequence_length=1)
    with pytest.raises(ValueError, match="same number of examples; received 2 and 1"):
        tiny(["a", "b"], text_b=["c"], sequence_length=8)
    with pytest.raises(ValueError, match="`truncation` must be 'longest_first'"):
        tiny(["a"], text_b=["b"], sequence_length=8, truncation="round_robin")
    with pytest.raises(TypeError, match="`text` must hold text"):
        tiny([1, 2], sequence_length=8)
    with pytest.raises(ValueError, match="lone surrogate"):
        tiny.tokenize(["a\udc80"])
