"""RoBERTa in HF's RobertaModel layout (`load_checkpoint`, `save_hf`, `zoo
convert`), checked against transformers' own `RobertaModel` on torch CPU.

The weights are random and moved far from their initial values (LayerNorm
gamma 1 / beta 0 and zero biases would hide a swapped or untransposed
tensor); the tokenizer is a byte-level BPE trained here on the test
sentences (`tests.bpe`), since no RoBERTa vocabulary installs offline. The
padded batch mixes long and short rows, so RoBERTa's position ids (counted
past the padding id) are exercised on padding too."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from transformers import RobertaConfig, RobertaModel, RobertaTokenizerFast

import zoo
from tests.bpe import train_bpe
from tests.checkpoints.conftest import SENTENCES
from zoo.checkpoints import detect_format, load_checkpoint, save_hf
from zoo.checkpoints.hf import config_from_hf, config_to_hf
from zoo.cli import main

TOLERANCE = 1e-4


def _hf_model(vocab_size, scale=0.2, **sizes):
    config = RobertaConfig(
        vocab_size=vocab_size,
        max_position_embeddings=sizes.pop("max_position_embeddings", 66),
        type_vocab_size=1,
        layer_norm_eps=1e-5,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
        **sizes,
    )
    torch.manual_seed(0)
    model = RobertaModel(config).eval()
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(scale * torch.randn(p.shape, generator=generator))
    return model


def _write_checkpoint(model, directory, bpe):
    model.save_pretrained(directory)  # config.json + model.safetensors
    for name in ("vocab.json", "merges.txt"):
        (directory / name).write_bytes((bpe / name).read_bytes())
    return directory


def _max_diff(encoder, tokenizer, hf_model, texts, length=64):
    batch = tokenizer(texts, sequence_length=length)
    ours = encoder(batch)
    with torch.no_grad():
        theirs = hf_model(
            input_ids=torch.tensor(np.asarray(batch["token_ids"]), dtype=torch.long),
            attention_mask=torch.tensor(
                np.asarray(batch["padding_mask"]), dtype=torch.long
            ),
        )
    mask = np.asarray(batch["padding_mask"], bool)
    sequence = np.abs(
        np.asarray(ours["sequence_output"]) - theirs.last_hidden_state.numpy()
    )[mask].max()
    pooled = np.abs(np.asarray(ours["pooled_output"]) - theirs.pooler_output.numpy()).max()
    return max(float(sequence), float(pooled)), mask


@pytest.fixture(scope="module")
def bpe(tmp_path_factory):
    return train_bpe(SENTENCES * 3, tmp_path_factory.mktemp("bpe"), vocabulary_size=600)


@pytest.fixture(scope="module")
def small(bpe, tmp_path_factory):
    vocab = len(json.loads((bpe / "vocab.json").read_text(encoding="utf-8")))
    model = _hf_model(
        vocab,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
    )
    return model, _write_checkpoint(model, tmp_path_factory.mktemp("hf_small"), bpe)


def test_small_roberta_model_loads_with_parity(small, capsys):
    hf_model, directory = small
    assert detect_format(directory) == "hf"
    encoder, tokenizer = load_checkpoint(directory)
    assert isinstance(encoder, zoo.RobertaEncoder)
    assert isinstance(tokenizer, zoo.BytePairTokenizer)
    assert encoder.config.max_sequence_length == 64  # 66 position rows
    # The ids are the reference tokenizer's, from the same files.
    reference = RobertaTokenizerFast(
        vocab=str(directory / "vocab.json"), merges=str(directory / "merges.txt")
    )
    batch = tokenizer(SENTENCES, sequence_length=64)
    expected = reference(
        SENTENCES,
        padding="max_length",
        max_length=64,
        truncation=True,
        split_special_tokens=True,
    )["input_ids"]
    assert np.asarray(batch["token_ids"]).tolist() == expected
    diff, mask = _max_diff(encoder, tokenizer, hf_model, SENTENCES)
    assert (~mask).sum() > 100  # padding in the batch
    print(f"small RobertaModel parity: max|diff| {diff:.2e}")
    assert diff <= TOLERANCE


def test_save_hf_reloads_in_transformers_with_parity(small, tmp_path):
    hf_model, directory = small
    encoder, tokenizer = load_checkpoint(directory)
    out = save_hf(encoder, tmp_path / "back", tokenizer=tokenizer)
    assert sorted(p.name for p in out.iterdir() if p.name != ".zoo-output") == [
        "config.json",
        "merges.txt",
        "model.safetensors",
        "tokenizer_config.json",
        "vocab.json",
    ]
    reloaded = RobertaModel.from_pretrained(out).eval()
    for (name, a), (_, b) in zip(
        hf_model.state_dict().items(), reloaded.state_dict().items(), strict=True
    ):
        assert torch.equal(a, b), name
    diff, _ = _max_diff(encoder, tokenizer, reloaded, SENTENCES)
    assert diff <= TOLERANCE
    # The BPE files written back tokenize as the originals, here and in HF.
    again = zoo.BytePairTokenizer(out / "vocab.json", out / "merges.txt")
    assert again.vocabulary == tokenizer.vocabulary and again.merges == tokenizer.merges
    hf_tok = RobertaTokenizerFast.from_pretrained(out)
    assert len(hf_tok) == tokenizer.vocabulary_size
    ours = tokenizer(SENTENCES[:5])
    for row, ids in enumerate(
        hf_tok(SENTENCES[:5], split_special_tokens=True)["input_ids"]
    ):
        assert np.asarray(ours["token_ids"])[row][: len(ids)].tolist() == ids


def test_config_round_trip_and_refusals():
    hf = config_to_hf(zoo.get_preset("roberta_base"))
    assert hf["max_position_embeddings"] == 514 and hf["type_vocab_size"] == 1
    assert hf["pad_token_id"] == 1 and hf["layer_norm_eps"] == 1e-5
    assert config_from_hf(hf) == zoo.get_preset("roberta_base")
    with pytest.raises(ValueError, match="pad_token_id=0"):
        config_from_hf({**hf, "pad_token_id": 0})
    with pytest.raises(ValueError, match="position_embedding_type='relative_key'"):
        config_from_hf({**hf, "position_embedding_type": "relative_key"})
    with pytest.raises(ValueError, match="max_position_embeddings"):
        config_from_hf({k: v for k, v in hf.items() if k != "max_position_embeddings"})


def test_a_roberta_dir_without_bpe_files_is_refused(small, tmp_path):
    hf_model, _ = small
    hf_model.save_pretrained(tmp_path / "bare")
    with pytest.raises(FileNotFoundError, match="vocab.json and merges.txt"):
        load_checkpoint(tmp_path / "bare")


def test_zoo_convert_to_hf_and_back(small, tmp_path, capsys):
    hf_model, directory = small
    assert (
        main(["convert", str(directory), "--to", "hf", "--out", str(tmp_path / "hf")]) == 0
    )
    reloaded = RobertaModel.from_pretrained(tmp_path / "hf").eval()
    encoder, tokenizer = load_checkpoint(tmp_path / "hf")
    diff, _ = _max_diff(encoder, tokenizer, reloaded, SENTENCES)
    assert diff <= TOLERANCE


@pytest.mark.slow
def test_base_size_roberta_model_loads_with_parity(bpe, tmp_path):
    """roberta-base's shape (L12 H768 A12, 514 positions) with the trained
    BPE's 600 tokens in place of 50,265 (no vocabulary installs offline; the
    table's size does not change the maths)."""
    vocab = len(json.loads((bpe / "vocab.json").read_text(encoding="utf-8")))
    # Perturbation scaled down for depth and width (0.2 on every weight of
    # 12 layers of 768 saturates every softmax); 0.05 still moves LayerNorms
    # and biases well off 1 / 0.
    hf_model = _hf_model(
        vocab,
        scale=0.05,
        hidden_size=768,
        num_hidden_layers=12,
        num_attention_heads=12,
        intermediate_size=3072,
        max_position_embeddings=514,
    )
    directory = _write_checkpoint(hf_model, tmp_path / "base", bpe)
    encoder, tokenizer = load_checkpoint(directory)
    assert encoder.config.max_sequence_length == 512
    diff, _ = _max_diff(encoder, tokenizer, hf_model, SENTENCES, length=128)
    print(f"base-size RobertaModel parity: max|diff| {diff:.2e}")
    assert diff <= TOLERANCE


