"""TF Model Garden BERT encoders (`official.nlp.modeling.networks`).

Garden writes its encoders with object-based checkpoints,
`tf.train.Checkpoint(encoder=garden_encoder).write(prefix)`, whose keys are
attribute paths rather than variable names, in one of two layouts:

    BertEncoderV2 (a Layer):        encoder/_transformer_layers/0/_attention_layer/_query_dense/kernel
    BertEncoder (functional Model): encoder/layer_with_weights-4/_attention_layer/_query_dense/kernel

(each followed by `/.ATTRIBUTES/VARIABLE_VALUE`, left out of error messages).
Both are reached from BERT's canonical names (`names.py`) by one table,
`garden_path`. Garden's attention is `EinsumDense`: query/key/value kernels
are `[hidden, heads, head_dim]`, biases `[heads, head_dim]` and the output
kernel `[heads, head_dim, hidden]`, which are reshapes (not transposes) of
our `[in, out]` Dense kernels, heads in the same order.

Reading a checkpoint needs TensorFlow only; building a Garden encoder (the
oracle of the parity tests) needs the `garden` extra. Garden is tf_keras
(Keras 2) code, but `official.nlp.modeling` neither imports
`tensorflow-model-optimization` nor sets `TF_USE_LEGACY_KERAS`, so `tf.keras`
stays Keras 3 and both run in one process (`tests/checkpoints/test_garden.py`
checks this).

Activation: Garden's "gelu" and its encoders' default `inner_activation`
are the tanh approximation; zoo encoders use exact (erf) GELU. Weights from
a Garden model trained with the approximation load, but outputs differ from
Garden's by the approximation (up to 5e-3 in `sequence_output` on MiniLM,
measured against keras-hub's tanh-GELU BertBackbone). Encoders built here
use exact GELU so that they match ours.
"""

from __future__ import annotations

import pathlib
import re

import numpy as np
import tensorflow as tf

from zoo.checkpoints.assign import NamedTensors, assign_tensors
from zoo.checkpoints.errors import CheckpointMismatchError
from zoo.checkpoints.names import encoder_entries
from zoo.configs import INPUT_NAMES, EncoderConfig
from zoo.models.bert_encoder import build_encoder

GARDEN_INSTALL = "pip install -e '.[garden]'"

_SUFFIX = "/.ATTRIBUTES/VARIABLE_VALUE"

# Canonical name -> attribute path inside a Garden BertEncoder / BertEncoderV2.
_EMBEDDINGS = {
    "bert/embeddings/word_embeddings": "_embedding_layer/embeddings",
    "bert/embeddings/position_embeddings": "_position_embedding_layer/embeddings",
    "bert/embeddings/token_type_embeddings": "_type_embedding_layer/embeddings",
    "bert/embeddings/LayerNorm/gamma": "_embedding_norm_layer/gamma",
    "bert/embeddings/LayerNorm/beta": "_embedding_norm_layer/beta",
    "bert/pooler/dense/kernel": "_pooler_layer/kernel",
    "bert/pooler/dense/bias": "_pooler_layer/bias",
}
# Inside one block: canonical `bert/encoder/layer_i/<key>/<leaf>` ->
# `_transformer_layers/i/<value>/<leaf>`.
_BLOCK = {
    "attention/self/query": "_attention_layer/_query_dense",
    "attention/self/key": "_attention_layer/_key_dense",
    "attention/self/value": "_attention_layer/_value_dense",
    "attention/output/dense": "_attention_layer/_output_dense",
    "attention/output/LayerNorm": "_attention_layer_norm",
    "intermediate/dense": "_intermediate_dense",
    "output/dense": "_output_dense",
    "output/LayerNorm": "_output_layer_norm",
}
# The functional BertEncoder's checkpoint numbers its layers that own weights
# in construction order: the four embedding layers, the blocks, the pooler.
_FUNCTIONAL_EMBEDDINGS = (
    "_embedding_layer",
    "_position_embedding_layer",
    "_type_embedding_layer",
    "_embedding_norm_layer",
)
_BLOCK_RE = re.compile(r"^bert/encoder/layer_(\d+)/(.+)/(kernel|bias|gamma|beta)$")


