"""google-research TF1 checkpoints. None can be downloaded here, so the test
writes the real MiniLM weights under the exact TF1 names with TF's own
checkpoint writer (a v1 `Saver` in a graph, as BERT's `run_pretraining.py`
did), then loads them and compares with HF's BertModel."""

import json
import shutil

import numpy as np
import pytest

import zoo
from zoo.checkpoints import CheckpointMismatchError, load_tf1_encoder, save_tf1
from zoo.checkpoints.hf import read_hf_tensors
from zoo.checkpoints.tf1 import read_tf1_tensors

pytestmark = pytest.mark.assets


def hf_key_to_tf1(key):
    """HF BertModel key -> google-research name, written independently of the
    library's table (the reverse of HF's convert_bert_original_tf_checkpoint)."""
    name = key.replace("encoder.layer.", "encoder/layer_").replace(".", "/")
    name = name.replace("LayerNorm/weight", "LayerNorm/gamma").replace(
        "LayerNorm/bias", "LayerNorm/beta"
    )
    transpose = False
    if name.endswith("_embeddings/weight"):
        name = name[: -len("/weight")]
    elif name.endswith("/weight"):
        name, transpose = name[: -len("/weight")] + "/kernel", True
    return "bert/" + name, transpose


def write_tf1_release(minilm_dir, out, extra=None):
    import tensorflow as tf

    tensors = {}
    for key, value in read_hf_tensors(minilm_dir).items():
        if key.endswith("position_ids"):
            continue
        name, transpose = hf_key_to_tf1(key)
        tensors[name] = value.T if transpose else value
    tensors.update(extra or {})
    out.mkdir(parents=True)
    graph = tf.Graph()
    with graph.as_default():
        variables = [tf.compat.v1.Variable(v, name=n) for n, v in tensors.items()]
        variables.append(tf.compat.v1.train.get_or_create_global_step())
        saver = tf.compat.v1.train.Saver()
        with tf.compat.v1.Session(graph=graph) as session:
            session.run(tf.compat.v1.global_variables_initializer())
            saver.save(session, str(out / "bert_model.ckpt"), write_meta_graph=False)
    hf_cfg = json.loads((minilm_dir / "config.json").read_text())
    google = {
        k: hf_cfg[k]
        for k in (
            "attention_probs_dropout_prob",
            "hidden_act",
            "hidden_dropout_prob",
            "hidden_size",
            "initializer_range",
            "intermediate_size",
            "max_position_embeddings",
            "num_attention_heads",
            "num_hidden_layers",
            "type_vocab_size",
            "vocab_size",
        )
    }
    (out / "bert_config.json").write_text(json.dumps(google))
    shutil.copy(minilm_dir / "vocab.txt", out / "vocab.txt")
    return tensors


@pytest.fixture(scope="module")
def tf1_release(minilm_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("tf1") / "uncased_L-6_H-384_A-12"
    rng = np.random.default_rng(0)
    heads = {
        "cls/predictions/transform/dense/kernel": rng.normal(size=(384, 384)).astype(
            "float32"
        ),
        "cls/predictions/transform/dense/bias": rng.normal(size=384).astype("float32"),
        "cls/predictions/transform/LayerNorm/gamma": np.ones(384, "float32"),
        "cls/predictions/transform/LayerNorm/beta": np.zeros(384, "float32"),
        "cls/predictions/output_bias": rng.normal(size=30522).astype("float32"),
        "cls/seq_relationship/output_weights": rng.normal(size=(2, 384)).astype("float32"),
        "cls/seq_relationship/output_bias": rng.normal(size=2).astype("float32"),
    }
    return out, write_tf1_release(minilm_dir, out, heads)


def test_tf1_checkpoint_loads_and_matches_hf(tf1_release, minilm):
    out, _ = tf1_release
    encoder, tokenizer = zoo.load_checkpoint(out)
    reference, _ = minilm  # loaded from the HF files
    for a, b in zip(encoder.get_weights(), reference.get_weights()):
        np.testing.assert_array_equal(a, b)
    batch = tokenizer(["A TF1 checkpoint, loaded."], sequence_length=16)
    np.testing.assert_array_equal(
        np.asarray(encoder(batch)["sequence_output"]),
        np.asarray(reference(batch)["sequence_output"]),
    )


def test_tf1_heads_load_into_pretrainer(tf1_release):
    from zoo.checkpoints.tf1 import load_tf1_weights

    out, written = tf1_release
    model = zoo.Pretrainer(zoo.build_encoder(zoo.PRESETS["minilm_l6_h384"]))
    load_tf1_weights(model, out / "bert_model.ckpt")
    np.testing.assert_array_equal(
        model.nsp_dense.kernel.numpy(), written["cls/seq_relationship/output_weights"].T
    )
    np.testing.assert_array_equal(
        model.mlm_head.output_bias.numpy(), written["cls/predictions/output_bias"]
    )


def test_tf1_round_trip_is_bit_exact(tf1_release, tmp_path):
    out, written = tf1_release
    model = zoo.Pretrainer(zoo.build_encoder(zoo.PRESETS["minilm_l6_h384"]))
    from zoo.checkpoints.tf1 import load_tf1_weights

    load_tf1_weights(model, out / "bert_model.ckpt")
    save_tf1(model, tmp_path / "again", vocabulary=["[PAD]"])
    again = read_tf1_tensors(tmp_path / "again" / "bert_model.ckpt")
    assert set(again) == set(written)
    for name, value in written.items():
        np.testing.assert_array_equal(again[name], value, err_msg=name)
    assert (
        json.loads((tmp_path / "again" / "bert_config.json").read_text())["hidden_size"]
        == 384
    )


def test_tf1_mismatch_names_every_tensor(minilm_dir, tmp_path):
    write_tf1_release(minilm_dir, tmp_path / "bad")
    cfg = json.loads((tmp_path / "bad" / "bert_config.json").read_text())
    cfg["intermediate_size"] = 1024  # wrong: the weights are 1536 wide
    (tmp_path / "bad" / "bert_config.json").write_text(json.dumps(cfg))
    with pytest.raises(CheckpointMismatchError) as err:
        load_tf1_encoder(tmp_path / "bad")
    names = {name for name, _, _ in err.value.problems}
    assert names == {
        f"bert/encoder/layer_{i}/{p}"
        for i in range(6)
        for p in (
            "intermediate/dense/kernel",
            "intermediate/dense/bias",
            "output/dense/kernel",
        )
    }
    assert (
        "bert/encoder/layer_0/intermediate/dense/kernel: (384, 1024) -> (384, 1536)"
        in str(err.value)
    )
