"""`Distiller`: a `keras.Model` that trains a student against a frozen
teacher through `model.fit` (the keras-io distiller pattern, extended for
BERT: masks, hidden-state cosine, layer-wise transfer).

    distiller = Distiller(teacher, student)   # DistilBERT defaults
    distiller.compile(optimizer=keras.optimizers.AdamW(5e-5))
    distiller.fit(dataset)                    # (x, y) as zoo.train.data yields
    distiller.student.save(...)

Why not `keras.distillation.Distiller`: its losses see only the models'
outputs (or layers found by name, which inside a nested encoder means a
second forward pass), average over the whole local batch (no padding or
MLM masks, no division by the *global* batch under tf.distribute) and cap
the student-loss weight at 1. The teacher-freezing and metric pattern is
the same.

Training is Keras's own train step on every backend (TensorFlow, JAX,
PyTorch; issue #39): `call` runs the student (with its internals while
training) and `compute_loss` the frozen teacher and the terms, as Keras's
guide to custom training on any backend does. `cache_teacher` builds a
tf.data pipeline, which feeds `fit` on every backend.
"""

from __future__ import annotations

import math

import keras
import numpy as np
from keras import ops

from zoo.configs import INPUT_NAMES
from zoo.distill import losses
from zoo.distill.student_init import default_layer_map
from zoo.models import Classifier, MaskedLM, QuestionAnswerer, TokenClassifier
from zoo.models.bert_encoder import BertEncoder, padding_mean
from zoo.models.encoder_task import as_float32, encoder_inputs

# Cached teacher outputs travel in `x` under these keys (see cache_teacher).
TEACHER_PREFIX = "teacher/"
# The evaluation metric of how far the student is from the teacher.
TEACHER_KL = "teacher_kl"
# A cache beyond this many bytes is refused with the figure (attention maps
# of every layer for every example are the usual culprit).
MAX_CACHE_BYTES = 4 * 2**30


def with_internals(model):
    """A model sharing `model`'s weights whose outputs are `model`'s plus
    `hidden_states` and `attention_probs` of its encoder, from one forward
    pass (the head is re-applied to the encoder-with-internals outputs, so
    dropout masks are the same for logits and hidden states)."""

    if isinstance(model, BertEncoder):
        return model.with_internals()
    encoder = model.encoder
    inputs = encoder_inputs()
    if isinstance(model, MaskedLM):
        inputs["masked_positions"] = keras.Input(
            shape=(None,), dtype="int32", name="masked_positions"
        )
    enc = encoder.with_internals()({k: inputs[k] for k in INPUT_NAMES})
    seq = enc["sequence_output"]
    if isinstance(model, Classifier):
        pooling = model.pooling
        if pooling == "auto":
            pooling = "pooled" if encoder.pooler_dense is not None else "cls"
        if pooling == "pooled":
            x = enc["pooled_output"]
        elif pooling == "cls":
            x = seq[:, 0, :]
        else:
            x = padding_mean(seq, inputs["padding_mask"])
        outputs = {"logits": as_float32(model.classify(x))}
    elif isinstance(model, TokenClassifier):
        outputs = {"logits": as_float32(model.output_dense(model.output_dropout(seq)))}
    elif isinstance(model, QuestionAnswerer):
        logits = as_float32(model.span_dense(seq))
        keep = keras.ops.greater(inputs["padding_mask"], 0)
        outputs = {
            "start_logits": keras.ops.where(keep, logits[:, :, 0], -1e4),
            "end_logits": keras.ops.where(keep, logits[:, :, 1], -1e4),
        }
    elif isinstance(model, MaskedLM):
        outputs = {
            "mlm_logits": as_float32(model.mlm_head(seq, inputs["masked_positions"]))
        }
    else:
        raise TypeError(f"Distiller: unsupported model {type(model).__name__}.")
    outputs["sequence_output"] = seq
    outputs["hidden_states"] = list(enc["hidden_states"])
    outputs["attention_probs"] = list(enc["attention_probs"])
    return keras.Model(inputs, outputs, name=f"{model.name}_with_internals")


