"""One harness for every encoder family and every head: the tables of what
exists (`FAMILIES`, `HEADS`) and the checks each (family, head) pair goes
through (`CHECKS`), on tiny configs.

A new encoder family joins `FAMILIES` (with the tiny sizes it needs); a new
head joins `HEADS` (its output shapes, targets and losses):
tests/models/test_models.py refuses a registered family or an exported head
that is missing here, and runs every (family x head x check) as its own
item, `test_model_checks[<family>-<head>-<check>]`.

Models are tiny (width 8, two or four layers), so a check costs what
building and calling the Keras graph costs: each model is built once per
dtype policy and shared by the checks (`built`), and the heads of a family
share one encoder. The gradient check restores the weights it moves; the
compiled `fit` builds its own model (compiling changes what a save holds).
"""

from __future__ import annotations

import dataclasses
import functools
import pathlib
import tempfile
from collections.abc import Callable

import keras
import numpy as np
import tensorflow as tf

import zoo
from tests.helpers import (
    TINY,
    check_config_round_trip,
    check_save_reload,
    tiny_batch,
    to_numpy,
)
from zoo.configs import EncoderConfig
from zoo.models import build_encoder, dtype_policy_scope, sentence_embedding

B, T, P, C = 3, 7, 2, 4
SCCE = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
MSE = keras.losses.MeanSquaredError()

# Each family's encoder class and tiny sizes. ALBERT runs 4 layers on 2
# shared blocks (layers 0-1 block 0, 2-3 block 1) over 6-wide embeddings,
# so every check also goes through the sharing and the E -> H projection.
FAMILIES = {
    "bert": (zoo.BertEncoder, TINY),
    "distilbert": (zoo.DistilBertEncoder, TINY),
    "albert": (
        zoo.AlbertEncoder,
        {**TINY, "num_layers": 4, "embedding_dim": 6, "num_groups": 2},
    ),
    "roberta": (zoo.RobertaEncoder, TINY),
}


def tiny_encoder(family, **changes):
    """A `family` encoder on its tiny sizes, with `changes` over them."""
    cls, sizes = FAMILIES[family]
    return cls(**{**sizes, **changes})


def family_config(family) -> EncoderConfig:
    """The config `tiny_encoder(family)` builds (without building it)."""
    return EncoderConfig.for_family(family, **FAMILIES[family][1])


def batch(encoder, masked=False, size=B, length=T):
    """`tiny_batch` for `encoder`: segment ids within its segment table
    (RoBERTa has one type; DistilBERT has none and gets 0/1, which it ignores)."""
    inputs = tiny_batch(size, length, encoder.vocabulary_size, masked=P if masked else None)
    if encoder.num_segments:
        inputs["segment_ids"] = np.minimum(inputs["segment_ids"], encoder.num_segments - 1)
    return inputs


@dataclasses.dataclass(frozen=True)
class Head:
    """A model put on an encoder, as the harness sees it.

    `outputs`: each output's shape in symbols (B batch, T sequence, P masked
    positions, H hidden_dim, C classes, V vocabulary; ints as they are).
    `targets`: each output's (target for a batch of B x T, loss), for the
    gradient and fit checks. `reads_pooler`: the outputs depend on the
    pooled output (when the encoder has a pooler), so its weights get
    gradients; `needs_pooler`: the head refuses an encoder without one.
    `padding_value`: what the outputs hold at padding positions, if the
    head fixes it. `step`: the SGD step the gradient check takes (small
    enough for the loss to fall on every family). `softmax_invariant`:
    weights whose gradient is zero in exact arithmetic (a bias added to
    every position of a softmax over positions); rounding may leave a tiny
    one or none, so the check accepts either."""

    cls: type
    build: Callable
    outputs: dict
    targets: dict
    reads_pooler: bool
    needs_pooler: bool = False
    masked: bool = False
    padding_value: float | None = None
    step: float = 0.1
    softmax_invariant: tuple = ()


