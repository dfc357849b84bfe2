"""keras-hub models in and out: `BertBackbone`, `DistilBertBackbone`,
`AlbertBackbone` and their `*TextClassifier` tasks.

    imported = read_keras_hub("presets/news")        # a save_to_preset directory
    imported = read_keras_hub(classifier)             # a live keras-hub object
    imported = read_keras_hub("keras_hub:bert_base_en_uncased")  # keras-hub's loader
    save_imported(imported, "models/news")            # a zoo model directory
    save_keras_hub_preset(model, "presets/back", tokenizer)  # from_preset loads it

In: the backbone becomes the zoo encoder of its family with the same
weights, the task's head a `zoo.Classifier` (BERT and ALBERT tasks: pooled
output -> dropout -> logits, `pooling="pooled"`; DistilBERT's: [CLS] ->
ReLU "pre-classifier" -> dropout -> logits, `pooling="cls"` with
`hidden_dim`), the tokenizer's vocabulary and casing a `WordPieceTokenizer`,
the preprocessor's length the model directory's `sequence_length`.
keras-hub classifiers output logits (a task built with
`activation="softmax"` outputs probabilities: the zoo head keeps the logits
before it, so `predict`'s probabilities agree). keras-hub stores no label
names: they are given (`labels=`, `zoo convert --labels`), read from the
`zoo_preset.json` a zoo export left in the preset, or "0".."N-1".

GELU: keras-hub's BertBackbone and AlbertBackbone hard-code the tanh
approximation (`gelu_approximate`), DistilBertBackbone uses exact GELU; the
activation a backbone actually computes is probed on sample points (a
backbone whose layers were given another GELU converts as what it computes)
and becomes the zoo config's `activation` ("gelu_tanh" or "gelu").

Out: the same tables the other way. What keras-hub cannot express is refused
before anything is written: a BERT or ALBERT encoder with exact GELU (keras-hub
hard-codes the approximation; it would differ by up to ~1e-3 per unit), a
DistilBERT one with the approximation, a LayerNorm epsilon other than 1e-12.
Heads: `pooling="pooled"` -> `BertTextClassifier` / `AlbertTextClassifier`;
a DistilBERT encoder's `pooling="cls"` head -> `DistilBertTextClassifier`
(its own `hidden_dim`, or, without a hidden layer, `hidden_dim = 2H` with
pre-classifier kernel [I, -I], bias 0, and logits kernel [W; -W]: relu(x) -
relu(-x) = x, exactly). Other heads (`mean` pooling; `cls` on a BERT
encoder, whose keras-hub task reads the pooler; a hidden layer on a pooled
head; token, QA and regression heads) have no keras-hub task: the backbone
and preprocessor are written and the notes say the head was not.

Tokenizers: an import builds the zoo's `WordPieceTokenizer` with
`flavor="keras_hub"` and the keras-hub tokenizer's own `lowercase`,
`strip_accents` and `split_on_cjk`: it runs keras-hub's split, case folding
and byte word limit with the same tensorflow-text ops, so the converted
model gets keras-hub's ids on every text. Settings it cannot reproduce are
refused by name (`split=False`, `special_tokens_in_strings=True`, another
suffix than "##"). An export writes a keras_hub-flavored tokenizer's
settings as they are (the round trip is exact); a BERT-flavored one (HF's
ids) is written as keras-hub's tokenizer with `strip_accents` equal to
`lowercase`, which still differs from it where keras-hub's rule does
(NFKC case folding, control and format characters, non-ASCII spaces, the
word limit in bytes; docs/keras_hub.md). ALBERT's keras-hub tokenizer is SentencePiece: its
weights and head convert, but model directories, exports and the CLI take a
WordPiece vocab.txt, so `save_imported` refuses it (the library's
`zoo.text.sentencepiece_tokenizer` is for Python use).

keras-hub is optional (`pip install 'bert-zoo[keras-hub]'`); only
`is_preset_dir` and `preset_config` work without it.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import re

import keras
import numpy as np

from zoo.checkpoints.assign import NamedTensors, assign_tensors
from zoo.checkpoints.config_fields import (
    KERAS_HUB_FIELDS,
    checked,
    read_bool,
    read_fields,
    read_int,
)
from zoo.checkpoints.model_dir import save_model_dir
from zoo.checkpoints.names import encoder_entries
from zoo.configs import DEFAULT_SEQUENCE_LENGTH, EncoderConfig
from zoo.models import Classifier, build_encoder
from zoo.models.classifier import resolve_pooling
from zoo.text.tokenizer import WordPieceTokenizer
from zoo.utils.atomic import atomic_directory
from zoo.utils.file_record import list_files
from zoo.utils.jsonfile import JsonFileError, read_json_object

INSTALL = "pip install 'bert-zoo[keras-hub]'"
# keras-hub preset names: `keras_hub:NAME` (a built-in preset, or anything
# keras-hub's `from_preset` takes after the colon) and Kaggle handles.
NAME_PREFIXES = ("keras_hub:", "kaggle://")
BACKBONES = ("BertBackbone", "DistilBertBackbone", "AlbertBackbone")
CLASSIFIERS = ("BertTextClassifier", "DistilBertTextClassifier", "AlbertTextClassifier")
# What a zoo export leaves beside keras-hub's files: label names and provenance.
ZOO_PRESET_FILE = "zoo_preset.json"
# keras-hub hard-codes this LayerNorm epsilon in the three backbones.
LAYER_NORM_EPSILON = 1e-12

# Canonical (google-research) names -> keras-hub variable paths. Inside a
# block the BERT and ALBERT names differ (ALBERT's TF1 layout), keras-hub's
# do not (one TransformerEncoder class).
_EMBEDDINGS = {
    "bert/embeddings/word_embeddings": "token_embedding/embeddings",
    "bert/embeddings/position_embeddings": "position_embedding/embeddings",
    "bert/embeddings/token_type_embeddings": "segment_embedding/embeddings",
    "bert/embeddings/LayerNorm/gamma": "embeddings_layer_norm/gamma",
    "bert/embeddings/LayerNorm/beta": "embeddings_layer_norm/beta",
    "bert/pooler/dense/kernel": "pooled_dense/kernel",
    "bert/pooler/dense/bias": "pooled_dense/bias",
    "bert/encoder/embedding_hidden_mapping_in/kernel": "embedding_projection/kernel",
    "bert/encoder/embedding_hidden_mapping_in/bias": "embedding_projection/bias",
}
# DistilBertBackbone keeps its token and position tables in one
# TokenAndPositionEmbedding layer.
_DISTILBERT_EMBEDDINGS = {
    "bert/embeddings/word_embeddings": "token_and_position_embedding/token_embedding/embeddings",
    "bert/embeddings/position_embeddings": (
        "token_and_position_embedding/position_embedding/embeddings"
    ),
}
_BLOCK = {
    "attention/self/query": "self_attention_layer/query",
    "attention/self/key": "self_attention_layer/key",
    "attention/self/value": "self_attention_layer/value",
    "attention/output/dense": "self_attention_layer/attention_output",
    "attention/output/LayerNorm": "self_attention_layer_norm",
    "intermediate/dense": "feedforward_intermediate_dense",
    "output/dense": "feedforward_output_dense",
    "output/LayerNorm": "feedforward_layer_norm",
}
_ALBERT_BLOCK = {
    "attention_1/self/query": "self_attention_layer/query",
    "attention_1/self/key": "self_attention_layer/key",
    "attention_1/self/value": "self_attention_layer/value",
    "attention_1/output/dense": "self_attention_layer/attention_output",
    "LayerNorm": "self_attention_layer_norm",
    "ffn_1/intermediate/dense": "feedforward_intermediate_dense",
    "ffn_1/intermediate/output/dense": "feedforward_output_dense",
    "LayerNorm_1": "feedforward_layer_norm",
}
_BERT_LAYER = re.compile(r"bert/encoder/layer_(\d+)/(.+)/(\w+)$")
_ALBERT_LAYER = re.compile(
    r"bert/encoder/transformer/group_(\d+)/inner_group_0/(.+)/(\w+)$"
)


def keras_hub_path(name: str, family: str = "bert") -> str:
    """The keras-hub backbone variable path of canonical weight `name`.

    keras-hub's attention keeps per-head EinsumDense kernels (query, key,
    value `[hidden, heads, head_dim]`, biases `[heads, head_dim]`, output
    `[heads, head_dim, hidden]`): C-order reshapes of the zoo's `[in, out]`
    Dense kernels, heads in the same order, so values move by `reshape`."""
    if family == "distilbert" and name in _DISTILBERT_EMBEDDINGS:
        return _DISTILBERT_EMBEDDINGS[name]
    if name in _EMBEDDINGS:
        return _EMBEDDINGS[name]
    if family == "albert":
        group, sub, leaf = _ALBERT_LAYER.match(name).groups()
        return f"group_{group}_inner_layer_0/{_ALBERT_BLOCK[sub]}/{leaf}"
    index, sub, leaf = _BERT_LAYER.match(name).groups()
    return f"transformer_layer_{index}/{_BLOCK[sub]}/{leaf}"


def import_keras_hub(why="reading or writing keras-hub models"):
    """The keras_hub module, or an ImportError saying how to install it."""
    try:
        # Optional dependency (the keras-hub extra): only these conversions use it.
        import keras_hub
    except ImportError:
        raise ImportError(
            f"{why} needs keras-hub, an optional dependency of bert-zoo: {INSTALL}."
        ) from None
    return keras_hub


def is_preset_name(value) -> bool:
    return isinstance(value, str) and value.startswith(NAME_PREFIXES)


def _preset_argument(name):
    """What keras-hub's `from_preset` takes for a preset name."""
    return name[len("keras_hub:") :] if name.startswith("keras_hub:") else name


