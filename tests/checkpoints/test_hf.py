"""The real all-MiniLM-L6-v2 checkpoint against HF transformers (torch CPU).

The ids come from HF's own tokenizer so this test pins the encoder's
numerics alone; the tokenizer has its own parity test."""

import json
import shutil

import numpy as np
import pytest

import zoo
from zoo.checkpoints import CheckpointMismatchError, load_hf_encoder, save_hf
from zoo.checkpoints.hf import load_hf_weights, read_hf_tensors
from zoo.cli import main

pytestmark = pytest.mark.assets


def _hf_batches(tokenizer, sentences, size=16):
    for start in range(0, len(sentences), size):
        chunk = sentences[start : start + size]
        enc = tokenizer(
            chunk, padding="longest", truncation=True, max_length=128, return_tensors="np"
        )
        yield {
            "token_ids": enc["input_ids"].astype("int32"),
            "segment_ids": enc["token_type_ids"].astype("int32"),
            "padding_mask": enc["attention_mask"].astype("int32"),
        }


def _interleave(sentences):
    # Sentences are sorted by length; interleave ends so each batch of 16 has
    # both short and long ones (heavy padding in every batch).
    half = len(sentences) // 2
    out = []
    for a, b in zip(sentences[:half], reversed(sentences[half:])):
        out += [a, b]
    return out


def test_sequence_and_pooled_output_match_transformers(
    minilm_dir, minilm, hf_tokenizer, bbc_sentences
):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    reference = transformers.BertModel.from_pretrained(str(minilm_dir)).eval()
    encoder, _ = minilm
    seq_diff = pooled_diff = 0.0
    n_sentences = padded = 0
    for batch in _hf_batches(hf_tokenizer, _interleave(bbc_sentences)):
        with torch.no_grad():
            ref = reference(
                input_ids=torch.tensor(batch["token_ids"], dtype=torch.long),
                token_type_ids=torch.tensor(batch["segment_ids"], dtype=torch.long),
                attention_mask=torch.tensor(batch["padding_mask"], dtype=torch.long),
            )
        out = encoder(batch)
        real = batch["padding_mask"].astype(bool)
        seq_diff = max(
            seq_diff,
            float(
                np.abs(np.asarray(out["sequence_output"]) - ref.last_hidden_state.numpy())[
                    real
                ].max()
            ),
        )
        pooled_diff = max(
            pooled_diff,
            float(
                np.abs(np.asarray(out["pooled_output"]) - ref.pooler_output.numpy()).max()
            ),
        )
        n_sentences += len(real)
        padded += int((~real).sum())
    print(
        f"\nMiniLM vs transformers on {n_sentences} BBC sentences ({padded} padding "
        f"positions): sequence_output {seq_diff:.2e}, pooled_output {pooled_diff:.2e}"
    )
    assert n_sentences >= 64 and padded > 0
    assert seq_diff <= 1e-4
    assert pooled_diff <= 1e-4


def test_published_similarity_figures(minilm):
    """The model card's published figures (docs/data.md): mean-pooled,
    normalised cosine 0.719 and -0.054."""
    from zoo.models.bert_encoder import padding_mean

    encoder, tokenizer = minilm
    batch = tokenizer(
        [
            "A man is playing a guitar.",
            "Someone is strumming a guitar.",
            "The stock market fell sharply today.",
        ],
        sequence_length=24,
    )
    emb = np.array(padding_mean(encoder(batch)["sequence_output"], batch["padding_mask"]))
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    assert abs(emb[0] @ emb[1] - 0.719) < 0.002
    assert abs(emb[0] @ emb[2] - (-0.054)) < 0.002


