"""`make bench`'s training rows (bench/peers.py), one engine per process:
fine-tuning examples/s (the project's `fit`, a PyTorch loop, keras-hub's
`fit`) and distillation examples/s (`Distiller.fit` against a PyTorch loop),
in float32 or bfloat16.

bfloat16 is each engine's usual mixed precision: Keras's `mixed_bfloat16`
policy for the project (set up as `zoo finetune` / `zoo distill
--mixed-precision mixed_bfloat16` do) and keras-hub, and
`torch.autocast("cpu", dtype=torch.bfloat16)` around the forward pass for
HF torch (what HF's Trainer does with `--bf16` on a CPU). Weights and
optimizer state stay float32 in all of them."""

from __future__ import annotations

import contextlib
import time

# isort: off
import zoo  # noqa: F401  first: TensorFlow's environment (oneDNN, log level)

# isort: on
import keras
import keras_hub
import numpy as np
import tensorflow as tf

from bench.peers_inputs import LENGTH, _ids
from zoo.checkpoints import load_checkpoint
from zoo.datasets.corpora import minilm_checkpoint_dir
from zoo.distill import Distiller, make_student
from zoo.models import Classifier
from zoo.models.encoder_task import dtype_policy_scope, with_dtype_policy
from zoo.train.optimization import make_adamw
from zoo.utils.latency import StepTimes

PRECISIONS = ("float32", "bfloat16")
KERAS_POLICY = {"float32": None, "bfloat16": "mixed_bfloat16"}


def check_precision(precision):
    """`precision` itself, when it is one the training rows measure."""
    if precision not in PRECISIONS:
        raise ValueError(
            f"precision {precision!r}: the training rows measure {' or '.join(PRECISIONS)}; "
            "give one of those."
        )
    return precision


def torch_autocast(precision):
    """The context a PyTorch forward pass runs in for `precision`: bfloat16
    autocast on the CPU, or nothing for float32."""
    # The test extra's PyTorch: a peer, not a runtime dependency.
    import torch

    if check_precision(precision) == "float32":
        return contextlib.nullcontext()
    return torch.autocast("cpu", dtype=torch.bfloat16)


def _hf_minilm_classifier():
    """HF transformers' MiniLM + a 5-way head on PyTorch, 2 threads."""
    # The test extra's PyTorch: a peer, not a runtime dependency.
    import torch
    import transformers

    torch.set_num_threads(2)
    return transformers.BertForSequenceClassification.from_pretrained(
        minilm_checkpoint_dir(), num_labels=5, attn_implementation="eager"
    )


def _torch_train_rate(parameters, loss_of, batch, steps, precision):
    """Examples/s of `steps` PyTorch AdamW steps (lr 5e-5, gradients clipped
    to norm 1) after 2 warm-up steps; `loss_of(b)` is the loss of the
    examples in slice `b`, computed under `precision`'s autocast (the
    backward pass runs outside it, as autocast asks)."""
    # The test extra's PyTorch: a peer, not a runtime dependency.
    import torch

    parameters = list(parameters)
    opt = torch.optim.AdamW(parameters, lr=5e-5)
    times = []
    for i in range(steps + 2):
        t0 = time.perf_counter()
        with torch_autocast(precision):
            loss = loss_of(slice(i * batch, (i + 1) * batch))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(parameters, 1.0)
        opt.step()
        opt.zero_grad()
        times.append(time.perf_counter() - t0)
    return batch * steps / sum(times[2:])


def finetune_worker(engine, steps, precision="float32"):
    """Examples/s of `steps` training steps (after 2 warm-up steps) of MiniLM
    + a 5-way head, batch 16 x 128, AdamW, in `precision`, in this process."""

    check_precision(precision)

    batch = 16
    ids = _ids(batch * (steps + 2), seed=1)
    labels = np.random.default_rng(0).integers(0, 5, len(ids))
    if engine == "HF torch":
        # The test extra's PyTorch: a peer, not a runtime dependency.
        import torch

        model = _hf_minilm_classifier()
        model.train()
        mask = torch.ones(batch, LENGTH, dtype=torch.int64)
        return _torch_train_rate(
            model.parameters(),
            lambda b: (
                model(
                    input_ids=torch.from_numpy(ids[b].astype("int64")),
                    attention_mask=mask,
                    labels=torch.from_numpy(labels[b]),
                ).loss
            ),
            batch,
            steps,
            precision,
        )

    tf.config.threading.set_intra_op_parallelism_threads(2)
    with dtype_policy_scope(KERAS_POLICY[precision]):
        times = _keras_finetune_times(engine, ids, labels, batch, steps, precision)
    return batch * steps / sum(times[2:])


