"""`zoo distill`: teacher model directory -> student model directory.

    zoo distill --teacher runs/bbc/model --data bbc --student-layers 3 --out runs/distil3
    zoo distill --teacher runs/mlm/model --data austen --mode general \\
        --student-layers 3 --out runs/general3

Writes, under OUT/:

    model/          the student as a zoo model directory (`zoo evaluate`,
                    `zoo export` read it); in task mode the best epoch by
                    validation loss, written atomically
    backup/         BackupAndRestore state: re-run the command to resume
    args.json       arguments, versions, git revision
    history.json    per-epoch loss terms
    metrics.json    task mode: test metrics of teacher and student, sizes
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import pathlib
import time

MODES = ("task", "general")
STRATEGIES = ("none", "mirrored", "multiworker", "tpu")


@dataclasses.dataclass
class DistillConfig:
    student_layers: int
    layer_map: tuple | None = None
    style: str = "distilbert"
    mode: str = "task"
    epochs: int = 3
    batch_size: int = 16
    sequence_length: int = 128
    max_predictions: int = 20
    learning_rate: float = 5e-5
    warmup_fraction: float = 0.1
    weight_decay: float = 0.01
    temperature: float = 2.0
    soft_weight: float = 5.0
    hard_weight: float = 2.0
    cosine_weight: float = 1.0
    hidden_weight: float = 0.0
    attention_weight: float = 0.0
    strategy: str = "none"
    mixed_precision: str | None = None
    steps_per_epoch: int | None = None
    seed: int = 0
    cache_teacher: bool = False  # run the teacher once per dataset, not per epoch
    run_eagerly: bool = False
    evaluate: bool = True  # test metrics of teacher and student (task mode)


def _strategy(name):
    import tensorflow as tf

    if name == "mirrored":
        return tf.distribute.MirroredStrategy()
    if name == "multiworker":
        # The cluster comes from TF_CONFIG (no TF_CONFIG: one local worker).
        from zoo.distill import multiworker

        return multiworker.strategy()
    if name == "tpu":
        try:
            resolver = tf.distribute.cluster_resolver.TPUClusterResolver()
            tf.config.experimental_connect_to_cluster(resolver)
            tf.tpu.experimental.initialize_tpu_system(resolver)
        except Exception as e:  # no TPU: resolver, client or runtime errors
            raise ValueError(
                f"--strategy tpu: no TPU found ({type(e).__name__}: {e}). Run on a TPU "
                "host (or set TPU_NAME), or choose --strategy none, mirrored or "
                "multiworker.") from None
        return tf.distribute.TPUStrategy(resolver)
    return tf.distribute.get_strategy()


def _general_teacher(model):
    """An MLM teacher: a `MaskedLM`, or the MLM half of a `Pretrainer`."""
    import zoo

    if isinstance(model, zoo.MaskedLM):
        return model
    head = getattr(model, "mlm_head", None)
    if head is None:
        raise ValueError(
            f"--mode general needs a teacher with a masked-LM head (MaskedLM or "
            f"Pretrainer, e.g. from `zoo pretrain`); this one is {type(model).__name__}."
        )
    teacher = zoo.MaskedLM(model.encoder)
    for s, t in zip(head.weights, teacher.mlm_head.weights):
        t.assign(s.value)
    return teacher


class BestStudentDirectory:
    """Keras callback factory: atomically save the distiller's student as a
    zoo model directory whenever validation loss improves (or every epoch
    without validation data)."""

    def __new__(cls, directory, tokenizer, extra):
        import keras

        from zoo.checkpoints import save_model_dir

        class _Callback(keras.callbacks.Callback):
            best = float("inf")

            def on_epoch_end(self, epoch, logs=None):
                value = (logs or {}).get("val_loss")
                if value is not None and not value < self.best:
                    return
                if value is not None:
                    self.best = float(value)
                save_model_dir(self.model.student, directory, tokenizer,
                               extra=dict(extra, best={"monitor": "val_loss",
                                                       "value": value, "epoch": epoch + 1}))

        return _Callback()


def distill(teacher_dir, data, out_dir, config, *, callbacks=(), verbose=1):
    """Distil the zoo model at `teacher_dir` into a `config.student_layers`
    student on `data`; returns a summary dict (also OUT/metrics.json).

    `callbacks` are appended to the built-in ones (epoch counter,
    BackupAndRestore, best-student directory, TerminateOnNaN).

    `config.mixed_precision` applies to this run only (the student trains
    under it; the teacher's encoder keeps its saved float32): Keras's global dtype
    policy is restored on return."""
    from zoo.models.task import dtype_policy_scope

    with dtype_policy_scope(config.mixed_precision):
        return _distill(teacher_dir, data, out_dir, config, callbacks, verbose)


def _distill(teacher_dir, data, out_dir, config, callbacks, verbose):
    import keras
    import numpy as np
    import tensorflow as tf

    from zoo.checkpoints import load_model_dir, save_model_dir
    from zoo.distill import Distiller, make_student, multiworker
    from zoo.train.optimization import make_adamw
    from zoo.utils.atomic import atomic_file

    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    keras.utils.set_random_seed(config.seed)
    # Same seed, same data -> same student weights, process to process.
    tf.config.experimental.enable_op_determinism()

    strategy = _strategy(config.strategy)
    # Several workers (--strategy multiworker): each backs up to its own
    # directory and only the chief writes OUT/model, history and metrics.
    multi = multiworker.applies(strategy)
    chief = multiworker.is_chief(strategy)
    epoch_variable = tf.Variable(0, dtype=tf.int64, trainable=False)
    with strategy.scope():
        teacher, tokenizer, meta = load_model_dir(teacher_dir)
        extra = {"distilled_from": str(teacher_dir), "data": str(data),
                 "sequence_length": config.sequence_length,
                 "distill_config": dataclasses.asdict(config)}
        val, task, test_examples, labels = None, None, None, None
        if config.mode == "task":
            from zoo.train import data as task_data
            from zoo.train.finetune import FinetuneConfig, build_datasets, task_of

            task = task_of(teacher)
            loaded = task_data.load_task_data(data, task)
            labels = getattr(teacher, "labels", None) or loaded.labels
            loaded.labels = labels
            ft = FinetuneConfig(batch_size=config.batch_size,
                                sequence_length=config.sequence_length, seed=config.seed)
            train, val = build_datasets(loaded, tokenizer, ft, epoch_variable)
            test_examples = loaded.splits.get("test") or loaded.splits.get("validation")
            extra.update(task=task, finetune_config=dataclasses.asdict(ft))
        else:
            from zoo.text.pretraining import pretraining_dataset
            from zoo.train.pretrain import corpus_documents

            teacher = _general_teacher(teacher)
            train = pretraining_dataset(
                corpus_documents(data), tokenizer, sequence_length=config.sequence_length,
                max_predictions=config.max_predictions, batch_size=config.batch_size,
                nsp=False, seed=config.seed)
        if multi:
            train = multiworker.shard_by_data(train)
            val = None if val is None else multiworker.shard_by_data(val)
        student = make_student(teacher, config.student_layers, layer_map=config.layer_map,
                               style=config.style)
        steps = int(train.cardinality())
        if steps < 1:
            steps = sum(1 for _ in train)
        if config.steps_per_epoch:
            steps = min(steps, config.steps_per_epoch)
        distiller = multiworker.model_class(Distiller, strategy)(
            teacher, student, temperature=config.temperature,
            soft_weight=config.soft_weight, hard_weight=config.hard_weight,
            cosine_weight=config.cosine_weight, hidden_weight=config.hidden_weight,
            attention_weight=config.attention_weight, layer_map=config.layer_map)
        distiller.compile(
            optimizer=make_adamw(student, config.learning_rate, steps * config.epochs,
                                 config.warmup_fraction, config.weight_decay),
            run_eagerly=config.run_eagerly)
        # Optimizer variables exist before fit so BackupAndRestore can
        # restore into them on a resumed run.
        distiller.optimizer.build(distiller._student_variables())
    if config.cache_teacher:
        if multi:
            raise ValueError("--cache-teacher runs on one process; drop it with "
                             "--strategy multiworker (each worker would cache its own copy).")
        train = distiller.cache_teacher(train, shuffle_seed=config.seed)
    elif not config.steps_per_epoch:
        # A known length: progress totals, and no extra empty step per epoch
        # (which Keras counts into the epoch's mean loss).
        train = train.apply(tf.data.experimental.assert_cardinality(steps))

    from zoo.train.finetune import EpochCounter

    backup = out / "backup" / multiworker.worker_name(strategy) if multi else out / "backup"
    callbacks = [
        EpochCounter(epoch_variable),
        keras.callbacks.BackupAndRestore(str(backup), save_freq="epoch",
                                         delete_checkpoint=True),
        *([BestStudentDirectory(out / "model", tokenizer, extra)] if chief else []),
        keras.callbacks.TerminateOnNaN(),
        *([multiworker.EpochSync(strategy)] if multi else []),
        *callbacks,
    ]
    started = time.time()
    history = distiller.fit(train.repeat() if config.steps_per_epoch else train,
                            validation_data=val, epochs=config.epochs,
                            steps_per_epoch=steps if config.steps_per_epoch else None,
                            callbacks=callbacks, shuffle=False, verbose=verbose)
    seconds = time.time() - started
    if multi:
        try:
            (out / "backup").rmdir()  # the last worker to finish removes it
        except OSError:
            pass
    if not chief:
        # Wait for the chief's writes: a worker leaving before the chief
        # (which hosts the cluster's coordination service) is fine, the
        # chief leaving first makes the others wait out a heartbeat timeout.
        multiworker.barrier(strategy)
        return {"mode": config.mode, "worker": multiworker.worker_name(strategy),
                "train_seconds": round(seconds, 1)}
    if not (out / "model" / "zoo_model.json").is_file():
        save_model_dir(student, out / "model", tokenizer, extra=extra)
    with atomic_file(out / "history.json", "w") as f:
        json.dump({"history": {k: [float(v) for v in vs] for k, vs in history.history.items()},
                   "seconds": seconds}, f, indent=2)

    summary = {"mode": config.mode, "student_layers": config.student_layers,
               "teacher_parameters": int(teacher.count_params()),
               "student_parameters": int(student.count_params()),
               "train_seconds": round(seconds, 1)}
    if config.evaluate and task is not None and test_examples:
        from zoo.train.finetune import FinetuneConfig, evaluate_model

        best, best_tokenizer, _ = load_model_dir(out / "model")
        if multi:
            # The chief alone: a teacher outside the strategy (its predict
            # would wait for the other workers).
            teacher = load_model_dir(teacher_dir)[0]
        ft = FinetuneConfig(sequence_length=config.sequence_length)
        summary["teacher"] = evaluate_model(teacher, tokenizer, task, test_examples, labels, ft)
        summary["student"] = evaluate_model(best, best_tokenizer, task, test_examples, labels,
                                            ft)
    with atomic_file(out / "metrics.json", "w") as f:
        json.dump(summary, f, indent=2, default=lambda v: float(np.asarray(v)))
    if multi:
        multiworker.barrier(strategy)
    return summary


def _layer_map(text):
    try:
        return tuple(int(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--layer-map {text!r}: expected comma-separated teacher layer indices, e.g. 0,2,4"
        ) from None


def cmd_distill(args):
    from zoo.cli import CliError, report_finished, training_output, write_run_info
    from zoo.distill import multiworker

    out = pathlib.Path(args.out)
    # Under --strategy multiworker every worker runs this command on a shared
    # --out: only the chief writes args.json and removes old outputs.
    chief = args.strategy != "multiworker" or multiworker.is_chief_process()
    if args.student_layers < 1:
        raise CliError(f"--student-layers must be >= 1; received {args.student_layers}.")
    config = DistillConfig(
        student_layers=args.student_layers, layer_map=args.layer_map, style=args.style,
        mode=args.mode, epochs=args.epochs, batch_size=args.batch_size,
        sequence_length=args.sequence_length, max_predictions=args.max_predictions,
        learning_rate=args.learning_rate,
        temperature=args.temperature, soft_weight=args.soft_weight,
        hard_weight=args.hard_weight, cosine_weight=args.cosine_weight,
        hidden_weight=args.hidden_weight, attention_weight=args.attention_weight,
        strategy=args.strategy, mixed_precision=args.mixed_precision,
        steps_per_epoch=args.steps_per_epoch, seed=args.seed, run_eagerly=args.run_eagerly,
        cache_teacher=args.cache_teacher,
        evaluate=not args.no_evaluate)
    # Every worker decides the same way (so none waits for a chief that has
    # refused or finished); only the chief removes anything.
    if training_output(out, args, args.force, remove=chief) == "finished":
        return report_finished(out)
    out.mkdir(parents=True, exist_ok=True)
    if chief:
        write_run_info(out, args)
    try:
        summary = distill(args.teacher, args.data, out, config, verbose=args.verbose)
    except (ValueError, TypeError, FileNotFoundError) as e:
        raise CliError(str(e)) from e
    print(json.dumps(summary, indent=2, default=str))
    print(f"student: {out / 'model'}")
    return 0


def register(subparsers):
    """Add the `distill` sub-command to the `zoo` CLI."""
    from zoo.cli import FORCE_HELP, _examples

    p = subparsers.add_parser(
        "distill",
        help="distil a teacher model directory into a shallower student",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Build a student from the teacher's embeddings and an evenly spread "
        "subset of its layers (DistilBERT's 0,2,4,7,9,11 for 12 -> 6; 0,2,4 for 6 -> 3), "
        "then train it with soft targets at temperature T (times T²), the hard loss and "
        "a hidden-state cosine term (DistilBERT's weights 5/2/1 by default). "
        "--mode task reads --data like `zoo finetune` for the teacher's task; --mode "
        "general distils a masked-LM teacher on raw text (files, or austen / wordnet). "
        "Writes OUT/model (a zoo model directory), OUT/metrics.json, OUT/history.json, "
        "OUT/args.json. A killed run resumes at its last finished epoch when re-run with "
        "the same arguments (a finished one prints its metrics; other arguments are "
        "refused).",
        epilog=_examples(
            """
            zoo distill --teacher runs/bbc/model --data bbc --student-layers 3 \\
                --layer-map 0,2,4 --out runs/distil3
            zoo distill --teacher runs/bbc/model --data bbc --student-layers 2 \\
                --strategy mirrored --mixed-precision mixed_bfloat16 --out runs/distil2
            zoo distill --teacher runs/mlm/model --data austen --mode general \\
                --student-layers 3 --out runs/general3
            """
        ),
    )
    p.add_argument("--teacher", type=pathlib.Path, required=True,
                   help="teacher zoo model directory (zoo finetune / zoo pretrain output)")
    p.add_argument("--data", required=True, help="task data (as zoo finetune) or raw text")
    p.add_argument("--student-layers", type=int, required=True)
    p.add_argument("--layer-map", type=_layer_map, default=None,
                   help="teacher layer per student layer, e.g. 0,2,4 (default: evenly spread)")
    p.add_argument("--style", choices=("distilbert", "bert"), default="distilbert",
                   help="distilbert drops segment embeddings and the pooler")
    p.add_argument("--mode", choices=MODES, default="task")
    p.add_argument("--strategy", choices=STRATEGIES, default="none",
                   help="tf.distribute: none; mirrored (the local devices); multiworker "
                   "(MultiWorkerMirroredStrategy: start the same command on every worker "
                   "with its TF_CONFIG and a shared --out; --batch-size is the global "
                   "batch; each worker backs up to OUT/backup/worker-<index>, the chief "
                   "writes the outputs); tpu (TPUStrategy, when a TPU is found)")
    p.add_argument("--out", type=pathlib.Path, required=True)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=16, help="global batch")
    p.add_argument("--sequence-length", type=int, default=128)
    p.add_argument("--max-predictions", type=int, default=20,
                   help="masked positions per sequence (--mode general)")
    p.add_argument("--learning-rate", type=float, default=5e-5)
    p.add_argument("--temperature", type=float, default=2.0)
    p.add_argument("--soft-weight", type=float, default=5.0)
    p.add_argument("--hard-weight", type=float, default=2.0)
    p.add_argument("--cosine-weight", type=float, default=1.0)
    p.add_argument("--hidden-weight", type=float, default=0.0,
                   help="hidden-state MSE through a learned projection (TinyBERT)")
    p.add_argument("--attention-weight", type=float, default=0.0,
                   help="attention-distribution KL over the layer map")
    p.add_argument("--mixed-precision", choices=("mixed_float16", "mixed_bfloat16"),
                   help="compute policy of the student for this run (the teacher's encoder "
                        "stays float32); OUT/model is saved computing in float32")
    p.add_argument("--steps-per-epoch", type=int, default=None)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--cache-teacher", action="store_true",
                   help="run the teacher once over the training data and keep the outputs "
                   "the losses read (memory: N x L x H floats for the cosine term), instead "
                   "of once per epoch")
    p.add_argument("--run-eagerly", action="store_true",
                   help="no tf.function (debugging; faster for tiny models)")
    p.add_argument("--no-evaluate", action="store_true",
                   help="skip the test-split metrics of teacher and student")
    p.add_argument("--verbose", type=int, default=2, choices=(0, 1, 2))
    p.add_argument("--force", action="store_true", help=FORCE_HELP)
    p.set_defaults(func=cmd_distill)
