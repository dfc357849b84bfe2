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
bool belongs is refused, never read as true; a list where a name belongs is
refused by its path, not met with a TypeError).

transformers' fast tokenizer takes its ids from tokenizer.json (`model.vocab`,
`added_tokens`, the post-processor's special-token ids); the zoo takes them
from vocab.txt. `check_vocabulary` refuses a directory where the two
disagree: it would convert with exit 0 and tokenize differently from its
source."""

from __future__ import annotations

import pathlib

from zoo.checkpoints.config_fields import read_bool
from zoo.text import description as td
from zoo.text.vocabulary_file import read_vocabulary
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


# What to do about a damaged tokenizer.json, or one that disagrees with vocab.txt.
_REMEDY = "Use the tokenizer.json the checkpoint was published with"
_VOCAB_REMEDY = (
    "Use the tokenizer.json and vocab.txt the checkpoint was published with "
    "(save_pretrained writes both from one vocabulary)"
)


class HFTokenizationError(ValueError):
    """An HF tokenizer file declares a tokenization the zoo cannot describe,
    or ids that differ from vocab.txt's."""


def _dirs(directory):
    directory = pathlib.Path(directory)
    return [directory, directory / "0_Transformer"]


def _find(directory, name):
    """The first `name` in `directory` or its 0_Transformer/, or None."""
    for base in _dirs(directory):
        if (base / name).is_file():
            return base / name
    return None


def _read(path):
    return read_json_object(path, f"use the checkpoint's own {path.name}")


def hf_description(directory):
    """The description of an HF WordPiece checkpoint in `directory`, from
    tokenizer.json, else tokenizer_config.json, else BERT uncased's
    (HF's default). Returns `(description, source file or None)`."""
    path = _find(directory, "tokenizer.json")
    if path is not None:
        return _from_tokenizer_json(_read(path), path), path
    path = _find(directory, "tokenizer_config.json")
    if path is not None:
        return _from_tokenizer_config(_read(path), path), path
    return td.wordpiece(lowercase=True), None


def check_vocabulary(directory):
    """Refuse `directory` when its tokenizer.json and vocab.txt (both
    present) give any token another id: `model.vocab` must list vocab.txt's
    tokens with their line numbers as ids, and every special-token id
    (`added_tokens`, the post-processor's) must be vocab.txt's id of that
    token. The embedding rows are indexed by these ids, so when the files
    disagree one of them does not belong to the weights."""
    path, vocab_path = _find(directory, "tokenizer.json"), _find(directory, "vocab.txt")
    if path is None or vocab_path is None:
        return
    obj = _read(path)
    model = obj.get("model")
    if not isinstance(model, dict) or model.get("type") != "WordPiece":
        _refuse_model_type(path, model)
    tokens = read_vocabulary(vocab_path)
    ids = {token: i for i, token in enumerate(tokens)}
    if len(ids) != len(tokens):
        return  # a token listed twice: the tokenizer refuses it, naming both ids
    _check_model_vocab(_object(model, "vocab", path, "model"), tokens, path, vocab_path)
    for where, token, token_id in _special_ids(obj, path):
        if ids.get(token) != token_id:
            _differs(path, where, token_id, token, ids.get(token), vocab_path)


def _differs(path, where, received, token, vocab_id, vocab_path):
    received = "absent" if received is None else f"{received!r:.60}"
    found = (
        "is not in it" if vocab_id is None else f"is id {vocab_id} (line {vocab_id + 1})"
    )
    raise HFTokenizationError(
        f"{path}: {where}: {received}, but in {vocab_path} {token!r:.60} {found}; "
        "transformers' fast tokenizer would use tokenizer.json's id and the zoo "
        f"vocab.txt's, so the converted model would tokenize differently. {_VOCAB_REMEDY}."
    )


