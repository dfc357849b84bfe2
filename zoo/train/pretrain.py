"""Pre-training of the BERT family through `model.fit`: MLM + NSP (BERT),
MLM only (DistilBERT), MLM + SOP (ALBERT), span masking + SBO (SpanBERT)
and the RoBERTa recipe.

    result = pretrain("bert_tiny", "corpus/", "runs/pretrain", PretrainConfig(epochs=2))
    config = PretrainConfig.for_recipe("roberta", epochs=2)   # recipe defaults, overridable

`config` is a preset name (random initialisation) or any checkpoint
`load_checkpoint` reads (continued pre-training; BERT's `cls/...`
heads are loaded too when the checkpoint has them). Writes `model/` (a zoo
model directory holding the Pretrainer), `backup/`, `history.json` and
`metrics.json` (MLM/NSP accuracy at step 0 and after training, and the
input pipeline's examples/s against the training step's).
"""

from __future__ import annotations

import dataclasses
import json
import time

import keras
import numpy as np
import tensorflow as tf

from zoo.checkpoints import (
    checkpoint_config,
    detect_format,
    load_checkpoint,
    save_model_dir,
)
from zoo.checkpoints.errors import CheckpointMismatchError
from zoo.checkpoints.hf import find_hf_dir, load_hf_weights
from zoo.checkpoints.tf1 import find_tf1_checkpoint, load_tf1_weights
from zoo.configs import DEFAULT_SEQUENCE_LENGTH, PRESETS
from zoo.datasets.corpora import austen_documents, minilm_checkpoint_dir, wordnet_glosses
from zoo.models import MaskedLM, Pretrainer
from zoo.models.bert_encoder import build_encoder
from zoo.text.pretraining import (
    MIN_SEQUENCE_LENGTH,
    PretrainingObjective,
    TextShards,
    pretraining_dataset,
    pretraining_objective,
    read_documents,
    split_sentences,
)
from zoo.text.tokenizer import WordPieceTokenizer
from zoo.train import distribute
from zoo.train.callbacks import EpochCounter, HistoryFile, Throughput
from zoo.train.optimization import build_for_fit, check_training_numbers, make_adamw
from zoo.utils.atomic import atomic_file

# Each recipe's defaults over PretrainConfig's (which are the BERT recipe,
# scaled to this machine). RoBERTa (Liu et al. 2019, table 9 for base):
# batch 8K vs BERT's 256 (32x), peak rate 6e-4 vs 1e-4 (6x), warmup 24K of
# 500K steps (4.8%) vs BERT's 10K of 1M, Adam beta_2 0.98 (BERT 0.999), eps
# 1e-6, weight decay 0.01 (both), no NSP, FULL-SENTENCES, dynamic masking.
# Ours keeps the rate ratio (6e-4) and a 4x batch, what 2 cores can step.
RECIPES = {
    "bert": {},
    "roberta": {
        "objective": "mlm",
        "packing": "full",
        "batch_size": 128,
        "learning_rate": 6e-4,
        "warmup_fraction": 0.05,
        "beta_2": 0.98,
    },
}


