"""The SentencePiece tokenizer against transformers' AlbertTokenizer, both
built from one `spiece.model` trained here (the `sentencepiece` package) on
real Austen text: the same ids for single texts and pairs, packed and
truncated, and a config round trip holding the model."""

import io

import keras
import numpy as np
import pytest

from tests.conftest import asset_or_fail
from zoo.text import description as td
from zoo.text import packing
from zoo.text.sentencepiece_tokenizer import SentencePieceTokenizer


@pytest.fixture(scope="module")
def austen():
    from zoo.datasets.corpora import austen_sentences

    return asset_or_fail(austen_sentences, "Jane Austen's novels (janeaustenr)")


@pytest.fixture(scope="module")
def spiece_dir(austen, tmp_path_factory):
    spm = pytest.importorskip("sentencepiece")
    model = io.BytesIO()
    # ALBERT's layout: <pad> 0, <unk> 1, [CLS] 2, [SEP] 3, [MASK] 4.
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(austen[:2000]),
        model_writer=model,
        vocab_size=600,
        model_type="unigram",
        pad_id=0,
        unk_id=1,
        bos_id=-1,
        eos_id=-1,
        user_defined_symbols=["[CLS]", "[SEP]", "[MASK]"],
        character_coverage=1.0,
        minloglevel=2,
    )
    directory = tmp_path_factory.mktemp("spiece")
    (directory / "spiece.model").write_bytes(model.getvalue())
    return directory


def test_ids_equal_transformers_albert_tokenizer(spiece_dir, austen, tmp_path):
    transformers = pytest.importorskip("transformers")
    reference = transformers.AlbertTokenizer.from_pretrained(str(spiece_dir))
    assert len(reference) == 600  # it read the model (a bare vocab_file= is ignored)
    tok = SentencePieceTokenizer(spiece_dir)
    assert (tok.pad_id, tok.unk_id, tok.cls_id, tok.sep_id, tok.mask_id) == (0, 1, 2, 3, 4)
    # Held-out sentences (not trained on), with ALBERT's quote and accent
    # rules exercised.
    texts = austen[-300:] + [
        "``Quite so,'' said Mr. Darcy.",
        "Café naïve ÉLAN  spaced   out",
    ]
    firsts, seconds = texts[::2], texts[1::2]
    for a, b in ((texts, None), (firsts[: len(seconds)], seconds)):
        ours = {k: np.asarray(v) for k, v in tok(a, text_b=b, sequence_length=48).items()}
        theirs = reference(
            a,
            b,
            padding="max_length",
            truncation="longest_first",
            max_length=48,
            return_token_type_ids=True,
            return_tensors="np",
        )
        np.testing.assert_array_equal(ours["token_ids"], theirs["input_ids"])
        np.testing.assert_array_equal(ours["segment_ids"], theirs["token_type_ids"])
        np.testing.assert_array_equal(ours["padding_mask"], theirs["attention_mask"])
    unknown = np.asarray(tok(texts, sequence_length=48)["token_ids"])
    assert (unknown == tok.unk_id).mean() < 0.01  # real pieces, not [UNK]s

    # The model travels in the config (as Keras serializes the layer inside
    # a saved model), so a reload needs no file.
    config = keras.saving.serialize_keras_object(tok)
    again = keras.saving.deserialize_keras_object(config, safe_mode=True)
    assert type(again) is SentencePieceTokenizer and again.vocabulary == tok.vocabulary
    np.testing.assert_array_equal(
        np.asarray(again(texts[:5], sequence_length=16)["token_ids"]),
        np.asarray(tok(texts[:5], sequence_length=16)["token_ids"]),
    )


def test_missing_model_and_special_tokens_are_named(spiece_dir, tmp_path):
    with pytest.raises(FileNotFoundError, match="no SentencePiece model at"):
        SentencePieceTokenizer(tmp_path)
    with pytest.raises(ValueError, match="`model` .* is not a SentencePiece model"):
        SentencePieceTokenizer(b"not a model")
    # A saved config holds the model bytes; a path there (the model file
    # or its directory) is refused without being read.
    config = SentencePieceTokenizer(spiece_dir).get_config()
    for path in (spiece_dir, spiece_dir / "spiece.model"):
        with pytest.raises(ValueError, match="`model` must be the model bytes"):
            SentencePieceTokenizer.from_config({**config, "model": str(path)})
    with pytest.raises(
        ValueError, match=r"Cannot find special token '\[PAD\]' \(`pad_token`\)"
    ):
        SentencePieceTokenizer(spiece_dir, pad_token="[PAD]")


def test_pairs_pack_by_the_shared_packer_with_both_rules(spiece_dir, austen):
    tok = SentencePieceTokenizer(spiece_dir)
    texts, texts_b = austen[-40:-20], austen[-20:]
    a, b = tok.tokenize(texts), tok.tokenize(texts_b)
    for truncation in ("longest_first", "round_robin"):
        for length in (3, 4, 17, 48):
            want = packing.pack_segments(
                a,
                b,
                length,
                truncation,
                layout="bert",
                cls_id=tok.cls_id,
                sep_id=tok.sep_id,
                pad_id=tok.pad_id,
            )
            called = tok(
                texts, text_b=texts_b, sequence_length=length, truncation=truncation
            )
            packed = tok.pack_ids(a, b, length, truncation)
            for name in want:
                np.testing.assert_array_equal(called[name], want[name])
                np.testing.assert_array_equal(packed[name], want[name])
    assert set(np.asarray(tok(texts, text_b=texts_b)["segment_ids"]).ravel()) == {0, 1}
    with pytest.raises(
        ValueError, match=r"int >= 3 \(room for \[CLS\] A \[SEP\] B \[SEP\]\)"
    ):
        tok(texts, text_b=texts_b, sequence_length=2)


@pytest.mark.parametrize(
    "lowercase, strip_accents, normalizer",
    [
        (True, None, ["nfkd", "strip_accents", "lowercase"]),
        (False, False, []),
        (True, False, ["lowercase"]),
        (False, True, ["nfkd", "strip_accents"]),
    ],
)
def test_description_says_what_the_tokenizer_does(
    spiece_dir, lowercase, strip_accents, normalizer
):
    tok = SentencePieceTokenizer(
        spiece_dir, lowercase=lowercase, strip_accents=strip_accents, unk_token="[MASK]"
    )
    description = td.check(tok.description)
    assert description == tok.description
    assert [step["type"] for step in description["normalizer"]] == normalizer
    assert description["pre_tokenizer"] == {"type": "metaspace"}
    assert description["model"] == {"type": "Unigram", "unk_token": "[MASK]"}
    assert description["post_processor"] == {
        "type": "bert",
        "cls": tok.cls_token,
        "sep": tok.sep_token,
        "pad": tok.pad_token,
        "mask": tok.mask_token,
    }
    assert (tok.cls_token, tok.sep_token, tok.pad_token) == ("[CLS]", "[SEP]", "<pad>")


def test_a_long_text_is_tokenized_in_a_prefix_with_the_same_ids(spiece_dir, monkeypatch):
    from tests.train.test_features import check_leading_texts

    # SentencePiece folds every run of whitespace into one "▁": any cut holds.
    check_leading_texts(
        SentencePieceTokenizer(spiece_dir), monkeypatch, naive_cuts_differ=False
    )
