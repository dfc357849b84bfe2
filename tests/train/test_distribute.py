"""`zoo pretrain` and `zoo finetune` under tf.distribute: two
`--strategy multiworker` processes on 127.0.0.1 against one process with
the same global batch, killed after epoch 1 and restarted; gradient
accumulation against one large batch; `--strategy tpu` without a TPU.

Tiny models without dropout (each worker would draw its own masks), sizes
that split every global batch evenly over two workers. Every step's loss
is recorded (Keras's running mean of the epoch, so equal records mean equal
per-step losses)."""

import csv
import json
import random
import signal
import sys

import keras
import numpy as np
import pytest

import zoo
from tests.cluster import SETTLE, env, max_diff, start, tail, wait
from zoo.checkpoints import save_model_dir
from zoo.cli import build_parser, main
from zoo.cli.runs import training_output
from zoo.text.tokenizer import WordPieceTokenizer
from zoo.utils.local_cluster import free_ports, tf_configs

WORDS = (
    "goal match team win cup rain storm cloud wind sun vote law party "
    "minister tax the a of is"
).split()
TOPICS = {"sport": WORDS[:5], "weather": WORDS[5:10], "politics": WORDS[10:15]}
EPOCHS = 2

# One worker (TF_CONFIG from the environment) or one process. Records every
# step's loss to RECORD-<task index>.jsonl at each epoch's end, SIGKILLs
# itself after epoch KILL_AFTER (0: never) and saves the final weights.
WORKER = f"""
import json, os, signal, sys, time

import keras
import numpy as np

command, model, data, out, strategy, kill_after, record = sys.argv[1:8]
task = json.loads(os.environ.get("TF_CONFIG", "{{}}")).get("task", {{}}).get("index", 0)


class Record(keras.callbacks.Callback):
    def on_epoch_begin(self, epoch, logs=None):
        self.losses = []

    def on_train_batch_end(self, batch, logs=None):
        self.losses.append(float(logs["loss"]))

    def on_epoch_end(self, epoch, logs=None):
        with open(f"{{record}}-{{task}}.jsonl", "a") as f:
            f.write(json.dumps({{"epoch": epoch + 1, "losses": self.losses}}) + "\\n")
        if epoch + 1 == int(kill_after):
            print(f"killing myself after epoch {{epoch + 1}}", flush=True)
            time.sleep({SETTLE})  # tests/cluster.SETTLE: the peer's barrier completes
            os.kill(os.getpid(), signal.SIGKILL)

    def on_train_end(self, logs=None):
        np.savez(f"{{record}}-{{task}}.npz", *self.model.get_weights())


if command == "pretrain":
    from zoo.train.pretrain import PretrainConfig, pretrain, pretraining_corpus
    config = PretrainConfig(epochs={EPOCHS}, batch_size=8, sequence_length=16,
                            max_predictions=3, learning_rate=1e-3, seed=3,
                            steps_per_epoch=4, eval_batches=2, strategy=strategy)
    result = pretrain(model, pretraining_corpus(data), out, config, verbose=2,
                      callbacks=[Record()])
else:
    from zoo.train.finetune import FinetuneConfig, finetune
    config = FinetuneConfig(epochs={EPOCHS}, batch_size=14, sequence_length=12,
                            learning_rate=1e-2, seed=3, dropout=0.0, strategy=strategy)
    result = finetune(model, data, "classify", out, config, verbose=2, callbacks=[Record()])
print(json.dumps(result))
"""


@pytest.fixture(scope="module")
def assets(tmp_path_factory):
    """A tiny encoder without dropout (a zoo model directory), a sharded
    text corpus and a 40-row classification CSV."""
    root = tmp_path_factory.mktemp("distribute")
    tokenizer = WordPieceTokenizer(
        ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS, "."]
    )
    keras.utils.set_random_seed(7)
    encoder = zoo.BertEncoder(
        vocabulary_size=len(tokenizer.vocabulary),
        num_layers=2,
        num_heads=2,
        hidden_dim=8,
        intermediate_dim=16,
        max_sequence_length=16,
        dropout=0.0,
    )
    model_dir = save_model_dir(encoder, root / "encoder", tokenizer)
    rng = random.Random(0)
    corpus = root / "corpus"
    corpus.mkdir()
    for part in range(4):
        documents = [
            " ".join(" ".join(rng.choices(WORDS, k=5)).capitalize() + "." for _ in range(4))
            for _ in range(6)
        ]
        (corpus / f"part-{part:02d}.txt").write_text("\n\n".join(documents) + "\n")
    data = root / "news.csv"
    nrng = np.random.default_rng(0)
    with open(data, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["text", "label"])
        for i in range(40):  # split rule: 8 test, 4 validation, 28 train = 2 x 14
            label = sorted(TOPICS)[i % 3]
            words = list(nrng.choice(TOPICS[label], 4)) + list(nrng.choice(WORDS[15:], 2))
            w.writerow([" ".join(words) + f" {i}", label])
    script = root / "worker.py"
    script.write_text(WORKER)
    return {"model": model_dir, "pretrain": corpus, "finetune": data, "script": script}


