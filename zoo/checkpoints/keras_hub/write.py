"""zoo -> keras-hub: a zoo encoder or `Classifier` as keras-hub's backbone,
preprocessor and text-classifier task (`to_keras_hub`), refused before
anything is built where keras-hub would compute another function, and
written as a preset `from_preset` loads, with the zoo's labels and notes
beside it (`save_keras_hub_preset`)."""

from __future__ import annotations

import dataclasses
import json

import numpy as np

from zoo.checkpoints.assign import NamedTensors, assign_tensors
from zoo.checkpoints.keras_hub.names import (
    LAYER_NORM_EPSILON,
    ZOO_PRESET_FILE,
    _numpy,
    keras_hub_path,
)
from zoo.checkpoints.keras_hub.preset import import_keras_hub
from zoo.checkpoints.names import encoder_entries
from zoo.configs import DEFAULT_SEQUENCE_LENGTH
from zoo.models import Classifier
from zoo.models.classifier import resolve_pooling
from zoo.text.tokenizer import WordPieceTokenizer
from zoo.utils.atomic import atomic_directory


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
