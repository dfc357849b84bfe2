"""HF transformers `BertModel` and `DistilBertModel` directories:
config.json + model.safetensors.

Reads the plain BertModel layout (`embeddings.word_embeddings.weight`, ...),
the sentence-transformers layout (the same files at the top of the
directory, or in a `0_Transformer/` sub-folder) and BertForPreTraining files
(`bert.` prefix plus `cls.predictions` / `cls.seq_relationship` heads).
`model_type: "distilbert"` directories (DistilBertModel keys, or a
DistilBertFor* file's `distilbert.` prefix) load into a `DistilBertEncoder`,
and a distilbert-family encoder is written as DistilBertModel.
`model_type: "albert"` directories (AlbertModel keys, or AlbertForPreTraining's
`albert.` prefix with its `predictions.*` and `sop_classifier.*` heads) load
into an `AlbertEncoder` (or a zoo MaskedLM / Pretrainer on one), and an
albert-family model is written back as AlbertModel / AlbertForPreTraining.
`model_type: "roberta"` directories (RobertaModel keys, which are BertModel's,
or a RobertaFor* file's `roberta.` prefix, its `lm_head.` / `classifier.`
heads ignored) load into a `RobertaEncoder`, written back as RobertaModel
with its byte-level BPE files (vocab.json, merges.txt).
Weights are read with `safetensors.numpy`: no torch needed.
"""

from __future__ import annotations

import functools
import json
import os
import pathlib

import numpy as np
from safetensors.numpy import save_file

from zoo.checkpoints.assign import NamedTensors, assign_tensors
from zoo.checkpoints.config_fields import (
    HF_CONFIG,
    HF_FIELDS,
    checked,
    hf_key,
    read_bool,
    read_choice,
    read_fields,
    read_int,
)
from zoo.checkpoints.hf_tokenization import check_vocabulary
from zoo.checkpoints.names import hf_albert_name, hf_distilbert_name, hf_name, model_entries
from zoo.checkpoints.safetensors_file import (
    check_against_config,
    check_dtypes,
    read_header,
    read_tensors,
)
from zoo.configs import FAMILY_DEFAULTS, ROBERTA_PADDING_IDX, EncoderConfig
from zoo.models.bert_encoder import build_encoder
from zoo.text.byte_pair_tokenizer import BytePairTokenizer
from zoo.utils.atomic import atomic_directory
from zoo.utils.jsonfile import read_json_object

# Buffers HF stores beside the weights; they are not parameters.
_HF_BUFFERS = (
    "embeddings.position_ids",
    "bert.embeddings.position_ids",
    "distilbert.embeddings.position_ids",
    "albert.embeddings.position_ids",
    "embeddings.token_type_ids",
    "roberta.embeddings.position_ids",
    "roberta.embeddings.token_type_ids",
)
# HF's activation names -> `EncoderConfig.activation`. "gelu" is the exact erf
# form; "gelu_new", "gelu_pytorch_tanh" and "gelu_fast" are three codings of
# one function, the tanh approximation (ALBERT v2's). Anything else (relu,
# "gelu_python", ...) is refused: it would load and compute something else.
_HF_ACTIVATIONS = {
    "gelu": "gelu",
    "gelu_new": "gelu_tanh",
    "gelu_pytorch_tanh": "gelu_tanh",
    "gelu_fast": "gelu_tanh",
}
_TO_HF_ACTIVATION = {"gelu": "gelu", "gelu_tanh": "gelu_new"}
# What an HF class fixes in its code, for a field it has no config.json key
# for (DistilBertModel's LayerNorms), as the refusal names it.
_FIXED_IN_HF = {"layer_norm_epsilon": "every LayerNorm with eps={}"}
# config.json switches with which HF's model class computes another attention
# than the zoo encoders' (every token attends to every real token, scores
# from learned absolute positions): `is_decoder` gives BertModel and
# RobertaModel a causal mask; `add_cross_attention` gives their layers
# blocks that attend to an encoder's outputs (HF builds them only in a
# decoder); AlbertModel ignores both. Each must be false, or the model would
# load and give other outputs without a word.
_DECODER_SWITCHES = {
    "is_decoder": "masks attention causally (each token sees only those before it)",
    "add_cross_attention": "adds cross-attention to an encoder's outputs to every layer",
}
_DECODER_FAMILIES = ("bert", "roberta")
# Pre-training heads a bare encoder has no place for: BERT's, and
# DistilBertForMaskedLM's (read and ignored, as for BERT).
_BERT_HEADS = ("cls.",)
_DISTILBERT_HEADS = ("vocab_transform.", "vocab_layer_norm.", "vocab_projector.")
# AlbertForPreTraining's heads; `predictions.decoder.*` (when a file holds it)
# is the tied copy of the word embeddings and `predictions.bias`.
_ALBERT_HEADS = ("predictions.", "sop_classifier.")
# RobertaForMaskedLM's and RobertaForSequenceClassification's heads.
_ROBERTA_HEADS = ("lm_head.", "classifier.")