def _global_batch_mean(per_example):
    """The per-example loss summed and divided by the *global* batch: Keras 3
    sums gradients over replicas. On TensorFlow, `tf.nn.compute_average_loss`
    (the replica count of a `tf.distribute` strategy); JAX and PyTorch train
    on one replica here, where it is the mean."""
    if keras.backend.backend() == "tensorflow":
        # TensorFlow-only branch (the backend is TensorFlow here, so it is loaded).
        import tensorflow as tf

        return tf.nn.compute_average_loss(per_example)
    return ops.mean(per_example)


# The Distiller's loss numbers, as DistillConfig and the CLI flags name them.
LOSS_NUMBERS = (
    "temperature",
    "soft_weight",
    "hard_weight",
    "cosine_weight",
    "hidden_weight",
    "attention_weight",
)


# The largest temperature or loss weight taken: far past any recipe (T is
# 1-20, weights 0-10), and a weighted loss stays finite in float32.
MAX_LOSS_NUMBER = 1e6


def check_loss_numbers(**numbers):
    """The temperature a finite number > 0, each loss weight a finite
    number >= 0 (NaN would train to NaN; a negative weight trains the
    student away from its teacher), each at most MAX_LOSS_NUMBER, and at
    least one weight > 0 (else nothing trains the student): a ValueError
    naming the flag."""
    for name, value in numbers.items():
        low = "> 0" if name == "temperature" else ">= 0"
        ok = (
            isinstance(value, (int, float))
            and not isinstance(value, bool)
            and math.isfinite(value)
            and (value > 0 if name == "temperature" else value >= 0)
        )
        if not ok:
            raise ValueError(
                f"--{name.replace('_', '-')} must be a finite number {low}; "
                f"received {value!r:.40}."
            )
        if value > MAX_LOSS_NUMBER:
            raise ValueError(
                f"--{name.replace('_', '-')} must be at most {MAX_LOSS_NUMBER:g}; received "
                f"{value:g}."
            )
    check_some_weight({k: v for k, v in numbers.items() if k.endswith("_weight")})


def check_some_weight(weights, why=""):
    """At least one of `weights` (name: value) above 0."""
    if weights and not any(weights.values()):
        raise ValueError(
            f"the loss weights ({', '.join('--' + k.replace('_', '-') for k in weights)}) "
            f"are all 0{why}: nothing would train the student; give at least one above 0 "
            "(the defaults: --soft-weight 5 --hard-weight 2 --cosine-weight 1)."
        )


