"""`zoo distill --strategy multiworker`: two worker processes on 127.0.0.1
(TF_CONFIG, CPU) against one process with the same global batch, a
SIGKILLed cluster resuming from the per-worker backups, and `--strategy
tpu` without a TPU.

Sizes are chosen so that every global batch splits evenly over the two
workers (40 rows: 28 train = 2 x 14, 4 validation), as the comparison with
one process needs. Tiny models, run eagerly: tracing costs more than the
steps on a loaded 2-core machine. The one-process reference runs once per
module, beside the first test's workers."""

import csv
import json
import signal
import sys
import time

import keras
import numpy as np
import pytest

import zoo
from tests.cluster import SETTLE, env, max_diff, start, tail, wait
from zoo.checkpoints import load_model_dir, save_model_dir
from zoo.cli import main
from zoo.text.tokenizer import WordPieceTokenizer
from zoo.utils.local_cluster import free_ports, tf_configs

WORDS = (
    "goal match team win cup rain storm cloud wind sun vote law party "
    "minister tax the a of is"
).split()
TOPICS = {"sport": WORDS[:5], "weather": WORDS[5:10], "politics": WORDS[10:15]}
BATCH = 14  # global: 7 per worker
EPOCHS = 2
LEARNING_RATE = 1e-2  # validation loss falls in epoch 2: OUT/model is the final student
TIMEOUT = 300  # seconds, per group of processes (a hang guard; 2 workers take ~30 s)

# One worker (TF_CONFIG from the environment) or one process: distill() with
# the CLI's settings below; SIGKILLs itself at the end of epoch KILL_AFTER
# (0: never); saves the final student weights to WEIGHTS-<task index>.npz.
WORKER = f"""
import json, os, signal, sys, time

import keras
import numpy as np

from zoo.distill.pipeline import DistillConfig, distill

teacher, data, out, strategy, kill_after, weights = sys.argv[1:7]
task = json.loads(os.environ.get("TF_CONFIG", "{{}}")).get("task", {{}}).get("index", 0)


class KillAfterEpoch(keras.callbacks.Callback):
    def on_epoch_end(self, epoch, logs=None):
        if epoch + 1 == int(kill_after):
            print(f"killing myself after epoch {{epoch + 1}}", flush=True)
            time.sleep({SETTLE})  # tests/cluster.SETTLE: the peer's barrier completes
            os.kill(os.getpid(), signal.SIGKILL)


class SaveFinalWeights(keras.callbacks.Callback):
    def on_train_end(self, logs=None):
        np.savez(f"{{weights}}-{{task}}.npz", *self.model.student.get_weights())


config = DistillConfig(student_layers=1, layer_map=(1,), epochs={EPOCHS}, batch_size={BATCH},
                       sequence_length=12, learning_rate={LEARNING_RATE}, seed=3,
                       strategy=strategy,
                       run_eagerly=True, evaluate=False)
print(json.dumps(distill(teacher, data, out, config, verbose=2,
                         callbacks=[KillAfterEpoch(), SaveFinalWeights()])))
"""


def _cli(teacher, data, out, strategy):
    """The same run as WORKER, through `zoo distill`."""
    return [
        sys.executable,
        "-m",
        "zoo",
        "distill",
        "--teacher",
        str(teacher),
        "--data",
        str(data),
        "--student-layers",
        "1",
        "--layer-map",
        "1",
        "--out",
        str(out),
        "--epochs",
        str(EPOCHS),
        "--batch-size",
        str(BATCH),
        "--sequence-length",
        "12",
        "--learning-rate",
        str(LEARNING_RATE),
        "--seed",
        "3",
        "--strategy",
        strategy,
        "--run-eagerly",
        "--verbose",
        "2",
        "--force",
    ]


