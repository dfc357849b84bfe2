"""tf.distribute for `zoo pretrain`, `zoo finetune` and `zoo distill`: one
place builds the strategy (`--strategy none|mirrored|multiworker|tpu`),
shards the input by DATA, names each worker's backup and decides who
writes the shared outputs.

`--strategy multiworker` is `tf.distribute.MultiWorkerMirroredStrategy`
with Keras 3.15 (TensorFlow backend). Every worker runs the same command
with its own `TF_CONFIG`, e.g. on two hosts (or two processes on one):

    TF_CONFIG='{"cluster": {"worker": ["10.0.0.1:2222", "10.0.0.2:2222"]},
                "task": {"type": "worker", "index": 0}}' \\
        zoo pretrain --strategy multiworker --batch-size 32 --out /shared/run ...

`--batch-size` is the global batch: each worker reads the same dataset and
`tf.distribute` keeps its share of every global batch (auto-shard by
DATA). Worker `i` backs up to `OUT/backup/worker-i`; only the chief (worker
0, or the `chief` task) writes `OUT/model`, `history.json`, `metrics.json`.

Keras 3.15 fails twice under a multi-worker `MultiWorkerMirroredStrategy`;
`model_class` adds small overrides, only for such a strategy:

1. keras-team/keras#20329 (dict inputs). Before the first epoch
   `TensorFlowTrainer._maybe_symbolic_build`
   (keras/src/backend/tensorflow/trainer.py) pulls one distributed batch
   and averages it over all replicas, `strategy.reduce("MEAN", batch,
   axis=None)`, only to get shapes for `Trainer._symbolic_build`. Under
   multi-worker that goes to the collective all-reduce, which takes one
   tensor, not the input dict: "Attempt to convert a value ({'token_ids':
   PerReplica...}) with an unsupported type (<class 'dict'>) to a Tensor"
   (tensorflow/python/distribute/cross_device_ops.py, `reduce`). Override:
   take the first local result of that batch instead; the shapes are the
   same and no collective runs.
2. keras-team/keras#20585 (scalar logs; the same error is
   tensorflow/tensorflow#72388). `reduce_per_replica` (same file) reduces
   the step's logs with "auto" = "mean", which under multi-worker is
   `strategy.reduce("MEAN", value, axis=0)`; the logs of a train or test
   step are scalars: "Invalid reduction dimension 0 for input with 0
   dimensions". Override: `train_step` and `test_step` return each scalar
   log with shape [1]; the reduction then averages the replicas and hands
   back a scalar, as on one device.

A third difference is not a crash but changes the numbers (found by the
two-worker test, no Keras issue filed that we know of; tf.keras 2 refused
clipping under a strategy for this reason, tensorflow/tensorflow#33929):

3. `BaseOptimizer._backend_apply_gradients`
   (keras/src/optimizers/base_optimizer.py) clips (`clipnorm`, as
   `make_adamw` sets) each replica's gradient *before* the TF optimizer's
   `_backend_update_step` (keras/src/backend/tensorflow/optimizer.py)
   sums the replicas. Clipping halves of the global batch is not clipping
   the global gradient, so two workers drift from one process (1e-3 in
   the loss after one epoch of the test). Override, on the optimizer the
   model is compiled with: sum first, in `_clip_gradients`, and make the
   later sum a pass-through. (The same holds for `MirroredStrategy` over
   several devices, which this module does not touch.)

Remove them when a Keras release fixes the issues (tests/distill/
test_multiworker.py and tests/train/test_distribute.py run the two-worker
paths and check the numbers).
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import socket

import keras
import tensorflow as tf

from zoo.utils.atomic import signals_deferred

STRATEGIES = ("none", "mirrored", "multiworker", "tpu")

STRATEGY_HELP = (
    "tf.distribute: none; mirrored (the local devices); multiworker "
    "(MultiWorkerMirroredStrategy: start the same command on every worker with its "
    "TF_CONFIG and a shared --out; --batch-size is the global batch; each worker backs "
    "up to OUT/backup/worker-<index>, the chief writes the outputs); tpu (TPUStrategy "
    "on --tpu NAME, or the TPU this host finds)"
)
TPU_HELP = (
    "--strategy tpu: the TPU's name or grpc:// address (default: TPU_NAME, or the "
    "TPU attached to this host)"
)


def strategy():
    """A `MultiWorkerMirroredStrategy` for the cluster in `TF_CONFIG`."""
    options = tf.distribute.experimental.CommunicationOptions(
        implementation=tf.distribute.experimental.CommunicationImplementation.RING
    )
    return tf.distribute.MultiWorkerMirroredStrategy(communication_options=options)


def check_strategy(name, tpu=None):
    """The strategy arguments, checked before anything is written."""
    if name not in STRATEGIES:
        raise ValueError(f"--strategy {name!r}: expected one of {', '.join(STRATEGIES)}.")
    if tpu and name != "tpu":
        raise ValueError(
            f"--tpu {tpu}: only with --strategy tpu (received --strategy {name})."
        )


def _check_reachable(master, timeout=10.0):
    """A remote TPU's grpc:// address answers within `timeout` seconds
    (`experimental_connect_to_cluster` would retry an unreachable one
    without end)."""
    if not master.startswith("grpc://"):
        return
    host, _, port = master[len("grpc://") :].rpartition(":")
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except (OSError, ValueError) as e:
        raise ConnectionError(f"{master} does not answer ({e})") from None


def make_strategy(name, tpu=None):
    """The `tf.distribute.Strategy` for `--strategy NAME` (`STRATEGIES`):
    the default (one device), `MirroredStrategy` over the local devices,
    `MultiWorkerMirroredStrategy` over the cluster in `TF_CONFIG` (no
    TF_CONFIG: one local worker), or `TPUStrategy` on `tpu` (a name or
    grpc:// address; default the TPU_NAME environment variable or the TPU
    of this host). Without a TPU the last raises a ValueError that says so."""
    check_strategy(name, tpu)
    if name == "mirrored":
        return tf.distribute.MirroredStrategy()
    if name == "multiworker":
        return strategy()
    if name == "tpu":
        try:
            resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu or None)
            _check_reachable(resolver.master())
            tf.config.experimental_connect_to_cluster(resolver)
            tf.tpu.experimental.initialize_tpu_system(resolver)
        except Exception as e:  # no TPU: resolver, client or runtime errors
            where = f"--tpu {tpu}" if tpu else "this host (or TPU_NAME)"
            raise ValueError(
                f"--strategy tpu: no TPU found at {where} ({type(e).__name__}: {e}). Run "
                "on a TPU host or name one with --tpu, or choose --strategy none, "
                "mirrored or multiworker."
            ) from None
        return tf.distribute.TPUStrategy(resolver)
    return tf.distribute.get_strategy()


def applies(strategy):
    """True for a `MultiWorkerMirroredStrategy` over more than one worker
    (the case Keras special-cases, and where the overrides are needed)."""
    return (
        isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy)
        and strategy.extended._in_multi_worker_mode()
    )


def task(strategy):
    """(task_type, task_id) of this process, ("worker", 0) outside a cluster."""
    resolver = strategy.cluster_resolver if applies(strategy) else None
    if resolver is None or resolver.task_type is None:
        return "worker", 0
    return resolver.task_type, int(resolver.task_id)


def is_chief(strategy):
    """The worker that writes the shared outputs: the `chief` task, or
    worker 0 of a cluster without one."""
    if not applies(strategy):
        return True
    task_type, task_id = task(strategy)
    jobs = strategy.cluster_resolver.cluster_spec().as_dict()
    return task_type == "chief" or (
        task_type == "worker" and task_id == 0 and "chief" not in jobs
    )


def is_chief_process():
    """From TF_CONFIG alone (before a strategy exists): is this process the
    one that writes the shared outputs? True without TF_CONFIG."""

    config = json.loads(os.environ.get("TF_CONFIG") or "{}")
    task = config.get("task") or {}
    if not task:
        return True
    if "chief" in (config.get("cluster") or {}):
        return task.get("type") == "chief"
    return task.get("type") == "worker" and int(task.get("index", 0)) == 0


def num_workers(strategy):
    """Worker processes in the cluster (1 outside a multi-worker one)."""
    if not applies(strategy):
        return 1
    jobs = strategy.cluster_resolver.cluster_spec().as_dict()
    return sum(len(jobs.get(job, ())) for job in ("chief", "worker"))


def worker_index(strategy):
    """This process's place in the cluster: 0 for the chief (or worker 0 of a
    cluster without one), then 1, 2, ... (0 outside a multi-worker cluster)."""
    if not applies(strategy):
        return 0
    task_type, task_id = task(strategy)
    jobs = strategy.cluster_resolver.cluster_spec().as_dict()
    if task_type == "chief":
        return 0
    return task_id + (1 if "chief" in jobs else 0)


def worker_name(strategy):
    """`worker-0`, `worker-1`, ... (`chief-0`): one backup directory each."""
    task_type, task_id = task(strategy)
    return f"{task_type}-{task_id}"


def shard_by_data(dataset):
    """`dataset` of *global* batches, auto-sharded by DATA: every worker
    reads it all and `experimental_distribute_dataset` (called by `fit`)
    splits each global batch into per-replica batches, keeping this
    worker's. (The default AUTO tries FILE first and warns.)"""
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = (
        tf.data.experimental.AutoShardPolicy.DATA
    )
    return dataset.with_options(options)