def _keras_finetune_times(engine, ids, labels, batch, steps, precision):
    """Each step's seconds of `fit` for the project or keras-hub, built under
    the dtype policy in force."""
    clock = StepTimes()
    x = {
        "token_ids": ids,
        "segment_ids": np.zeros_like(ids),
        "padding_mask": np.ones_like(ids),
    }
    if engine == "project":
        encoder, _ = load_checkpoint(minilm_checkpoint_dir())
        if KERAS_POLICY[precision]:
            # As `zoo finetune --mixed-precision` does: the encoder rebuilt
            # under the policy (a no-op here, where it was loaded under it).
            encoder = with_dtype_policy(encoder, KERAS_POLICY[precision])
        model = Classifier(encoder, 5, pooling="cls")
        model.compile(
            optimizer=make_adamw(model, 5e-5, steps + 2),
            loss={"logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True)},
        )
        model.fit(
            x,
            {"logits": labels},
            batch_size=batch,
            epochs=1,
            shuffle=False,
            verbose=0,
            callbacks=[clock],
        )
    else:
        backbone = keras_hub.models.BertBackbone(
            vocabulary_size=30522,
            num_layers=6,
            num_heads=12,
            hidden_dim=384,
            intermediate_dim=1536,
            max_sequence_length=512,
        )
        model = keras_hub.models.BertTextClassifier(
            backbone, num_classes=5, preprocessor=None
        )
        model.compile(
            optimizer=keras.optimizers.AdamW(5e-5),
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        )
        model.fit(
            x,
            labels,
            batch_size=batch,
            epochs=1,
            shuffle=False,
            verbose=0,
            callbacks=[clock],
        )
    return clock.times


def distill_worker(engine, steps, precision="float32"):
    """Examples/s of `steps` distillation steps (after 2 warm-up steps):
    MiniLM + a 5-way head as the frozen teacher, a 2-layer student from its
    layers 0 and 3, DistilBERT's losses (soft targets at T=2 x5, hard x2,
    last-hidden-state cosine x1), AdamW, clipnorm 1, batch 16 x 128. Under
    bfloat16 the student computes in bfloat16 and the teacher in float32,
    as `zoo distill --mixed-precision mixed_bfloat16` runs them (its teacher
    comes from a model directory, which records float32)."""

    check_precision(precision)

    batch, temperature = 16, 2.0
    ids = _ids(batch * (steps + 2), seed=2)
    labels = np.random.default_rng(1).integers(0, 5, len(ids))
    if engine == "HF torch":
        # The test extra's PyTorch: a peer, not a runtime dependency.
        import torch
        import torch.nn.functional as F
        import transformers

        teacher = _hf_minilm_classifier()
        teacher.eval()
        config = transformers.BertConfig.from_dict(teacher.config.to_dict())
        config.num_hidden_layers = 2
        student = transformers.BertForSequenceClassification(config)
        picked = {0: 0, 3: 1}  # teacher layer -> student layer, as make_student's (0, 3)
        state = {}
        for key, value in teacher.state_dict().items():
            if ".layer." in key:
                index = int(key.split(".layer.")[1].split(".")[0])
                if index not in picked:
                    continue
                key = key.replace(f".layer.{index}.", f".layer.{picked[index]}.")
            state[key] = value
        student.load_state_dict(state)
        student.train()
        mask = torch.ones(batch, LENGTH, dtype=torch.int64)

        def loss_of(b):
            x = torch.from_numpy(ids[b].astype("int64"))
            # The teacher in float32, as the project's is (see the docstring).
            with torch.no_grad(), torch.autocast("cpu", enabled=False):
                t = teacher(input_ids=x, attention_mask=mask, output_hidden_states=True)
            s = student(input_ids=x, attention_mask=mask, output_hidden_states=True)
            soft = (
                F.kl_div(
                    F.log_softmax(s.logits / temperature, -1),
                    F.softmax(t.logits / temperature, -1),
                    reduction="batchmean",
                )
                * temperature**2
            )
            hard = F.cross_entropy(s.logits, torch.from_numpy(labels[b]))
            cosine = (
                1 - F.cosine_similarity(t.hidden_states[-1], s.hidden_states[-1], dim=-1)
            ).mean()
            return 5 * soft + 2 * hard + cosine

        return _torch_train_rate(student.parameters(), loss_of, batch, steps, precision)

    tf.config.threading.set_intra_op_parallelism_threads(2)
    with dtype_policy_scope(KERAS_POLICY[precision]):
        times = _project_distill_times(ids, labels, batch, steps)
    return batch * steps / sum(times[2:])


def _project_distill_times(ids, labels, batch, steps):
    """Each step's seconds of `Distiller.fit`, the student built under the
    dtype policy in force and the teacher in float32."""
    clock = StepTimes()
    encoder, _ = load_checkpoint(minilm_checkpoint_dir())
    teacher = with_dtype_policy(Classifier(encoder, 5, pooling="cls"), "float32")
    student = make_student(teacher, 2, layer_map=(0, 3))
    distiller = Distiller(teacher, student, layer_map=(0, 3))
    distiller.compile(optimizer=make_adamw(student, 5e-5, steps + 2))
    distiller.optimizer.build(distiller._student_variables())  # as `zoo distill` does
    x = {
        "token_ids": ids,
        "segment_ids": np.zeros_like(ids),
        "padding_mask": np.ones_like(ids),
    }
    distiller.fit(
        x,
        {"logits": labels},
        batch_size=batch,
        epochs=1,
        shuffle=False,
        verbose=0,
        callbacks=[clock],
    )
    return clock.times
