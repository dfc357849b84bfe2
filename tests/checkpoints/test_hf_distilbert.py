"""DistilBERT-style students in HF's DistilBertModel layout (`save_hf`,
`load_checkpoint`, `zoo convert --to hf`), checked against transformers'
own `DistilBertModel` on torch CPU.

Tiny tests use random weights moved far from their initial values (LayerNorm
gamma 1 / beta 0 and zero biases would hide a swapped or untransposed
tensor); the real-size test is a student initialised from the real MiniLM
checkpoint, on real BBC sentences."""

import json
import re
import subprocess
import sys

import numpy as np
import pytest

import zoo
from tests.checkpoints.conftest import SENTENCES
from tests.distill.tiny import teacher_dir
from zoo.checkpoints import (
    load_checkpoint,
    load_hf_encoder,
    load_model_dir,
    save_hf,
    save_model_dir,
)
from zoo.checkpoints.hf import config_from_hf, read_hf_tensors
from zoo.cli import main
from zoo.distill.student_init import make_student
from zoo.text.tokenizer import WordPieceTokenizer

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
# Real sentences, short and long, so a padded batch mixes both.
TINY_SENTENCES = SENTENCES[:4] + SENTENCES[8:10]


def _tiny_tokenizer(lowercase=True):
    words = sorted(
        {w for s in TINY_SENTENCES for w in re.findall(r"\w+|[^\w\s]", s.lower())}
    )
    return WordPieceTokenizer(SPECIAL + words, lowercase=lowercase)


def _tiny_student(tokenizer, **overrides):
    fields = dict(
        vocabulary_size=tokenizer.vocabulary_size,
        num_layers=2,
        num_heads=2,
        hidden_dim=8,
        intermediate_dim=16,
        max_sequence_length=64,
    )
    encoder = zoo.DistilBertEncoder(**{**fields, **overrides})
    rng = np.random.default_rng(0)
    for weight in encoder.weights:
        weight.assign(weight.numpy() + rng.normal(0.0, 0.3, weight.shape).astype("float32"))
    return encoder


def _reference(torch, transformers, directory):
    model, info = transformers.DistilBertModel.from_pretrained(
        str(directory), output_loading_info=True
    )
    return model.eval(), info


def _run(torch, reference, batch, hidden_states=False):
    with torch.no_grad():
        return reference(
            input_ids=torch.tensor(batch["token_ids"], dtype=torch.long),
            attention_mask=torch.tensor(batch["padding_mask"], dtype=torch.long),
            output_hidden_states=hidden_states,
        )


@pytest.mark.slow  # a distilled student through transformers
def test_student_loads_in_transformers_with_equal_outputs(tmp_path):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    tokenizer = _tiny_tokenizer()
    encoder = _tiny_student(tokenizer)
    out = save_hf(
        encoder,
        tmp_path / "hf",
        vocabulary=tokenizer.vocabulary,
        lowercase=tokenizer.lowercase,
    )

    config = json.loads((out / "config.json").read_text())
    assert config["model_type"] == "distilbert"
    assert config["architectures"] == ["DistilBertModel"]
    assert (config["dim"], config["n_layers"], config["n_heads"], config["hidden_dim"]) == (
        8,
        2,
        2,
        16,
    )
    assert config["activation"] == "gelu" and config["max_position_embeddings"] == 64
    reference, info = _reference(torch, transformers, out)
    # Every DistilBertModel weight came from the file, and nothing was left over.
    for kind in ("missing_keys", "unexpected_keys", "mismatched_keys"):
        assert not info[kind], (kind, info[kind])

    # HF's own tokenizer, built from the files written, gives the zoo's ids.
    hf_tokenizer = transformers.AutoTokenizer.from_pretrained(str(out))
    assert type(hf_tokenizer).__name__.startswith("DistilBertTokenizer")
    batch = {
        k: np.asarray(v) for k, v in tokenizer(TINY_SENTENCES, sequence_length=48).items()
    }
    encoded = hf_tokenizer(
        TINY_SENTENCES, padding="max_length", max_length=48, return_tensors="np"
    )
    np.testing.assert_array_equal(encoded["input_ids"], batch["token_ids"])
    np.testing.assert_array_equal(encoded["attention_mask"], batch["padding_mask"])
    real = batch["padding_mask"].astype(bool)
    assert (~real).sum() > 0 and (batch["token_ids"] == 1).sum() == 0  # padding, no [UNK]

    ours = np.asarray(encoder(batch)["sequence_output"])
    theirs = _run(torch, reference, batch).last_hidden_state.numpy()
    diff = float(np.abs(ours - theirs)[real].max())
    print(f"\ntiny student vs transformers.DistilBertModel: max |diff| {diff:.2e}")
    assert diff <= 1e-5