def _first_local(strategy, value):
    if isinstance(value, tf.distribute.DistributedValues):
        return strategy.experimental_local_results(value)[0]
    return value


def _with_axis(logs):
    def one(value):
        value = tf.convert_to_tensor(value)
        return tf.reshape(value, [1]) if value.shape.rank == 0 else value

    return tf.nest.map_structure(one, logs)


def _clip_after_all_reduce(optimizer):
    """(3): the replicas' gradients are summed before they are clipped. Set
    on the instance, so the optimizer keeps its class (a model saved with
    its compile config names a class every loader knows)."""
    clip, all_reduce_sum = optimizer._clip_gradients, optimizer._all_reduce_sum_gradients

    def clip_summed(grads):
        summed = all_reduce_sum(list(zip(grads, grads)))
        return clip([g for g, _ in summed])

    optimizer._clip_gradients = clip_summed
    # summed in clip_summed
    optimizer._all_reduce_sum_gradients = lambda grads_and_vars: list(grads_and_vars)


class _MultiWorkerOverrides:
    """The overrides (see the module docstring)."""

    def compile(self, optimizer="rmsprop", **kwargs):
        super().compile(optimizer=optimizer, **kwargs)
        # (3) on the optimizer that applies the gradients (the inner one of
        # a LossScaleOptimizer).
        _clip_after_all_reduce(getattr(self.optimizer, "inner_optimizer", self.optimizer))

    def _maybe_symbolic_build(self, iterator=None, data_batch=None):
        # (1) keras-team/keras#20329: local first batch, no all-reduce.
        if iterator is not None:
            for _, _, it in iterator:
                data_batch = tf.nest.map_structure(
                    lambda v: _first_local(self.distribute_strategy, v), next(it)
                )
                break
        return super()._maybe_symbolic_build(data_batch=data_batch)

    def train_step(self, data):
        # (2) keras-team/keras#20585: logs with an axis 0.
        return _with_axis(super().train_step(data))

    def test_step(self, data):
        return _with_axis(super().test_step(data))