class Distiller(keras.Model):
    """Trains `student` to match a frozen `teacher`.

    Loss = soft_weight * soft-target KL(T) * T²  (every logits output)
         + hard_weight * the student's own cross-entropy (labels in `y`)
         + cosine_weight * (1 - cos) of last hidden states (same width only)
         + hidden_weight * hidden-state MSE through learned projections
         + attention_weight * attention-distribution KL,
    each per example, divided by the global batch.

    Args:
        teacher, student: zoo models of the same kind (e.g. two
            `Classifier`s), or two encoders (then only the cosine and
            transfer terms apply).
        temperature, soft_weight, hard_weight, cosine_weight: DistilBERT's
            published defaults 2.0, 5.0, 2.0, 1.0.
        hidden_weight, attention_weight: layer-wise transfer (TinyBERT),
            off by default.
        layer_map: teacher layer for each student layer (transfer terms);
            default `default_layer_map`.
        restrict_to_mask: for MLM outputs, the soft term covers only the
            masked positions whose sample weight is non-zero.

    `x` is the models' input dict; `y` a dict of integer labels keyed by
    output name (or None: no hard term); the optional sample weight masks
    token-level positions (e.g. MLM label weights).
    """

    def __init__(
        self,
        teacher,
        student,
        *,
        temperature=2.0,
        soft_weight=5.0,
        hard_weight=2.0,
        cosine_weight=1.0,
        hidden_weight=0.0,
        attention_weight=0.0,
        layer_map=None,
        restrict_to_mask=True,
        name="distiller",
        **kwargs,
    ):
        super().__init__(name=name, **kwargs)
        check_loss_numbers(
            temperature=temperature,
            soft_weight=soft_weight,
            hard_weight=hard_weight,
            cosine_weight=cosine_weight,
            hidden_weight=hidden_weight,
            attention_weight=attention_weight,
        )
        teacher.trainable = False
        self.teacher = teacher
        self.student = student
        self.temperature = float(temperature)
        self.weights_by_term = {
            "soft": float(soft_weight),
            "hard": float(hard_weight),
            "cosine": float(cosine_weight),
            "hidden": float(hidden_weight),
            "attention": float(attention_weight),
        }
        self.restrict_to_mask = restrict_to_mask
        t_enc = getattr(teacher, "encoder", teacher)
        s_enc = getattr(student, "encoder", student)
        if self.weights_by_term["cosine"] and t_enc.hidden_dim != s_enc.hidden_dim:
            # Cosine between different widths is undefined; use the projected
            # hidden-state MSE for those students.
            self.weights_by_term["cosine"] = 0.0
            check_some_weight(
                {f"{k}_weight": v for k, v in self.weights_by_term.items()},
                f" once the cosine term is dropped (the student is {s_enc.hidden_dim} "
                f"wide, the teacher {t_enc.hidden_dim}: use --hidden-weight)",
            )
        self.layer_map = tuple(
            layer_map or default_layer_map(t_enc.num_layers, s_enc.num_layers)
        )
        self._needs_internals = any(
            self.weights_by_term[k] for k in ("cosine", "hidden", "attention")
        )
        self._teacher_view = with_internals(teacher) if self._needs_internals else teacher
        self._student_view = with_internals(student) if self._needs_internals else student
        self.projections = []
        if self.weights_by_term["hidden"]:
            same = t_enc.hidden_dim == s_enc.hidden_dim
            self.projections = [
                keras.layers.Dense(
                    t_enc.hidden_dim,
                    use_bias=False,
                    dtype="float32",
                    kernel_initializer="identity" if same else "glorot_uniform",
                    name=f"projection_{j}",
                )
                for j in range(len(self.layer_map) + 1)
            ]
            for p in self.projections:
                p.build((None, None, s_enc.hidden_dim))
        self._token_level = self._token_level_outputs(student)
        # Teacher, student and projections are built above; marking the
        # distiller built lets BackupAndRestore restore before the first batch.
        self.built = True
        self.trackers = {"loss": keras.metrics.Mean(name="loss")}
        for term, weight in self.weights_by_term.items():
            if weight:
                self.trackers[f"{term}_loss"] = keras.metrics.Mean(name=f"{term}_loss")
        # Evaluation only (`test_step`): Keras logs it as val_teacher_kl.
        self.trackers[TEACHER_KL] = keras.metrics.Mean(name=TEACHER_KL)

    @staticmethod
    def _token_level_outputs(model):
        if isinstance(model, TokenClassifier):
            return {"logits": "padding"}
        if isinstance(model, MaskedLM):
            return {"mlm_logits": "weights"}
        return {}

    @property
    def metrics(self):
        return list(self.trackers.values())

    def call(self, inputs, training=False):
        """The student's outputs; while training, with the encoder internals
        the transfer terms read (cached teacher outputs in `inputs` are
        dropped)."""
        inputs, _ = self._split_cached(inputs)
        if training:
            return self._student_view(inputs, training=True)
        return self.student(inputs, training=False)

    def _student_variables(self):
        return self.student.trainable_variables + [
            v for p in self.projections for v in p.trainable_variables
        ]

    @staticmethod
    def _weights(name, sample_weight):
        if isinstance(sample_weight, dict):
            return sample_weight.get(name)
        return sample_weight

    def _mask(self, name, x, sample_weight):
        """The positions the soft term of token-level output `name` covers:
        a tagger's real tokens; MLM's masked positions (restrict_to_mask)."""
        kind = self._token_level.get(name)
        if kind == "padding":
            return x["padding_mask"]
        if kind == "weights" and self.restrict_to_mask:
            return self._weights(name, sample_weight)
        return None

    def _hard(self, x, y, sample_weight, student_out):
        """The student's cross-entropy `[B]`. Token-level labels count where
        their sample weight is non-zero, as in fine-tuning: a tagger's
        labelled word pieces (not [CLS], [SEP], a word's later pieces or an
        unlabelled text), the masked positions of MLM; a tagger without
        weights, every real token."""
        total = 0.0
        for name, labels in y.items():
            kind = self._token_level.get(name)
            mask = self._weights(name, sample_weight) if kind else None
            if kind == "padding" and mask is None:
                mask = x["padding_mask"]
            total = total + losses.hard_loss(labels, student_out[name], mask)
        return total

    def _terms(self, x, y, sample_weight, teacher_out, student_out):
        """Per-example loss terms `{name: [B]}` (only the weighted ones)."""
        w = self.weights_by_term
        terms = {}
        soft = self._soft(x, sample_weight, teacher_out, student_out) if w["soft"] else None
        if soft is not None:
            terms["soft"] = soft
        if w["hard"] and y:
            terms["hard"] = self._hard(x, y, sample_weight, student_out)
        if w["cosine"]:
            terms["cosine"] = losses.cosine_loss(
                teacher_out["sequence_output"],
                student_out["sequence_output"],
                x["padding_mask"],
            )
        # Each term reads only its own teacher outputs: a cached teacher
        # (`cache_teacher`) keeps only those the weighted terms need.
        if w["hidden"]:
            terms["hidden"] = losses.hidden_transfer_loss(
                teacher_out["hidden_states"],
                student_out["hidden_states"],
                self.layer_map,
                self.projections,
                x["padding_mask"],
            )
        if w["attention"]:
            terms["attention"] = losses.attention_transfer_loss(
                teacher_out["attention_probs"],
                student_out["attention_probs"],
                self.layer_map,
                x["padding_mask"],
            )
        return terms

    def _soft(self, x, sample_weight, teacher_out, student_out):
        """The soft-target KL `[B]` at the temperature, summed over every
        logits output both models have (None when they share none)."""
        names = [k for k in student_out if k.endswith("logits") and k in teacher_out]
        if not names:
            return None
        return sum(
            losses.soft_target_loss(
                teacher_out[k],
                student_out[k],
                self.temperature,
                self._mask(k, x, sample_weight),
            )
            for k in names
        )

    def _labels(self, y):
        # Bare labels belong to the student's only logits output.
        if y is None or isinstance(y, dict):
            return y
        names = [k for k in self.student.output if k.endswith("logits")]
        if len(names) != 1:
            raise ValueError(f"Distiller: give labels as a dict keyed by {names}.")
        return {names[0]: y}

    def _needed_teacher_outputs(self, outputs):
        """The teacher outputs the weighted terms read (what a cache keeps)."""
        w = self.weights_by_term
        keep = {k: v for k, v in outputs.items() if k.endswith("logits")}
        if w["cosine"]:
            keep["sequence_output"] = outputs["sequence_output"]
        if w["hidden"]:
            keep["hidden_states"] = outputs["hidden_states"]
        if w["attention"]:
            keep["attention_probs"] = outputs["attention_probs"]
        return keep

    def cache_teacher(self, dataset, *, shuffle_seed=None):
        """Run the frozen teacher once over `dataset` and return a dataset of
        the same examples whose `x` also carries the teacher's outputs (only
        those the loss terms read), so `fit` never runs the teacher again.

        `dataset` yields batches `(x, y[, sample_weight])`; it is read once,
        in order, and re-batched at its first batch size. With `shuffle_seed`
        the cached examples are reshuffled every epoch (seeded); without, the
        batches come in the original order, so a run on the cache gives the
        same losses and weights as a run with the live teacher (tested).
        Costs memory: N x L x H floats for the cosine term's hidden states.
        """

        def teacher_outputs(x):
            return self._needed_teacher_outputs(self._teacher_view(x, training=False))

        if not self.run_eagerly and keras.backend.backend() == "tensorflow":
            # One traced graph (a second for a short last batch), as `fit`
            # runs the live teacher: TensorFlow's graph rewrites (oneDNN's
            # fused products) apply, and eager dispatch per op is gone.
            # The cache is a tf.data pipeline (it feeds `fit` on every backend).
            import tensorflow as tf

            teacher_outputs = tf.function(teacher_outputs, reduce_retracing=True)
        xs, ys, ws, outs = [], [], [], []
        batch_size = None
        for data in dataset:
            x, y, w = keras.utils.unpack_x_y_sample_weight(data)
            batch_size = batch_size or int(ops.shape(next(iter(x.values())))[0])
            out = teacher_outputs(x)
            flat = {}
            for k, v in out.items():
                if isinstance(v, (list, tuple)):
                    flat.update(
                        {f"{TEACHER_PREFIX}{k}/{i}": np.asarray(t) for i, t in enumerate(v)}
                    )
                else:
                    flat[f"{TEACHER_PREFIX}{k}"] = np.asarray(v)
            xs.append({k: np.asarray(v) for k, v in x.items()})
            outs.append(flat)
            ys.append(keras.tree.map_structure(np.asarray, y))
            ws.append(None if w is None else keras.tree.map_structure(np.asarray, w))
            size = sum(a.nbytes for o in outs for a in o.values())
            if size > MAX_CACHE_BYTES:
                raise ValueError(
                    f"cache_teacher: the teacher outputs exceed {MAX_CACHE_BYTES / 2**30:.0f} "
                    f"GiB after {len(outs)} batches ({sorted(flat)}); run without the cache, "
                    "or drop the attention/hidden-state terms that need per-layer maps."
                )
        if not xs:
            raise ValueError("cache_teacher: the dataset is empty.")

        def cat(parts):
            return keras.tree.map_structure(lambda *a: np.concatenate(a), *parts)

        x_all = {**cat(xs), **cat(outs)}
        parts = [x_all]
        if any(y is not None for y in ys):
            parts.append(cat(ys))
            if any(w is not None for w in ws):
                parts.append(cat(ws))
        # The cache is a tf.data pipeline (it feeds `fit` on every backend).
        import tensorflow as tf

        ds = tf.data.Dataset.from_tensor_slices(tuple(parts))
        if shuffle_seed is not None:
            ds = ds.shuffle(
                len(next(iter(x_all.values()))),
                seed=shuffle_seed,
                reshuffle_each_iteration=True,
            )
        return ds.batch(batch_size).prefetch(tf.data.AUTOTUNE)

    @staticmethod
    def _split_cached(x):
        """`x` without cached teacher outputs, and those outputs (or None)."""
        if not isinstance(x, dict) or not any(k.startswith(TEACHER_PREFIX) for k in x):
            return x, None
        inputs = {k: v for k, v in x.items() if not k.startswith(TEACHER_PREFIX)}
        cached, lists = {}, {}
        for k, v in x.items():
            if not k.startswith(TEACHER_PREFIX):
                continue
            name = k[len(TEACHER_PREFIX) :]
            if "/" in name:
                base, index = name.split("/")
                lists.setdefault(base, {})[int(index)] = v
            else:
                cached[name] = v
        for base, items in lists.items():
            cached[base] = [items[i] for i in sorted(items)]
        return inputs, cached

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        """The weighted terms against the frozen teacher, divided by the
        global batch; updates the loss trackers. `y_pred` is `call`'s
        (the student, with internals while training)."""
        y = self._labels(y)
        x, teacher_out = self._split_cached(x)
        if teacher_out is None:
            # The teacher is frozen and deterministic (no dropout): no
            # gradient into it (its variables are not trainable).
            teacher_out = self._teacher_view(x, training=False)
        teacher_out = keras.tree.map_structure(ops.stop_gradient, teacher_out)
        terms = self._terms(x, y, sample_weight, teacher_out, y_pred)
        per_example = sum(self.weights_by_term[k] * v for k, v in terms.items())
        loss = _global_batch_mean(per_example)
        self.trackers["loss"].update_state(ops.mean(per_example))
        for k, v in terms.items():
            self.trackers[f"{k}_loss"].update_state(ops.mean(v))
        return loss

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        # The trackers, updated in compute_loss (no compiled metrics).
        return {m.name: m.result() for m in self.metrics if m.name != TEACHER_KL}

    def test_step(self, data):
        """The student on labelled data: its hard loss (`loss`), and how far
        its outputs are from the teacher's there (`teacher_kl`: the
        soft-target term at the distillation temperature, over every logits
        output both models have), which reads the teacher's whole
        distribution on each text rather than one label."""
        x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
        y = self._labels(y)
        x, teacher_out = self._split_cached(x)
        student_out = self.student(x, training=False)
        if y:
            self.trackers["loss"].update_state(
                ops.mean(self._hard(x, y, sample_weight, student_out))
            )
        if teacher_out is None:
            teacher_out = self._teacher_view(x, training=False)
        kl = self._soft(x, sample_weight, teacher_out, student_out)
        if kl is not None:
            self.trackers[TEACHER_KL].update_state(ops.mean(kl))
        return {
            "loss": self.trackers["loss"].result(),
            TEACHER_KL: self.trackers[TEACHER_KL].result(),
        }