def _job(assets, command, out, strategy, kill_after, tf_config=None):
    cmd = [
        sys.executable,
        str(assets["script"]),
        command,
        str(assets["model"]),
        str(assets[command]),
        str(out),
        strategy,
        str(kill_after),
        f"{out}-record",
    ]
    return cmd, env(tf_config)


def _records(out, task=0):
    rows = [json.loads(line) for line in open(f"{out}-record-{task}.jsonl")]
    return {row["epoch"]: row["losses"] for row in rows}


@pytest.mark.slow  # training runs in worker processes
@pytest.mark.parametrize("command", ["pretrain", "finetune"])
def test_two_workers_match_one_process_and_resume_after_a_kill(tmp_path, assets, command):
    reference, multi = tmp_path / "reference", tmp_path / "multi"
    configs = tf_configs(free_ports(2))
    # The one-process reference runs beside the first (killed) cluster.
    jobs = [_job(assets, command, reference, "none", 0)] + [
        _job(assets, command, multi, "multiworker", 1, c) for c in configs
    ]
    logs = [tmp_path / "reference.log"] + [tmp_path / f"worker{i}.log" for i in (0, 1)]
    procs = start(jobs, logs)
    codes = wait(procs[1:], logs[1:], kill_all_when_one_dies=True)
    assert codes == [-signal.SIGKILL] * 2, "\n".join(tail(log) for log in logs[1:])
    for i in (0, 1):
        meta = multi / "backup" / f"worker-{i}" / "training_metadata.json"
        assert json.loads(meta.read_text())["epoch"] == 1

    # The cluster manager starts both again with the same commands.
    restart = [_job(assets, command, multi, "multiworker", 0, c) for c in configs]
    logs2 = [tmp_path / f"worker{i}.restart.log" for i in (0, 1)]
    codes = wait(start(restart, logs2), logs2)
    assert codes == [0, 0], "\n".join(tail(log) for log in logs2)
    assert wait(procs[:1], logs[:1]) == [0], tail(logs[0])
    chief_log = logs2[0].read_text()
    assert "Epoch 2/2" in chief_log and "Epoch 1/2" not in chief_log, chief_log[-3000:]

    # Every step's loss, epoch 1 from before the kill and epoch 2 resumed,
    # on both workers, against the one process.
    expected = _records(reference)
    assert sorted(expected) == [1, 2]
    step_diff = 0.0
    for task in (0, 1):
        got = _records(multi, task)
        assert sorted(got) == [1, 2]
        for epoch in (1, 2):
            assert len(got[epoch]) == len(expected[epoch]) >= 2
            step_diff = max(step_diff, max_diff(got[epoch], expected[epoch]))
    assert step_diff <= 1e-5, (got, expected)
    weights = list(np.load(f"{reference}-record-0.npz").values())
    weight_diff = max(
        max_diff(list(np.load(f"{multi}-record-{t}.npz").values()), weights) for t in (0, 1)
    )
    assert weight_diff <= 1e-5

    # The chief wrote the outputs (worker 1 nothing but its backup, now
    # gone), and the history carries the throughput of every epoch.
    assert sorted(p.name for p in multi.iterdir()) == [
        "history.json",
        "metrics.json",
        "model",
    ]
    recorded = json.loads((multi / "history.json").read_text())
    assert recorded["epochs"] == [1, 2]
    history = recorded["history"]
    for key in ("examples_per_second", "worker_examples_per_second", "tokens_per_second"):
        assert len(history[key]) == 2 and all(v > 0 for v in history[key]), key
    assert history["worker_examples_per_second"][1] == pytest.approx(
        history["examples_per_second"][1] / 2
    )
    metrics = json.loads((multi / "metrics.json").read_text())
    ref_metrics = json.loads((reference / "metrics.json").read_text())
    if command == "finetune":
        assert metrics["accuracy"] == ref_metrics["accuracy"]
        assert metrics["num_test"] == 8
    else:
        assert metrics["trained"] == pytest.approx(ref_metrics["trained"], abs=1e-6)
    print(
        f"\n{command}: 2 workers killed after epoch 1 and restarted vs one process: max "
        f"per-step loss difference {step_diff:.2e}, weights {weight_diff:.2e}; "
        f"examples/s (all workers) {history['examples_per_second'][1]:.1f}"
    )