def model_class(cls, strategy):
    """`cls` itself, or under a multi-worker `MultiWorkerMirroredStrategy`
    a subclass of it with the overrides."""
    if not applies(strategy):
        return cls
    # zoo_saved_class: save_model_dir writes the model as `cls`.
    return type(
        f"MultiWorker{cls.__name__}",
        (_MultiWorkerOverrides, cls),
        {"zoo_saved_class": getattr(cls, "zoo_saved_class", cls)},
    )


def _gather(strategy, value):
    """`value` (an int) of every replica, in replica order (a collective)."""
    per_replica = strategy.run(lambda: tf.constant([value], tf.int64))
    return [int(v) for v in strategy.gather(per_replica, axis=0).numpy()]


def barrier(strategy):
    """Returns once every worker has called it."""
    _gather(strategy, 0)


class EpochSync(keras.callbacks.Callback):
    """Keeps the per-worker `BackupAndRestore` directories in step; put it
    after `BackupAndRestore` and the chief's writes.

    At the end of every epoch all workers meet (a collective) once their
    backups are written, so a worker killed after that point leaves every
    backup at the same epoch. At the start, the workers compare the epoch
    they restored and stop with an error instead of training out of step
    (a worker killed while writing its backup)."""

    def __init__(self, strategy):
        super().__init__()
        self.strategy = strategy

    def on_train_begin(self, logs=None):
        epochs = _gather(self.strategy, self.model._initial_epoch or 0)
        if len(set(epochs)) > 1:
            raise ValueError(
                f"--strategy multiworker: the workers restored different epochs {epochs} "
                "from OUT/backup/*; delete OUT/backup to start over."
            )

    def on_epoch_end(self, epoch, logs=None):
        barrier(self.strategy)


