"""Fine-tuning through `model.fit`: classification, tagging, span QA and
regression (STS-style similarity scores).

    result = finetune("models/minilm", "bbc", "classify", "runs/bbc")

Texts longer than the sequence: `FinetuneConfig(max_windows=4)` trains on up
to 4 windows of each text (stepping `doc_stride` pieces) with the text's
label, and `evaluate_model` averages the windows' logits.

writes, under `out/`:

    model/          the best model (lowest validation loss) as a zoo model
                    directory, written atomically after each improving epoch
    backup/         Keras BackupAndRestore state: re-running the same command
                    after a kill resumes at the last finished epoch
    history.json    per-epoch training curves
    metrics.json    test-split metrics of the best model
"""

from __future__ import annotations

import dataclasses
import json
import warnings

import keras
import numpy as np
import tensorflow as tf

from zoo.checkpoints import checkpoint_config, hub, load_checkpoint, load_model_dir
from zoo.models import (
    DEFAULT_SEQUENCE_LENGTH,
    Classifier,
    QuestionAnswerer,
    Regressor,
    TokenClassifier,
    check_task,
)
from zoo.models.encoder_task import dtype_policy_scope, with_dtype_policy
from zoo.text import features as feats
from zoo.train import data as task_data
from zoo.train import distribute
from zoo.train import metrics as task_metrics
from zoo.train.callbacks import (
    BestModelDirectory,
    EpochCounter,
    HistoryFile,
    Throughput,
    ValidationCorrelation,
)
from zoo.train.optimization import (
    build_for_fit,
    check_training_numbers,
    chosen_schedule,
    make_adamw,
)
from zoo.utils.atomic import atomic_file

# Heads that do not read the pooler (mean / [CLS] pooling, tagging, QA) leave
# its weights without gradients; Keras warns about that on every fit.
warnings.filterwarnings(
    "ignore", message=r"Gradients do not exist for variables \['pooler_dense"
)


@dataclasses.dataclass
class FinetuneConfig:
    epochs: int | None = None  # None: chosen from the data (optimization.training_epochs)
    batch_size: int = 16
    sequence_length: int = DEFAULT_SEQUENCE_LENGTH
    learning_rate: float = 5e-5
    warmup_fraction: float = 0.1
    weight_decay: float = 0.01
    patience: int = 2
    mixed_precision: str | None = None  # "mixed_float16" | "mixed_bfloat16"
    seed: int = 0
    pooling: str = "auto"
    dropout: float = 0.1
    doc_stride: int = 128
    max_windows: int = 1  # classify: windows per long text (1 = truncate)
    max_answer_length: int = 30
    steps_per_epoch: int | None = None  # cap, for quick runs
    strategy: str = "none"  # zoo.train.distribute.STRATEGIES
    tpu: str | None = None
    gradient_accumulation: int = 1  # steps whose gradients make one update

    def __post_init__(self):
        check_training_numbers(
            self,
            (
                "epochs",
                "batch_size",
                "sequence_length",
                "doc_stride",
                "max_windows",
                "max_answer_length",
                "patience",
                "gradient_accumulation",
            ),
        )
        if self.max_windows > feats.MAX_WINDOWS:
            raise ValueError(
                f"--max-windows must be at most {feats.MAX_WINDOWS} (each window is a forward "
                f"pass of the text); received {self.max_windows}."
            )
        if self.mixed_precision not in (None, "mixed_float16", "mixed_bfloat16"):
            raise ValueError(
                f"--mixed-precision {self.mixed_precision!r}: expected mixed_float16 or "
                "mixed_bfloat16."
            )
        distribute.check_strategy(self.strategy, self.tpu)


def _task_head(encoder, task, labels, config, strategy=None):
    def head(cls):
        # Under a multi-worker strategy: the class with the strategy's overrides.
        return cls if strategy is None else distribute.model_class(cls, strategy)

    if task == "classify":
        return head(Classifier)(
            encoder,
            len(labels),
            pooling=config.pooling,
            dropout=config.dropout,
            labels=labels,
        )
    if task == "tag":
        return head(TokenClassifier)(
            encoder, len(labels), dropout=config.dropout, labels=labels
        )
    if task == "regress":
        return head(Regressor)(encoder, pooling=config.pooling, dropout=config.dropout)
    return head(QuestionAnswerer)(encoder)