@pytest.mark.slow  # training runs in worker processes
def test_gradient_accumulation_of_4_batches_of_8_is_one_batch_of_32():
    from zoo.train.optimization import make_adamw

    rng = np.random.default_rng(0)
    n = 96
    x = {
        "token_ids": rng.integers(5, 50, (n, 16)).astype("int32"),
        "segment_ids": np.zeros((n, 16), "int32"),
        "padding_mask": (np.arange(16)[None] < rng.integers(6, 17, (n, 1))).astype("int32"),
    }
    y = {"logits": rng.integers(0, 3, n)}

    def train(batch, accumulation):
        keras.utils.set_random_seed(1)
        encoder = zoo.BertEncoder(
            vocabulary_size=50,
            num_layers=2,
            num_heads=2,
            hidden_dim=16,
            intermediate_dim=32,
            max_sequence_length=16,
            dropout=0.0,
        )
        model = zoo.Classifier(encoder, 3, dropout=0.0)
        model.compile(
            optimizer=make_adamw(
                model, 1e-2, n // batch, gradient_accumulation=accumulation
            ),
            loss={"logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True)},
        )
        model.fit(x, y, batch_size=batch, epochs=1, shuffle=False, verbose=0)
        loss = model.evaluate(x, y, batch_size=n, verbose=0)
        return (
            model.get_weights(),
            float(np.ravel(loss)[0]),
            int(model.optimizer.iterations),
        )

    big, small = train(32, 1), train(8, 4)
    assert big[2] == small[2] == 3  # three updates each
    loss_diff = abs(big[1] - small[1])
    weight_diff = max_diff(big[0], small[0])
    print(
        f"\n3 updates: batch 32 loss {big[1]:.6f}, 4 x 8 accumulated {small[1]:.6f}: "
        f"|diff| {loss_diff:.1e}, weights {weight_diff:.1e}"
    )
    assert loss_diff <= 1e-5 and weight_diff <= 1e-5


def test_adam_updates_a_repeated_token_like_a_dense_gradient():
    """Keras 3.15's Adam squares an embedding gradient's slices one by one:
    a token seen twice moved lr x sqrt(2) on the first step. zoo's AdamW sums
    the slices first: every row that has a gradient moves lr."""
    import tensorflow as tf

    from zoo.utils.schedules import AdamW

    moved = []
    for ids in ([[1, 2]], [[1, 1]]):
        keras.utils.set_random_seed(0)
        embedding = keras.layers.Embedding(4, 2)
        embedding(np.array(ids))
        before = embedding.get_weights()[0].copy()
        optimizer = AdamW(0.01, weight_decay=0.0)
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(embedding(np.array(ids)) * tf.constant([[1.0, 2.0]]))
        optimizer.apply(
            tape.gradient(loss, embedding.trainable_variables),
            embedding.trainable_variables,
        )
        moved.append(np.abs(embedding.get_weights()[0] - before)[1])
    np.testing.assert_allclose(moved, 0.01, rtol=1e-4)


@pytest.mark.parametrize("command", ["pretrain", "finetune"])
def test_tpu_strategy_without_a_tpu_is_a_clear_error(tmp_path, assets, command, capsys):
    """As far as a machine without a TPU goes: the TPU resolver is asked for
    the named TPU and the command fails with a message, not a traceback (in
    this process: the unreachable address is refused before TensorFlow
    connects to anything)."""
    args = (
        ["--config", str(assets["model"]), "--data", str(assets["pretrain"])]
        if command == "pretrain"
        else [
            "--model",
            str(assets["model"]),
            "--data",
            str(assets["finetune"]),
            "--task",
            "classify",
        ]
    )
    out = tmp_path / "out"
    argv = [command, *args, "--sequence-length", "16", "--out", str(out)]
    assert main([*argv, "--strategy", "tpu", "--tpu", "grpc://127.0.0.1:1"]) == 2
    err = capsys.readouterr().err
    assert "--strategy tpu: no TPU found at --tpu grpc://127.0.0.1:1" in err, err[-3000:]
    assert "Traceback" not in err
    # The run got as far as args.json and trained nothing: the corrected
    # command (no --strategy tpu) starts over there without --force.
    assert sorted(p.name for p in out.iterdir()) == [".zoo-output", "args.json"]
    corrected = build_parser().parse_args(argv)
    assert training_output(out, corrected, corrected.force) == "new"
    assert not (out / "args.json").exists()