def garden_path(name: str, *, functional: bool = False, num_layers: int = 0) -> str:
    """Canonical TF1 name -> object path in a Garden encoder checkpoint.

    `functional=True` gives the `layer_with_weights-N` paths of the
    functional `networks.BertEncoder`; `num_layers` is needed there to number
    the pooler.
    """
    if name in _EMBEDDINGS:
        path = _EMBEDDINGS[name]
    else:
        match = _BLOCK_RE.match(name)
        if match is None or match.group(2) not in _BLOCK:
            raise KeyError(f"{name!r} has no counterpart in a Garden BertEncoder.")
        index, sub, leaf = match.groups()
        path = f"_transformer_layers/{index}/{_BLOCK[sub]}/{leaf}"
    if not functional:
        return path
    head, _, rest = path.partition("/")
    if head in _FUNCTIONAL_EMBEDDINGS:
        number = _FUNCTIONAL_EMBEDDINGS.index(head)
    elif head == "_transformer_layers":
        index, _, rest = rest.partition("/")
        number = len(_FUNCTIONAL_EMBEDDINGS) + int(index)
    else:  # the pooler
        number = len(_FUNCTIONAL_EMBEDDINGS) + num_layers
    return f"layer_with_weights-{number}/{rest}"


# --- Garden's EinsumDense layouts <-> our Dense layouts ---------------------


def _attention_part(key: str) -> str | None:
    match = re.search(
        r"_attention_layer/_(query|key|value|output)_dense/(kernel|bias)$", key
    )
    return None if match is None else f"{match.group(1)}/{match.group(2)}"


def to_keras_layout(key: str, value: np.ndarray) -> np.ndarray:
    """Flatten Garden's per-head attention tensors to our Dense shapes."""
    part = _attention_part(key)
    if part in ("query/kernel", "key/kernel", "value/kernel") and value.ndim == 3:
        # [hidden, heads, head_dim] -> [hidden, heads * head_dim]
        return value.reshape(value.shape[0], -1)
    if part in ("query/bias", "key/bias", "value/bias") and value.ndim == 2:
        # [heads, head_dim] -> [heads * head_dim]
        return value.reshape(-1)
    if part == "output/kernel" and value.ndim == 3:
        # [heads, head_dim, hidden] -> [heads * head_dim, hidden]
        return value.reshape(-1, value.shape[-1])
    return value


def to_garden_layout(key: str, value: np.ndarray, num_heads: int) -> np.ndarray:
    """Inverse of `to_keras_layout` for a model with `num_heads` heads."""
    part = _attention_part(key)
    if part in ("query/kernel", "key/kernel", "value/kernel"):
        return value.reshape(value.shape[0], num_heads, -1)
    if part in ("query/bias", "key/bias", "value/bias"):
        return value.reshape(num_heads, -1)
    if part == "output/kernel":
        return value.reshape(num_heads, -1, value.shape[-1])
    return value


def _garden_shape(key, shape, num_heads):
    return tuple(to_garden_layout(key, np.empty(shape, np.int8), num_heads).shape)


# --- reading ------------------------------------------------------------------


def _is_garden_object(source) -> bool:
    return hasattr(source, "_transformer_layers") and hasattr(source, "_embedding_layer")


def _checkpoint_prefix(path) -> str:
    path = pathlib.Path(path)
    if path.is_dir():
        latest = tf.train.latest_checkpoint(str(path))
        if latest is None:
            indexes = sorted(path.glob("*.index"))
            if not indexes:
                raise FileNotFoundError(
                    f"{path}: no TensorFlow checkpoint here (no `checkpoint` file "
                    "and no *.index). Pass the prefix written by tf.train.Checkpoint.write."
                )
            latest = str(indexes[0].with_suffix(""))
        return latest
    if not pathlib.Path(f"{path}.index").is_file():
        raise FileNotFoundError(
            f"{path}: no checkpoint at this prefix ({path}.index does not exist)."
        )
    return str(path)


