"""The tokenization an HF WordPiece checkpoint declares, as the zoo's
description (`zoo.text.description`).

transformers' fast tokenizer runs `tokenizer.json`; the slow one, and
checkpoints without that file, take `tokenizer_config.json`'s settings
(`do_lower_case`, `strip_accents`, `tokenize_chinese_chars`). So
`tokenizer.json` wins when both exist. Its normalizer, pre-tokenizer,
model and post-processor are read into the description; a step the zoo
has no name for is refused with the file and its JSON path named
(`tokenizer.json: normalizer.normalizers[2].type: 'Replace' ...`). Both
files are untrusted data: read bounded, every field typed (a string where a
bool belongs is refused, never read as true)."""

from __future__ import annotations

import pathlib

from zoo.checkpoints.config_fields import read_bool
from zoo.text import description as td
from zoo.utils.jsonfile import read_json_object

# HF normalizer types and the description steps they are.
_NORMALIZERS = {
    "NFC": "nfc",
    "NFKC": "nfkc",
    "NFD": "nfd",
    "NFKD": "nfkd",
    "Lowercase": "lowercase",
    "StripAccents": "strip_accents",
}
_PRE_TOKENIZERS = {
    "BertPreTokenizer": "bert",
    "ByteLevel": "byte_level",
    "Metaspace": "metaspace",
}


class HFTokenizationError(ValueError):
    """An HF tokenizer file declares a tokenization the zoo cannot describe."""


def _dirs(directory):
    directory = pathlib.Path(directory)
    return [directory, directory / "0_Transformer"]


def hf_description(directory):
    """The description of an HF WordPiece checkpoint in `directory`, from
    tokenizer.json, else tokenizer_config.json, else BERT uncased's
    (HF's default). Returns `(description, source file or None)`."""
    for base in _dirs(directory):
        path = base / "tokenizer.json"
        if path.is_file():
            obj = read_json_object(path, "use the checkpoint's own tokenizer.json")
            return _from_tokenizer_json(obj, path), path
    for base in _dirs(directory):
        path = base / "tokenizer_config.json"
        if path.is_file():
            obj = read_json_object(path, "use the checkpoint's own tokenizer_config.json")
            return _from_tokenizer_config(obj, path), path
    return td.wordpiece(lowercase=True), None


def _from_tokenizer_config(obj, path):
    lowercase = read_bool(obj, "do_lower_case", path, True)
    strip = obj.get("strip_accents")
    if strip is not None:
        strip = read_bool(obj, "strip_accents", path, None)
    cjk = read_bool(obj, "tokenize_chinese_chars", path, True)
    unk = _token(obj.get("unk_token", "[UNK]"), path, "unk_token")
    cls = _token(obj.get("cls_token", "[CLS]"), path, "cls_token")
    sep = _token(obj.get("sep_token", "[SEP]"), path, "sep_token")
    pad = _token(obj.get("pad_token", "[PAD]"), path, "pad_token")
    mask = _token(obj.get("mask_token", "[MASK]"), path, "mask_token")
    return td.wordpiece(
        lowercase=lowercase,
        strip_accents=strip,
        cjk=cjk,
        unk_token=unk,
        cls=cls,
        sep=sep,
        pad=pad,
        mask=mask,
    )


def _token(value, path, field):
    # transformers writes special tokens as strings or as AddedToken objects.
    if isinstance(value, dict):
        value = value.get("content")
    if not isinstance(value, str) or not 0 < len(value) <= td.MAX_TOKEN_CHARS:
        raise HFTokenizationError(
            f"{path}: {field}: {value!r:.60}; expected a token spelling of 1 to "
            f"{td.MAX_TOKEN_CHARS} characters"
        )
    return value


def _refuse(path, where, value, why):
    raise HFTokenizationError(f"{path}: {where}: {value!r:.60} {why}")


def _typed(obj, key, kind, path, where, default):
    value = obj.get(key, default)
    if kind is bool and value is not None and not isinstance(value, bool):
        _refuse(path, f"{where}.{key}", value, "is not true, false or null")
    if kind is int and (not isinstance(value, int) or isinstance(value, bool)):
        _refuse(path, f"{where}.{key}", value, "is not an integer")
    return value