@dataclasses.dataclass
class PretrainConfig:
    """A run's settings. `objective`, `masking`, `packing` (and the older
    `nsp`, `whole_word`, which map onto them) are resolved by
    `zoo.text.pretraining.pretraining_objective` and stored resolved
    (`objective="mlm+nsp"`, `nsp=True`, ... by default). `for_recipe`
    starts from a recipe's defaults (`RECIPES`)."""

    epochs: int = 3
    batch_size: int = 32
    sequence_length: int = DEFAULT_SEQUENCE_LENGTH
    max_predictions: int = 20
    learning_rate: float = 1e-4
    warmup_fraction: float = 0.1
    weight_decay: float = 0.01
    beta_2: float = 0.999  # Adam's; RoBERTa's 0.98
    nsp: bool | None = None
    whole_word: bool | None = None
    objective: str | None = None  # "mlm", "mlm+nsp" (default), "mlm+sop", "mlm+sbo", ...
    masking: str | None = None  # "token" (default), "whole-word", "span"
    packing: str | None = None  # "sentences" (default), "full" (RoBERTa)
    recipe: str = (
        "bert"  # a record: `for_recipe` applies a recipe's defaults, this does not
    )
    seed: int = 0
    steps_per_epoch: int | None = None
    eval_batches: int = 20
    strategy: str = "none"  # zoo.train.distribute.STRATEGIES
    tpu: str | None = None
    gradient_accumulation: int = 1  # steps whose gradients make one update

    def __post_init__(self):
        if self.recipe not in RECIPES:
            raise ValueError(
                f"--recipe {self.recipe!r}: expected one of {', '.join(RECIPES)}."
            )
        check_training_numbers(
            self,
            (
                "epochs",
                "batch_size",
                "sequence_length",
                "max_predictions",
                "eval_batches",
                "gradient_accumulation",
            ),
            min_sequence_length=MIN_SEQUENCE_LENGTH,
        )
        if not 0 < self.beta_2 < 1:
            raise ValueError(f"--beta-2 must be in (0, 1); received {self.beta_2!r}.")
        task = pretraining_objective(
            self.objective,
            self.masking,
            self.packing,
            nsp=self.nsp,
            whole_word=self.whole_word,
        )
        self.objective, self.masking, self.packing = task.name, task.masking, task.packing
        self.nsp = task.sentence == "nsp"
        self.whole_word = task.masking == "whole-word"

    @property
    def task(self) -> PretrainingObjective:
        return pretraining_objective(self.objective, self.masking, self.packing)

    @classmethod
    def for_recipe(cls, recipe="bert", **settings):
        """The recipe's defaults, then `settings` (None means "not given")."""
        if recipe not in RECIPES:
            raise ValueError(f"--recipe {recipe!r}: expected one of {', '.join(RECIPES)}.")
        given = {k: v for k, v in settings.items() if v is not None}
        return cls(recipe=recipe, **{**RECIPES[recipe], **given})


CORPORA = ("austen", "wordnet", "austen+wordnet")


def corpus_documents(data):
    """Documents (lists of sentences) for pre-training, in memory.

    `data` is a text file, folder or glob (`zoo.text.pretraining.read_documents`),
    or an installed real corpus: `austen` (each paragraph of the six novels
    is a document of its sentences), `wordnet` (runs of 20 consecutive
    glosses of one lexicographer file, e.g. noun.food, form a document) or
    `austen+wordnet` (both).
    """

    data = str(data)
    if data not in CORPORA:
        return read_documents(data)
    documents = []
    if "austen" in data:
        for book in austen_documents():
            documents += [d for d in (split_sentences(p) for p in book) if d]
    if "wordnet" in data:
        by_file = {}
        for gloss, lex in wordnet_glosses():
            by_file.setdefault(lex, []).append(gloss)
        documents += [g[i : i + 20] for g in by_file.values() for i in range(0, len(g), 20)]
    return documents


def pretraining_corpus(data):
    """What `zoo pretrain --data` names: the installed corpora (`CORPORA`)
    as documents in memory, anything else (a file, folder or glob of text
    files) as `TextShards`, streamed."""
    if str(data) in CORPORA:
        return corpus_documents(data)
    return TextShards.from_path(data)


def describe_corpus(corpus):
    if isinstance(corpus, TextShards):
        c = corpus.count()
        return (
            f"{c['documents']:,} documents ({c['sentences']:,} sentences) in "
            f"{c['files']:,} files, streamed in {c['groups']:,} groups"
        )
    return (
        f"{len(corpus):,} documents ({sum(len(d) for d in corpus):,} sentences) in memory"
    )


def check_pretrain_inputs(config_or_path, data, config):
    """Check a run's inputs before anything is written; return the corpus
    (`pretraining_corpus`; a streamed one has been read through once to count
    its examples). `config_or_path` is a preset name or a checkpoint."""
    if str(config_or_path) in PRESETS:
        encoder = PRESETS[str(config_or_path)]
    else:
        try:
            encoder = checkpoint_config(config_or_path)
        except FileNotFoundError as e:
            raise FileNotFoundError(
                f"--config {config_or_path}: not a preset ({', '.join(PRESETS)}) and not a "
                f"checkpoint ({e})"
            ) from None
    if config.sequence_length > encoder.max_sequence_length:
        raise ValueError(
            f"--sequence-length {config.sequence_length}: the model takes at most "
            f"{encoder.max_sequence_length} tokens (its max_sequence_length)."
        )
    check_training_settings(config)
    corpus = pretraining_corpus(data)
    if isinstance(corpus, TextShards) and config.packing == "full":
        raise ValueError(
            f"--data {data}: full-sentence packing (--recipe roberta, --packing full) works "
            f"on the installed corpora ({', '.join(CORPORA)}) only for now; for text files "
            "add --packing sentences (runs of one document's sentences)."
        )
    if isinstance(corpus, TextShards):
        print(
            f"reading {len(corpus.files):,} text file(s) once to count an epoch's examples",
            flush=True,
        )
        corpus.count()
    elif not corpus:
        raise ValueError(f"--data {data}: no documents (no text) found.")
    return corpus