def backup_dir(out, strategy):
    """Where this process's `BackupAndRestore` state goes: OUT/backup, or
    OUT/backup/worker-<i> for each worker of a multi-worker cluster."""
    if applies(strategy):
        return out / "backup" / worker_name(strategy)
    return out / "backup"


def remove_backup_root(out, strategy):
    """After a finished multi-worker run: OUT/backup once every worker's
    `BackupAndRestore` has removed its own directory (the last one to
    finish removes it)."""
    if applies(strategy):
        try:
            (out / "backup").rmdir()
        except OSError:
            pass


@dataclasses.dataclass
class TrainingRun:
    """A training run as it starts (pretrain, finetune, distill): its output
    directory, strategy, whether it is one worker of several (`multi`) and
    whether it writes the shared outputs (`chief`), and the epoch counter
    its datasets and `EpochCounter` share."""

    out: pathlib.Path
    strategy: tf.distribute.Strategy
    multi: bool
    chief: bool
    epoch_variable: tf.Variable

    def recovery_callbacks(self, callbacks=()):
        """What every run's callback list ends with: BackupAndRestore into
        this worker's backup directory, TerminateOnNaN, the workers' epoch
        sync, then the caller's `callbacks` (so they see each epoch after
        its state is saved)."""
        return [
            _Backup(
                str(backup_dir(self.out, self.strategy)),
                save_freq="epoch",
                delete_checkpoint=True,
            ),
            keras.callbacks.TerminateOnNaN(),
            *([EpochSync(self.strategy)] if self.multi else []),
            *callbacks,
        ]


class _Backup(keras.callbacks.BackupAndRestore):
    """BackupAndRestore whose write is not cut by Ctrl-C or SIGTERM: Keras
    overwrites the backup's weights in place, and an interrupt raised half
    way through would leave a file the re-run cannot load."""

    def _save_model(self):
        with signals_deferred():
            super()._save_model()


def start_training_run(out_dir, config):
    """Create `out_dir`, seed Keras's generators with `config.seed` and make
    TensorFlow's ops deterministic (same seed, same data -> same weights,
    process to process and worker to worker), then build `config.strategy`
    (on `config.tpu`)."""
    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    keras.utils.set_random_seed(config.seed)
    tf.config.experimental.enable_op_determinism()
    strategy = make_strategy(config.strategy, config.tpu)
    return TrainingRun(
        out,
        strategy,
        multi=applies(strategy),
        chief=is_chief(strategy),
        epoch_variable=tf.Variable(0, dtype=tf.int64, trainable=False),
    )