def find_hf_dir(path) -> pathlib.Path | None:
    """The folder holding config.json + model.safetensors, or None."""
    path = pathlib.Path(path)
    for candidate in (path, path / "0_Transformer"):
        if (candidate / "config.json").is_file() and (
            candidate / "model.safetensors"
        ).is_file():
            return candidate
    return None


def _check_activation(hf, key, origin, default="gelu"):
    """`EncoderConfig.activation` for HF's activation name under `key`."""
    return read_choice(
        hf,
        key,
        origin,
        default,
        _HF_ACTIVATIONS,
        "; zoo encoders compute GELU, exact (HF 'gelu') or tanh-approximate (HF "
        "'gelu_new', 'gelu_pytorch_tanh', 'gelu_fast'). A checkpoint trained with another "
        "activation would load but give different outputs",
    )


def config_from_hf(hf: dict, origin="config.json") -> EncoderConfig:
    """Translate HF / google-research BERT config keys, or HF DistilBERT's
    (`model_type: "distilbert"`), ALBERT's or RoBERTa's, into an
    EncoderConfig: every field typed and in range under its HF key
    (`config_fields.HF_CONFIG`, the family's default for a key left out),
    and the model's memory within the limit, before anything is built."""
    if not isinstance(hf, dict):
        raise ValueError(f"{origin}: expected a JSON object, not {type(hf).__name__}.")
    model_type = hf.get("model_type", "bert")
    if not isinstance(model_type, str) or model_type not in HF_FIELDS:
        raise ValueError(
            f"{origin}: model_type={model_type!r:.80}; only BERT-architecture checkpoints "
            "(model_type 'bert', e.g. BERT, MiniLM, TinyBERT), DistilBERT "
            "(model_type 'distilbert'), ALBERT (model_type 'albert') and RoBERTa "
            "(model_type 'roberta') load here."
        )
    what = {"bert": "BERT", "distilbert": "DistilBERT", "albert": "ALBERT"}
    fields = read_fields(hf, HF_FIELDS[model_type], origin, what.get(model_type, "RoBERTa"))
    if model_type == "albert":
        inner = read_int(hf, "inner_group_num", origin, 1, 1, 1 << 10)
        if inner != 1:
            raise ValueError(
                f"{origin}: inner_group_num={inner!r}; the zoo's AlbertEncoder runs one "
                "block per layer (inner_group_num 1, as in every released ALBERT). "
                "This checkpoint stacks several blocks inside each layer and cannot load."
            )
    elif model_type == "roberta":
        _check_roberta(hf, fields, origin)
    _check_attention(hf, model_type, origin)
    default = _TO_HF_ACTIVATION[FAMILY_DEFAULTS[model_type]["activation"]]
    activation = _check_activation(hf, hf_key(model_type, "activation"), origin, default)
    config = EncoderConfig.for_family(model_type, **fields, activation=activation)
    return checked(config, origin)


def _check_attention(hf, model_type, origin):
    """Refuse the config.json settings under which HF's class for
    `model_type` attends otherwise than the zoo's encoder: a decoder's
    switches (`_DECODER_SWITCHES`), relative position scores."""
    if model_type == "distilbert":  # DistilBertConfig has none of these keys
        return
    architecture = HF_CONFIG[model_type][0][2][0]
    encoder = architecture.replace("Model", "Encoder")
    for key, effect in _DECODER_SWITCHES.items():
        if model_type in _DECODER_FAMILIES and read_bool(hf, key, origin, False):
            raise ValueError(
                f"{origin}: {key}=true; HF {architecture} then {effect}, but the zoo's "
                f"{encoder} is an encoder alone (every token attends to every other), so "
                "this checkpoint would load and give other outputs. A decoder cannot be "
                f"converted; if these are an encoder's weights, set {key} to false (HF's "
                "default)."
            )
    read_choice(
        hf,
        "position_embedding_type",
        origin,
        "absolute",
        ("absolute",),
        f"; the zoo's {encoder} has learned absolute positions ('absolute') only",
    )