def check_training_settings(config):
    """Strategy and batch settings (shared with `zoo finetune`)."""
    distribute.check_strategy(config.strategy, config.tpu)
    n = config.gradient_accumulation
    if not isinstance(n, int) or n < 1:
        raise ValueError(
            f"--gradient-accumulation must be a positive integer; received {n!r}."
        )


def build_pretrainer(config_or_path, nsp=True, strategy=None, objective=None):
    """(model, tokenizer) for a preset name or a checkpoint path: a
    Pretrainer with the heads `objective` (a `PretrainingObjective`; else
    MLM + NSP, or MLM only with `nsp=False`) asks for, or a MaskedLM for MLM
    alone. Under a multi-worker `strategy` the model class carries
    `zoo.train.distribute.model_class`'s overrides."""

    if objective is None:
        objective = pretraining_objective(nsp=nsp)
    if objective.sentence is None and not objective.sbo:
        cls, kwargs = MaskedLM, {}
    elif objective.sentence == "nsp" and not objective.sbo:
        cls, kwargs = Pretrainer, {}
    else:
        cls, kwargs = (
            Pretrainer,
            {"sentence_task": objective.sentence, "span_boundary": objective.sbo},
        )
    if strategy is not None:
        cls = distribute.model_class(cls, strategy)

    def head(encoder):
        return cls(encoder, **kwargs)

    if str(config_or_path) in PRESETS:
        encoder = build_encoder(PRESETS[str(config_or_path)])
        # Presets use BERT's uncased 30,522-token vocabulary; the real
        # MiniLM checkpoint ships exactly that file.
        tokenizer = WordPieceTokenizer(str(minilm_checkpoint_dir() / "vocab.txt"))
        if tokenizer.vocabulary_size != encoder.vocabulary_size:
            raise ValueError(
                f"preset {config_or_path!r} has vocabulary_size={encoder.vocabulary_size} but "
                f"the BERT uncased vocabulary has {tokenizer.vocabulary_size} tokens."
            )
        return head(encoder), tokenizer
    encoder, tokenizer = load_checkpoint(config_or_path)
    model = head(encoder)
    fmt = detect_format(config_or_path)
    if fmt in ("hf", "tf1") and encoder.config.family in ("bert", "albert"):
        # Load BERT's (ALBERT's) pre-training heads when present. An HF
        # DistilBERT directory is read as an encoder only: its heads start
        # from random.
        _load_heads(model, config_or_path, fmt)
    return model, tokenizer


def _load_heads(model, path, fmt):
    try:
        if fmt == "hf":
            load_hf_weights(model, find_hf_dir(path))
        else:
            load_tf1_weights(model, find_tf1_checkpoint(path)[1])
        print("loaded the checkpoint's pre-training heads")
    except CheckpointMismatchError as e:
        missing = [name for name, _, found in e.problems if found == "missing"]
        # BERT's heads are `cls...` (TF1 and HF); ALBERT's (HF) `predictions.`
        # and `sop_classifier.`.
        heads = ("cls", "predictions.", "sop_classifier.")
        if len(missing) != len(e.problems) or not all(n.startswith(heads) for n in missing):
            raise
        print(
            f"checkpoint has no pre-training heads ({len(missing)} head tensors); "
            "they start from random initialisation"
        )