def _preset_json(path, name):
    """`name`'s JSON object in preset directory `path`, or None when absent."""
    file = pathlib.Path(path) / name
    if not file.is_file():
        return None
    return read_json_object(file, "re-save the preset with keras-hub's save_to_preset")


def is_preset_dir(path) -> bool:
    """True for a directory keras-hub's `save_to_preset` wrote (config.json
    naming a `keras_hub>` class, beside model.weights.h5 or its shards)."""
    path = pathlib.Path(path)
    if not (path / "config.json").is_file():
        return False
    try:
        config = _preset_json(path, "config.json")
    except (JsonFileError, OSError):  # not ours to judge: the other readers say why
        return False
    registered = config.get("registered_name")
    return isinstance(registered, str) and registered.startswith("keras_hub>")


def _config_from_backbone_json(config, where, activation=None):
    """EncoderConfig of a backbone's serialized config (config.json): every
    field typed and in range (`config_fields.KERAS_HUB_FIELDS`) and the
    model's memory within the limit, before keras-hub or the zoo builds it."""
    if not isinstance(config, dict):
        raise ValueError(f"{where}: expected a JSON object, not {type(config).__name__}.")
    registered = config.get("registered_name", "")
    name = registered.removeprefix("keras_hub>") if isinstance(registered, str) else ""
    if name not in BACKBONES:
        raise ValueError(
            f"{where}: a keras-hub {name or str(config.get('class_name'))[:80]!r}; the zoo "
            f"reads {', '.join(BACKBONES)} (and their TextClassifier tasks)."
        )
    args = config.get("config") or {}
    fields = read_fields(args, KERAS_HUB_FIELDS[name], where, f"keras-hub {name}")
    fields["layer_norm_epsilon"] = LAYER_NORM_EPSILON
    if name == "BertBackbone":
        config = EncoderConfig(**fields, activation=activation or "gelu_tanh")
    elif name == "DistilBertBackbone":
        config = EncoderConfig(
            **fields, num_segments=0, family="distilbert", activation=activation or "gelu"
        )
    else:
        repetitions = read_int(args, "num_inner_repetitions", where, 1, 1, 1 << 10)
        if repetitions != 1:
            raise ValueError(
                f"{where}: AlbertBackbone num_inner_repetitions={repetitions}; the zoo's "
                "ALBERT (as every released ALBERT) runs each shared block once per layer (1)."
            )
        config = EncoderConfig(
            **fields, family="albert", activation=activation or "gelu_tanh"
        )
    return checked(config, where)