ENCODER = "encoder"  # the bare encoder, as its own row of the table
HEADS = {
    ENCODER: Head(
        zoo.BertEncoder,
        lambda encoder: encoder,
        {"sequence_output": ("B", "T", "H"), "pooled_output": ("B", "H")},
        {},
        reads_pooler=True,
    ),
    "classifier": Head(
        zoo.Classifier,
        lambda encoder: zoo.Classifier(encoder, C, labels=list("abcd")),
        {"logits": ("B", "C")},
        {"logits": (np.arange(B) % C, SCCE)},
        reads_pooler=True,
    ),
    "token_classifier": Head(
        zoo.TokenClassifier,
        lambda encoder: zoo.TokenClassifier(encoder, C),
        {"logits": ("B", "T", "C")},
        {"logits": (np.ones((B, T), "int32"), SCCE)},
        reads_pooler=False,
    ),
    "question_answerer": Head(
        zoo.QuestionAnswerer,
        zoo.QuestionAnswerer,
        {"start_logits": ("B", "T"), "end_logits": ("B", "T")},
        {
            "start_logits": (np.ones(B, "int32"), SCCE),
            "end_logits": (np.ones(B, "int32"), SCCE),
        },
        reads_pooler=False,
        padding_value=-1e4,  # neither softmax nor n-best decoding picks padding
        step=0.01,  # at 0.1 two softmaxes over the positions can overshoot
        # The span bias adds the same value to every position's start (end)
        # logit: the softmax over positions cancels it. An AMX Xeon gives it
        # exactly zero gradient where other CPUs leave rounding noise.
        softmax_invariant=("span_logits/bias",),
    ),
    "regressor": Head(
        zoo.Regressor,
        # Mean pooling here, the classifier's default ("pooled", or "cls"
        # without a pooler) there: the harness goes through every mode.
        lambda encoder: zoo.Regressor(encoder, pooling="mean"),
        {"score": ("B",)},
        {"score": (np.linspace(0.0, 5.0, B).astype("float32"), MSE)},
        reads_pooler=False,
        step=0.01,  # squared errors on a 0..5 scale: large gradients
    ),
    "masked_lm": Head(
        zoo.MaskedLM,
        zoo.MaskedLM,
        {"mlm_logits": ("B", "P", "V")},
        {"mlm_logits": (np.full((B, P), 7, "int32"), SCCE)},
        reads_pooler=False,
        masked=True,
    ),
    "nsp": Head(
        zoo.NextSentencePredictor,
        zoo.NextSentencePredictor,
        {"nsp_logits": ("B", 2)},
        {"nsp_logits": (np.arange(B) % 2, SCCE)},
        reads_pooler=True,
        needs_pooler=True,
    ),
    "pretrainer": Head(
        zoo.Pretrainer,
        zoo.Pretrainer,
        {"mlm_logits": ("B", "P", "V"), "nsp_logits": ("B", 2)},
        {
            "mlm_logits": (np.full((B, P), 7, "int32"), SCCE),
            "nsp_logits": (np.arange(B) % 2, SCCE),
        },
        reads_pooler=True,
        needs_pooler=True,
        masked=True,
    ),
}


def pairs():
    """Every (family, head) that can be built: all but a head that needs a
    pooler on a family without one (those refuse, tested on their own)."""
    return [
        (family, head)
        for family in FAMILIES
        for head, spec in HEADS.items()
        if family_config(family).has_pooler or not spec.needs_pooler
    ]


@functools.cache
def shared_encoder(family, policy="float32"):
    """The `family` encoder the heads of `built` share, under `policy`."""
    with dtype_policy_scope(policy):
        keras.utils.set_random_seed(0)  # the same weights whichever item builds it
        return tiny_encoder(family)