@pytest.fixture(scope="module")
def teacher_and_data(tmp_path_factory):
    root = tmp_path_factory.mktemp("multiworker")
    tokenizer = WordPieceTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS])
    keras.utils.set_random_seed(7)  # module scope: the autouse seed has not run yet
    encoder = zoo.BertEncoder(
        vocabulary_size=len(tokenizer.vocabulary),
        num_layers=2,
        num_heads=2,
        hidden_dim=8,
        intermediate_dim=16,
        max_sequence_length=16,
        dropout=0.0,
    )
    # No dropout: each worker draws its own masks, so losses would differ.
    teacher = zoo.Classifier(encoder, 3, labels=sorted(TOPICS), dropout=0.0)
    teacher_dir = save_model_dir(teacher, root / "teacher", tokenizer)
    rng = np.random.default_rng(0)
    data = root / "news.csv"
    with open(data, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["text", "label"])
        for i in range(40):  # split rule: 8 test, 4 validation, 28 train
            label = sorted(TOPICS)[i % 3]
            words = list(rng.choice(TOPICS[label], 4)) + list(rng.choice(WORDS[15:], 2))
            w.writerow([" ".join(words) + f" {i}", label])
    script = root / "worker.py"
    script.write_text(WORKER)
    return teacher_dir, data, script


def _worker(script, teacher, data, out, strategy, kill_after):
    return [
        sys.executable,
        str(script),
        str(teacher),
        str(data),
        str(out),
        strategy,
        str(kill_after),
        f"{out}-weights",
    ]


class _Reference:
    """The uninterrupted one-process run (OUT/history.json, final weights),
    started on first use and shared by the tests."""

    def __init__(self, teacher_and_data, root):
        self.args, self.out, self.log = (
            teacher_and_data,
            root / "reference",
            root / "ref.log",
        )
        self.proc = None

    def start(self):
        if self.proc is None:
            teacher, data, script = self.args
            self.proc = start(
                [(_worker(script, teacher, data, self.out, "none", 0), env())], [self.log]
            )[0]
        return [self.proc], [self.log]

    def result(self):
        procs, logs = self.start()
        assert wait(procs, logs) == [0], tail(self.log)
        history = json.loads((self.out / "history.json").read_text())["history"]
        return history, list(np.load(f"{self.out}-weights-0.npz").values())


@pytest.fixture(scope="module")
def reference(teacher_and_data, tmp_path_factory):
    ref = _Reference(teacher_and_data, tmp_path_factory.mktemp("reference"))
    yield ref
    if ref.proc is not None and ref.proc.poll() is None:
        ref.proc.kill()


@pytest.mark.slow  # worker processes, minutes on 2 cores
def test_two_workers_match_one_process(tmp_path, teacher_and_data, reference):
    teacher, data, _ = teacher_and_data
    out = tmp_path / "multi"
    started = time.time()
    ref_procs, ref_logs = reference.start()
    jobs = [
        (_cli(teacher, data, out, "multiworker"), env(c)) for c in tf_configs(free_ports(2))
    ]
    logs = [tmp_path / f"worker{i}.log" for i in (0, 1)]
    codes = wait(start(jobs, logs) + ref_procs, logs + ref_logs)
    assert codes[:2] == [0, 0], "\n".join(tail(log) for log in logs)
    ref_history, _ = reference.result()

    history = json.loads((out / "history.json").read_text())["history"]
    assert (
        set(history) == set(ref_history) >= {"loss", "soft_loss", "hard_loss", "val_loss"}
    )
    assert len(history["loss"]) == EPOCHS
    loss_diff = max(max_diff(history[k], ref_history[k]) for k in ref_history)
    assert loss_diff <= 1e-5, (history, ref_history)
    # OUT/model: the best epoch by validation loss, the last one in both runs.
    (student, _, meta), (ref_student, _, ref_meta) = (
        load_model_dir(out / "model"),
        load_model_dir(reference.out / "model"),
    )
    assert meta["best"]["epoch"] == ref_meta["best"]["epoch"] == EPOCHS
    weight_diff = max_diff(student.get_weights(), ref_student.get_weights())
    assert weight_diff <= 1e-5
    # Only the chief wrote (worker 1 reports itself); the backups are gone.
    assert sorted(p.name for p in out.iterdir()) == [
        ".zoo-output",  # the chief's run marker (docs/outputs.md)
        "args.json",
        "history.json",
        "metrics.json",
        "model",
    ]
    assert '"worker": "worker-1"' in logs[1].read_text()
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["student"]["num_examples"] == 8  # the chief evaluated alone
    print(
        f"\nmax per-epoch loss difference {loss_diff:.2e}, max student weight "
        f"difference {weight_diff:.2e}, {time.time() - started:.0f} s"
    )