def _check_roberta(hf, fields, origin):
    """Refuse what RobertaEncoder does not compute (another padding id), and
    turn the position table's rows into the longest input
    (`fields["max_sequence_length"]`)."""
    # RobertaConfig's own defaults (type_vocab_size 2, eps 1e-12, 512
    # positions) are not RoBERTa's released values; sizes must be given, the
    # rest falls back to roberta-base's config.json.
    pad = read_int(hf, "pad_token_id", origin, ROBERTA_PADDING_IDX, 0, 1 << 22)
    if pad != ROBERTA_PADDING_IDX:
        raise ValueError(
            f"{origin}: pad_token_id={pad!r}; RoBERTa's position ids count from the "
            f"padding id, and the zoo's RobertaEncoder uses {ROBERTA_PADDING_IDX} "
            "(RoBERTa's <pad>). A checkpoint with another padding id would load and "
            "compute other positions."
        )
    positions = fields["max_sequence_length"]
    if positions <= ROBERTA_PADDING_IDX + 1:
        raise ValueError(
            f"{origin}: max_position_embeddings={positions!r}; expected an int above "
            f"{ROBERTA_PADDING_IDX + 1} (RoBERTa's positions start after the padding id: "
            "514 rows for 512 tokens)."
        )
    fields["max_sequence_length"] = positions - ROBERTA_PADDING_IDX - 1


def config_to_hf(config: EncoderConfig) -> dict:
    """config.json for HF's BertModel (bert family), DistilBertModel
    (distilbert family), AlbertModel (albert family) or RobertaModel
    (roberta family), by `config_fields.HF_CONFIG`; ValueError for what the
    HF class cannot express."""
    if config.family not in HF_CONFIG:
        raise ValueError(
            f"HF formats hold bert-, distilbert-, albert- and roberta-family encoders; a "
            f"{config.family} encoder does not fit them. Save it as a zoo model "
            "directory instead."
        )
    rows = HF_CONFIG[config.family]
    architecture = rows[0][2][0]
    # A field the HF class has no key for is fixed in its code: a config
    # with another value would load there and silently compute something else.
    for field, default in FAMILY_DEFAULTS[config.family].items():
        value = getattr(config, field)
        if hf_key(config.family, field) is None and value != default:
            fixed = _FIXED_IN_HF.get(field, f"every model with {field}={{}}")
            raise ValueError(
                f"EncoderConfig.{field}={value!r}: HF {architecture} builds "
                f"{fixed.format(default)} and has no config field to change it, so this "
                f"{config.family}-family encoder would load there and give different "
                "outputs. Keep it as a zoo model directory (`zoo convert SRC --to zoo`), "
                f"or build (or distil) one with {field}={default!r} to write it as HF."
            )
    hf = {}
    for key, field, default in rows:
        if field is None:
            hf[key] = list(default) if isinstance(default, list) else default
        elif field == "activation":
            hf[key] = _TO_HF_ACTIVATION[config.activation]
        elif field == "max_sequence_length":
            # The position table's rows: RoBERTa's 2 more than its longest input.
            hf[key] = config.position_table_size
        else:
            hf[key] = getattr(config, field)
    return hf


def read_hf_tensors(directory) -> NamedTensors:
    """The tensors of `directory`'s model.safetensors, read by the rules
    `zoo.checkpoints.safetensors_file` checks (header bounded by the file,
    offsets inside it, weights floating point and returned as float32; HF's
    integer buffers as stored)."""
    path = pathlib.Path(directory) / "model.safetensors"
    return NamedTensors(read_tensors(path, buffers=_HF_BUFFERS), path)