def task_losses(task):
    """`(loss, metrics)` for `compile`: cross-entropy on logits, accuracy;
    regression: mean squared error on the score (Pearson and Spearman, which
    need the whole split, come from `ValidationCorrelation`)."""
    if task == "regress":
        return {"score": keras.losses.MeanSquaredError()}, {"score": ["mae"]}
    ce = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    if task == "qa":
        return {"start_logits": ce, "end_logits": ce}, {"start_logits": ["accuracy"]}
    return {"logits": ce}, {"logits": ["accuracy"]}


def selection(task):
    """How the best epoch is chosen: lowest validation loss; for a regressor,
    highest validation Spearman (the ranking STS is scored by: in a measured
    run the epoch with the lower MSE had the lower correlation)."""
    if task == "regress":
        return {"monitor": "val_spearman", "mode": "max"}
    return {"monitor": "val_loss", "mode": "min"}


def build_datasets(data, tokenizer, config, epoch_variable, unlabelled=()):
    """(train, validation) datasets for `data.task`; `unlabelled` examples
    (`zoo distill --unlabelled`: classification, tagging or QA) join the
    training split."""
    common = dict(seed=config.seed, epoch_variable=epoch_variable)
    L, B = config.sequence_length, config.batch_size
    splits = data.splits
    # load_task_data always gives a validation split (carved out of train when
    # the data has train and test only): the test split never selects.
    validation = splits["validation"]
    if data.task == "classify":
        windows = dict(max_windows=config.max_windows, doc_stride=config.doc_stride)
        train = task_data.classification_dataset(
            splits["train"],
            data.labels,
            tokenizer,
            L,
            B,
            shuffle=True,
            unlabelled=unlabelled,
            **common,
            **windows,
        )
        val = task_data.classification_dataset(
            validation, data.labels, tokenizer, L, B, **windows
        )
        return train, val
    if data.task == "regress":
        train = task_data.regression_dataset(
            splits["train"], tokenizer, L, B, shuffle=True, **common
        )
        return train, task_data.regression_dataset(validation, tokenizer, L, B)
    if data.task == "tag":
        train = task_data.tagging_dataset(
            [*splits["train"], *unlabelled],
            data.labels,
            tokenizer,
            L,
            B,
            shuffle=True,
            **common,
        )
        val = task_data.tagging_dataset(validation, data.labels, tokenizer, L, B)
        return train, val
    train_f = feats.qa_features(
        [*splits["train"], *unlabelled], tokenizer, L, config.doc_stride
    )
    val_f = feats.qa_features(validation, tokenizer, L, config.doc_stride)
    return (
        task_data.qa_dataset(train_f, B, shuffle=True, **common),
        task_data.qa_dataset(val_f, B),
    )


def check_inputs(model_path, data_path, task, config):
    """Everything a run needs, checked before anything is written (so a
    corrected command is not refused as "another run's --out"): the task,
    the checkpoint's configuration and the sequence length against its
    maximum, and the data (splits, labels). Returns the `TaskData`."""
    check_task(task)
    if config.max_windows > 1 and task != "classify":
        raise ValueError(
            f"--max-windows {config.max_windows}: windows are for --task classify (a qa "
            f"context is windowed by --doc-stride already); drop it for --task {task}."
        )
    encoder = checkpoint_config(model_path)
    if config.sequence_length > encoder.max_sequence_length:
        raise ValueError(
            f"--sequence-length {config.sequence_length}: {model_path} takes at most "
            f"{encoder.max_sequence_length} tokens (its max_sequence_length); give a length "
            "up to that (long texts: --max-windows)."
        )
    return task_data.load_task_data(data_path, task)