def test_round_trip_is_bit_exact(minilm_dir, minilm, tmp_path):
    encoder, tokenizer = minilm
    save_hf(
        encoder,
        tmp_path / "out",
        vocabulary=tokenizer.vocabulary,
        lowercase=tokenizer.lowercase,
    )
    original = read_hf_tensors(minilm_dir)
    written = read_hf_tensors(tmp_path / "out")
    assert set(written) == set(original) - {"embeddings.position_ids"}
    for key, value in written.items():
        assert value.dtype == original[key].dtype
        np.testing.assert_array_equal(value, original[key], err_msg=key)
    # And back in: the reloaded encoder's weights are identical too.
    again = load_hf_encoder(tmp_path / "out")
    for a, b in zip(encoder.get_weights(), again.get_weights()):
        np.testing.assert_array_equal(a, b)
    assert (tmp_path / "out" / "vocab.txt").read_text().split("\n")[
        :3
    ] == tokenizer.vocabulary[:3]
    assert json.loads((tmp_path / "out" / "tokenizer_config.json").read_text()) == {
        "tokenizer_class": "BertTokenizer",
        "do_lower_case": True,
        "model_max_length": 512,
    }


def test_mismatch_lists_every_offending_tensor(minilm_dir, tmp_path):
    from safetensors.numpy import save_file

    tensors = dict(read_hf_tensors(minilm_dir))
    tensors["encoder.layer.2.attention.self.query.weight"] = np.zeros((384, 100), "float32")
    tensors["pooler.dense.bias"] = np.zeros(7, "float32")
    del tensors["encoder.layer.5.output.LayerNorm.bias"]
    tensors["encoder.layer.9.output.dense.weight"] = np.zeros((2, 2), "float32")
    (tmp_path / "bad").mkdir()
    save_file(tensors, str(tmp_path / "bad" / "model.safetensors"))
    (tmp_path / "bad" / "config.json").write_text((minilm_dir / "config.json").read_text())
    encoder = zoo.build_encoder(zoo.PRESETS["minilm_l6_h384"])
    before = [w.copy() for w in encoder.get_weights()]
    with pytest.raises(CheckpointMismatchError) as err:
        load_hf_weights(encoder, tmp_path / "bad")
    message = str(err.value)
    bad = {name for name, _, _ in err.value.problems}
    assert bad == {
        "encoder.layer.2.attention.self.query.weight",
        "pooler.dense.bias",
        "encoder.layer.5.output.LayerNorm.bias",
        "encoder.layer.9.output.dense.weight",
    }
    assert (
        "encoder.layer.2.attention.self.query.weight: (384, 384) -> (384, 100)" in message
    )
    assert "pooler.dense.bias: (384,) -> (7,)" in message
    assert "encoder.layer.5.output.LayerNorm.bias: (384,) -> missing" in message
    assert "4 tensor(s) differ" in message
    # All or nothing: not one weight changed.
    for a, b in zip(before, encoder.get_weights()):
        np.testing.assert_array_equal(a, b)
    # Unless asked: partial load assigns the rest and returns the problems.
    problems = load_hf_weights(encoder, tmp_path / "bad", allow_partial=True)
    assert len(problems) == 4