def test_round_trip_zoo_hf_zoo_is_exact(tmp_path):
    transformers = pytest.importorskip("transformers")
    tokenizer = _tiny_tokenizer(lowercase=False)
    encoder = _tiny_student(tokenizer, dropout=0.2, initializer_range=0.05)
    save_hf(encoder, tmp_path / "hf", vocabulary=tokenizer.vocabulary, lowercase=False)
    assert set(read_hf_tensors(tmp_path / "hf")) == {
        "embeddings.word_embeddings.weight",
        "embeddings.position_embeddings.weight",
        "embeddings.LayerNorm.weight",
        "embeddings.LayerNorm.bias",
        *(
            f"transformer.layer.{i}.{module}.{p}"
            for i in range(2)
            for p in ("weight", "bias")
            for module in (
                "attention.q_lin",
                "attention.k_lin",
                "attention.v_lin",
                "attention.out_lin",
                "sa_layer_norm",
                "ffn.lin1",
                "ffn.lin2",
                "output_layer_norm",
            )
        ),
    }

    again, again_tokenizer = load_checkpoint(tmp_path / "hf")
    assert type(again) is zoo.DistilBertEncoder
    assert again.config == encoder.config
    assert again_tokenizer.vocabulary == tokenizer.vocabulary
    assert again_tokenizer.lowercase is False
    for a, b in zip(encoder.weights, again.weights):
        assert a.path == b.path
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=a.path)

    # A DistilBertFor* file (`distilbert.` prefix, MLM head) holds the same
    # encoder: the head is left unread, the encoder weights load.
    hf_config = transformers.DistilBertConfig.from_pretrained(str(tmp_path / "hf"))
    with_head = transformers.DistilBertForMaskedLM(hf_config)
    with_head.distilbert.load_state_dict(
        transformers.DistilBertModel.from_pretrained(str(tmp_path / "hf")).state_dict()
    )
    with_head.save_pretrained(str(tmp_path / "mlm"))
    from_head = load_hf_encoder(tmp_path / "mlm")
    for a, b in zip(encoder.get_weights(), from_head.get_weights()):
        np.testing.assert_array_equal(a, b)


