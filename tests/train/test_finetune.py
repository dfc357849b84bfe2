"""Fine-tuning real pretrained weights: tagging and span QA heads learn
synthetic tasks; mixed precision; a killed run resumes. These test the
training mechanics, so they run on two of MiniLM's six layers (`minilm2_dir`,
a third of the time; the QA head then needs 3e-4 where six layers reached
EM 1.0 at 1e-4). Loading the full checkpoint is tested in tests/checkpoints;
the BBC News recipe's 97% is in test_bbc_full_recipe.py, `make test-full`."""

import json
import os
import signal
import subprocess
import sys

import pytest

from tests.train import synthetic
from zoo.train.finetune import FinetuneConfig, finetune

pytestmark = [pytest.mark.assets, pytest.mark.slow]


def test_tagging_head_learns_synthetic_ner(minilm2_dir, tmp_path):
    data = tmp_path / "ner"
    data.mkdir()
    synthetic.write_conll(data / "train.conll", 240, seed=1)
    synthetic.write_conll(data / "dev.conll", 40, seed=2)
    synthetic.write_conll(data / "test.conll", 80, seed=3)
    result = finetune(
        minilm2_dir,
        data,
        "tag",
        tmp_path / "out",
        FinetuneConfig(epochs=3, batch_size=16, sequence_length=32, learning_rate=1e-4),
        verbose=0,
    )
    print(f"\nsynthetic NER entity F1: {result['entity_f1']:.3f}")
    assert result["entity_f1"] >= 0.9


def test_span_qa_head_learns_synthetic_squad(minilm2_dir, tmp_path):
    data = tmp_path / "squad"
    data.mkdir()
    synthetic.write_squad(data / "train.json", 300, seed=1)
    synthetic.write_squad(data / "dev.json", 40, seed=2)
    synthetic.write_squad(data / "test.json", 80, seed=3)
    result = finetune(
        minilm2_dir,
        data,
        "qa",
        tmp_path / "out",
        FinetuneConfig(
            epochs=3, batch_size=16, sequence_length=64, learning_rate=3e-4, doc_stride=32
        ),
        verbose=0,
    )
    print(f"\nsynthetic SQuAD EM {result['exact_match']:.3f} F1 {result['f1']:.3f}")
    assert result["exact_match"] >= 0.9