def preset_config(path) -> EncoderConfig:
    """The encoder configuration of a preset, from its config.json, without
    loading weights: what `checkpoint_config` reports. A local directory
    needs no keras-hub; a name is read by keras-hub's loader."""
    if is_preset_name(path):
        import_keras_hub(f"reading the keras-hub preset {path}")
        # keras-hub's loader's helper (pinned keras-hub 0.32.*): one file of a
        # preset, fetched or cached as `from_preset` would.
        from keras_hub.src.utils import preset_utils

        config = preset_utils.load_json(_preset_argument(path), "config.json")
        return _config_from_backbone_json(config, f"{path} config.json")
    config = _preset_json(path, "config.json")
    return _config_from_backbone_json(config, pathlib.Path(path) / "config.json")


# --- keras-hub -> zoo --------------------------------------------------------


@dataclasses.dataclass
class KerasHubImport:
    """A keras-hub model as zoo objects (`read_keras_hub`)."""

    model: object  # a zoo Classifier, or the encoder alone
    tokenizer: WordPieceTokenizer | None  # None: SentencePiece (ALBERT), or none given
    sequence_length: int
    source: str
    keras_hub_class: str
    # The keras-hub tokenizer's settings, recorded in zoo_model.json.
    source_tokenizer: dict | None = None
    notes: list = dataclasses.field(default_factory=list)

    @property
    def encoder(self):
        return getattr(self.model, "encoder", self.model)


def _gelu_form(fn, where):
    """ "gelu" or "gelu_tanh": which GELU `fn` computes, probed on sample
    points (a function object says nothing once a user has swapped it)."""
    x = np.linspace(-6.0, 6.0, 241).astype("float32")
    y = np.asarray(keras.ops.convert_to_numpy(fn(keras.ops.convert_to_tensor(x))))
    for form, approximate in (("gelu", False), ("gelu_tanh", True)):
        ref = keras.ops.convert_to_numpy(keras.activations.gelu(x, approximate=approximate))
        if np.max(np.abs(y - ref)) <= 1e-6:
            return form
    raise ValueError(
        f"{where}: the feed-forward activation is neither exact nor tanh-approximate GELU "
        f"({getattr(fn, '__name__', fn)!r}); the zoo's encoders compute one of those."
    )


def _backbone_activation(backbone, where):
    forms = set()
    layers = backbone.transformer_layers
    if layers and isinstance(layers[0], list):  # AlbertBackbone: groups of layers
        layers = [layer for group in layers for layer in group]
    for layer in layers:
        # The Dense inside keras-hub's TransformerEncoder is what computes it.
        dense = getattr(layer, "_feedforward_intermediate_dense", None)
        fn = getattr(dense, "activation", None) or layer.activation
        forms.add(_gelu_form(fn, where))
    if len(forms) > 1:
        raise ValueError(
            f"{where}: its layers use different activations ({sorted(forms)})."
        )
    return forms.pop() if forms else None


def _numpy(variable):
    return np.asarray(variable.numpy(), dtype="float32")


