"""The distillation pipeline behind `zoo distill`: a teacher model directory
and data in, a student model directory out.

    summary = distill("runs/bbc/model", "bbc", "runs/distil3", DistillConfig(student_layers=3))

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

import dataclasses
import json
import time

import keras
import numpy as np
import tensorflow as tf

from zoo.checkpoints import hub, load_model_dir, save_model_dir
from zoo.checkpoints.model_dir import read_model_dir_meta
from zoo.configs import EncoderConfig
from zoo.distill.distiller import (
    LOSS_NUMBERS,
    Distiller,
    check_loss_numbers,
    check_some_weight,
)
from zoo.distill.student_init import make_student
from zoo.distill.transfer import check_unlabelled_use, read_transfer_set
from zoo.models import DEFAULT_SEQUENCE_LENGTH, ID_LEVEL_CLASS, MaskedLM
from zoo.models.encoder_task import dtype_policy_scope
from zoo.models.task import task_of
from zoo.text.pretraining import MIN_SEQUENCE_LENGTH as PRETRAINING_MIN_LENGTH
from zoo.text.pretraining import pretraining_dataset
from zoo.train import data as task_data
from zoo.train import distribute as multiworker
from zoo.train.callbacks import BestModelDirectory, EpochCounter, HistoryFile
from zoo.train.finetune import (
    FinetuneConfig,
    TrainingDivergedError,
    build_datasets,
    evaluate_model,
)
from zoo.train.optimization import (
    MIN_SEQUENCE_LENGTH,
    check_training_numbers,
    chosen_schedule,
    make_adamw,
)
from zoo.train.pretrain import corpus_documents
from zoo.utils.atomic import atomic_file

MODES = ("task", "general")
STRATEGIES = multiworker.STRATEGIES

# zoo distill's learning rate, above zoo finetune's 5e-5: chosen on the
# development set of bench/small_data.py --dev (1,000 WordNet glosses apart
# from train, validation and test; the test split is not used to choose),
# a 3-layer student of a MiniLM teacher fine-tuned on 400 texts. Of the
# teacher's development accuracy the student kept 97.3% at 5e-5 (10
# epochs), 96.3% at 1e-4 (5) and 98.4% at 2e-4 (6), the demo's rate: 23
# texts right at 2e-4 only against 13 at 5e-5 only (McNemar p = 0.13, a
# lean, not a proof), in 6 epochs instead of 10. On the test split,
# scored once afterwards, 2e-4 gave 97.1% and 5e-5 had given 97.5%: no
# flag tried reaches 99% on this set. More texts do: --unlabelled with 2,000
# further glosses kept 99.8% (development) and 99.1% (test).
DISTILL_LEARNING_RATE = 2e-4
# Early stopping watches the student's cross-entropy on the validation
# labels (`Distiller.test_step`). Patience 2 stays: at 2e-4, patience 3 and
# 4 ran 1 and 2 more epochs and kept the same best epoch (the 4th). The
# temperature stays DistilBERT's 2: at 4 the student kept 98.7% (9
# development texts right at 4 only against 6 at 2 only, p = 0.6) at a
# higher validation loss (0.314 against 0.297). TinyBERT's hidden-state
# loss (0.913), fixed 4-8 epochs (0.887-0.906), masked views of the batches
# (0.892-0.894) and layer maps with the top layer (0.883-0.889) did not beat
# the defaults' 0.911 either (docs/benchmarks.md, the development table).
DISTILL_PATIENCE = 2
# --mode general: masked positions per sequence, at most (BERT: 20 of 128).
GENERAL_MAX_PREDICTIONS = 20
# What early stopping and the best student watch on the validation texts
# (--select-by): "labels", the student's cross-entropy on their labels, or
# "teacher", its soft-target KL to the teacher there (`Distiller.test_step`).
# Labels stay the default: on the development set above, at 2e-4, watching
# the KL kept 0.890 of 1,000 (96.1% of the teacher) at patience 2 and at
# patience 4 (best epoch 3 of 5 and of 7), against 0.911 (98.4%) for labels.
SELECT_BY = {"labels": "val_loss", "teacher": "val_teacher_kl"}
DISTILL_SELECT_BY = "labels"


@dataclasses.dataclass
class DistillConfig:
    student_layers: int
    layer_map: tuple | None = None
    style: str = "distilbert"
    student_intermediate_dim: int | None = None  # default: the teacher's FFN width
    student_hidden_dim: int | None = None  # default: the teacher's hidden width
    mode: str = "task"
    epochs: int | None = None  # None: chosen from the data (optimization.training_epochs)
    patience: int = DISTILL_PATIENCE  # task mode: epochs without a better validation loss
    select_by: str = DISTILL_SELECT_BY  # task mode: what "better" means (SELECT_BY)
    batch_size: int = 16
    sequence_length: int = DEFAULT_SEQUENCE_LENGTH
    max_predictions: int = GENERAL_MAX_PREDICTIONS  # general mode: masked positions
    learning_rate: float = DISTILL_LEARNING_RATE
    warmup_fraction: float = 0.1
    weight_decay: float = 0.01
    gradient_accumulation: int = 1  # steps whose gradients make one update
    temperature: float = 2.0
    soft_weight: float = 5.0
    hard_weight: float = 2.0
    cosine_weight: float = 1.0
    hidden_weight: float = 0.0
    attention_weight: float = 0.0
    strategy: str = "none"
    tpu: str | None = None  # --strategy tpu: the TPU's name or address
    mixed_precision: str | None = None
    steps_per_epoch: int | None = None
    seed: int = 0
    cache_teacher: bool = False  # run the teacher once per dataset, not per epoch
    run_eagerly: bool = False
    evaluate: bool = True  # test metrics of teacher and student (task mode)
    unlabelled: str | None = None  # texts for the soft targets (zoo.distill.transfer)


def _general_teacher(model):
    """An MLM teacher: a `MaskedLM`, or the MLM half of a `Pretrainer`."""
    if isinstance(model, MaskedLM):
        return model
    head = getattr(model, "mlm_head", None)
    if head is None:
        raise ValueError(
            f"--mode general needs a teacher with a masked-LM head (MaskedLM or "
            f"Pretrainer, e.g. from `zoo pretrain`); this one is {type(model).__name__}."
        )
    teacher = MaskedLM(model.encoder)
    for s, t in zip(head.weights, teacher.mlm_head.weights):
        t.assign(s.value)
    return teacher


def check_distill_inputs(teacher_dir, data, config):
    """Check a run's inputs before anything is written: the teacher is a zoo
    model directory of the right kind, the student depth and layer map fit
    it, the sequence length is within its maximum, and the data reads."""
    if config.mode not in MODES:
        raise ValueError(f"--mode {config.mode!r}: expected one of {', '.join(MODES)}.")
    if config.select_by not in SELECT_BY:
        raise ValueError(
            f"--select-by {config.select_by!r}: expected one of {', '.join(SELECT_BY)}."
        )
    # A setting only the other mode reads is refused rather than ignored
    # (its default cannot be told from an absent flag, and needs no refusal).
    if config.mode == "general":
        for flag, value, default in (
            ("--select-by", config.select_by, DISTILL_SELECT_BY),
            ("--patience", config.patience, DISTILL_PATIENCE),
        ):
            if value != default:
                raise ValueError(
                    f"{flag} {value}: --mode general has no validation split to select "
                    f"on or stop by (every epoch runs, the last is kept); drop {flag}."
                )
    elif config.max_predictions != GENERAL_MAX_PREDICTIONS:
        raise ValueError(
            f"--max-predictions {config.max_predictions}: only --mode general masks "
            "tokens; --mode task trains on the task's labels. Drop --max-predictions."
        )
    check_training_numbers(
        config,
        (
            "epochs",
            "patience",
            "batch_size",
            "sequence_length",
            "max_predictions",
            "gradient_accumulation",
        ),
        min_sequence_length=(
            PRETRAINING_MIN_LENGTH if config.mode == "general" else MIN_SEQUENCE_LENGTH
        ),
    )
    check_loss_numbers(**{k: getattr(config, k) for k in LOSS_NUMBERS})
    multiworker.check_strategy(config.strategy, config.tpu)
    if hub.is_hub_name(teacher_dir):
        raise ValueError(
            f"--teacher {teacher_dir}: a teacher is a zoo model directory with its head (a "
            "fine-tuned classifier, tagger or QA model, or a masked LM), which a Hub "
            f"checkpoint is not. Make one first: `zoo finetune --model {teacher_dir} --out "
            "RUN ...`, then `--teacher RUN/model`."
        )
    try:
        meta = read_model_dir_meta(teacher_dir)
    except FileNotFoundError as e:
        raise FileNotFoundError(f"--teacher: {e}") from None
    teacher = EncoderConfig.from_dict(meta["encoder_config"])
    kinds = (
        {"Classifier", "TokenClassifier", "QuestionAnswerer"}
        if config.mode == "task"
        else {"MaskedLM", "Pretrainer"}
    )
    model_class = ID_LEVEL_CLASS.get(meta.get("model_class"), meta.get("model_class"))
    if model_class not in kinds:
        raise ValueError(
            f"--teacher {teacher_dir} holds a {meta.get('model_class')}; --mode {config.mode} "
            f"distils a {' or '.join(sorted(kinds))} ("
            + (
                "fine-tune one with `zoo finetune`"
                if config.mode == "task"
                else "pre-train one with `zoo pretrain`"
            )
            + ")."
        )
    if not 1 <= config.student_layers <= teacher.num_layers:
        raise ValueError(
            f"--student-layers {config.student_layers}: the teacher has {teacher.num_layers} "
            f"layers; give 1..{teacher.num_layers} (fewer than the teacher's is the point)."
        )
    if config.layer_map is not None and (
        len(config.layer_map) != config.student_layers
        or any(not 0 <= i < teacher.num_layers for i in config.layer_map)
    ):
        raise ValueError(
            f"--layer-map {','.join(map(str, config.layer_map))}: give one teacher layer "
            f"(0..{teacher.num_layers - 1}) per student layer ({config.student_layers})."
        )
    width = config.student_intermediate_dim
    if width is not None and not 1 <= width <= teacher.intermediate_dim:
        raise ValueError(
            f"--student-intermediate-dim {width}: the student keeps some of the teacher's "
            f"{teacher.intermediate_dim} feed-forward units per layer; give "
            f"1..{teacher.intermediate_dim}."
        )
    width = config.student_hidden_dim
    if width is not None and not (
        1 <= width <= teacher.hidden_dim and width % teacher.head_dim == 0
    ):
        raise ValueError(
            f"--student-hidden-dim {width}: the student keeps whole heads of the "
            f"teacher's {teacher.head_dim} features each; give a multiple of "
            f"{teacher.head_dim} up to {teacher.hidden_dim}."
        )
    if width is not None and width < teacher.hidden_dim and teacher.family == "albert":
        raise ValueError(
            f"--student-hidden-dim {width}: an ALBERT teacher's student is folded to "
            "the teacher's width; distil at that width first, then narrow that student."
        )
    if width is not None and width != teacher.hidden_dim:
        check_some_weight(
            {k: getattr(config, k) for k in LOSS_NUMBERS if k.endswith("_weight")}
            | {"cosine_weight": 0.0},
            f" once the cosine term is dropped (--student-hidden-dim {width}, the teacher "
            f"{teacher.hidden_dim} wide: use --hidden-weight)",
        )
    if config.sequence_length > teacher.max_sequence_length:
        raise ValueError(
            f"--sequence-length {config.sequence_length}: the teacher takes at most "
            f"{teacher.max_sequence_length} tokens (its max_sequence_length)."
        )
    if config.mode == "task":
        task = {
            "Classifier": "classify",
            "TokenClassifier": "tag",
            "QuestionAnswerer": "qa",
        }[model_class]
        loaded = task_data.load_task_data(data, task)
        if config.unlabelled is not None:
            read_transfer_set(config.unlabelled, loaded.splits, task)
        return
    check_unlabelled_use(config.unlabelled, config.mode)
    if not corpus_documents(data):
        raise ValueError(f"--data {data}: no documents (no text) found.")


def distill(teacher_dir, data, out_dir, config, *, callbacks=(), verbose=1):
    """Distil the zoo model at `teacher_dir` into a `config.student_layers`
    student on `data`; returns a summary dict (also OUT/metrics.json).

    `callbacks` are appended to the built-in ones (epoch counter,
    BackupAndRestore, best-student directory, TerminateOnNaN). The student
    is written to OUT/model whenever validation loss improves (every epoch
    in general mode, which has no validation data); a resumed run reads the
    best value back from OUT/model, as `zoo finetune` does.

    `config.mixed_precision` applies to this run only (the student trains
    under it; the teacher's encoder keeps its saved float32): Keras's global dtype
    policy is restored on return."""

    with dtype_policy_scope(config.mixed_precision):
        return _distill(teacher_dir, data, out_dir, config, callbacks, verbose)


def _distill(teacher_dir, data, out_dir, config, callbacks, verbose):
    run = multiworker.start_training_run(out_dir, config)
    with run.strategy.scope():
        teacher, tokenizer, _ = load_model_dir(teacher_dir)
        extra = {
            "distilled_from": str(teacher_dir),
            "data": str(data),
            "sequence_length": config.sequence_length,
            "distill_config": dataclasses.asdict(config),
            "keras_backend": keras.backend.backend(),  # what trained it (issue #39)
        }
        if config.mode == "task":
            inputs = _task_inputs(
                teacher, data, tokenizer, config, run.epoch_variable, run.chief and verbose
            )
            extra.update(task=inputs.task, finetune_config=inputs.finetune_config)
        else:
            teacher = _general_teacher(teacher)
            inputs = _general_inputs(data, tokenizer, config)
        if run.multi:
            inputs.train = multiworker.shard_by_data(inputs.train)
            inputs.val = (
                None if inputs.val is None else multiworker.shard_by_data(inputs.val)
            )
        student = make_student(
            teacher,
            config.student_layers,
            layer_map=config.layer_map,
            style=config.style,
            intermediate_dim=config.student_intermediate_dim,
            hidden_dim=config.student_hidden_dim,
        )
        config = _narrow_student_losses(config, teacher, student, run.chief and verbose)
        steps = _steps_per_epoch(inputs.train, config)
        config, schedule = chosen_schedule(
            config,
            steps,
            config.patience
            if inputs.val is not None
            else None,  # early stopping needs validation
            run.chief and verbose,
        )
        extra["distill_config"] = dataclasses.asdict(config)  # with the epochs chosen
        distiller = _compiled_distiller(run, teacher, student, config, steps)
    train = _epochs(distiller, inputs.train, steps, config, run.multi)
    history, seconds = _fit(
        run, distiller, train, inputs.val, tokenizer, extra, config, callbacks, verbose
    )
    if not run.chief:
        # Wait for the chief's writes: a worker leaving before the chief
        # (which hosts the cluster's coordination service) is fine, the
        # chief leaving first makes the others wait out a heartbeat timeout.
        multiworker.barrier(run.strategy)
        return {
            "mode": config.mode,
            "worker": multiworker.worker_name(run.strategy),
            "train_seconds": round(seconds, 1),
        }
    out = run.out
    if not (out / "model" / "zoo_model.json").is_file():
        if inputs.val is not None:
            # With validation, the best-model callback saved no epoch: the
            # validation loss was never finite. Publishing the last student
            # would publish a diverged one.
            raise TrainingDivergedError(
                f"distillation finished without a best student in {out / 'model'}: the "
                "validation loss was never finite. Lower --learning-rate or check the data."
            )
        save_model_dir(student, out / "model", tokenizer, extra=extra)
    history.write()
    summary = {
        "mode": config.mode,
        "student_layers": config.student_layers,
        "teacher_parameters": int(teacher.count_params()),
        "student_parameters": int(student.count_params()),
        "train_seconds": history.summary()["seconds"],
        "schedule": {**schedule, "epochs_trained": len(history.summary()["epochs"])},
    }
    if inputs.unlabelled is not None:
        summary["unlabelled"] = inputs.unlabelled
    if config.evaluate and inputs.task is not None and inputs.test_examples:
        _evaluate_both(run, teacher, teacher_dir, tokenizer, inputs, config, summary)
    with atomic_file(out / "metrics.json", "w") as f:
        json.dump(summary, f, indent=2, default=lambda v: float(np.asarray(v)))
    if run.multi:
        multiworker.barrier(run.strategy)
    return summary


# The steps of `_distill`, in its order.


@dataclasses.dataclass
class _Inputs:
    """What the student trains on: the training stream, and in task mode the
    validation stream, the task, its test examples and labels."""

    train: tf.data.Dataset
    val: tf.data.Dataset | None = None
    task: str | None = None
    test_examples: list | None = None
    labels: list | None = None
    finetune_config: dict | None = None  # recorded in OUT/model (task mode)
    unlabelled: dict | None = None  # --unlabelled: TransferSet.record


def _task_inputs(teacher, data, tokenizer, config, epoch_variable, verbose):
    """--mode task: `data` read as `zoo finetune` reads it for the teacher's
    task, batched as fine-tuning batches it; the teacher's label names win.
    --unlabelled texts join the training split."""
    task = task_of(teacher)
    loaded = task_data.load_task_data(data, task)
    labels = getattr(teacher, "labels", None) or loaded.labels
    loaded.labels = labels
    ft = FinetuneConfig(
        batch_size=config.batch_size,
        sequence_length=config.sequence_length,
        seed=config.seed,
    )
    transfer, record = (), None
    if config.unlabelled is not None:
        found = read_transfer_set(config.unlabelled, loaded.splits, task)
        transfer, record = found.examples, found.record(config.unlabelled)
        if verbose:
            print(
                f"unlabelled: {len(transfer)} texts of {config.unlabelled} join the "
                f"{len(loaded.splits['train'])} training examples, for the teacher's "
                f"soft targets ({found.repeated} repeats and {found.in_data} texts "
                "already in --data left out)",
                flush=True,
            )
    train, val = build_datasets(loaded, tokenizer, ft, epoch_variable, transfer)
    return _Inputs(
        train,
        val,
        task,
        test_examples=loaded.splits.get("test") or loaded.splits["validation"],
        labels=labels,
        finetune_config=dataclasses.asdict(ft),
        unlabelled=record,
    )


def _general_inputs(data, tokenizer, config):
    """--mode general: masked-LM batches of the raw text (no NSP)."""
    train = pretraining_dataset(
        corpus_documents(data),
        tokenizer,
        sequence_length=config.sequence_length,
        max_predictions=config.max_predictions,
        batch_size=config.batch_size,
        nsp=False,
        seed=config.seed,
    )
    return _Inputs(train)


def _steps_per_epoch(train, config):
    """Batches per epoch: a whole pass (counted when unknown), or
    `config.steps_per_epoch` if fewer."""
    steps = int(train.cardinality())
    if steps < 1:
        steps = sum(1 for _ in train)
    if config.steps_per_epoch:
        steps = min(steps, config.steps_per_epoch)
    return steps


def _narrow_student_losses(config, teacher, student, verbose):
    """A student narrower than the teacher cannot take the cosine term
    (vectors of different widths); the hidden-state MSE through learned
    projections (TinyBERT's) takes its place at its weight, unless a hidden
    weight was given."""
    t_width = getattr(teacher, "encoder", teacher).hidden_dim
    s_width = getattr(student, "encoder", student).hidden_dim
    if s_width == t_width or not config.cosine_weight or config.hidden_weight:
        return config
    if verbose:
        print(
            f"student hidden width {s_width} < the teacher's {t_width}: the hidden-state "
            f"loss through learned projections (weight {config.cosine_weight:g}) replaces "
            "the cosine term",
            flush=True,
        )
    return dataclasses.replace(config, hidden_weight=config.cosine_weight)


def _compiled_distiller(run, teacher, student, config, steps):
    """The `Distiller` (multi-worker fixes applied under such a strategy),
    compiled with AdamW over the student's weights."""
    distiller = multiworker.model_class(Distiller, run.strategy)(
        teacher,
        student,
        temperature=config.temperature,
        soft_weight=config.soft_weight,
        hard_weight=config.hard_weight,
        cosine_weight=config.cosine_weight,
        hidden_weight=config.hidden_weight,
        attention_weight=config.attention_weight,
        layer_map=config.layer_map,
    )
    distiller.compile(
        optimizer=make_adamw(
            student,
            config.learning_rate,
            steps * config.epochs,
            config.warmup_fraction,
            config.weight_decay,
            gradient_accumulation=config.gradient_accumulation,
        ),
        run_eagerly=config.run_eagerly,
    )
    # Optimizer variables exist before fit so BackupAndRestore can
    # restore into them on a resumed run.
    distiller.optimizer.build(distiller._student_variables())
    return distiller


def _epochs(distiller, train, steps, config, multi):
    """The stream `fit` reads: with --cache-teacher the teacher's outputs
    computed once; `steps` batches an epoch."""
    if config.cache_teacher:
        if multi:
            raise ValueError(
                "--cache-teacher runs on one process; drop it with "
                "--strategy multiworker (each worker would cache its own copy)."
            )
        train = distiller.cache_teacher(train, shuffle_seed=config.seed)
    if config.steps_per_epoch:
        # A capped epoch is the first `steps` batches of that epoch's own
        # pass: the same batches whether or not the run was resumed.
        train = train.take(steps)
    if not config.cache_teacher:
        # A known length: progress totals, and no extra empty step per epoch
        # (which Keras counts into the epoch's mean loss).
        train = train.apply(tf.data.experimental.assert_cardinality(steps))
    return train


def _fit(run, distiller, train, val, tokenizer, extra, config, callbacks, verbose):
    """`distiller.fit`, the best student written to OUT/model as it is found;
    returns (the chief's HistoryFile or None, the seconds it took)."""
    history = HistoryFile(run.out / "history.json") if run.chief else None
    callbacks = [
        EpochCounter(run.epoch_variable, worker=multiworker.worker_index(run.strategy)),
        # The best student and the history are written before the epoch's
        # backup: a kill between them re-runs the epoch, losing nothing.
        # Every worker applies the early-stopping rule (they stop together);
        # the chief alone writes.
        BestModelDirectory(
            run.out / "model",
            tokenizer,
            extra,
            select=lambda distiller: distiller.student,
            patience=config.patience if val is not None else None,
            monitor=SELECT_BY[config.select_by],
            verbose=verbose if run.chief else 0,
            write=run.chief,
        ),
        *([history] if run.chief else []),
        *run.recovery_callbacks(callbacks),
    ]
    started = time.time()
    distiller.fit(
        train,
        validation_data=val,
        epochs=config.epochs,
        callbacks=callbacks,
        shuffle=False,
        verbose=verbose,
    )
    seconds = time.time() - started
    multiworker.remove_backup_root(run.out, run.strategy)
    return history, seconds


def _evaluate_both(run, teacher, teacher_dir, tokenizer, inputs, config, summary):
    """The test metrics of teacher and best student into `summary`."""
    best, best_tokenizer, _ = load_model_dir(run.out / "model")
    if run.multi:
        # The chief alone: a teacher outside the strategy (its predict
        # would wait for the other workers).
        teacher = load_model_dir(teacher_dir)[0]
    ft = FinetuneConfig(sequence_length=config.sequence_length)
    summary["teacher"] = evaluate_model(
        teacher, tokenizer, inputs.task, inputs.test_examples, inputs.labels, ft
    )
    summary["student"] = evaluate_model(
        best, best_tokenizer, inputs.task, inputs.test_examples, inputs.labels, ft
    )
