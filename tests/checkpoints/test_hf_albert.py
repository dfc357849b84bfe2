"""ALBERT in HF's layout: transformers' own AlbertModel / AlbertForPreTraining,
randomly initialised and saved with `save_pretrained` (no real ALBERT
checkpoint installs offline), loaded by the zoo; and zoo models written with
`save_hf` loaded by transformers. Parity on a padded batch of real sentences.

Weights are moved far from their initial values first (LayerNorm gamma 1 /
beta 0 and zero biases would hide a swapped or untransposed tensor)."""

import json
import re

import numpy as np
import pytest

import zoo
from tests.checkpoints.conftest import SENTENCES
from zoo.checkpoints import load_checkpoint, load_hf_weights, save_hf, save_tf1
from zoo.checkpoints.hf import config_from_hf, read_hf_tensors
from zoo.cli import main
from zoo.models import build_encoder
from zoo.text.tokenizer import WordPieceTokenizer

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
TINY_SENTENCES = SENTENCES[:4] + SENTENCES[8:10]
# E 6 -> H 8, 4 layers over 2 shared groups: every ALBERT-specific path.
TINY_HF = dict(
    embedding_size=6,
    hidden_size=8,
    num_hidden_layers=4,
    num_hidden_groups=2,
    num_attention_heads=2,
    intermediate_size=16,
    max_position_embeddings=64,
    hidden_act="gelu_new",
)
TOLERANCE = 1e-4


def _tokenizer():
    words = sorted(
        {w for s in TINY_SENTENCES for w in re.findall(r"\w+|[^\w\s]", s.lower())}
    )
    return WordPieceTokenizer(SPECIAL + words, lowercase=True)


def _perturb(module, seed=0, scale=0.3):
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.add_(torch.randn(p.shape, generator=generator) * scale)
    return module.eval()


def _hf_dir(path, cls, tokenizer, **changes):
    config = transformers.AlbertConfig(
        vocab_size=tokenizer.vocabulary_size, **{**TINY_HF, **changes}
    )
    model = _perturb(getattr(transformers, cls)(config))
    model.save_pretrained(str(path))
    (path / "vocab.txt").write_text("\n".join(tokenizer.vocabulary) + "\n")
    return model


def _batch(tokenizer):
    batch = {
        k: np.asarray(v) for k, v in tokenizer(TINY_SENTENCES, sequence_length=48).items()
    }
    assert (batch["padding_mask"] == 0).sum() > 0 and (batch["token_ids"] == 1).sum() == 0
    return batch


def _hf_run(model, batch):
    with torch.no_grad():
        return model(
            input_ids=torch.tensor(batch["token_ids"], dtype=torch.long),
            token_type_ids=torch.tensor(batch["segment_ids"], dtype=torch.long),
            attention_mask=torch.tensor(batch["padding_mask"], dtype=torch.long),
        )


def _encoder_diffs(encoder, hf_out, batch):
    real = batch["padding_mask"].astype(bool)
    ours = encoder(batch)
    seq = np.abs(np.asarray(ours["sequence_output"]) - hf_out.last_hidden_state.numpy())
    pooled = np.abs(np.asarray(ours["pooled_output"]) - hf_out.pooler_output.numpy())
    return float(seq[real].max()), float(pooled.max())


def test_hf_albert_model_loads_with_parity(tmp_path):
    tokenizer = _tokenizer()
    reference = _hf_dir(tmp_path / "hf", "AlbertModel", tokenizer)
    encoder, loaded_tokenizer = load_checkpoint(tmp_path / "hf")
    assert type(encoder) is zoo.AlbertEncoder
    assert encoder.config == zoo.EncoderConfig(
        tokenizer.vocabulary_size,
        4,
        2,
        8,
        16,
        max_sequence_length=64,
        dropout=0.0,
        family="albert",
        activation="gelu_tanh",
        embedding_dim=6,
        num_groups=2,
    )
    assert loaded_tokenizer.vocabulary == tokenizer.vocabulary
    batch = _batch(tokenizer)
    seq, pooled = _encoder_diffs(encoder, _hf_run(reference, batch), batch)
    print(
        f"\ntiny HF AlbertModel -> zoo: max |diff| sequence {seq:.2e}, pooled {pooled:.2e}"
    )
    assert seq <= TOLERANCE and pooled <= TOLERANCE