def _copy_in(pairs, theirs, origin):
    """Assign keras-hub variables `theirs` (path -> variable) to zoo
    variables, `pairs` of (zoo variable, keras-hub path); every keras-hub
    variable must be used (all-or-nothing, `assign_tensors`)."""
    source = {}
    for variable, path in pairs:
        if path in theirs:
            value = _numpy(theirs[path])
            if value.size == int(np.prod(variable.shape)):
                value = value.reshape(tuple(variable.shape))
            source[path] = value
    used = {path for _, path in pairs}
    unused = [path for path in theirs if path not in used]
    source.update({path: _numpy(theirs[path]) for path in unused})
    assign_tensors(
        [(variable, path, False) for variable, path in pairs],
        NamedTensors(source, origin),
        unused=unused,
    )


def _encoder_from(backbone, where):
    config_json = keras.saving.serialize_keras_object(backbone)
    activation = _backbone_activation(backbone, where)
    config = _config_from_backbone_json(config_json, where, activation)
    encoder = build_encoder(config)
    family = config.family
    pairs = [(e.variable, keras_hub_path(e.name, family)) for e in encoder_entries(encoder)]
    _copy_in(pairs, {w.path: w for w in backbone.weights}, where)
    return encoder


def _default_labels(n):
    return [str(i) for i in range(n)]


def _check_labels(labels, num_classes, where):
    if labels is None:
        return None
    labels = [str(x) for x in labels]
    if len(labels) != num_classes:
        raise ValueError(
            f"{where}: {len(labels)} labels given ({', '.join(labels)}) for a head of "
            f"{num_classes} classes; give one name per output, in output order."
        )
    if len(set(labels)) != len(labels) or not all(labels):
        raise ValueError(
            f"{where}: labels must be distinct, non-empty names; got {labels}."
        )
    return labels


def _head_from(task, encoder, labels, where, notes):
    """A zoo Classifier with the keras-hub task's head, or None (notes say why)."""
    kh = import_keras_hub()
    name = type(task).__name__
    if not isinstance(task, kh.models.TextClassifier):
        notes.append(f"{name} is not a text classifier: its head was not converted.")
        return None
    if not isinstance(
        task,
        (
            kh.models.BertTextClassifier,
            kh.models.DistilBertTextClassifier,
            kh.models.AlbertTextClassifier,
        ),
    ):
        raise ValueError(f"{where}: a {name}; the zoo reads {', '.join(CLASSIFIERS)}.")
    activation = getattr(task.activation, "__name__", str(task.activation))
    if activation == "softmax":
        notes.append(
            f"{name} has activation='softmax' (it outputs probabilities): the zoo head "
            "outputs the logits before it; probabilities agree."
        )
    elif activation != "linear":
        raise ValueError(
            f"{where}: {name} activation={activation!r}; the zoo's classifier outputs logits "
            "under softmax (keras-hub's default, activation=None, or 'softmax')."
        )
    num_classes = int(task.num_classes)
    labels = _check_labels(labels, num_classes, where) or _default_labels(num_classes)
    if isinstance(task, kh.models.DistilBertTextClassifier):
        head = Classifier(
            encoder,
            num_classes,
            pooling="cls",
            dropout=float(task.dropout),
            labels=labels,
            hidden_dim=int(task.hidden_dim),
        )
        pairs = [
            (head.hidden_dense.kernel, "pooled_dense/kernel"),
            (head.hidden_dense.bias, "pooled_dense/bias"),
        ]
        layers = {"pooled_dense": task.pooled_dense, "logits": task.output_dense}
    else:
        head = Classifier(
            encoder,
            num_classes,
            pooling="pooled",
            dropout=float(task.dropout),
            labels=labels,
        )
        pairs = []
        layers = {"logits": task.output_dense}
    pairs += [
        (head.output_dense.kernel, "logits/kernel"),
        (head.output_dense.bias, "logits/bias"),
    ]
    theirs = {f"{key}/{w.name}": w for key, layer in layers.items() for w in layer.weights}
    _copy_in(pairs, theirs, f"{where} (the {name} head)")
    return head


def _tokenizer_from(tokenizer, vocabulary_size, where, notes, lowercase=None):
    """`(zoo WordPieceTokenizer or None, the keras-hub tokenizer's settings)`."""
    if tokenizer is None:
        notes.append("no tokenizer given: a model directory needs one (its vocab.txt).")
        return None, None
    name = type(tokenizer).__name__
    vocabulary = getattr(tokenizer, "vocabulary", None)
    if not isinstance(vocabulary, list):
        notes.append(
            f"{name} is not a WordPiece tokenizer (ALBERT's is SentencePiece): zoo model "
            "directories, exports and the CLI take a WordPiece vocab.txt; the weights "
            "converted, the tokenizer did not (zoo.text.sentencepiece_tokenizer is for "
            "Python use)."
        )
        return None, {"class": name}
    settings = {
        "class": name,
        "lowercase": bool(tokenizer.lowercase),
        "strip_accents": bool(tokenizer.strip_accents),
        "split": bool(tokenizer.split),
        "split_on_cjk": bool(getattr(tokenizer, "split_on_cjk", True)),
        "special_tokens_in_strings": bool(tokenizer.special_tokens_in_strings),
        "oov_token": tokenizer.oov_token,
    }
    # The zoo's keras_hub flavor runs keras-hub's own split (the same
    # tensorflow-text ops); these settings it does not reproduce are refused
    # by name rather than converted into a model that tokenizes otherwise.
    if tokenizer.suffix_indicator != "##" or not tokenizer.split:
        raise ValueError(
            f"{where}: {name} with suffix_indicator={tokenizer.suffix_indicator!r}, "
            f"split={tokenizer.split}; the zoo's WordPiece takes BERT's '##' pieces of "
            "words it splits itself (split=True)."
        )
    if settings["special_tokens_in_strings"]:
        raise ValueError(
            f"{where}: {name} has special_tokens_in_strings=True (a '[SEP]' typed in text "
            "becomes the separator id); the zoo's tokenizers always tokenize typed special "
            "tokens as text, so text holding them would get other ids. Set "
            "special_tokens_in_strings=False on the keras-hub tokenizer to convert it."
        )
    if len(vocabulary) != vocabulary_size:
        raise ValueError(
            f"{where}: the tokenizer has {len(vocabulary)} tokens but the backbone's "
            f"vocabulary_size is {vocabulary_size}; they must match."
        )
    if lowercase is None:
        lowercase = settings["lowercase"]
    elif lowercase != settings["lowercase"]:
        notes.append(
            f"lowercase={lowercase} overrides {name}'s lowercase={settings['lowercase']}."
        )
    return (
        WordPieceTokenizer(
            vocabulary,
            lowercase=bool(lowercase),
            strip_accents=settings["strip_accents"],
            flavor="keras_hub",
            cjk=settings["split_on_cjk"],
            unk_token=tokenizer.oov_token,
        ),
        settings,
    )