@functools.cache
def built(family, head, policy="float32"):
    """The model of a pair under `policy` (on the family's shared encoder),
    built by the first item that asks. Checks read it; one that changes its
    weights puts them back."""
    encoder = shared_encoder(family, policy)
    with dtype_policy_scope(policy):
        keras.utils.set_random_seed(1)
        return HEADS[head].build(encoder)


def encoder_of(model):
    return getattr(model, "encoder", model)


def expected_shapes(head, model, size=B, length=T, masked=P):
    """Each output's shape; None for B, T and P gives the symbolic shapes."""
    encoder = encoder_of(model)
    dims = {"B": size, "T": length, "P": masked, "C": C}
    dims |= {"H": encoder.hidden_dim, "V": encoder.vocabulary_size}
    shapes = {
        name: tuple(dims.get(d, d) for d in shape)
        for name, shape in HEADS[head].outputs.items()
    }
    if head == ENCODER and encoder.pooler_dense is None:
        del shapes["pooled_output"]  # DistilBERT: no pooler
    return shapes


# === The checks: each takes (family, head) ===


def check_outputs(family, head):
    """Eager call: the outputs' names, shapes, float32 and finite; a
    symbolic call gives the same names and static shapes."""
    model = built(family, head)
    inputs = batch(encoder_of(model), HEADS[head].masked)
    eager = model(inputs)
    want = expected_shapes(head, model)
    assert {k: tuple(v.shape) for k, v in eager.items()} == want
    for name, value in eager.items():
        assert keras.backend.standardize_dtype(value.dtype) == "float32", name
        assert np.all(np.isfinite(np.asarray(value))), name
    symbolic = model({k: keras.Input((None,), dtype="int32", name=k) for k in inputs})
    assert {k: tuple(v.shape) for k, v in symbolic.items()} == expected_shapes(
        head, model, None, None, None
    )


def check_padding(family, head):
    """Padding (with garbage ids) changes no output at real positions; the
    head's fixed value, if any, fills the padding positions."""
    model = built(family, head)
    spec = HEADS[head]
    short_inputs = batch(encoder_of(model), spec.masked, size=1, length=5)
    assert short_inputs["padding_mask"].all()
    padded = dict(short_inputs)
    for name in zoo.INPUT_NAMES:
        padded[name] = np.pad(short_inputs[name], ((0, 0), (0, 4)))
    padded["token_ids"][:, 5:] = 3  # garbage ids in the padding
    short, long = to_numpy(model(short_inputs)), to_numpy(model(padded))
    for name, shape in spec.outputs.items():
        if name not in short:
            continue  # pooled_output of an encoder without a pooler
        if "T" in shape:
            if spec.padding_value is not None:
                assert np.all(long[name][:, 5:] == spec.padding_value), name
            long[name] = long[name][:, :5]
        np.testing.assert_allclose(long[name], short[name], atol=1e-6, err_msg=name)


def check_config(family, head):
    """`from_config(get_config())` is the same class and, with the same
    weights, gives the same outputs exactly; the encoder's EncoderConfig
    survives JSON and builds the family's class with the counted weights."""
    model = built(family, head)
    check_config_round_trip(model, batch(encoder_of(model), HEADS[head].masked))
    if head == ENCODER:
        config = model.config
        assert config == family_config(family)
        assert EncoderConfig.from_dict(config.to_dict()) == config
        assert type(model).from_config(model.get_config()).config == config
        rebuilt = build_encoder(config)
        assert type(rebuilt) is FAMILIES[family][0]
        assert rebuilt.count_params() == model.count_params() == config.num_parameters()


def check_keras_file(family, head):
    """A `.keras` file reloads in this process, in safe mode, as the same
    class with the same outputs to 1e-6 (an encoder with the same config)."""
    model = built(family, head)
    with tempfile.TemporaryDirectory() as folder:
        path = pathlib.Path(folder) / f"{family}_{head}.keras"
        check_save_reload(model, batch(encoder_of(model), HEADS[head].masked), path)
        if head == ENCODER:
            back = keras.saving.load_model(path, safe_mode=True)
            assert back.config == model.config