@pytest.mark.slow  # a distilled student through transformers
def test_convert_cli_writes_a_student_as_distilbert(tmp_path, capsys):
    teacher, tokenizer, _ = load_model_dir(teacher_dir(tmp_path))
    student = make_student(teacher, 2)  # a Classifier on a DistilBertEncoder
    save_model_dir(student, tmp_path / "student", tokenizer)
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "zoo",
            "convert",
            str(tmp_path / "student"),
            "--to",
            "hf",
            "--out",
            str(tmp_path / "hf"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert "wrote hf checkpoint" in run.stdout and "DistilBertEncoder" in run.stdout
    names = {p.name for p in (tmp_path / "hf").iterdir()}
    assert names == {
        ".zoo-output",  # the marker of a directory zoo wrote (docs/outputs.md)
        "config.json",
        "model.safetensors",
        "vocab.txt",
        "tokenizer_config.json",
    }
    assert json.loads((tmp_path / "hf" / "config.json").read_text())["architectures"] == [
        "DistilBertModel"
    ]
    # And back to a zoo model directory through the CLI: the same encoder.
    assert main(["convert", str(tmp_path / "hf"), "--out", str(tmp_path / "back")]) == 0
    back, back_tokenizer, meta = load_model_dir(tmp_path / "back")
    assert meta["source_format"] == "hf" and type(back) is zoo.DistilBertEncoder
    assert back_tokenizer.vocabulary == tokenizer.vocabulary
    for a, b in zip(student.encoder.get_weights(), back.get_weights()):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(SystemExit):
        main(["convert", "--help"])
    assert "DistilBertModel" in capsys.readouterr().out


def test_what_distilbert_cannot_express_is_refused(tmp_path, capsys):
    tokenizer = _tiny_tokenizer()
    odd = _tiny_student(tokenizer, layer_norm_epsilon=1e-6)
    with pytest.raises(
        ValueError,
        match=r"layer_norm_epsilon=1e-06: HF DistilBertModel "
        r"builds every LayerNorm with eps=1e-12",
    ) as err:
        save_hf(odd, tmp_path / "hf", vocabulary=tokenizer.vocabulary)
    assert "--to zoo" in str(err.value)
    assert not (tmp_path / "hf").exists()
    # The same through the CLI: exit 2, the message, nothing written.
    save_model_dir(odd, tmp_path / "odd", tokenizer)
    assert (
        main(
            ["convert", str(tmp_path / "odd"), "--to", "hf", "--out", str(tmp_path / "hf")]
        )
        == 2
    )
    assert "layer_norm_epsilon=1e-06" in capsys.readouterr().err
    assert not (tmp_path / "hf").exists()

    with pytest.raises(ValueError, match="holds the encoder alone; received a MaskedLM"):
        save_hf(zoo.MaskedLM(_tiny_student(tokenizer)), tmp_path / "hf")
    assert not (tmp_path / "hf").exists()

    # Reading: an activation the zoo encoder does not compute.
    config = {
        "model_type": "distilbert",
        "vocab_size": 30,
        "dim": 8,
        "n_layers": 2,
        "n_heads": 2,
        "hidden_dim": 16,
        "activation": "relu",
    }
    with pytest.raises(ValueError, match="activation='relu'.*zoo encoders compute GELU"):
        config_from_hf(config)
    with pytest.raises(
        ValueError, match=r"missing key\(s\) \['dim'\]; is this a DistilBERT"
    ):
        config_from_hf({k: v for k, v in config.items() if k not in ("dim", "activation")})


@pytest.mark.assets
def test_real_student_matches_transformers_on_bbc(minilm, bbc_sentences, tmp_path):
    """A 3-layer DistilBERT-style student initialised from the real MiniLM
    (zoo.distill's student init) against transformers.DistilBertModel on 16
    real BBC sentences: every hidden state, real tokens only."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    teacher, tokenizer = minilm
    student = make_student(teacher, 3)
    assert type(student) is zoo.DistilBertEncoder
    save_hf(
        student,
        tmp_path / "hf",
        vocabulary=tokenizer.vocabulary,
        lowercase=tokenizer.lowercase,
    )
    reference, info = _reference(torch, transformers, tmp_path / "hf")
    assert not info["missing_keys"] and not info["unexpected_keys"]

    picks = np.linspace(0, len(bbc_sentences) - 1, 16).astype(int)
    sentences = [bbc_sentences[i] for i in picks]
    hf_tokenizer = transformers.AutoTokenizer.from_pretrained(str(tmp_path / "hf"))
    encoded = hf_tokenizer(
        sentences, padding="longest", truncation=True, max_length=128, return_tensors="np"
    )
    batch = {
        "token_ids": encoded["input_ids"].astype("int32"),
        "segment_ids": np.zeros_like(encoded["input_ids"], "int32"),
        "padding_mask": encoded["attention_mask"].astype("int32"),
    }
    real = batch["padding_mask"].astype(bool)

    def max_diff(a, b):
        return max(float(np.abs(x - y)[real].max()) for x, y in zip(a, b))

    ours = [np.asarray(h) for h in student.with_internals()(batch)["hidden_states"]]
    theirs = [h.numpy() for h in _run(torch, reference, batch, True).hidden_states]
    # transformers in float64: how far float32 itself is from the exact function.
    exact = [h.numpy() for h in _run(torch, reference.double(), batch, True).hidden_states]
    assert len(ours) == len(theirs) == 4
    diff, last = max_diff(ours, theirs), max_diff(ours[-1:], theirs[-1:])
    ours_exact, theirs_exact = max_diff(ours, exact), max_diff(theirs, exact)
    print(
        f"\nMiniLM-initialised L3 student vs transformers.DistilBertModel on "
        f"{len(sentences)} BBC sentences ({int((~real).sum())} padding positions), max "
        f"|diff| over real tokens: last hidden state {last:.2e}, any hidden state "
        f"{diff:.2e}; vs float64 transformers: zoo {ours_exact:.2e}, transformers "
        f"float32 {theirs_exact:.2e}"
    )
    assert (~real).sum() > 0
    assert diff <= 1e-4
    # The zoo is as close to the exact function as transformers' float32 is.
    assert ours_exact <= 2 * theirs_exact + 1e-6

    # And back: the reloaded student is the same weights.
    again, _ = load_checkpoint(tmp_path / "hf")
    for a, b in zip(student.get_weights(), again.get_weights()):
        np.testing.assert_array_equal(a, b)