def _find_roots(keys):
    """Object paths of the Garden encoders in a checkpoint, with their layout."""
    roots = {}
    pattern = re.compile(
        r"^(?:(.*)/)?(_embedding_layer|layer_with_weights-0)/embeddings"
        + re.escape(_SUFFIX)
        + "$"
    )
    for key in keys:
        match = pattern.match(key)
        if match is None:
            continue
        root = match.group(1) or ""
        functional = match.group(2) == "layer_with_weights-0"
        # A block's query kernel confirms an encoder rather than some embedding.
        block = "layer_with_weights-4" if functional else "_transformer_layers/0"
        probe = "/".join(
            p for p in (root, block, "_attention_layer/_query_dense/kernel") if p
        )
        if probe + _SUFFIX in keys:
            roots[root] = functional
    return roots


class GardenTensors(NamedTensors):
    """The arrays of one Garden encoder, keyed by object path, with what is
    needed to find them by canonical name."""

    def __init__(self, data, origin, *, root, functional, num_layers):
        super().__init__(data, origin)
        self.root = root
        self.functional = functional
        self.num_layers = num_layers

    def key(self, name: str) -> str:
        path = garden_path(name, functional=self.functional, num_layers=self.num_layers)
        return f"{self.root}/{path}" if self.root else path


def read_garden_tensors(source, *, root=None) -> GardenTensors:
    """The encoder tensors of a Garden checkpoint (prefix or directory) or of a
    live Garden `BertEncoder` / `BertEncoderV2`, in Garden's own layouts.

    `root` is the checkpoint's object path to the encoder (`"encoder"` for
    `tf.train.Checkpoint(encoder=...)`); by default it is found by looking for
    exactly one encoder in the checkpoint.
    """
    if _is_garden_object(source):
        return _read_live(source)

    prefix = _checkpoint_prefix(source)
    reader = tf.train.load_checkpoint(prefix)
    keys = set(reader.get_variable_to_shape_map())
    roots = _find_roots(keys)
    if root is None:
        if len(roots) != 1:
            found = f"encoders at {sorted(roots)}" if roots else "no Garden BertEncoder"
            raise ValueError(
                f"{prefix}: found {found}. Expected one encoder written by "
                "tf.train.Checkpoint(encoder=garden_encoder) (keys like "
                f"'encoder/_embedding_layer/embeddings{_SUFFIX}'); "
                "pass root=<object path> to choose one."
            )
        root = next(iter(roots))
    elif root not in roots:
        raise ValueError(
            f"{prefix}: no Garden BertEncoder at root={root!r}; encoders found at "
            f"{sorted(roots) or 'none'}."
        )
    functional = roots[root]
    start = f"{root}/" if root else ""
    tensors = {
        key[: -len(_SUFFIX)]: reader.get_tensor(key)
        for key in keys
        if key.startswith(start)
        and key.endswith(_SUFFIX)
        and ".OPTIMIZER_SLOT" not in key
        and key != "save_counter" + _SUFFIX
    }
    block = re.compile(
        re.escape(start)
        + (r"layer_with_weights-(\d+)" if functional else r"_transformer_layers/(\d+)")
        + "/_attention_layer/_query_dense/kernel$"
    )
    blocks = sorted(int(m.group(1)) for k in tensors if (m := block.match(k)))
    num_layers = len(blocks)
    first = len(_FUNCTIONAL_EMBEDDINGS) if functional else 0
    if blocks != list(range(first, first + num_layers)):
        raise ValueError(
            f"{prefix}: the Garden encoder at {root!r} has its transformer blocks at "
            f"{blocks}, not numbered as a plain BertEncoder's; factorized embeddings "
            "(embedding_width != hidden_size) are not supported."
        )
    return GardenTensors(
        tensors, prefix, root=root, functional=functional, num_layers=num_layers
    )


def _resolve(encoder, path):
    """The variable at a checkpoint attribute path of a live Garden encoder.

    Checkpoints name a layer's own variables by their `add_weight` name, which
    is not always a Python attribute (PositionEmbedding keeps `embeddings` as
    `_position_embeddings`), so the last step searches the layer's weights.
    """
    *layers, leaf = path.split("/")
    obj = encoder
    for part in layers:
        obj = obj[int(part)] if part.isdigit() else getattr(obj, part, None)
        if obj is None:
            return None
    for weight in obj.weights:
        if weight.name.split(":")[0].rsplit("/", 1)[-1] == leaf:
            return weight
    return None