def _sequence_length(preprocessor, encoder, notes):
    length = getattr(preprocessor, "sequence_length", None)
    longest = encoder.max_sequence_length
    if length is None:
        length = min(DEFAULT_SEQUENCE_LENGTH, longest)
        notes.append(f"no preprocessor sequence_length: the model directory uses {length}.")
    elif length > longest:
        notes.append(
            f"the preprocessor packs {length} tokens but the backbone takes {longest}: "
            f"the model directory uses {longest}."
        )
        length = longest
    return int(length)


def _load_preset(preset):
    """`(keras-hub task or backbone, tokenizer, preprocessor)` of a preset
    directory or name, through keras-hub's own loader."""
    kh = import_keras_hub(f"reading the keras-hub preset {preset}")
    # keras-hub's loader's helpers (pinned keras-hub 0.32.*): whether a file is
    # in a preset, local or remote, without loading it; keras-hub has no public
    # "which task does this preset hold".
    from keras_hub.src.utils import preset_utils

    def has(file):
        return preset_utils.check_file_exists(preset, file)

    if has("task.json"):
        task_class = preset_utils.check_config_class(
            preset_utils.load_json(preset, "task.json")
        )
        if issubclass(task_class, kh.models.TextClassifier):
            task = task_class.from_preset(preset)
            return task, None, task.preprocessor
    backbone = kh.models.Backbone.from_preset(preset)
    tokenizer = (
        kh.tokenizers.Tokenizer.from_preset(preset) if has("tokenizer.json") else None
    )
    preprocessor = None
    if has("preprocessor.json"):
        config = preset_utils.load_json(preset, "preprocessor.json").get("config", {})
        preprocessor = _Length(config.get("sequence_length"))
    return backbone, tokenizer, preprocessor


def _check_preset(path):
    """What keras-hub's `from_preset` would build and open, checked first:
    config.json's sizes (typed, in range, within the memory limit); for a
    local directory also tokenizer.json, task.json and preprocessor.json's
    fields (a string "false" is not a bool; a vocabulary is read from the
    preset's own assets/, never from a path the file names) and every file
    under assets/ a regular file inside the preset."""
    preset_config(path)
    if is_preset_name(str(path)):
        return
    path = pathlib.Path(path)
    tokenizer = _preset_json(path, "tokenizer.json")
    if tokenizer is not None:
        where = path / "tokenizer.json"
        args = tokenizer.get("config") or {}
        if not isinstance(args, dict):
            raise ValueError(f"{where}: config is {type(args).__name__}, not an object.")
        for key in (
            "lowercase",
            "strip_accents",
            "split",
            "split_on_cjk",
            "special_tokens_in_strings",
        ):
            read_bool(args, key, where, None)
        vocabulary = args.get("vocabulary")
        if vocabulary is not None:
            raise ValueError(
                f"{where}: vocabulary={str(vocabulary)[:80]!r}; keras-hub's save_to_preset "
                "writes null here and keeps the vocabulary in the preset's assets/tokenizer/. "
                "A preset that points elsewhere would read a file from outside it; re-save "
                "the preset with save_to_preset."
            )
    task = _preset_json(path, "task.json")
    if task is not None and isinstance(task.get("config"), dict):
        if "num_classes" in task["config"]:
            read_int(task["config"], "num_classes", path / "task.json", None, 1, 1 << 20)
    preprocessor = _preset_json(path, "preprocessor.json")
    if preprocessor is not None and isinstance(preprocessor.get("config"), dict):
        if preprocessor["config"].get("sequence_length") is not None:
            read_int(
                preprocessor["config"],
                "sequence_length",
                path / "preprocessor.json",
                None,
                1,
                1 << 16,
            )
    assets = path / "assets"
    if assets.is_dir():
        # Types from lstat, nothing opened; a link could name a file outside.
        _, refused = list_files(assets)
        if refused:
            name, what = next(iter(refused.items()))
            raise ValueError(
                f"{assets / name}: {what}, not a regular file in the preset's assets; "
                "keras-hub would open what it names. Re-save the preset."
            )