def _hf_naming(model, tensors):
    """(canonical name -> (HF key, transpose), head-tensor prefixes a bare
    encoder leaves unread) for `model`'s encoder family and `tensors`' layout."""
    encoder = getattr(model, "encoder", model)
    if encoder.config.family == "albert":
        prefix = "albert." if "albert.embeddings.word_embeddings.weight" in tensors else ""
        return functools.partial(hf_albert_name, prefix=prefix), _ALBERT_HEADS
    if encoder.config.family == "distilbert":
        prefix = (
            "distilbert."
            if "distilbert.embeddings.word_embeddings.weight" in tensors
            else ""
        )
        return functools.partial(hf_distilbert_name, prefix=prefix), _DISTILBERT_HEADS
    if encoder.config.family == "roberta":
        # RobertaModel's keys are BertModel's.
        prefix = (
            "roberta." if "roberta.embeddings.word_embeddings.weight" in tensors else ""
        )
        return functools.partial(hf_name, prefix=prefix), _ROBERTA_HEADS
    prefix = "bert." if "bert.embeddings.word_embeddings.weight" in tensors else ""
    return functools.partial(hf_name, prefix=prefix), _BERT_HEADS


def load_hf_weights(model, directory, *, allow_partial=False):
    """Load an HF safetensors file into an encoder or a zoo pre-training model.

    The encoder's family picks the names: BertModel / BertForPreTraining
    keys for bert-family models, DistilBertModel keys for distilbert-family
    ones (which take no pre-training heads). Head tensors (`cls.*`,
    DistilBertForMaskedLM's `vocab_*`) a bare encoder cannot hold are
    ignored; any other tensor left over is reported, since it means the
    architectures differ.
    """
    tensors = read_hf_tensors(directory)
    name_of, heads = _hf_naming(model, tensors)
    pairs = []
    for entry in model_entries(model):
        key, transpose = name_of(entry.name)
        pairs.append((entry.variable, key, transpose != entry.transposed))
    consumed = {key for _, key, _ in pairs}
    if any(k.startswith("predictions.") for k in consumed):
        # AlbertForPreTraining may store its decoder, a tied copy of the word
        # embeddings and `predictions.bias`, which the zoo head shares too.
        consumed |= {"predictions.decoder.weight", "predictions.decoder.bias"}
    unused = [
        k
        for k in tensors
        if k not in consumed and k not in _HF_BUFFERS and not k.startswith(heads)
    ]
    return assign_tensors(pairs, tensors, unused=unused, allow_partial=allow_partial)


def load_hf_encoder(directory, *, allow_partial=False):
    """Build a `BertEncoder` (a `DistilBertEncoder` for model_type
    "distilbert") from an HF directory and load its weights. A WordPiece
    directory whose tokenizer.json and vocab.txt give a token different ids
    is refused first (`hf_tokenization.check_vocabulary`): the embedding
    rows are indexed by those ids, so one of the files does not belong to
    the weights."""
    found = find_hf_dir(directory)
    if found is None:
        _explain_missing_hf_files(directory)
        raise FileNotFoundError(
            f"{directory}: no HF BertModel / DistilBertModel files here (expected "
            "config.json and model.safetensors, or a 0_Transformer/ folder holding them)."
        )
    config = config_from_hf(
        read_json_object(found / "config.json", "use the checkpoint's own config.json"),
        found / "config.json",
    )
    # The weights file's header is checked (format, dtypes, shapes against
    # config.json) before a layer exists: a file that cannot load is refused
    # in milliseconds, not after building the model it does not fit.
    header = read_header(found / "model.safetensors")
    check_dtypes(header, _HF_BUFFERS)
    check_against_config(header, config, found / "config.json")
    if config.family != "roberta":  # byte-level BPE: no vocab.txt
        check_vocabulary(directory)
    encoder = build_encoder(config)
    load_hf_weights(encoder, found, allow_partial=allow_partial)
    return encoder


def _explain_missing_hf_files(directory):
    """Raise the precise error when `find_hf_dir` found no directory because
    model.safetensors is there but not a regular file (a FIFO, a broken link:
    `read_header` names it without opening it), or the checkpoint is sharded."""
    for candidate in (pathlib.Path(directory), pathlib.Path(directory) / "0_Transformer"):
        if not (candidate / "config.json").is_file():
            continue
        if os.path.lexists(candidate / "model.safetensors"):
            read_header(candidate / "model.safetensors")
        if (candidate / "model.safetensors.index.json").exists():
            raise FileNotFoundError(
                f"{candidate}: holds a sharded checkpoint (model.safetensors.index.json); "
                "zoo reads one model.safetensors file (every BERT-family model fits one). "
                "Merge the shards into model.safetensors, e.g. with transformers' "
                "save_pretrained(..., max_shard_size='100GB')."
            )