def finetune(
    model_path, data_path, task, out_dir, config=None, *, callbacks=(), verbose=1, data=None
):
    """Fine-tune the encoder at `model_path` (any checkpoint `zoo.load_checkpoint`
    reads) on `data_path` for `task`; returns the test metrics dict.

    `callbacks` are appended to the built-in ones (epoch counter,
    best-model directory with early stopping, BackupAndRestore, TerminateOnNaN),
    so they see each epoch after its state is saved.

    `config.mixed_precision` applies to this run only: Keras's global dtype
    policy is restored on return, so later models in the process are built
    as before. `data` is what `check_inputs` returned, when the caller
    checked first."""
    config = config or FinetuneConfig()
    if data is None:
        data = check_inputs(model_path, data_path, task, config)
    with dtype_policy_scope(config.mixed_precision):
        return _finetune(model_path, data, task, out_dir, config, callbacks, verbose)


def _finetune(model_path, data, task, out_dir, config, callbacks, verbose):
    run = distribute.start_training_run(out_dir, config)
    # A Hub name is fetched once here: the weights loaded and the commit the
    # model directory records (`base_model`) are the same.
    local, provenance = hub.resolve(model_path)
    base_model = provenance or {"source": str(model_path)}
    with run.strategy.scope():
        encoder, tokenizer = load_checkpoint(local)
        if config.mixed_precision:
            # A zoo model directory records float32 for its layers, which
            # would override the global policy: rebuild under the requested one.
            encoder = with_dtype_policy(encoder, config.mixed_precision)
        model = _task_head(encoder, task, data.labels, config, run.strategy)
        train, val = build_datasets(data, tokenizer, config, run.epoch_variable)
        train, steps = _capped_epochs(train, config)
        config, schedule = chosen_schedule(
            config, steps, config.patience, run.chief and verbose
        )
        losses, metrics = task_losses(task)
        model.compile(
            optimizer=make_adamw(
                model,
                config.learning_rate,
                steps * config.epochs,
                config.warmup_fraction,
                config.weight_decay,
                gradient_accumulation=config.gradient_accumulation,
            ),
            loss=losses,
            metrics=metrics,
        )
        # The optimizer's variables exist before fit so BackupAndRestore can
        # restore into them on a resumed run (and the step traces once).
        build_for_fit(model, train.element_spec)
    history = _fit(
        run,
        model,
        tokenizer,
        train,
        val,
        steps,
        data,
        task,
        config,
        callbacks,
        verbose,
        base_model=base_model,
    )
    if not run.chief:
        # Wait for the chief's writes and evaluation (it hosts the cluster's
        # coordination service).
        distribute.barrier(run.strategy)
        return {"worker": distribute.worker_name(run.strategy)}
    history.write()  # also when a resumed run had no epoch left to train
    result = _evaluate_best(run.out, data, task, config, history.summary()["seconds"])
    result["schedule"] = {**schedule, "epochs_trained": len(history.summary()["epochs"])}
    with atomic_file(run.out / "metrics.json", "w") as f:
        json.dump(result, f, indent=2)
    if run.multi:
        distribute.barrier(run.strategy)
    return result


# The steps of `_finetune`, in its order.


def _capped_epochs(train, config):
    """(train, steps): the batches of an epoch, `config.steps_per_epoch` at most."""
    steps = int(train.cardinality()) if int(train.cardinality()) > 0 else None
    if steps is None:
        steps = sum(1 for _ in train)
    if config.steps_per_epoch:
        # A capped epoch is the first `steps` batches of that epoch's own
        # shuffle, a fresh pass each epoch: an epoch trains on the same
        # batches whether or not the run was resumed (a repeated stream
        # would continue where the killed process stopped reading).
        steps = min(steps, config.steps_per_epoch)
        train = train.take(steps)
    return train, steps