def _accuracy(model, dataset, batches, nsp=None):
    """Accuracy of every head the batches have targets for: MLM and SBO
    over real masked positions, NSP/SOP over examples; with SBO also its
    mean cross-entropy (`sbo_loss`, the figure SpanBERT's objective lowers).
    `nsp` is kept for callers; the targets decide."""
    correct, total, loss = {}, {}, 0.0
    # One traced forward pass: the probe's 20 batches (MiniLM, 16 x 64
    # tokens) took 10.3 s eager and 5.2 s traced, the tracing included.
    forward = tf.function(lambda x: model(x, training=False), reduce_retracing=True)
    for x, y, w in dataset.take(batches):
        out = forward(x)
        for key, target in y.items():
            if key not in out:
                continue
            target = target.numpy()
            weight = w[key].numpy() if key in w else np.ones(target.shape, "float32")
            pred = np.argmax(out[key], -1)
            correct[key] = correct.get(key, 0.0) + float(((pred == target) * weight).sum())
            total[key] = total.get(key, 0.0) + float(weight.sum())
            if key == "sbo_logits":
                ce = tf.nn.sparse_softmax_cross_entropy_with_logits(
                    target, out[key]
                ).numpy()
                loss += float((ce * weight).sum())
    result = {
        key.replace("_logits", "_accuracy"): correct[key] / max(total[key], 1)
        for key in correct
    }
    if "sbo_logits" in total:
        result["sbo_loss"] = loss / max(total["sbo_logits"], 1)
    return result


def pipeline_throughput(dataset, batches=30):
    """Examples per second the input pipeline produces on its own."""
    iterator = iter(dataset.repeat())  # a small corpus may have fewer batches
    next(iterator)  # warm up tracing
    started, n = time.perf_counter(), 0
    for _ in range(batches):
        x, _, _ = next(iterator)
        n += int(x["token_ids"].shape[0])
    return n / (time.perf_counter() - started)


def pretrain(config_or_path, corpus, out_dir, config=None, *, callbacks=(), verbose=1):
    """Pre-train on `corpus` (a list of documents, or `TextShards`) and
    write OUT/model, history.json and metrics.json; returns the metrics.

    Under `config.strategy` the model and optimizer are built in the
    strategy's scope and `config.batch_size` is the global batch (split over
    the replicas); with `config.gradient_accumulation` N, one update
    averages the gradients of N such batches (an effective batch of N x
    batch_size under every strategy). Every epoch's order, pairs, masks and
    dropout depend on (seed, epoch) only, so a killed and re-run command
    trains the epochs it missed on the same batches as an uninterrupted
    run. `callbacks` are appended to the built-in ones."""
    config = config or PretrainConfig()
    run = distribute.start_training_run(out_dir, config)
    with run.strategy.scope():
        model, tokenizer = build_pretrainer(
            config_or_path, strategy=run.strategy, objective=config.task
        )
        train, probe = _datasets(corpus, tokenizer, config, run.epoch_variable)
        steps = _steps_per_epoch(train, config)
        _compile(model, config, steps)
        # Optimizer variables exist before fit so BackupAndRestore can
        # restore into them on a resumed run (and the step traces once).
        build_for_fit(model, train.element_spec)

    before = _accuracy(model, probe, config.eval_batches, config.nsp)
    examples_per_second_pipeline = pipeline_throughput(train)
    trained, seconds, history = _fit(run, model, train, steps, config, callbacks, verbose)
    # This process's epochs over this process's time (a resumed run trains fewer).
    examples_per_second_train = (
        steps * config.batch_size * len(trained.epoch) / max(seconds, 1e-9)
    )
    if not run.chief:
        # Wait for the chief's writes (it hosts the cluster's coordination
        # service: leaving before it is fine, after it waits out a timeout).
        distribute.barrier(run.strategy)
        return {
            "worker": distribute.worker_name(run.strategy),
            "train_seconds": round(seconds, 1),
            "train_examples_per_second": round(examples_per_second_train, 1),
        }
    history.write()
    after = _accuracy(model, probe, config.eval_batches, config.nsp)
    save_model_dir(
        model,
        run.out / "model",
        tokenizer,
        extra={"task": "pretrain", "pretrain_config": dataclasses.asdict(config)},
    )
    result = {
        "step_0": before,
        "trained": after,
        "chance_nsp": 0.5 if config.nsp else None,
        **({"chance_sop": 0.5} if config.task.sentence == "sop" else {}),
        "steps": steps * len(history.summary()["epochs"]),
        "updates": steps * len(history.summary()["epochs"]) // config.gradient_accumulation,
        "train_seconds": history.summary()["seconds"],
        "pipeline_examples_per_second": round(examples_per_second_pipeline, 1),
        "train_examples_per_second": round(examples_per_second_train, 1),
        "num_parameters": int(model.count_params()),
    }
    with atomic_file(run.out / "metrics.json", "w") as f:
        json.dump(result, f, indent=2)
    if run.multi:
        distribute.barrier(run.strategy)
    return result