def _check_model_vocab(table, tokens, path, vocab_path):
    """`model.vocab` (token -> id) is exactly vocab.txt (token -> line)."""
    for token, token_id in table.items():
        if not _is_int(token_id):
            _refuse_type(path, f"model.vocab[{token!r:.40}]", token_id, "an integer id")
    for i, token in enumerate(tokens):
        if table.get(token) != i:
            _differs(
                path, f"model.vocab[{token!r:.40}]", table.get(token), token, i, vocab_path
            )
    if len(table) != len(tokens):
        known = set(tokens)
        extra = next(token for token in table if token not in known)
        _differs(path, f"model.vocab[{extra!r:.40}]", table[extra], extra, None, vocab_path)


def _special_ids(obj, path):
    """(JSON path, token, id) of every special token tokenizer.json gives an
    id: `added_tokens` and the post-processor's."""
    for i, item in enumerate(_list(obj, "added_tokens", path, "")):
        where = f"added_tokens[{i}]"
        if not isinstance(item, dict):
            _refuse(path, where, item, "is not an object with an id and a content")
        content = _text(item, "content", path, where)
        yield f"{where}.id", content, _typed(item, "id", int, path, where, None)
    node = obj.get("post_processor")
    _post_processor_tokens(node, path)  # its fields typed
    kind = node.get("type") if node is not None else None
    if kind == "BertProcessing":
        for key in ("cls", "sep"):
            token, token_id = node[key]
            yield f"post_processor.{key}[1]", token, token_id
    elif kind == "TemplateProcessing":
        yield from _template_ids(node, path)


def _template_ids(node, path):
    """TemplateProcessing's special tokens: each emits its `ids`, which the
    zoo can only match as the one id of the token it is named for."""
    where = "post_processor.special_tokens"
    specials = _object(node, "special_tokens", path, "post_processor")
    for name, entry in specials.items():
        if not isinstance(entry, dict):
            _refuse(path, f"{where}[{name!r:.40}]", entry, "is not an object")
        ids = _list(entry, "ids", path, f"{where}[{name!r:.40}]")
        if len(ids) != 1 or not _is_int(ids[0]):
            _refuse(
                path, f"{where}[{name!r:.40}].ids", ids, "is not a list of one integer id"
            )
        yield f"{where}[{name!r:.40}].ids[0]", name, ids[0]


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


def _refuse_type(path, where, value, expected):
    _refuse(path, where, value, f"is not {expected}. {_REMEDY}.")


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _field(where, key):
    return f"{where}.{key}" if where else key


def _typed(obj, key, kind, path, where, default):
    value = obj.get(key, default)
    if kind is bool and value is not None and not isinstance(value, bool):
        _refuse_type(path, _field(where, key), value, "true, false or null")
    if kind is int and not _is_int(value):
        _refuse_type(path, _field(where, key), value, "an integer")
    return value


def _text(obj, key, path, where, expected="a string"):
    """`obj[key]`, a string."""
    value = obj.get(key)
    if not isinstance(value, str):
        _refuse_type(path, _field(where, key), value, expected)
    return value


def _object(obj, key, path, where):
    """`obj[key]`, a JSON object (an empty one when absent)."""
    value = obj.get(key, {})
    if not isinstance(value, dict):
        _refuse_type(path, _field(where, key), value, "a JSON object")
    return value


def _list(obj, key, path, where):
    """`obj[key]`, a JSON list (an empty one when absent or null)."""
    value = obj.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        _refuse_type(path, _field(where, key), value, "a JSON list")
    return value


def _kind(node, path, where, what):
    """`node["type"]`, the name of a step (`what`: "a normalizer's name")."""
    return _text(node, "type", path, where, f"a string, {what}")


def _normalizer_steps(node, path, where="normalizer"):
    if node is None:
        return []
    if not isinstance(node, dict):
        _refuse(path, where, node, "is not an object")
    kind = _kind(node, path, where, "a normalizer's name (e.g. 'BertNormalizer')")
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


def _pre_tokenizer(node, path):
    """The description's pre-tokenizer for tokenizer.json's."""
    if not isinstance(node, dict):
        _refuse(path, "pre_tokenizer", node, 'is not an object with a "type"')
    kind = _kind(node, path, "pre_tokenizer", "a pre-tokenizer's name")
    if kind not in _PRE_TOKENIZERS:
        _refuse(
            path, "pre_tokenizer.type", kind, "is not a pre-tokenizer the zoo implements"
        )
    step = {"type": _PRE_TOKENIZERS[kind]}
    if step["type"] == "byte_level":
        space = _typed(node, "add_prefix_space", bool, path, "pre_tokenizer", None)
        step["add_prefix_space"] = bool(space)
    return step