def check_mixed(policy):
    def check(family, head):
        """Built under `policy`, the encoder computes in its low precision
        and every head output is float32 (finite); a bare encoder outputs
        its compute dtype, and its sentence embeddings are float32."""
        model = built(family, head, policy)
        encoder = encoder_of(model)
        assert encoder.compute_policy.name == policy
        inputs = batch(encoder, HEADS[head].masked)
        want = policy.removeprefix("mixed_") if head == ENCODER else "float32"
        for name, value in model(inputs).items():
            assert keras.backend.standardize_dtype(value.dtype) == want, name
            assert np.all(np.isfinite(np.asarray(value, "float32"))), name
        if head == ENCODER:
            embedding = sentence_embedding(encoder, inputs)
            assert keras.backend.standardize_dtype(embedding.dtype) == "float32"

    check.__name__ = f"check_{policy}"
    return check


def check_internals(family, head):
    """`with_internals()` shares the weights and outputs every layer's hidden
    states and attention probabilities; padding keys get no attention."""
    encoder = built(family, head)
    inputs = batch(encoder)
    full = encoder.with_internals()(inputs)
    layers, heads = encoder.num_layers, encoder.num_heads
    assert len(full["hidden_states"]) == layers + 1
    assert len(full["attention_probs"]) == layers
    for hidden in full["hidden_states"]:
        assert tuple(hidden.shape) == (B, T, encoder.hidden_dim)
    probs = np.asarray(full["attention_probs"][0])
    assert probs.shape == (B, heads, T, T)
    np.testing.assert_allclose(probs.sum(-1), 1.0, atol=1e-5)
    pad_keys = inputs["padding_mask"] == 0  # (B, T)
    assert pad_keys.any()
    assert np.all(probs.transpose(0, 3, 1, 2)[pad_keys] < 1e-6)
    np.testing.assert_array_equal(
        np.asarray(full["hidden_states"][-1]),
        np.asarray(encoder(inputs)["sequence_output"]),
    )


def check_sentence_embedding(family, head):
    """`sentence_embedding`: float32 unit vectors, the mean of the real
    tokens' vectors (computed here in NumPy), unchanged by padding."""
    encoder = built(family, head)
    inputs = batch(encoder)
    embedding = np.asarray(sentence_embedding(encoder, inputs))
    assert embedding.shape == (B, encoder.hidden_dim) and embedding.dtype == np.float32
    sequence = np.asarray(encoder(inputs)["sequence_output"], "float64")
    mask = inputs["padding_mask"][:, :, None]
    mean = (sequence * mask).sum(1) / mask.sum(1)
    np.testing.assert_allclose(
        embedding, mean / np.linalg.norm(mean, axis=-1, keepdims=True), atol=1e-6
    )
    np.testing.assert_allclose(np.linalg.norm(embedding, axis=-1), 1.0, atol=1e-5)
    padded = {k: np.pad(v, ((0, 0), (0, 3))) for k, v in inputs.items()}
    np.testing.assert_allclose(
        np.asarray(sentence_embedding(encoder, padded)), embedding, atol=1e-6
    )


def check_gradients(family, head):
    """The head's losses reach every weight the outputs depend on (all of
    them, but the pooler's for a head that does not read it), each variable
    once; one SGD step (`Head.step`) lowers the loss."""
    model = built(family, head)
    spec = HEADS[head]
    inputs = batch(encoder_of(model), spec.masked)
    weights = model.get_weights()
    try:
        check_descent(model, spec, inputs)
    finally:
        model.set_weights(weights)  # other checks share the model


