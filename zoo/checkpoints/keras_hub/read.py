"""keras-hub -> zoo: a keras-hub backbone or text classifier (live, a preset
directory or a preset name) as the zoo encoder of its family, a
`Classifier` head, a keras_hub-flavored `WordPieceTokenizer` and a sequence
length (`read_keras_hub`), and that result as a zoo model directory
(`save_imported`)."""

from __future__ import annotations

import dataclasses
import pathlib

import keras
import numpy as np

from zoo.checkpoints.assign import NamedTensors, assign_tensors
from zoo.checkpoints.keras_hub.names import (
    CLASSIFIERS,
    NAME_PREFIXES,
    _numpy,
    keras_hub_path,
)
from zoo.checkpoints.keras_hub.preset import (
    _check_preset,
    _config_from_backbone_json,
    _labels_beside,
    _load_preset,
    _preset_argument,
    import_keras_hub,
    is_preset_name,
)
from zoo.checkpoints.model_dir import save_model_dir
from zoo.checkpoints.names import encoder_entries
from zoo.configs import DEFAULT_SEQUENCE_LENGTH
from zoo.models import Classifier, build_encoder
from zoo.text.tokenizer import WordPieceTokenizer


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