def test_hf_albert_pretraining_heads_load_and_save(tmp_path):
    """AlbertForPreTraining's `predictions.*` and `sop_classifier.*` go into a
    zoo Pretrainer with `sentence_task="sop"` (`sop_classifier`) with equal
    logits; the Pretrainer written back loads in transformers with nothing
    missing and the same logits; `zoo pretrain --objective mlm+sop` starts
    from the checkpoint's heads."""
    tokenizer = _tokenizer()
    reference = _hf_dir(tmp_path / "hf", "AlbertForPreTraining", tokenizer)
    config = config_from_hf(json.loads((tmp_path / "hf" / "config.json").read_text()))
    model = zoo.Pretrainer(build_encoder(config), sentence_task="sop")
    assert load_hf_weights(model, tmp_path / "hf") == []
    # The bare encoder reads the same file and leaves the heads.
    encoder, _ = load_checkpoint(tmp_path / "hf")
    for a, b in zip(encoder.get_weights(), model.encoder.get_weights()):
        np.testing.assert_array_equal(a, b)

    batch = _batch(tokenizer)
    positions = np.tile(np.array([1, 2, 3], "int32"), (len(batch["token_ids"]), 1))

    def compare(hf_model):
        hf = _hf_run(hf_model, batch)
        ours = model({**batch, "masked_positions": positions})
        hf_mlm = np.take_along_axis(
            hf.prediction_logits.numpy(), positions[:, :, None], axis=1
        )
        mlm = float(np.abs(np.asarray(ours["mlm_logits"]) - hf_mlm).max())
        sop = float(np.abs(np.asarray(ours["sop_logits"]) - hf.sop_logits.numpy()).max())
        return mlm, sop

    mlm, sop = compare(reference)
    print(f"\ntiny HF AlbertForPreTraining -> zoo: max |diff| MLM {mlm:.2e}, SOP {sop:.2e}")
    assert mlm <= TOLERANCE and sop <= TOLERANCE

    save_hf(model, tmp_path / "back")
    written = json.loads((tmp_path / "back" / "config.json").read_text())
    assert written["architectures"] == ["AlbertForPreTraining"]
    assert written["hidden_act"] == "gelu_new" and written["num_hidden_groups"] == 2
    again, info = transformers.AlbertForPreTraining.from_pretrained(
        str(tmp_path / "back"), output_loading_info=True
    )
    for kind in ("missing_keys", "unexpected_keys", "mismatched_keys"):
        assert not info[kind], (kind, info[kind])
    mlm, sop = compare(again.eval())
    assert mlm <= TOLERANCE and sop <= TOLERANCE

    from zoo.text.pretraining import pretraining_objective
    from zoo.train.pretrain import build_pretrainer

    pretrainer, _ = build_pretrainer(
        tmp_path / "hf", objective=pretraining_objective("mlm+sop")
    )
    assert pretrainer.sop_classifier is not None
    for a, b in zip(pretrainer.get_weights(), model.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_zoo_albert_round_trips_through_transformers(tmp_path):
    tokenizer = _tokenizer()
    encoder = zoo.AlbertEncoder(
        tokenizer.vocabulary_size,
        4,
        2,
        8,
        16,
        embedding_dim=6,
        num_groups=2,
        max_sequence_length=64,
    )
    rng = np.random.default_rng(0)
    for weight in encoder.weights:
        weight.assign(weight.numpy() + rng.normal(0.0, 0.3, weight.shape).astype("float32"))
    save_hf(encoder, tmp_path / "hf", vocabulary=tokenizer.vocabulary, lowercase=True)
    assert len(read_hf_tensors(tmp_path / "hf")) == len(encoder.weights) == 41

    reference, info = transformers.AlbertModel.from_pretrained(
        str(tmp_path / "hf"), output_loading_info=True
    )
    for kind in ("missing_keys", "unexpected_keys", "mismatched_keys"):
        assert not info[kind], (kind, info[kind])
    batch = _batch(tokenizer)
    seq, pooled = _encoder_diffs(encoder, _hf_run(reference.eval(), batch), batch)
    print(
        f"\nzoo AlbertEncoder -> transformers: max |diff| sequence {seq:.2e}, "
        f"pooled {pooled:.2e}"
    )
    assert seq <= TOLERANCE and pooled <= TOLERANCE

    again, _ = load_checkpoint(tmp_path / "hf")
    assert again.config == encoder.config
    for a, b in zip(encoder.weights, again.weights):
        assert a.path == b.path
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=a.path)

    # `zoo convert`: HF -> zoo model directory -> HF again, the same tensors;
    # TF1 (a BERT format) is refused with the reason, exit 2, nothing written.
    assert main(["convert", str(tmp_path / "hf"), "--out", str(tmp_path / "zoo")]) == 0
    assert (
        main(
            ["convert", str(tmp_path / "zoo"), "--to", "hf", "--out", str(tmp_path / "hf2")]
        )
        == 0
    )
    first, second = read_hf_tensors(tmp_path / "hf"), read_hf_tensors(tmp_path / "hf2")
    assert sorted(first) == sorted(second)
    for key in first:
        np.testing.assert_array_equal(first[key], second[key], err_msg=key)
    assert (
        main(
            [
                "convert",
                str(tmp_path / "zoo"),
                "--to",
                "tf1",
                "--out",
                str(tmp_path / "tf1"),
            ]
        )
        == 2
    )
    assert not (tmp_path / "tf1").exists()
    with pytest.raises(ValueError, match="albert-family encoder as a zoo model directory"):
        save_tf1(encoder, tmp_path / "tf1")


