"""A model directory's zoo_model.json records the tokenization description;
loading types it, holds it to the older fields and to the text model's own
tokenizer, and rebuilds the tokenizer from it."""

import json

import pytest

import zoo
from tests.distill.tiny import WORDS, teacher_dir
from zoo.checkpoints.model_dir import (
    MANIFEST,
    ModelDirError,
    load_model_dir,
    save_model_dir,
)
from zoo.text import description as td
from zoo.text.tokenizer import WordPieceTokenizer

TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]


def _encoder():
    return zoo.BertEncoder(
        vocabulary_size=len(TOKENS),
        num_layers=1,
        num_heads=2,
        hidden_dim=8,
        intermediate_dim=16,
        max_sequence_length=16,
    )


def _edit(directory, change):
    path = directory / MANIFEST
    meta = json.loads(path.read_text())
    change(meta)
    path.write_text(json.dumps(meta))


def test_the_record_holds_the_description_and_loads_it(tmp_path):
    directory = teacher_dir(tmp_path)
    meta = json.loads((directory / MANIFEST).read_text())
    assert meta["tokenization"] == td.wordpiece(lowercase=True)
    _, tokenizer, _ = load_model_dir(directory)
    assert td.check(tokenizer.description) == meta["tokenization"]


def test_a_setting_apart_from_lowercase_survives_the_round_trip(tmp_path):
    tokenizer = WordPieceTokenizer(TOKENS, lowercase=True, strip_accents=False)
    encoder = _encoder()
    directory = save_model_dir(encoder, tmp_path / "kept", tokenizer)
    _, loaded, meta = load_model_dir(directory)
    assert "strip_accents" not in td.steps_of(meta["tokenization"], "normalizer")
    assert td.check(loaded.description) == td.check(tokenizer.description)


def test_a_record_without_the_description_reads_as_its_writer_meant(tmp_path):
    directory = teacher_dir(tmp_path)
    _edit(directory, lambda m: m.pop("tokenization"))
    _, tokenizer, _ = load_model_dir(directory)
    assert td.check(tokenizer.description) == td.wordpiece(lowercase=True)


@pytest.mark.parametrize(
    "change, field",
    [
        (lambda m: m["tokenization"]["model"].update(max_word=10**9), "model.max_word"),
        (lambda m: m["tokenization"].update(extra=1), "tokenization.extra"),
        (
            lambda m: m["tokenization"]["pre_tokenizer"].update(type="x"),
            "pre_tokenizer.type",
        ),
        (lambda m: m.update(lowercase=False), "`lowercase`"),
        (lambda m: m.update(tokenizer="byte_pair"), "`tokenizer`"),
    ],
)
def test_an_edited_description_is_refused_by_name(tmp_path, change, field):
    directory = teacher_dir(tmp_path)
    _edit(directory, change)
    with pytest.raises((ModelDirError, FileNotFoundError)) as e:
        load_model_dir(directory)
    assert field in str(e.value)


def test_a_text_model_and_its_record_must_tokenize_alike(tmp_path):
    """A valid description that is not the text model's own tokenizer is
    refused; unedited, the model's own tokenizer is the one returned (built
    once)."""
    encoder = _encoder()
    tokenizer = WordPieceTokenizer(TOKENS)
    model = zoo.TextClassifier(
        encoder, preprocessor=zoo.TextPreprocessor(tokenizer, 16), labels=["a", "b"]
    )
    directory = model.save_model_dir(tmp_path / "text")
    loaded, loaded_tokenizer, _ = load_model_dir(directory)
    assert loaded_tokenizer is loaded.preprocessor.tokenizer
    _edit(
        directory,
        lambda m: m["tokenization"]["normalizer"].remove({"type": "strip_accents"}),
    )
    with pytest.raises(ModelDirError, match="`tokenization`"):
        load_model_dir(directory)