@pytest.mark.slow  # a loopback Hub and a fresh zoo process
def test_hub_name_fetches_the_bpe_files(small, tmp_path):
    """`hf://` through the loopback Hub: vocab.json and merges.txt are in the
    allow-list, so the fetched snapshot loads with its tokenizer."""
    from tests.checkpoints.test_hub import zoo as zoo_command
    from tests.hub_server import HubServer, Repo

    _, directory = small
    (directory / "README.md").write_text("not fetched\n")
    with HubServer({"acme/tiny-roberta": Repo(directory)}) as hub:
        code, out, err = zoo_command(
            ["convert", "hf://acme/tiny-roberta", "--to", "hf", "--out", tmp_path / "hf"],
            hub.url,
            tmp_path / "home",
        )
        assert code == 0, err[-2000:]
        fetched = {
            p.rsplit("/", 1)[1] for m, p in hub.requests if m == "GET" and "/resolve/" in p
        }
    assert {"vocab.json", "merges.txt", "model.safetensors"} <= fetched
    assert "README.md" not in fetched
    encoder, tokenizer = load_checkpoint(tmp_path / "hf")
    original, original_tokenizer = load_checkpoint(directory)
    assert tokenizer.merges == original_tokenizer.merges
    for a, b in zip(encoder.get_weights(), original.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)