def test_pretraining_heads_match_transformers(minilm_dir, hf_tokenizer, tmp_path):
    """BertForPreTraining (bert. prefix + cls heads) into zoo.Pretrainer:
    MLM logits at masked positions and NSP logits equal HF's."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    config = transformers.BertConfig.from_pretrained(str(minilm_dir))
    torch.manual_seed(0)
    reference = transformers.BertForPreTraining(config)
    reference.bert.load_state_dict(
        transformers.BertModel.from_pretrained(str(minilm_dir)).state_dict(), strict=False
    )
    reference.eval()
    reference.save_pretrained(str(tmp_path / "pt"), safe_serialization=True)
    model = zoo.Pretrainer(zoo.build_encoder(zoo.PRESETS["minilm_l6_h384"]))
    load_hf_weights(model, tmp_path / "pt")
    enc = hf_tokenizer(
        ["The cat sat on the mat.", "Markets rallied after the report."],
        ["It was warm.", "Investors were relieved by the numbers."],
        padding="longest",
        return_tensors="np",
    )
    positions = np.array([[1, 3, 5], [2, 4, 6]], "int32")
    batch = {
        "token_ids": enc["input_ids"].astype("int32"),
        "segment_ids": enc["token_type_ids"].astype("int32"),
        "padding_mask": enc["attention_mask"].astype("int32"),
        "masked_positions": positions,
    }
    with torch.no_grad():
        ref = reference(
            input_ids=torch.tensor(enc["input_ids"]),
            token_type_ids=torch.tensor(enc["token_type_ids"]),
            attention_mask=torch.tensor(enc["attention_mask"]),
        )
    ref_mlm = np.take_along_axis(ref.prediction_logits.numpy(), positions[:, :, None], 1)
    out = model(batch)
    assert np.abs(np.asarray(out["mlm_logits"]) - ref_mlm).max() <= 1e-4
    assert (
        np.abs(np.asarray(out["nsp_logits"]) - ref.seq_relationship_logits.numpy()).max()
        <= 1e-4
    )


def test_sentence_transformers_layout_and_lowercase_flag(minilm_dir, tmp_path):
    """`0_Transformer/` sub-folder layout; tokenizer_config.json's casing."""
    import shutil

    sub = tmp_path / "st" / "0_Transformer"
    sub.mkdir(parents=True)
    for name in ("config.json", "model.safetensors", "vocab.txt"):
        shutil.copy(minilm_dir / name, sub / name)
    (sub / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": False}))
    encoder, tokenizer = zoo.load_checkpoint(tmp_path / "st")
    assert encoder.num_layers == 6 and tokenizer.lowercase is False


def test_unsupported_activation_is_refused(minilm_dir, tmp_path):
    import shutil

    shutil.copytree(minilm_dir, tmp_path / "m")
    cfg = json.loads((tmp_path / "m" / "config.json").read_text())
    cfg["hidden_act"] = (
        "relu"  # gelu_new (tanh GELU) loads: tests/checkpoints/test_hf_albert.py
    )
    (tmp_path / "m" / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match="hidden_act='relu'"):
        load_hf_encoder(tmp_path / "m")


@pytest.mark.parametrize(
    "change, message",
    [
        (
            {"is_decoder": True},
            "is_decoder=true; HF BertModel then masks attention causally",
        ),
        ({"add_cross_attention": True}, "add_cross_attention=true; HF BertModel then adds"),
        ({"is_decoder": "false"}, "is_decoder='false' (str); expected true or false"),
    ],
)
def test_a_decoder_config_is_refused_by_convert(
    minilm_dir, tmp_path, capsys, change, message
):
    """HF's BertModel with `is_decoder` masks attention causally (and builds
    cross-attention with `add_cross_attention`); the zoo's encoder attends
    both ways, so such a checkpoint converted with exit 0 and other outputs."""
    shutil.copytree(minilm_dir, tmp_path / "m")
    cfg = json.loads((tmp_path / "m" / "config.json").read_text())
    (tmp_path / "m" / "config.json").write_text(json.dumps({**cfg, **change}))
    out = tmp_path / "out"
    assert main(["convert", str(tmp_path / "m"), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "config.json: " + message in err, err
    assert not out.exists()


@pytest.mark.parametrize("preset", ["bert_base", "roberta_base", "albert_base"])
def test_every_family_refuses_what_changes_its_attention(preset):
    from zoo.checkpoints.hf import config_from_hf, config_to_hf

    hf = config_to_hf(zoo.get_preset(preset))
    assert config_from_hf({**hf, "is_decoder": False, "add_cross_attention": False})
    with pytest.raises(ValueError, match="position_embedding_type='relative_key'"):
        config_from_hf({**hf, "position_embedding_type": "relative_key"})
    if preset != "albert_base":  # AlbertModel has no decoder mode
        with pytest.raises(ValueError, match="is_decoder=true"):
            config_from_hf({**hf, "is_decoder": True})