def _read_live(encoder) -> GardenTensors:
    """Read a live Garden encoder by walking the attribute paths of the table."""
    num_layers = len(encoder._transformer_layers)
    tensors, seen = {}, set()
    paths = list(_EMBEDDINGS.values()) + [
        f"_transformer_layers/{i}/{sub}/{leaf}"
        for i in range(num_layers)
        for sub in _BLOCK.values()
        for leaf in (("gamma", "beta") if sub.endswith("_norm") else ("kernel", "bias"))
    ]
    for path in paths:
        variable = _resolve(encoder, path)
        if variable is not None:
            tensors[path] = variable.numpy()
            seen.add(id(variable))
    # Weights the table does not reach (e.g. an embedding projection) are
    # reported as unused rather than silently dropped.
    for weight in encoder.weights:
        if id(weight) not in seen:
            tensors[weight.name] = weight.numpy()
    origin = f"<live {type(encoder).__name__} {encoder.name!r}>"
    return GardenTensors(tensors, origin, root="", functional=False, num_layers=num_layers)


def config_from_garden(tensors: GardenTensors, **overrides) -> EncoderConfig:
    """An EncoderConfig from the shapes in a Garden checkpoint.

    Every size is in the shapes; `dropout` is not, and defaults to
    EncoderConfig's (pass `dropout=...` to override). Garden hard-codes
    LayerNorm epsilon 1e-12, as BERT does.
    """

    def shape(name):
        key = tensors.key(name)
        if key not in tensors:
            raise CheckpointMismatchError(tensors.origin, [(key, "a tensor", "missing")])
        return tensors[key].shape

    word = shape("bert/embeddings/word_embeddings")
    query = shape("bert/encoder/layer_0/attention/self/query/kernel")
    if word[1] != query[0]:
        raise ValueError(
            f"{tensors.origin}: word embeddings are {word[1]} wide but the encoder is "
            f"{query[0]} wide; factorized embeddings (Garden's embedding_width) "
            "are not supported."
        )
    fields = dict(
        vocabulary_size=int(word[0]),
        num_layers=tensors.num_layers,
        num_heads=int(query[1]),
        hidden_dim=int(word[1]),
        intermediate_dim=int(shape("bert/encoder/layer_0/intermediate/dense/kernel")[1]),
        max_sequence_length=int(shape("bert/embeddings/position_embeddings")[0]),
        num_segments=int(shape("bert/embeddings/token_type_embeddings")[0]),
    )
    fields.update(overrides)
    return EncoderConfig(**fields)


def load_garden_weights(encoder, source, *, root=None, allow_partial=False):
    """Copy a Garden encoder's weights (checkpoint or live object) into our
    `BertEncoder`. All-or-nothing: every missing, misshapen or left-over
    tensor is listed in one `CheckpointMismatchError`, in Garden's shapes."""
    tensors = (
        source
        if isinstance(source, GardenTensors)
        else read_garden_tensors(source, root=root)
    )
    pairs = [
        (e.variable, tensors.key(e.name), e.transposed) for e in encoder_entries(encoder)
    ]
    # Flatten a per-head tensor only when its head split is ours: a checkpoint
    # with other `num_heads` has the same number of elements but is a
    # different model, and must be reported, not reshaped into place.
    keras_layout = NamedTensors(dict(tensors), tensors.origin)
    for variable, key, _ in pairs:
        value = tensors.get(key)
        if value is not None and value.shape == _garden_shape(
            key, tuple(variable.shape), encoder.num_heads
        ):
            keras_layout[key] = to_keras_layout(key, np.asarray(value))
    consumed = {key for _, key, _ in pairs}
    unused = [k for k in tensors if k not in consumed]

    def in_garden_shapes(problems):
        out = []
        for key, expected, found in problems:
            if isinstance(expected, tuple):
                expected = _garden_shape(key, expected, encoder.num_heads)
            if key in tensors and found != "missing":
                prefix = "unexpected " if str(found).startswith("unexpected") else ""
                found = f"{prefix}{tuple(tensors[key].shape)}"
            out.append((key, expected, found))
        return out

    try:
        problems = assign_tensors(
            pairs, keras_layout, unused=unused, allow_partial=allow_partial
        )
    except CheckpointMismatchError as err:
        raise CheckpointMismatchError(err.source, in_garden_shapes(err.problems)) from None
    return in_garden_shapes(problems)