# The steps of `pretrain`, in its order.


def _datasets(corpus, tokenizer, config, epoch_variable):
    """(train, probe): the training stream, re-drawn each epoch, and a fixed
    probe of `config.eval_batches` batches for the accuracies before and after."""
    kwargs = dict(
        sequence_length=config.sequence_length,
        max_predictions=config.max_predictions,
        batch_size=config.batch_size,
        objective=config.objective,
        masking=config.masking,
        packing=config.packing,
    )
    if isinstance(corpus, TextShards):
        train = corpus.dataset(
            tokenizer, seed=config.seed, epoch_variable=epoch_variable, **kwargs
        )
        # A fixed probe (another seed; `cache` freezes its first draw, so
        # step 0 and the end see the same examples).
        probe = corpus.dataset(tokenizer, seed=config.seed + 1, **kwargs)
    else:
        train = pretraining_dataset(
            corpus, tokenizer, seed=config.seed, epoch_variable=epoch_variable, **kwargs
        )
        # Drawn from the whole corpus: unshuffled it would hold only the
        # corpus's first documents (all Austen), whose NSP pairs are
        # unlike the mixture the model trains on.
        probe = pretraining_dataset(corpus, tokenizer, seed=config.seed + 1, **kwargs)
    return train, probe.take(config.eval_batches).cache()


def _steps_per_epoch(train, config):
    """Batches per epoch: a whole pass, or `config.steps_per_epoch` if fewer."""
    steps = int(train.cardinality())
    if config.steps_per_epoch:
        steps = min(steps, config.steps_per_epoch)
    if steps < 1:
        raise ValueError("the corpus yields no full batch; lower --batch-size or add text.")
    return steps


def _compile(model, config, steps):
    """AdamW on BERT's schedule over `steps * config.epochs` steps; a sparse
    cross-entropy and accuracy for every head the objective trains."""
    ce = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    losses = {"mlm_logits": ce}
    metrics = {"mlm_logits": [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]}
    task = config.task
    extra = ([f"{task.sentence}_logits"] if task.sentence else []) + (
        ["sbo_logits"] if task.sbo else []
    )
    for key in extra:
        losses[key] = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        metrics[key] = [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]
    model.compile(
        optimizer=make_adamw(
            model,
            config.learning_rate,
            steps * config.epochs,
            config.warmup_fraction,
            config.weight_decay,
            gradient_accumulation=config.gradient_accumulation,
            beta_2=config.beta_2,
        ),
        loss=losses,
        weighted_metrics=metrics,
    )


def _fit(run, model, train, steps, config, callbacks, verbose):
    """`model.fit` for `config.epochs` of `steps` batches; returns (its
    History, the seconds it took, the chief's HistoryFile or None)."""
    # An epoch is one pass over the corpus, or its first `steps` batches:
    # the same batches whether or not the run was resumed.
    train = train.take(steps)
    throughput = Throughput(
        config.batch_size, num_workers=distribute.num_workers(run.strategy)
    )
    train = throughput.count_tokens(train).apply(
        tf.data.experimental.assert_cardinality(steps)
    )
    if run.multi:
        train = distribute.shard_by_data(train)
    history = HistoryFile(run.out / "history.json") if run.chief else None
    started = time.time()
    trained = model.fit(
        train,
        epochs=config.epochs,
        shuffle=False,  # the dataset shuffles itself
        callbacks=[
            EpochCounter(run.epoch_variable, worker=distribute.worker_index(run.strategy)),
            throughput,
            *([history] if run.chief else []),
            *run.recovery_callbacks(callbacks),
        ],
        verbose=verbose,
    )
    seconds = time.time() - started
    distribute.remove_backup_root(run.out, run.strategy)
    return trained, seconds, history