@dataclasses.dataclass
class _Length:
    """A preprocessor as far as the conversion reads one: its length."""

    sequence_length: int | None


def _labels_beside(preset):
    if isinstance(preset, (str, pathlib.Path)) and not is_preset_name(str(preset)):
        saved = _preset_json(preset, ZOO_PRESET_FILE)
        if saved is not None and isinstance(saved.get("labels"), list):
            return saved["labels"]
    return None


def read_keras_hub(source, *, labels=None, tokenizer=None, lowercase=None):
    """`KerasHubImport` of a keras-hub model: a preset directory
    (`save_to_preset`), a preset name (`keras_hub:NAME`, `kaggle://...`,
    resolved by keras-hub's `from_preset`) or a live `TextClassifier` /
    `Backbone`. `labels`: the class names (default: a zoo export's, else
    "0".."N-1"). `tokenizer`: a keras-hub tokenizer or preprocessor for a
    bare backbone. `lowercase`: override the tokenizer's casing."""
    kh = import_keras_hub()
    preprocessor = None
    if isinstance(source, (str, pathlib.Path)):
        where = str(source)
        if labels is None:
            labels = _labels_beside(source)
        preset = _preset_argument(where) if is_preset_name(where) else where
        # Typed and bounded before keras-hub builds anything from it.
        _check_preset(where)
        obj, tokenizer_found, preprocessor = _load_preset(preset)
        tokenizer = tokenizer or tokenizer_found
    else:
        obj = source
        where = f"keras-hub {type(source).__name__}"
    if isinstance(obj, kh.models.Task):
        task, backbone = obj, obj.backbone
        preprocessor = preprocessor or task.preprocessor
    elif isinstance(obj, kh.models.Backbone):
        task, backbone = None, obj
    else:
        raise TypeError(
            f"read_keras_hub: expected a keras-hub Task or Backbone, a preset directory or a "
            f"preset name ({' or '.join(NAME_PREFIXES)}...); received {type(obj).__name__}."
        )
    if isinstance(tokenizer, kh.models.Preprocessor):
        preprocessor = preprocessor or tokenizer
        tokenizer = tokenizer.tokenizer
    if tokenizer is None and preprocessor is not None:
        tokenizer = getattr(preprocessor, "tokenizer", None)
    notes = []
    encoder = _encoder_from(backbone, where)
    model = encoder if task is None else _head_from(task, encoder, labels, where, notes)
    if model is None:
        model = encoder
    elif task is None and labels is not None:
        notes.append("labels ignored: a backbone has no head.")
    zoo_tokenizer, settings = _tokenizer_from(
        tokenizer, encoder.vocabulary_size, where, notes, lowercase
    )
    return KerasHubImport(
        model=model,
        tokenizer=zoo_tokenizer,
        sequence_length=_sequence_length(preprocessor, encoder, notes),
        source=where,
        keras_hub_class=type(obj).__name__,
        source_tokenizer=settings,
        notes=notes,
    )


def save_imported(imported: KerasHubImport, directory, *, run_info=None, overwrite=True):
    """Write a `KerasHubImport` as a zoo model directory (a classifier as
    `zoo finetune` writes one: task, sequence_length, finetune_config)."""
    if imported.tokenizer is None:
        raise ValueError(
            f"{imported.source}: no WordPiece tokenizer to write as vocab.txt ("
            + "; ".join(imported.notes)
            + "). Model directories, exports and the CLI take a WordPiece vocab.txt; "
            "for library use, the converted model is KerasHubImport.model."
        )
    length = imported.sequence_length
    extra = {
        "source": imported.source,
        "source_format": "keras-hub",
        "keras_hub_class": imported.keras_hub_class,
        "keras_hub_tokenizer": imported.source_tokenizer,
        "sequence_length": length,
    }
    if isinstance(imported.model, Classifier):
        extra["task"] = "classify"
        extra["finetune_config"] = {"sequence_length": length, "max_windows": 1}
    return save_model_dir(
        imported.model,
        directory,
        imported.tokenizer,
        extra=extra,
        run_info=run_info,
        overwrite=overwrite,
    )


# --- zoo -> keras-hub --------------------------------------------------------


@dataclasses.dataclass
class KerasHubExport:
    """What `to_keras_hub` built: the keras-hub task (None when the head has
    no keras-hub counterpart), backbone and preprocessor, and the notes."""

    task: object
    backbone: object
    preprocessor: object
    labels: list | None
    notes: list

    @property
    def model(self):
        return self.task if self.task is not None else self.backbone