def _normalizer_steps(node, path, where="normalizer"):
    if node is None:
        return []
    if not isinstance(node, dict):
        _refuse(path, where, node, "is not an object")
    kind = node.get("type")
    if kind == "BertNormalizer":
        clean = _typed(node, "clean_text", bool, path, where, True)
        chinese = _typed(node, "handle_chinese_chars", bool, path, where, True)
        strip = _typed(node, "strip_accents", bool, path, where, None)
        lowercase = _typed(node, "lowercase", bool, path, where, True)
        if not clean:
            _refuse(
                path,
                f"{where}.clean_text",
                clean,
                "is a setting the zoo does not implement",
            )
        if strip is None:
            strip = lowercase
        steps = ["bert_clean"] + (["cjk_spacing"] if chinese else [])
        return (
            steps
            + (["strip_accents"] if strip else [])
            + (["lowercase"] if lowercase else [])
        )
    if kind == "Sequence":
        children = node.get("normalizers")
        if not isinstance(children, list) or len(children) > td.MAX_STEPS:
            _refuse(path, f"{where}.normalizers", children, "is not a list of normalizers")
        steps = []
        for i, child in enumerate(children):
            steps += _normalizer_steps(child, path, f"{where}.normalizers[{i}]")
        return steps
    if kind in _NORMALIZERS:
        return [_NORMALIZERS[kind]]
    _refuse(path, f"{where}.type", kind, "is not a normalizer the zoo implements")


def _from_tokenizer_json(obj, path):
    steps = _normalizer_steps(obj.get("normalizer"), path)
    pre = obj.get("pre_tokenizer")
    pre_type = pre.get("type") if isinstance(pre, dict) else pre
    if pre_type not in _PRE_TOKENIZERS:
        _refuse(
            path,
            "pre_tokenizer.type",
            pre_type,
            "is not a pre-tokenizer the zoo implements",
        )
    model = obj.get("model")
    if not isinstance(model, dict) or model.get("type") != "WordPiece":
        _refuse(
            path,
            "model.type",
            model.get("type") if isinstance(model, dict) else model,
            "is not WordPiece (a byte-level BPE checkpoint is read as RoBERTa's)",
        )
    prefix = model.get("continuing_subword_prefix", "##")
    if prefix != "##":
        _refuse(path, "model.continuing_subword_prefix", prefix, "is not '##'")
    max_word = _typed(model, "max_input_chars_per_word", int, path, "model", 100)
    if not 1 <= max_word <= td.MAX_WORD:
        _refuse(
            path, "model.max_input_chars_per_word", max_word, f"is not in 1..{td.MAX_WORD}"
        )
    unk = _token(model.get("unk_token", "[UNK]"), path, "model.unk_token")
    cls, sep = _post_processor_tokens(obj.get("post_processor"), path)
    description = {
        "version": td.VERSION,
        "normalizer": [{"type": s} for s in steps],
        "pre_tokenizer": {"type": _PRE_TOKENIZERS[pre_type]},
        "word_normalizer": [],
        "model": {
            "type": "WordPiece",
            "unk_token": unk,
            "prefix": "##",
            "max_word": max_word,
            "max_word_unit": "characters",
        },
        "post_processor": {"type": "bert", "cls": cls, "sep": sep},
    }
    if _PRE_TOKENIZERS[pre_type] == "byte_level":
        description["pre_tokenizer"]["add_prefix_space"] = bool(pre.get("add_prefix_space"))
    try:
        return td.check(description, f"{path}: tokenization")
    except td.DescriptionError as e:
        raise HFTokenizationError(str(e)) from None


def _post_processor_tokens(node, path):
    """[CLS] and [SEP] spellings of BertProcessing or a BERT-shaped
    TemplateProcessing; BERT's when there is none."""
    if node is None:
        return "[CLS]", "[SEP]"
    if not isinstance(node, dict):
        _refuse(path, "post_processor", node, "is not an object")
    kind = node.get("type")
    if kind == "BertProcessing":
        pairs = [node.get("cls"), node.get("sep")]
        if not all(isinstance(p, list) and p and isinstance(p[0], str) for p in pairs):
            _refuse(path, "post_processor", node, "has no [cls, id] and [sep, id] pairs")
        return pairs[0][0], pairs[1][0]
    if kind == "TemplateProcessing":
        single = node.get("single")
        if not isinstance(single, list) or len(single) != 3:
            _refuse(path, "post_processor.single", single, "is not [CLS] $A [SEP]")
        names = []
        for i in (0, 2):
            item = single[i]
            token = item.get("SpecialToken") if isinstance(item, dict) else None
            if not isinstance(token, dict) or not isinstance(token.get("id"), str):
                _refuse(path, f"post_processor.single[{i}]", item, "is not a special token")
            names.append(token["id"])
        return names[0], names[1]
    _refuse(path, "post_processor.type", kind, "is not a post-processor the zoo implements")