@pytest.mark.slow  # worker processes, minutes on 2 cores
def test_killed_workers_resume_at_next_epoch(tmp_path, teacher_and_data, reference):
    teacher, data, script = teacher_and_data
    out = tmp_path / "multi"
    started = time.time()
    reference.start()
    workers = [
        (_worker(script, teacher, data, out, "multiworker", 1), env(c))
        for c in tf_configs(free_ports(2))
    ]
    logs = [tmp_path / f"worker{i}.log" for i in (0, 1)]
    codes = wait(start(workers, logs), logs, kill_all_when_one_dies=True)
    assert codes == [-signal.SIGKILL] * 2, "\n".join(tail(log) for log in logs)
    assert "killing myself after epoch 1" in logs[0].read_text() + logs[1].read_text()
    for i in (0, 1):
        meta = out / "backup" / f"worker-{i}" / "training_metadata.json"
        assert json.loads(meta.read_text())["epoch"] == 1
    # history.json is written after every epoch, so the kill leaves epoch 1 in it.
    assert json.loads((out / "history.json").read_text())["epochs"] == [1]

    # The cluster manager starts both again with the same commands.
    logs = [tmp_path / f"worker{i}.restart.log" for i in (0, 1)]
    codes = wait(start(workers, logs), logs)
    assert codes == [0, 0], "\n".join(tail(log) for log in logs)
    chief_log = logs[0].read_text()
    assert "Epoch 2/2" in chief_log and "Epoch 1/2" not in chief_log, chief_log[-3000:]
    recorded = json.loads((out / "history.json").read_text())
    assert recorded["epochs"] == [1, 2]  # epoch 1 from before the kill, epoch 2 resumed
    history = recorded["history"]
    ref_history, ref_weights = reference.result()
    loss_diff = max(max_diff(history[k], ref_history[k]) for k in ref_history)
    assert loss_diff <= 1e-5, (history, ref_history)
    weight_diff = max(
        max_diff(list(np.load(f"{out}-weights-{i}.npz").values()), ref_weights)
        for i in (0, 1)
    )
    assert weight_diff <= 1e-5
    assert not (out / "backup").exists()
    print(
        f"\nresumed at epoch 2 of 2; max loss difference {loss_diff:.2e}, max student "
        f"weight difference {weight_diff:.2e}, {time.time() - started:.0f} s"
    )


def test_tpu_strategy_without_tpu_is_a_clear_error(tmp_path, teacher_and_data, capsys):
    """No --tpu and no TPU_NAME: the resolver finds no TPU on this host and
    `zoo distill` says so (in this process: nothing is connected to)."""
    teacher, data, _ = teacher_and_data  # valid inputs: the strategy is what fails
    argv = ["distill", "--teacher", teacher, "--data", data, "--student-layers", "2"]
    argv += ["--sequence-length", "16", "--out", tmp_path / "out", "--strategy", "tpu"]
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("TPU_NAME", raising=False)
        assert main([str(a) for a in argv]) == 2
    err = capsys.readouterr().err
    assert "--strategy tpu: no TPU found" in err, err[-3000:]
    assert "Traceback" not in err


def test_single_process_is_left_alone():
    import tensorflow as tf

    from zoo.distill import Distiller
    from zoo.train import distribute as multiworker

    strategy = tf.distribute.get_strategy()
    assert not multiworker.applies(strategy)
    assert multiworker.model_class(Distiller, strategy) is Distiller
    assert (
        multiworker.is_chief(strategy) and multiworker.worker_name(strategy) == "worker-0"
    )