def _exportable(config):
    """ValueError when keras-hub's backbone for `config` computes another function."""
    if config.family == "roberta":
        raise ValueError(
            "--to keras-hub: a roberta-family encoder is not written as a keras-hub "
            "preset (the converter maps BertBackbone, DistilBertBackbone and "
            "AlbertBackbone with WordPiece or SentencePiece tokenizers only). Write it "
            "as HF RobertaModel with --to hf, or keep the zoo model directory."
        )
    wanted = {"bert": "gelu_tanh", "albert": "gelu_tanh", "distilbert": "gelu"}[
        config.family
    ]
    keras_class = {
        "bert": "BertBackbone",
        "albert": "AlbertBackbone",
        "distilbert": "DistilBertBackbone",
    }[config.family]
    if config.activation != wanted:
        forms = {"gelu": "exact (erf) GELU", "gelu_tanh": "tanh-approximate GELU"}
        fix = (
            " Export it with --to hf (exact), or distil it into a DistilBERT student "
            "(zoo distill: exact GELU, DistilBertBackbone)."
            if config.family == "bert"
            else ""
        )
        raise ValueError(
            f"encoder activation={config.activation!r} ({forms[config.activation]}): "
            f"keras-hub's {keras_class} hard-codes {forms[wanted]}, with no argument to "
            "change it, so a preset would compute another function (up to ~1e-3 per unit "
            f"apart). Nothing was written.{fix}"
        )
    if config.layer_norm_epsilon != LAYER_NORM_EPSILON:
        raise ValueError(
            f"encoder layer_norm_epsilon={config.layer_norm_epsilon}: keras-hub's "
            f"{keras_class} hard-codes {LAYER_NORM_EPSILON}. Nothing was written."
        )
    return keras_class


def _backbone_for(encoder, kh):
    config = encoder.config
    keras_class = _exportable(config)
    common = dict(
        vocabulary_size=config.vocabulary_size,
        num_layers=config.num_layers,
        num_heads=config.num_heads,
        hidden_dim=config.hidden_dim,
        intermediate_dim=config.intermediate_dim,
        dropout=config.dropout,
        max_sequence_length=config.max_sequence_length,
    )
    if config.family == "bert":
        backbone = kh.models.BertBackbone(**common, num_segments=config.num_segments)
    elif config.family == "distilbert":
        backbone = kh.models.DistilBertBackbone(**common)
    else:
        backbone = kh.models.AlbertBackbone(
            **common,
            num_segments=config.num_segments,
            embedding_dim=config.embedding_dim,
            num_groups=config.num_groups,
        )
    theirs = {w.path: w for w in backbone.weights}
    tensors = {}
    for entry in encoder_entries(encoder):
        path = keras_hub_path(entry.name, config.family)
        value = _numpy(entry.variable)
        if path in theirs and value.size == int(np.prod(theirs[path].shape)):
            value = value.reshape(tuple(theirs[path].shape))
        tensors[path] = value
    assign_tensors(
        [(w, path, False) for path, w in theirs.items()],
        NamedTensors(tensors, f"zoo {type(encoder).__name__}"),
        unused=[p for p in tensors if p not in theirs],
    )
    return backbone, keras_class


def _preprocessor_for(family, tokenizer, sequence_length, kh, notes):
    if family == "albert":
        notes.append(
            "tokenizer not written: keras-hub's AlbertTokenizer is SentencePiece and the "
            "zoo model's vocabulary is WordPiece; the preset holds the weights (and head), "
            "give AlbertTextClassifier a preprocessor of your own."
        )
        return None
    if tokenizer is None:
        notes.append("tokenizer not written: none given.")
        return None
    if type(tokenizer) is not WordPieceTokenizer:
        notes.append(f"tokenizer not written: a {type(tokenizer).__name__}, not WordPiece.")
        return None
    specials = (tokenizer.cls_token, tokenizer.sep_token, tokenizer.pad_token)
    if specials + (tokenizer.mask_token,) != ("[CLS]", "[SEP]", "[PAD]", "[MASK]"):
        notes.append(
            "tokenizer not written: keras-hub's BERT tokenizers spell the special tokens "
            "[CLS] [SEP] [PAD] [MASK]; this vocabulary uses others."
        )
        return None
    if not tokenizer.cjk:
        notes.append(
            "tokenizer not written: it keeps CJK ideographs inside words (cjk=False), and "
            "keras-hub's tokenizer.json cannot say so (its WordPieceTokenizer.get_config "
            "leaves split_on_cjk out), so from_preset would split them; give the task a "
            "preprocessor with split_on_cjk=False yourself."
        )
        return None
    if tokenizer.flavor == "keras_hub":
        # keras-hub's own rule: its settings, written as they are, tokenize
        # as this tokenizer does (the same tensorflow-text ops).
        strip = tokenizer.strip_accents
        if tokenizer.max_chars_per_word != 100:
            notes.append(
                f"the tokenizer limits words at {tokenizer.max_chars_per_word} UTF-8 bytes; "
                "keras-hub's at 100 (it has no setting for it), so longer or shorter words "
                "near the limit tokenize differently there."
            )
    else:
        # BERT's rule, written as near as keras-hub comes: accents stripped
        # exactly when lowercasing (keras-hub's default keeps them). What
        # keras-hub still does otherwise is in docs/keras_hub.md.
        strip = tokenizer._strip_accents  # noqa: SLF001 - BERT's rule, resolved
    tokenizer_class, preprocessor_class = {
        "bert": (kh.models.BertTokenizer, kh.models.BertTextClassifierPreprocessor),
        "distilbert": (
            kh.models.DistilBertTokenizer,
            kh.models.DistilBertTextClassifierPreprocessor,
        ),
    }[family]
    kh_tokenizer = tokenizer_class(
        vocabulary=tokenizer.vocabulary,
        lowercase=bool(tokenizer.lowercase),
        strip_accents=bool(strip),
        oov_token=tokenizer.unk_token,
    )
    return preprocessor_class(kh_tokenizer, sequence_length=int(sequence_length))


