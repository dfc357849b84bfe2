"""`make bench`'s bfloat16 part (bench/peers.py): which runs get bfloat16
rows, and the check that bfloat16 training learns as float32 does.

bfloat16 rows run where the CPU computes bfloat16 natively (AVX-512 BF16 or
AMX): elsewhere bfloat16 is emulated and slower than float32, which says
nothing about the engines. `--bfloat16 on` forces them, `off` drops them.

The accuracy check fine-tunes MiniLM + a 5-way head (BERT's tanh pooler on
[CLS], as HF's `BertForSequenceClassification` has) for a fixed number of
steps on BBC News training articles, then labels the project's fixed
validation articles (not the test split), for the project and HF torch, each
in float32 and in bfloat16. Both engines get the same token ids (the
project's tokenizer, sequence 128), the same batches in the same order and
the same recipe: AdamW at 1e-4 with 10% linear warm-up then linear decay,
weight decay 0.01 (not on biases and LayerNorm), gradients clipped to norm 1,
dropout 0.1. A measurement, not a test: nothing asserts a figure.
"""

from __future__ import annotations

import time

# isort: off
import zoo  # noqa: F401  first: TensorFlow's environment (oneDNN, log level)

# isort: on
import keras
import numpy as np
import tensorflow as tf

from bench.peers_inputs import LENGTH
from bench.peers_training import (
    KERAS_POLICY,
    PRECISIONS,
    _hf_minilm_classifier,
    check_precision,
    torch_autocast,
)
from zoo.checkpoints import load_checkpoint
from zoo.datasets.corpora import bbc_news_split, minilm_checkpoint_dir
from zoo.models import Classifier
from zoo.models.encoder_task import dtype_policy_scope, with_dtype_policy
from zoo.text.tokenizer import tokenize_texts
from zoo.train.optimization import make_adamw
from zoo.utils.provenance import cpu_features

BATCH = 16
LEARNING_RATE = 1e-4
ACCURACY_ENGINES = ("project", "HF torch")
CHOICES = ("auto", "on", "off")


def bfloat16_plan(flags, choice="auto"):
    """None when this run measures bfloat16 rows, else the sentence the
    report prints instead. `flags`: the CPU's flags (`cpu_flags()`);
    `choice`: `--bfloat16`'s value."""
    if choice not in CHOICES:
        raise ValueError(
            f"--bfloat16 {choice!r}: expected one of {', '.join(CHOICES)} (auto: only "
            "where the CPU has AVX-512 BF16 or AMX)."
        )
    if choice == "off":
        return "no bfloat16 rows: --bfloat16 off"
    if choice == "on" or cpu_features(flags)["bf16"] != "none":
        return None
    return "no bfloat16 rows: the CPU has neither AVX-512 BF16 nor AMX"


def check_accuracy_steps(steps, split=None):
    """`steps` itself, when BBC's training split has `steps * BATCH` articles
    for the accuracy check (each article trained on once)."""
    train = len((split or bbc_news_split())["train"])
    if not 1 <= steps * BATCH <= train:
        raise ValueError(
            f"--accuracy-steps {steps}: {steps} x {BATCH} articles needed, BBC's training "
            f"split has {train}; give 1 to {train // BATCH} steps."
        )
    return steps


def _bbc_inputs(steps):
    """(train ids, train labels, validation ids, validation labels): the
    first `steps * BATCH` training articles in a fixed shuffle, and every
    validation article, tokenized by the project's MiniLM tokenizer."""
    split = bbc_news_split()
    check_accuracy_steps(steps, split)
    _, tokenizer = load_checkpoint(minilm_checkpoint_dir())
    names = sorted({label for _, label in split["train"]})
    need = steps * BATCH
    order = np.random.default_rng(0).permutation(len(split["train"]))[:need]
    train = [split["train"][i] for i in order]

    def arrays(pairs):
        ids = tokenize_texts(tokenizer, [t for t, _ in pairs], LENGTH)
        return ids, np.array([names.index(y) for _, y in pairs])

    return (*arrays(train), *arrays(split["validation"]))


def accuracy_worker(engine, precision, steps):
    """{"accuracy", "logits", "train_seconds"} after `steps` fine-tuning
    steps of `engine` in `precision`, on the validation articles."""
    check_precision(precision)
    if engine not in ACCURACY_ENGINES:
        raise ValueError(
            f"accuracy engine {engine!r}: expected one of {', '.join(ACCURACY_ENGINES)}."
        )
    if engine == "project":
        # Before any TensorFlow op (the tokenizer's among them), which fixes it.
        tf.config.threading.set_intra_op_parallelism_threads(2)
    x, y, x_val, y_val = _bbc_inputs(steps)
    t0 = time.perf_counter()
    if engine == "HF torch":
        predict = _hf_trained(x, y, steps, precision)
    else:
        with dtype_policy_scope(KERAS_POLICY[precision]):
            predict = _project_trained(x, y, steps, precision)
    seconds = time.perf_counter() - t0
    logits = predict(x_val)
    predictions = logits.argmax(-1)
    return {
        "accuracy": float((predictions == y_val).mean()),
        "logits": logits.tolist(),
        "train_seconds": seconds,
    }