def test_mixed_precision_finetune_learns_and_restores_the_policy(minilm2_dir, tmp_path):
    """float16 compute with Keras's loss scaling; the run's policy does not
    leak into the rest of the process; the best model is saved computing in
    float32, and a run that starts from that model directory trains under
    the policy it asks for."""
    import keras

    from zoo.checkpoints import load_model_dir

    class SeenPolicy(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            seen.add(self.model.encoder.get_layer("transformer_layer_0").compute_dtype)

    data = tmp_path / "topics.csv"
    synthetic.write_topics_csv(data)
    seen = set()
    result = finetune(
        minilm2_dir,
        data,
        "classify",
        tmp_path / "out",
        FinetuneConfig(
            epochs=1,
            batch_size=8,
            sequence_length=16,
            learning_rate=1e-4,
            pooling="mean",
            mixed_precision="mixed_float16",
        ),
        callbacks=[SeenPolicy()],
        verbose=0,
    )
    print(
        f"\nmixed_float16 fine-tune on two topics: test accuracy {result['accuracy']:.3f}"
    )
    assert seen == {"float16"}
    assert result["accuracy"] > 0.9  # chance is 0.5
    assert keras.config.dtype_policy().name == "float32"
    model, _, _ = load_model_dir(tmp_path / "out" / "model")
    assert model.encoder.compute_policy.name == "float32"

    seen.clear()
    again = finetune(
        tmp_path / "out" / "model",
        data,
        "classify",
        tmp_path / "again",
        FinetuneConfig(
            epochs=1,
            batch_size=8,
            sequence_length=16,
            learning_rate=1e-4,
            pooling="mean",
            steps_per_epoch=3,
            mixed_precision="mixed_bfloat16",
        ),
        callbacks=[SeenPolicy()],
        verbose=0,
    )
    assert seen == {"bfloat16"}, "--mixed-precision must apply to a model directory too"
    assert again["accuracy"] > 0.9
    assert keras.config.dtype_policy().name == "float32"


_KILLED_RUN = """
import os, signal, sys, keras
from zoo.train.finetune import FinetuneConfig, finetune

class KillAfter(keras.callbacks.Callback):
    def on_epoch_end(self, epoch, logs=None):
        if epoch + 1 == int(sys.argv[3]):
            os.kill(os.getpid(), signal.SIGKILL)

kill = [KillAfter()] if int(sys.argv[3]) else []
finetune(sys.argv[1], sys.argv[4], "classify", sys.argv[2],
         FinetuneConfig(epochs=3, batch_size=16, sequence_length=32, learning_rate=1e-4,
                        pooling="mean", patience=5),
         callbacks=kill, verbose=0)
"""


def test_killed_finetune_resumes_and_ends_the_same(minilm2_dir, tmp_path):
    # Two synthetic topics (60 rows, 3 batches an epoch): what is tested is
    # the resumption, which a real corpus's tokenizing, baseline and
    # evaluation would only slow down (BBC's took 3 processes 221 s).
    data = tmp_path / "topics.csv"
    synthetic.write_topics_csv(data)

    def command(out, kill_after):
        return [
            sys.executable,
            "-c",
            _KILLED_RUN,
            str(minilm2_dir),
            str(out),
            str(kill_after),
            str(data),
        ]

    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}

    def run(out, kill_after):
        return subprocess.run(
            command(out, kill_after), capture_output=True, text=True, timeout=900, env=env
        )

    # The uninterrupted reference runs beside the killed run: most of each
    # process is start-up, loading and saving, which overlap on 2 cores.
    with subprocess.Popen(
        command(tmp_path / "straight", 0),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    ) as straight:
        killed = run(tmp_path / "resumed", 2)
        _, straight_err = straight.communicate(timeout=900)
    assert straight.returncode == 0, straight_err[-2000:]
    assert killed.returncode == -signal.SIGKILL
    meta = json.loads(
        (tmp_path / "resumed" / "backup" / "training_metadata.json").read_text()
    )
    assert meta["epoch"] == 2  # two epochs finished (and were saved) before the kill
    resumed = run(tmp_path / "resumed", 0)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    history = json.loads((tmp_path / "resumed" / "history.json").read_text())
    straight_history = json.loads((tmp_path / "straight" / "history.json").read_text())
    # history.json holds all three epochs (two written before the kill, the
    # third by the re-run), as the uninterrupted run's does; the re-run
    # trained only epoch 3 (the backup said two were done), and the time adds up.
    assert history["epochs"] == straight_history["epochs"] == [1, 2, 3]
    assert history["history"]["loss"] == pytest.approx(
        straight_history["history"]["loss"], rel=1e-4
    )
    assert all(s is not None for s in history["epoch_seconds"])
    # The model kept is the best epoch of all three, the two before the kill
    # included, and the resumed run leaves no backup behind.
    losses = history["history"]["val_loss"]
    best = json.loads((tmp_path / "resumed" / "model" / "zoo_model.json").read_text())
    assert best["best"]["epoch"] == 1 + losses.index(min(losses))
    assert best["best"]["value"] == pytest.approx(min(losses), abs=1e-6)
    assert not (tmp_path / "resumed" / "backup").exists()
    a = json.loads((tmp_path / "straight" / "metrics.json").read_text())
    b = json.loads((tmp_path / "resumed" / "metrics.json").read_text())
    print(
        f"\nuninterrupted accuracy {a['accuracy']:.4f}, killed+resumed {b['accuracy']:.4f}"
    )
    assert a["accuracy"] == b["accuracy"]