def _copy_out(layer, kernel, bias):
    layer.kernel.assign(np.asarray(kernel, dtype="float32"))
    layer.bias.assign(np.asarray(bias, dtype="float32"))


def _task_for(model, backbone, preprocessor, kh, notes):
    """The keras-hub task carrying `model`'s head, or None (notes say why)."""
    name = type(model).__name__
    if not isinstance(model, Classifier):
        if model is not getattr(model, "encoder", model):
            notes.append(f"head not written: keras-hub has no task for a zoo {name}.")
        return None
    encoder = model.encoder
    pooling = resolve_pooling(encoder, model.pooling, name)
    family = encoder.config.family
    kernel = _numpy(model.output_dense.kernel)
    bias = _numpy(model.output_dense.bias)
    common = dict(
        num_classes=model.num_classes, preprocessor=preprocessor, dropout=model.dropout
    )
    if pooling == "pooled" and model.hidden_dense is None:
        task_class = (
            kh.models.AlbertTextClassifier
            if family == "albert"
            else kh.models.BertTextClassifier
        )
        task = task_class(backbone, **common)
        _copy_out(task.output_dense, kernel, bias)
        return task
    if pooling == "cls" and family == "distilbert":
        if model.hidden_dense is not None:
            task = kh.models.DistilBertTextClassifier(
                backbone, hidden_dim=model.hidden_dim, **common
            )
            _copy_out(
                task.pooled_dense,
                _numpy(model.hidden_dense.kernel),
                _numpy(model.hidden_dense.bias),
            )
        else:
            # DistilBertTextClassifier always has its ReLU pre-classifier:
            # with [I, -I] it passes x on as (relu(x), relu(-x)), and logits
            # [W; -W] recombine them: relu(x)W - relu(-x)W = xW, exactly.
            width = encoder.hidden_dim
            task = kh.models.DistilBertTextClassifier(
                backbone, hidden_dim=2 * width, **common
            )
            eye = np.eye(width, dtype="float32")
            _copy_out(
                task.pooled_dense, np.concatenate([eye, -eye], 1), np.zeros(2 * width)
            )
            kernel = np.concatenate([kernel, -kernel], 0)
        _copy_out(task.output_dense, kernel, bias)
        return task
    why = {
        "mean": "pooling='mean' (a mean over tokens) has no keras-hub task",
        "cls": f"pooling='cls' on a {family} encoder: keras-hub's {family} task reads the pooler",
        "pooled": "a hidden layer on a pooled head has no keras-hub task",
    }[pooling]
    notes.append(f"head not written: {why}; the preset holds the backbone.")
    return None


def to_keras_hub(model, tokenizer=None, *, sequence_length=None):
    """A `KerasHubExport` of a zoo encoder or `Classifier` (a text model's own
    tokenizer and length are used when none are given). Raises ValueError,
    before building anything, for an encoder keras-hub would compute
    differently (activation, LayerNorm epsilon)."""
    encoder = getattr(model, "encoder", model)
    _exportable(encoder.config)
    kh = import_keras_hub("writing a keras-hub preset")
    preprocessor_of_model = getattr(model, "preprocessor", None)
    if tokenizer is None and preprocessor_of_model is not None:
        tokenizer = preprocessor_of_model.tokenizer
    if sequence_length is None:
        sequence_length = getattr(preprocessor_of_model, "sequence_length", None) or min(
            DEFAULT_SEQUENCE_LENGTH, encoder.max_sequence_length
        )
    notes = []
    backbone, _ = _backbone_for(encoder, kh)
    preprocessor = _preprocessor_for(
        encoder.config.family, tokenizer, sequence_length, kh, notes
    )
    task = _task_for(model, backbone, preprocessor, kh, notes)
    labels = getattr(model, "labels", None) if task is not None else None
    return KerasHubExport(task, backbone, preprocessor, labels, notes)


def save_keras_hub_preset(
    model, directory, tokenizer=None, *, sequence_length=None, source=None, overwrite=True
):
    """Write `model` (zoo encoder or Classifier) as a keras-hub preset that
    `keras_hub.models.*Backbone.from_preset(directory)` (and the
    `*TextClassifier` task's, when the head maps) load. Returns the
    `KerasHubExport`; its notes say what was not written."""
    exported = to_keras_hub(model, tokenizer, sequence_length=sequence_length)
    with atomic_directory(directory, overwrite=overwrite) as tmp:
        if exported.task is not None:
            exported.task.save_to_preset(str(tmp))
        else:
            exported.backbone.save_to_preset(str(tmp))
            if exported.preprocessor is not None:
                exported.preprocessor.save_to_preset(str(tmp))
        record = {
            "format": "zoo-keras-hub",
            "keras_hub_class": type(exported.model).__name__,
            "labels": exported.labels,
            "source": None if source is None else str(source),
            "notes": exported.notes,
        }
        (tmp / ZOO_PRESET_FILE).write_text(json.dumps(record, indent=2) + "\n")
    return exported