def _fit(
    run,
    model,
    tokenizer,
    train,
    val,
    steps,
    data,
    task,
    config,
    callbacks,
    verbose,
    base_model,
):
    """`model.fit` with the best model written to OUT/model as it is found
    (early stopping), recording `base_model` (where the encoder came from: the
    path given, or a Hub name's commit); returns the chief's HistoryFile (None
    on the others)."""
    throughput = Throughput(
        config.batch_size, num_workers=distribute.num_workers(run.strategy)
    )
    # A known length gives Keras's progress bar its total and spares the
    # "input ran out of data" warning at the end of the first epoch.
    train = throughput.count_tokens(train).apply(
        tf.data.experimental.assert_cardinality(steps)
    )
    if run.multi:
        train, val = distribute.shard_by_data(train), distribute.shard_by_data(val)

    extra = {
        "task": task,
        "base_model": base_model,
        "data": data.source,
        "split_rule": data.split_rule,
        "sequence_length": config.sequence_length,
        "finetune_config": dataclasses.asdict(config),
        "keras_backend": keras.backend.backend(),  # what trained it (issue #39)
    }
    history = HistoryFile(run.out / "history.json") if run.chief else None
    callbacks = [
        EpochCounter(run.epoch_variable, worker=distribute.worker_index(run.strategy)),
        throughput,
        # The best model is written before the epoch's backup: a kill between
        # the two re-runs the epoch instead of losing a best model. Every
        # worker applies the early-stopping rule (they stop together); the
        # chief alone writes.
        BestModelDirectory(
            run.out / "model",
            tokenizer,
            extra,
            patience=config.patience,
            verbose=verbose if run.chief else 0,
            write=run.chief,
            **selection(task),
        ),
        *([history] if run.chief else []),
        *run.recovery_callbacks(callbacks),
    ]
    if task == "regress":
        # First, so the best-model directory and history.json see them.
        callbacks.insert(0, ValidationCorrelation(val))
    model.fit(
        train,
        validation_data=val,
        epochs=config.epochs,
        callbacks=callbacks,
        shuffle=False,
        verbose=verbose,
    )
    distribute.remove_backup_root(run.out, run.strategy)
    return history


class TrainingDivergedError(ValueError):
    """Training never reached a finite validation loss (a learning rate too
    high for the data, or targets out of range): a bad setting, reported as
    one line by the CLI, not a crash."""


def _evaluate_best(out, data, task, config, train_seconds):
    """The best model's test metrics (validation when there is no test
    split), evaluated by the chief alone, outside the strategy."""
    if not (out / "model" / "zoo_model.json").is_file():
        raise TrainingDivergedError(
            f"training finished without a best model in {out / 'model'}: validation loss "
            "was never finite. Lower --learning-rate or check the data."
        )
    best, best_tokenizer, _ = load_model_dir(out / "model")
    test = data.splits.get("test") or data.splits["validation"]
    result = evaluate_model(best, best_tokenizer, task, test, data.labels, config)
    result.update(
        {
            "train_seconds": round(train_seconds, 1),
            "split_rule": data.split_rule,
            "num_train": len(data.splits["train"]),
            "num_test": len(test),
        }
    )
    return result


def evaluation_config(meta, sequence_length=None, max_windows=None):
    """How a model directory is evaluated: the length, windows and QA
    settings it was fine-tuned with (zoo_model.json), unless overridden."""
    saved = meta.get("finetune_config") or {}
    longest = (meta.get("encoder_config") or {}).get("max_sequence_length")
    default = meta.get("sequence_length", DEFAULT_SEQUENCE_LENGTH)
    if (
        sequence_length is not None
        and longest
        and (
            isinstance(sequence_length, bool)
            or not isinstance(sequence_length, int)
            or not 3 <= sequence_length <= longest
        )
    ):
        raise ValueError(
            f"--sequence-length must be an integer in 3..{longest} (this model's "
            f"max_sequence_length); received {sequence_length!r:.40}."
        )
    return FinetuneConfig(
        # A model directory that records no length gets the default, up to
        # the model's own maximum.
        sequence_length=sequence_length
        if sequence_length is not None
        else (min(default, longest) if longest else default),
        doc_stride=saved.get("doc_stride", 128),
        max_answer_length=saved.get("max_answer_length", 30),
        max_windows=saved.get("max_windows", 1) if max_windows is None else max_windows,
    )


def _eval_batch(n, batch_size=64):
    """The evaluation batch for n examples: `batch_size`, or n if fewer."""
    return max(1, min(batch_size, n))