def _tokenizer_config(config: EncoderConfig, lowercase) -> dict:
    # What AutoTokenizer needs beyond vocab.txt, and what `load_checkpoint`
    # reads the casing from; without it a cased vocabulary comes back uncased.
    if config.family == "roberta":
        return {
            "tokenizer_class": "RobertaTokenizer",
            "add_prefix_space": False,
            "model_max_length": config.max_sequence_length,
        }
    return {
        "tokenizer_class": (
            "DistilBertTokenizer" if config.family == "distilbert" else "BertTokenizer"
        ),
        "do_lower_case": bool(lowercase),
        "model_max_length": config.max_sequence_length,
    }


def save_hf(model, directory, *, vocabulary=None, lowercase=None, tokenizer=None):
    """Write `config.json` + `model.safetensors` (+ `vocab.txt`, and
    `tokenizer_config.json` when `lowercase` is given) in HF's layout.

    A roberta-family encoder is written as RobertaModel; its tokenizer, a
    `BytePairTokenizer` given as `tokenizer`, as vocab.json, merges.txt and
    tokenizer_config.json (`vocabulary` and `lowercase` are WordPiece's).

    A bert-family model is written as BertModel (BertForPreTraining keys when
    `model` has heads), a distilbert-family encoder as DistilBertModel, an
    albert-family one as AlbertModel (AlbertForPreTraining keys with heads). What
    the HF class cannot express (a LayerNorm epsilon DistilBERT does not
    have, heads on a distilbert-family encoder) raises ValueError before
    anything is written.
    """
    encoder = getattr(model, "encoder", model)
    hf_config = config_to_hf(encoder.config)
    has_heads = model is not encoder
    roberta = encoder.config.family == "roberta"
    if roberta and (vocabulary is not None or lowercase is not None):
        raise ValueError(
            "save_hf: a roberta-family encoder's tokenizer is byte-level BPE; pass it as "
            "`tokenizer=` (a BytePairTokenizer), not `vocabulary=`/`lowercase=` "
            "(WordPiece's vocab.txt)."
        )
    if tokenizer is not None and not (roberta and isinstance(tokenizer, BytePairTokenizer)):
        raise ValueError(
            f"save_hf: `tokenizer=` takes a roberta-family encoder's BytePairTokenizer; "
            f"received a {type(tokenizer).__name__} for a {encoder.config.family}-family "
            "encoder. Pass a WordPiece vocabulary as `vocabulary=` and `lowercase=`."
        )
    if roberta:
        if has_heads:
            raise ValueError(
                "save_hf: a roberta-family model is written as HF RobertaModel, which "
                f"holds the encoder alone; received a {type(model).__name__}. Pass its "
                "`.encoder`, or save the whole model as a zoo model directory."
            )
        name_of = hf_name
    elif encoder.config.family == "distilbert":
        if has_heads:
            raise ValueError(
                "save_hf: a distilbert-family model is written as HF DistilBertModel, "
                f"which holds the encoder alone; received a {type(model).__name__}. "
                "Pass its `.encoder`, or save the whole model as a zoo model directory."
            )
        name_of = hf_distilbert_name
    elif encoder.config.family == "albert":
        if has_heads:
            hf_config["architectures"] = ["AlbertForPreTraining"]
        name_of = functools.partial(hf_albert_name, prefix="albert." if has_heads else "")
    else:
        prefix = "bert." if has_heads else ""
        if has_heads:
            hf_config["architectures"] = ["BertForPreTraining"]
        name_of = functools.partial(hf_name, prefix=prefix)
    tensors = {}
    for entry in model_entries(model):
        key, transpose = name_of(entry.name)
        value = np.asarray(entry.variable.numpy())
        tensors[key] = np.ascontiguousarray(
            value.T if transpose != entry.transposed else value
        )
    with atomic_directory(directory) as tmp:
        (tmp / "config.json").write_text(json.dumps(hf_config, indent=2) + "\n")
        save_file(tensors, str(tmp / "model.safetensors"), metadata={"format": "pt"})
        if vocabulary is not None:
            (tmp / "vocab.txt").write_text("\n".join(vocabulary) + "\n", encoding="utf-8")
        if lowercase is not None or tokenizer is not None:
            (tmp / "tokenizer_config.json").write_text(
                json.dumps(_tokenizer_config(encoder.config, lowercase), indent=2) + "\n"
            )
        if tokenizer is not None:
            tokenizer.write_files(tmp)
    return pathlib.Path(directory)