def _refuse_model_type(path, model):
    _refuse(
        path,
        "model.type",
        model.get("type") if isinstance(model, dict) else model,
        "is not WordPiece (a byte-level BPE checkpoint is read as RoBERTa's)",
    )


def _from_tokenizer_json(obj, path):
    steps = _normalizer_steps(obj.get("normalizer"), path)
    pre_tokenizer = _pre_tokenizer(obj.get("pre_tokenizer"), path)
    model = obj.get("model")
    if not isinstance(model, dict) or model.get("type") != "WordPiece":
        _refuse_model_type(path, model)
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
        "pre_tokenizer": pre_tokenizer,
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
    kind = _kind(node, path, "post_processor", "a post-processor's name")
    if kind == "BertProcessing":
        for key in ("cls", "sep"):
            pair = node.get(key)
            if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)):
                _refuse_type(path, f"post_processor.{key}", pair, "a [token, id] pair")
            if not _is_int(pair[1]):
                _refuse_type(path, f"post_processor.{key}[1]", pair[1], "an integer id")
        return node["cls"][0], node["sep"][0]
    if kind == "TemplateProcessing":
        cls, sep = _template(node, "single", path, None)
        if node.get("pair") is not None:
            _template(node, "pair", path, (cls, sep))
        return cls, sep
    _refuse(path, "post_processor.type", kind, "is not a post-processor the zoo implements")


# BERT's packing, which the zoo implements: what each item of a
# TemplateProcessing template must be (kind, sequence or token, type id).
_BERT_TEMPLATES = {
    "single": (
        ("SpecialToken", "CLS", 0),
        ("Sequence", "A", 0),
        ("SpecialToken", "SEP", 0),
    ),
    "pair": (
        ("SpecialToken", "CLS", 0),
        ("Sequence", "A", 0),
        ("SpecialToken", "SEP", 0),
        ("Sequence", "B", 1),
        ("SpecialToken", "SEP", 1),
    ),
}
_TEMPLATE_WORDS = {
    "single": "[CLS]:0 $A:0 [SEP]:0",
    "pair": "[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1",
}


def _template(node, key, path, tokens):
    """The [CLS] and [SEP] spellings of a TemplateProcessing template that
    packs as BERT does (the same two as `tokens`, when given); anything
    else (another order, other type ids, RoBERTa's doubled separator) is
    refused by its path. Such a file has no one packing: transformers 4's
    fast tokenizer follows the template, transformers 5's BertTokenizer
    packs as BERT whatever it says (measured with 5.25)."""
    where = f"post_processor.{key}"
    items = node.get(key)
    expected = _BERT_TEMPLATES[key]
    why = (
        f"is not BERT's {_TEMPLATE_WORDS[key]}, the packing the zoo implements "
        "(transformers 4 packs by this template, transformers 5 as BERT: the file "
        "has no one packing). Restore the checkpoint's own tokenizer.json, or set "
        "its post_processor to null for BERT's"
    )
    if not isinstance(items, list) or len(items) != len(expected):
        _refuse(path, where, items, why)
    names = {}
    for i, (item, (kind, name, type_id)) in enumerate(zip(items, expected)):
        inner = item.get(kind) if isinstance(item, dict) and len(item) == 1 else None
        if not isinstance(inner, dict) or inner.get("type_id") != type_id:
            _refuse(path, f"{where}[{i}]", item, why)
        if kind == "Sequence":
            if inner.get("id") != name:
                _refuse(path, f"{where}[{i}]", item, why)
            continue
        spelling = inner.get("id")
        if not isinstance(spelling, str) or names.setdefault(name, spelling) != spelling:
            _refuse(path, f"{where}[{i}]", item, why)
    if tokens is not None and (names["CLS"], names["SEP"]) != tokens:
        _refuse(path, where, items, "names other special tokens than post_processor.single")
    return names["CLS"], names["SEP"]