def _fill_last_batch(items, batch_size):
    """`items` with its last element repeated up to a multiple of
    `batch_size`. Every batch `predict` sees then has one shape, so Keras
    traces a model's predict function once, not twice (a short last batch
    retraces it), and TensorFlow stops warning of "excessive retracing"
    once a process has evaluated a few models (as zoo demo and zoo distill
    do). The caller keeps the first len(items) outputs."""
    items = list(items)
    return items + items[-1:] * (-len(items) % batch_size)


def _predict_whole_batches(model, inputs, batch_size):
    """`model.predict` on a dict of equal-length arrays in batches of one
    shape (see `_fill_last_batch`); outputs for the given rows only."""
    n = len(next(iter(inputs.values())))
    batch_size = _eval_batch(n, batch_size)
    filled = {
        k: np.concatenate([v, np.repeat(v[-1:], -n % batch_size, axis=0)])
        for k, v in inputs.items()
    }
    out = model.predict(filled, batch_size=batch_size, verbose=0)
    return tf.nest.map_structure(lambda a: a[:n], out)


def evaluate_model(model, tokenizer, task, examples, labels=None, config=None):
    """Task metrics of `model` on `examples` (host-side, exact definitions),
    at `config.sequence_length` (use the length the model was trained with)."""
    config = config or FinetuneConfig()
    L = config.sequence_length
    if task == "classify":
        labels = labels or model.labels
        index = {name: i for i, name in enumerate(labels)}
        unknown = sorted({e.label for e in examples} - set(index))
        if unknown:
            raise ValueError(
                f"labels {unknown[:8]} of the data are not labels of this model ({labels}); "
                "give data labelled with the model's labels, or fine-tune a model on "
                "these labels first (zoo finetune)."
            )
        y = np.array([index[e.label] for e in examples])
        if config.max_windows > 1:
            # Every window of a long text votes with its logits (mean).
            windows = feats.text_windows(
                [e.text for e in examples],
                tokenizer,
                L,
                config.doc_stride,
                config.max_windows,
            )
            window_logits = _predict_whole_batches(model, windows.inputs, 64)["logits"]
            logits = feats.average_windows(window_logits, windows.example_index, len(y))
        else:
            batch = _eval_batch(len(examples))
            ds = task_data.classification_dataset(
                _fill_last_batch(examples, batch), labels, tokenizer, L, batch
            )
            logits = model.predict(ds.map(lambda x, y: x), verbose=0)["logits"][: len(y)]
        pred = logits.argmax(-1)
        return {
            "task": task,
            "accuracy": task_metrics.accuracy(y, pred),
            "macro_f1": task_metrics.macro_f1(y, pred, len(labels)),
            "num_examples": len(y),
            "max_windows": config.max_windows,
        }
    if task == "regress":
        batch = _eval_batch(len(examples))
        ds = task_data.regression_dataset(
            _fill_last_batch(examples, batch), tokenizer, L, batch
        )
        predicted = model.predict(ds.map(lambda x, y: x), verbose=0)["score"][
            : len(examples)
        ]
        scores = task_metrics.regression_scores([e.score for e in examples], predicted)
        return {"task": task, **scores, "num_examples": len(examples)}
    if task == "tag":
        labels = labels or model.labels
        tag_to_id = {t: i for i, t in enumerate(labels)}
        inputs, _, word_index = feats.tagging_features(examples, tokenizer, tag_to_id, L)
        logits = _predict_whole_batches(model, inputs, 64)["logits"]
        predicted = feats.tags_from_logits(logits, word_index, examples, labels)
        scores = task_metrics.entity_f1([e.tags for e in examples], predicted)
        return {
            "task": task,
            "entity_f1": scores["f1"],
            "entity_precision": scores["precision"],
            "entity_recall": scores["recall"],
            "num_examples": len(examples),
        }
    features = feats.qa_features(examples, tokenizer, L, config.doc_stride)
    out = _predict_whole_batches(model, features.inputs, 32)
    allow_null = any(e.is_impossible for e in examples)
    answers = feats.decode_answers(
        features,
        out["start_logits"],
        out["end_logits"],
        examples,
        max_answer_length=config.max_answer_length,
        allow_null=allow_null,
    )
    scores = task_metrics.squad_scores(examples, answers)
    return {"task": task, **scores, "num_examples": len(examples)}