def test_formats_that_hold_no_roberta_refuse_naming_it(small, tmp_path, capsys):
    _, directory = small
    for target in ("tf1", "keras-hub"):
        out = tmp_path / target
        assert main(["convert", str(directory), "--to", target, "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert "roberta" in err.lower(), err
        assert not out.exists()


def test_tokenizer_json_beside_vocab_json_and_merges_must_agree(small, bpe, tmp_path):
    """transformers' fast tokenizer reads tokenizer.json, its slow one the
    two files: both there, they must say the same, else refused by file."""
    import shutil

    _, directory = small
    both = tmp_path / "both"
    shutil.copytree(directory, both)
    shutil.copy(bpe / "tokenizer.json", both / "tokenizer.json")
    _, tokenizer = load_checkpoint(both)
    reference = RobertaTokenizerFast.from_pretrained(str(both))
    for text in SENTENCES[:5]:
        ours = np.asarray(tokenizer([text], sequence_length=64)["token_ids"])[0]
        theirs = reference(text)["input_ids"]
        assert ours[: len(theirs)].tolist() == theirs
    lines = (both / "merges.txt").read_text(encoding="utf-8").splitlines()
    swapped = both.parent / "merges_swapped"
    shutil.copytree(both, swapped)
    lines[5], lines[6] = lines[6], lines[5]
    (swapped / "merges.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match="tokenizer.json and merges.txt disagree"):
        load_checkpoint(swapped)
    vocab = json.loads((both / "vocab.json").read_text(encoding="utf-8"))
    first, second = list(vocab)[10:12]
    vocab[first], vocab[second] = vocab[second], vocab[first]
    edited = both.parent / "vocab_edited"
    shutil.copytree(both, edited)
    (edited / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    with pytest.raises(ValueError, match="tokenizer.json and vocab.json disagree"):
        load_checkpoint(edited)
