"""RoBERTa model directories: vocab.json + merges.txt in place of vocab.txt,
recorded and checked like it, loading a `BytePairTokenizer`."""

from __future__ import annotations

import json

import keras
import numpy as np
import pytest

import zoo
from tests.bpe import train_bpe
from tests.checkpoints.conftest import SENTENCES
from zoo.checkpoints import load_checkpoint, load_model_dir, save_hf, save_model_dir
from zoo.checkpoints.model_dir import MANIFEST, ModelDirError
from zoo.cli import main
from zoo.utils.file_record import record_files


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    bpe = train_bpe(SENTENCES * 3, tmp_path_factory.mktemp("bpe"), vocabulary_size=500)
    return zoo.BytePairTokenizer(bpe / "vocab.json", bpe / "merges.txt")


def _classifier(tokenizer):
    keras.utils.set_random_seed(3)
    encoder = zoo.RobertaEncoder(
        tokenizer.vocabulary_size, 2, 2, 16, 32, max_sequence_length=32
    )
    return zoo.Classifier(encoder, 3, labels=["a", "b", "c"])


def _rerecord(directory):
    """Regenerate the `files` record, as someone editing by hand would."""
    meta = json.loads((directory / MANIFEST).read_text())
    meta["files"] = record_files(directory, skip={MANIFEST})
    (directory / MANIFEST).write_text(json.dumps(meta))


def test_round_trip_keeps_the_tokenizer_and_the_logits(tokenizer, tmp_path):
    model = _classifier(tokenizer)
    save_model_dir(model, tmp_path / "m", tokenizer)
    names = {p.name for p in (tmp_path / "m").iterdir()}
    assert {"vocab.json", "merges.txt", "model.keras", MANIFEST} <= names
    assert "vocab.txt" not in names
    meta = json.loads((tmp_path / "m" / MANIFEST).read_text())
    assert meta["tokenizer"] == "byte_pair" and meta["lowercase"] is False
    assert set(meta["files"]) >= {"vocab.json", "merges.txt"}
    back, back_tokenizer, _ = load_model_dir(tmp_path / "m")
    assert isinstance(back_tokenizer, zoo.BytePairTokenizer)
    assert back_tokenizer.vocabulary == tokenizer.vocabulary
    assert back_tokenizer.merges == tokenizer.merges
    batch = back_tokenizer(SENTENCES, sequence_length=32)
    np.testing.assert_allclose(back(batch)["logits"], model(batch)["logits"], atol=1e-6)
    encoder, same = load_checkpoint(tmp_path / "m")
    assert type(encoder) is zoo.RobertaEncoder and same.merges == tokenizer.merges


def test_edited_bpe_files_are_refused_naming_the_file(tokenizer, tmp_path):
    save_model_dir(_classifier(tokenizer), tmp_path / "m", tokenizer)
    merges = tmp_path / "m" / "merges.txt"
    lines = merges.read_text(encoding="utf-8").split("\n")
    lines[1], lines[2] = lines[2], lines[1]  # two merges swap ranks
    merges.write_text("\n".join(lines), encoding="utf-8")
    with pytest.raises(ModelDirError, match="merges.txt"):
        load_model_dir(tmp_path / "m")  # the record catches it
    _rerecord(tmp_path / "m")
    with pytest.raises(ValueError, match="merges.txt changed since the model was saved"):
        load_model_dir(tmp_path / "m")  # and so does merges_sha256

    save_model_dir(_classifier(tokenizer), tmp_path / "v", tokenizer)
    vocab_path = tmp_path / "v" / "vocab.json"
    vocab = json.loads(vocab_path.read_text(encoding="utf-8"))
    a, b = "Ġthe", "Ġa"
    vocab[a], vocab[b] = vocab[b], vocab[a]
    vocab_path.write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    _rerecord(tmp_path / "v")
    with pytest.raises(ValueError, match="vocab.json changed since the model was saved"):
        load_model_dir(tmp_path / "v")


def test_unknown_tokenizer_field_is_refused(tokenizer, tmp_path):
    save_model_dir(_classifier(tokenizer), tmp_path / "m", tokenizer)
    meta = json.loads((tmp_path / "m" / MANIFEST).read_text())
    meta["tokenizer"] = "sentencepiece"
    (tmp_path / "m" / MANIFEST).write_text(json.dumps(meta))
    with pytest.raises(ModelDirError, match="`tokenizer` is 'sentencepiece'"):
        load_model_dir(tmp_path / "m")


def test_zoo_convert_hf_roberta_to_a_model_directory(tokenizer, tmp_path, capsys):
    keras.utils.set_random_seed(4)
    encoder = zoo.RobertaEncoder(
        tokenizer.vocabulary_size, 2, 2, 16, 32, max_sequence_length=32
    )
    save_hf(encoder, tmp_path / "hf", tokenizer=tokenizer)
    assert main(["convert", str(tmp_path / "hf"), "--out", str(tmp_path / "zoo")]) == 0
    back, back_tokenizer, meta = load_model_dir(tmp_path / "zoo")
    assert meta["encoder_config"]["family"] == "roberta"
    assert back_tokenizer.merges == tokenizer.merges
    for x, y in zip(back.get_weights(), encoder.get_weights(), strict=True):
        np.testing.assert_array_equal(x, y)