def _project_trained(x, y, steps, precision):
    """The project's classifier after `steps` steps of `fit`, as a function
    of ids -> float32 logits."""
    keras.utils.set_random_seed(0)
    encoder, _ = load_checkpoint(minilm_checkpoint_dir())
    if KERAS_POLICY[precision]:
        encoder = with_dtype_policy(encoder, KERAS_POLICY[precision])
    model = Classifier(encoder, 5, pooling="pooled", dropout=0.1)
    model.compile(
        optimizer=make_adamw(model, LEARNING_RATE, steps),
        loss={"logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True)},
    )
    model.fit(x, {"logits": y}, batch_size=BATCH, epochs=1, shuffle=False, verbose=0)
    return lambda ids: model.predict(ids, batch_size=32, verbose=0)["logits"]


def _hf_trained(x, y, steps, precision):
    """HF's `BertForSequenceClassification` after `steps` PyTorch steps, as
    a function of ids -> float32 logits."""
    # The test extra's PyTorch: a peer, not a runtime dependency.
    import torch
    import transformers

    torch.manual_seed(0)  # the head's initial weights
    model = _hf_minilm_classifier()

    def tensors(ids, b):
        return {
            "input_ids": torch.from_numpy(ids["token_ids"][b].astype("int64")),
            "token_type_ids": torch.from_numpy(ids["segment_ids"][b].astype("int64")),
            "attention_mask": torch.from_numpy(ids["padding_mask"][b].astype("int64")),
        }

    no_decay = ("bias", "LayerNorm")
    named = list(model.named_parameters())
    opt = torch.optim.AdamW(
        [
            {"params": [p for n, p in named if not any(k in n for k in no_decay)]},
            {
                "params": [p for n, p in named if any(k in n for k in no_decay)],
                "weight_decay": 0.0,
            },
        ],
        lr=LEARNING_RATE,
        weight_decay=0.01,
    )
    schedule = transformers.get_linear_schedule_with_warmup(opt, round(0.1 * steps), steps)
    model.train()
    for i in range(steps):
        b = slice(i * BATCH, (i + 1) * BATCH)
        with torch_autocast(precision):
            loss = model(**tensors(x, b), labels=torch.from_numpy(y[b])).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        schedule.step()
        opt.zero_grad()
    model.eval()

    def predict(ids):
        out = []
        with torch.no_grad(), torch_autocast(precision):
            for start in range(0, len(ids["token_ids"]), 32):
                logits = model(**tensors(ids, slice(start, start + 32))).logits
                out.append(logits.float().numpy())
        return np.concatenate(out)

    return predict


def accuracy_row(run_child, steps, load_average):
    """The report's accuracy row: each engine x precision's validation
    accuracy after `steps` steps, one child process each (`run_child(*argv)`
    returns the child's result); the note says how often each engine's
    bfloat16 labels equal its float32 ones and how far its logits moved, as
    the mean absolute difference over the mean absolute float32 logit (0
    would mean bfloat16 changed nothing: the runs are seeded alike)."""
    results = {}
    load = load_average()
    for engine in ACCURACY_ENGINES:
        for precision in PRECISIONS:
            print(f"accuracy: {engine}, {precision}, {steps} steps", flush=True)
            results[engine, precision] = run_child(
                "--child",
                "accuracy",
                "--engine",
                engine,
                "--precision",
                precision,
                "--steps",
                str(steps),
            )
    logits = {k: np.array(r["logits"]) for k, r in results.items()}
    agreement, moved = {}, {}
    for engine in ACCURACY_ENGINES:
        full, half = logits[engine, "float32"], logits[engine, "bfloat16"]
        agreement[engine] = float(np.mean(full.argmax(-1) == half.argmax(-1)))
        moved[engine] = float(np.abs(full - half).mean() / np.abs(full).mean())
    articles = len(logits[ACCURACY_ENGINES[0], "float32"])
    return {
        "row": f"MiniLM fine-tuned {steps} steps (batch {BATCH} x {LENGTH}) on BBC "
        f"training articles: accuracy on its {articles} validation articles",
        "unit": "accuracy",
        "lower_is_better": False,
        "compare": False,  # a check on each engine's precisions, not a race
        "values": {f"{e} {p}": r["accuracy"] for (e, p), r in results.items()},
        "train_seconds": {f"{e} {p}": r["train_seconds"] for (e, p), r in results.items()},
        "load": [load, load_average()],
        "note": "bfloat16 labels equal to the same engine's float32 labels: "
        + ", ".join(f"{e} {a:.1%}" for e, a in agreement.items())
        + "; mean |bfloat16 logit - float32 logit| over mean |float32 logit|: "
        + ", ".join(f"{e} {m:.2%}" for e, m in moved.items())
        + "; training seconds: "
        + ", ".join(f"{e} {p} {r['train_seconds']:.0f}" for (e, p), r in results.items()),
    }