def check_descent(model, spec, inputs):
    """`check_gradients` on `model` (it moves the weights)."""

    def loss():
        out = model(inputs, training=False)
        return sum(fn(target, out[name]) for name, (target, fn) in spec.targets.items())

    with tf.GradientTape() as tape:
        before = loss()
    variables = model.trainable_variables
    assert len(variables) == len({id(v) for v in variables})
    grads = [
        None if g is None else tf.convert_to_tensor(g)  # embeddings: IndexedSlices
        for g in tape.gradient(before, variables)
    ]
    missing = [
        v.path for v, g in zip(variables, grads) if g is None or not np.any(np.asarray(g))
    ]
    pooler = encoder_of(model).pooler_dense
    unused = [] if pooler is None or spec.reads_pooler else [w.path for w in pooler.weights]
    missing = [path for path in missing if path not in spec.softmax_invariant]
    assert missing == unused, missing
    for v, g in zip(variables, grads):
        if g is not None:
            v.assign_sub(spec.step * g)
    assert float(loss()) < float(before)


def check_fit(family, head):
    """One compiled `fit` step (Keras's own training loop, traced, with the
    head's losses by output name): a finite loss, and weights change.

    `tests.helpers.check_fit_step` with SGD instead of Adam: tracing Adam's
    update of ~50 variables costs four times the rest of the step on CPU,
    and the assertions do not depend on the optimizer (test_models.py's
    trained model directory runs the compiled AdamW step)."""
    model = HEADS[head].build(tiny_encoder(family))
    spec = HEADS[head]
    inputs = batch(encoder_of(model), spec.masked)
    targets = {name: target for name, (target, _) in spec.targets.items()}
    model.compile(
        optimizer=keras.optimizers.SGD(0.01),
        loss={name: fn for name, (_, fn) in spec.targets.items()},
    )
    before = [w.copy() for w in model.get_weights()]
    history = model.fit(inputs, targets, batch_size=B, epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])
    changed = sum(not np.array_equal(a, b) for a, b in zip(before, model.get_weights()))
    assert changed > 0


MIXED = {policy: check_mixed(policy) for policy in ("mixed_float16", "mixed_bfloat16")}
# The checks every pair goes through; the bare encoder has no loss but has
# internals and sentence embeddings.
COMMON = {
    "outputs": check_outputs,
    "padding": check_padding,
    "config": check_config,
    "keras_file": check_keras_file,
    **MIXED,
}
CHECKS = {
    **COMMON,
    "internals": check_internals,
    "sentence_embedding": check_sentence_embedding,
    "gradients": check_gradients,
    "fit": check_fit,
}
ENCODER_CHECKS = (*COMMON, "internals", "sentence_embedding")
HEAD_CHECKS = (*COMMON, "gradients")
# A compiled `fit` traces the model and its training step (about a second
# each on two cores): it runs on one pair per head, BERT's unless the head
# has always been fitted on DistilBERT (the masked LM; the mean-pooled head,
# now the regressor), plus DistilBERT's classifier ("cls" pooling); the
# eager gradient check runs on every pair.
FIT_PAIRS = {
    ("bert", "classifier"),
    ("distilbert", "classifier"),
    ("distilbert", "regressor"),
    ("bert", "token_classifier"),
    ("bert", "question_answerer"),
    ("distilbert", "masked_lm"),
    ("bert", "nsp"),
    ("bert", "pretrainer"),
}


def items():
    """(family, head, check) for every item of the harness, in table order."""
    out = []
    for family, head in pairs():
        checks = ENCODER_CHECKS if head == ENCODER else HEAD_CHECKS
        if (family, head) in FIT_PAIRS:
            checks = (*checks, "fit")
        out += [(family, head, check) for check in checks]
    return out


def fresh_process_pairs():
    """Every family's encoder and every head on one family (in turn), so each
    class loads once in a fresh process."""
    chosen = [(family, ENCODER) for family in FAMILIES]
    available = pairs()
    families = list(FAMILIES)
    for i, head in enumerate(h for h in HEADS if h != ENCODER):
        for family in families[i % len(families) :] + families[: i % len(families)]:
            if (family, head) in available:
                chosen.append((family, head))
                break
    return chosen