def load_garden_encoder(source, *, root=None, allow_partial=False, **config_overrides):
    """Build a `BertEncoder` sized from a Garden checkpoint and load it."""
    tensors = read_garden_tensors(source, root=root)
    encoder = build_encoder(config_from_garden(tensors, **config_overrides))
    load_garden_weights(encoder, tensors, allow_partial=allow_partial)
    return encoder


# --- the other direction: a Garden encoder holding our weights --------------


def import_garden_networks():
    """`official.nlp.modeling.networks`, or an ImportError saying what to install."""
    try:  # optional: the `garden` extra, Keras 2 code kept out of the core
        from official.nlp.modeling import networks
    except ImportError as err:
        raise ImportError(
            "TF Model Garden encoders need the `garden` extra (tf-models-official, "
            f"Keras 2 / tf_keras code): run `{GARDEN_INSTALL}`. ({err})"
        ) from err
    return networks


def exact_gelu(x):
    """Exact (erf) GELU, as in BERT and zoo; Garden's "gelu" is the tanh form."""

    return tf.nn.gelu(x, approximate=False)


def build_garden_encoder(config: EncoderConfig, *, functional: bool = True):
    """A randomly initialised Garden encoder with `config`'s sizes and exact
    GELU: `networks.BertEncoder` (functional, dict outputs) by default,
    `networks.BertEncoderV2` with `functional=False`."""
    networks = import_garden_networks()
    if config.family != "bert":
        raise ValueError(
            f"Garden's BertEncoder has segment embeddings and a pooler; a "
            f"{config.family}-family config does not fit it."
        )
    if config.activation != "gelu":
        raise ValueError(
            f"EncoderConfig.activation={config.activation!r}: the Garden encoder is "
            "built with exact GELU here; use a zoo model directory or HF for this one."
        )
    kwargs = dict(
        vocab_size=config.vocabulary_size,
        hidden_size=config.hidden_dim,
        num_layers=config.num_layers,
        num_attention_heads=config.num_heads,
        max_sequence_length=config.max_sequence_length,
        type_vocab_size=config.num_segments,
        inner_dim=config.intermediate_dim,
        inner_activation=exact_gelu,
        output_dropout=config.dropout,
        attention_dropout=config.dropout,
    )
    if functional:
        return networks.BertEncoder(dict_outputs=True, **kwargs)
    encoder = networks.BertEncoderV2(**kwargs)
    encoder(garden_inputs({n: np.zeros((1, 1), np.int32) for n in INPUT_NAMES}))
    return encoder


def copy_to_garden(encoder, garden_encoder):
    """Assign our encoder's weights to a live Garden encoder of the same sizes."""
    num_layers = len(garden_encoder._transformer_layers)
    if num_layers != encoder.num_layers:
        raise ValueError(
            f"The Garden encoder has {num_layers} layers, ours {encoder.num_layers}."
        )
    for entry in encoder_entries(encoder):
        path = garden_path(entry.name)
        target = _resolve(garden_encoder, path)
        if target is None:
            raise CheckpointMismatchError(
                f"<live {type(garden_encoder).__name__}>", [(path, "a variable", "missing")]
            )
        value = to_garden_layout(path, entry.variable.numpy(), encoder.num_heads)
        if tuple(target.shape) != value.shape:
            raise CheckpointMismatchError(
                f"<live {type(garden_encoder).__name__}>",
                [(path, tuple(target.shape), value.shape)],
            )
        target.assign(value)
    return garden_encoder


def to_garden(encoder, *, functional: bool = True):
    """A Garden encoder (exact GELU) holding a copy of `encoder`'s weights."""
    return copy_to_garden(
        encoder, build_garden_encoder(encoder.config, functional=functional)
    )


_GARDEN_INPUTS = {
    "token_ids": "input_word_ids",
    "segment_ids": "input_type_ids",
    "padding_mask": "input_mask",
}


def garden_inputs(batch) -> dict:
    """Our input dict, renamed to Garden's input names."""
    return {_GARDEN_INPUTS[k]: v for k, v in batch.items() if k in _GARDEN_INPUTS}