def test_what_the_zoo_cannot_compute_is_refused():
    base = dict(model_type="albert", vocab_size=30, **TINY_HF)
    with pytest.raises(ValueError, match="inner_group_num=2; the zoo's AlbertEncoder"):
        config_from_hf({**base, "inner_group_num": 2})
    with pytest.raises(ValueError, match="hidden_act='relu'.*zoo encoders compute GELU"):
        config_from_hf({**base, "hidden_act": "relu"})
    with pytest.raises(
        ValueError,
        match=r"missing key\(s\) \['embedding_size'\]; is this "
        r"a ALBERT config",
    ):
        config_from_hf({k: v for k, v in base.items() if k != "embedding_size"})
    with pytest.raises(ValueError, match="EncoderConfig.num_groups: received 3"):
        config_from_hf({**base, "num_hidden_groups": 3})
    # ALBERT v1 configs say "gelu": exact GELU, as written.
    assert config_from_hf({**base, "hidden_act": "gelu"}).activation == "gelu"
    # The tanh form is read for BERT too (BertModel computes it the same way).
    bert = {
        "vocab_size": 30,
        "hidden_size": 8,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "intermediate_size": 16,
    }
    assert (
        config_from_hf({**bert, "hidden_act": "gelu_pytorch_tanh"}).activation
        == "gelu_tanh"
    )


@pytest.mark.slow
def test_albert_base_size_parity(tmp_path):
    """albert_base's shape (V 30,000, E 128, H 768, L 12) from transformers'
    random init, through the zoo loader, on 6 padded rows of random ids; and
    its parameter count is transformers.AlbertModel's."""
    config = transformers.AlbertConfig(
        vocab_size=30000,
        embedding_size=128,
        hidden_size=768,
        num_hidden_layers=12,
        num_attention_heads=12,
        intermediate_size=3072,
    )
    # Smaller noise at this width, so 12 passes through one block stay unsaturated.
    reference = _perturb(transformers.AlbertModel(config), seed=1, scale=0.02)
    count = sum(p.numel() for p in reference.parameters())
    assert count == zoo.PRESETS["albert_base"].num_parameters() == 11_683_584
    reference.save_pretrained(str(tmp_path / "hf"))
    from zoo.checkpoints import load_hf_encoder

    encoder = load_hf_encoder(tmp_path / "hf")
    assert encoder.config == zoo.PRESETS["albert_base"]
    rng = np.random.default_rng(0)
    lengths = np.array([40, 33, 17, 9, 4, 2])
    mask = (np.arange(40)[None, :] < lengths[:, None]).astype("int32")
    batch = {
        "token_ids": rng.integers(5, 30000, size=(6, 40)).astype("int32") * mask,
        "segment_ids": ((np.arange(40)[None, :] >= lengths[:, None] // 2) * mask).astype(
            "int32"
        ),
        "padding_mask": mask,
    }
    seq, pooled = _encoder_diffs(encoder, _hf_run(reference, batch), batch)
    print(f"\nalbert_base HF -> zoo: max |diff| sequence {seq:.2e}, pooled {pooled:.2e}")
    assert seq <= TOLERANCE and pooled <= TOLERANCE


def test_sentencepiece_checkpoint_without_vocab_txt_says_what_to_do(tmp_path):
    tokenizer = _tokenizer()
    _hf_dir(tmp_path / "hf", "AlbertModel", tokenizer)
    (tmp_path / "hf" / "vocab.txt").unlink()
    (tmp_path / "hf" / "spiece.model").write_bytes(b"not read")
    with pytest.raises(FileNotFoundError, match="holds spiece.model .* no vocab.txt"):
        load_checkpoint(tmp_path / "hf")
    from zoo.checkpoints import load_hf_encoder

    assert type(load_hf_encoder(tmp_path / "hf")) is zoo.AlbertEncoder  # weights still load
