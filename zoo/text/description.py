"""One declarative description of a tokenizer, written into every model
directory (`zoo_model.json`) and artifact (`metadata.json`) as
`"tokenization"`, and read back by every runtime, which implements it or
refuses it by name.

Shaped like Hugging Face tokenizers' `tokenizer.json`, in four stages run
in this order:

    {"version": 1,
     "normalizer":      [step, ...],   text -> text, in order
     "pre_tokenizer":   {"type": ...}, text -> words
     "word_normalizer": [step, ...],   each word -> word (keras-hub case-folds
                                       after splitting, so a character NFKC
                                       expands to "(1)" stays one word)
     "model":           {"type": "WordPiece" | "BPE" | "Unigram", ...},
     "post_processor":  {"type": "bert" | "roberta", "cls": ..., "sep": ...,
                         "pad": ..., "mask": ...}}   (pad, mask optional)

Normalizer steps (`{"type": NAME}`):

- `bert_clean`: drop U+0000, U+FFFD and control, format and private-use
  characters (tab, newline and carriage return kept), map every Unicode
  whitespace to a space (BERT's and HF's `clean_text`);
- `cjk_spacing`: a space on each side of every CJK ideograph (BERT's
  ranges; HF's `handle_chinese_chars`, keras-hub's `split_on_cjk`);
- `strip_accents`: NFD, then drop nonspacing marks (Mn);
- `lowercase`: each character lowercased on its own (HF's `lowercase`);
- `nfkc_casefold`: Unicode NFKC_Casefold (tensorflow-text's
  `case_fold_utf8`, keras-hub's lowercasing: `ﬁ` -> `fi`, `Ｆ` -> `f`,
  `²` -> `2`, `ß` -> `ss`);
- `nfc`, `nfkc`, `nfd`, `nfkd`: Unicode normal forms (read from HF files so
  that a runtime can refuse them by name; no zoo runtime implements them).

Pre-tokenizers:

- `bert`: split at Unicode whitespace, and around each punctuation
  character (ASCII non-alphanumerics and Unicode P*), kept as a word;
- `keras_hub_bert`: keras-hub's split: at ASCII whitespace and at control
  and format characters (Cc, Cf: dropped, not deleted, so they separate
  words), around punctuation (as `bert`) and CJK ideographs (kept);
  non-ASCII spaces such as U+00A0 stay inside words;
- `byte_level`: GPT-2/RoBERTa byte-level regex split (`add_prefix_space`);
- `metaspace`: SentencePiece (the `.model` holds its own normalizer).

Models: `WordPiece` (`unk_token`, `prefix` "##", `max_word` and
`max_word_unit` "characters" (BERT, HF) or "bytes" (tensorflow-text,
keras-hub): a longer word becomes the unknown token), `BPE` (byte-level;
`unk_token`), `Unigram` (SentencePiece).

A description is data from a file: `check` types and bounds every field
and refuses unknown ones, naming the field, before a tokenizer is built.
"""

from __future__ import annotations

VERSION = 1
FIELD = "tokenization"

NORMALIZER_STEPS = (
    "bert_clean",
    "cjk_spacing",
    "strip_accents",
    "lowercase",
    "nfkc_casefold",
    "nfc",
    "nfkc",
    "nfd",
    "nfkd",
)
WORD_NORMALIZER_STEPS = ("nfkc_casefold",)
PRE_TOKENIZERS = ("bert", "keras_hub_bert", "byte_level", "metaspace")
MODELS = ("WordPiece", "BPE", "Unigram")
WORD_UNITS = ("characters", "bytes")
POST_PROCESSORS = ("bert", "roberta")
MAX_STEPS = 16
MAX_TOKEN_CHARS = 64
MAX_WORD = 10_000


class DescriptionError(ValueError):
    """A tokenization description that is malformed, or that a runtime does
    not implement (the message names the field or the step)."""


# ------------------------------------------------------------------ builders


def wordpiece(
    *,
    lowercase,
    strip_accents=None,
    flavor="bert",
    cjk=True,
    unk_token="[UNK]",
    max_word=100,
    cls="[CLS]",
    sep="[SEP]",
    pad="[PAD]",
    mask="[MASK]",
):
    """The description of a WordPiece tokenizer.

    `flavor` "bert": BERT's and HF's `BertNormalizer` + `BertPreTokenizer`
    (`strip_accents=None` means the same as `lowercase`; `max_word` counts
    characters). "keras_hub": keras-hub's `WordPieceTokenizer` (accents
    stripped only when asked, NFKC case folding after splitting, controls
    as separators, `max_word` counts UTF-8 bytes)."""
    if strip_accents is None and flavor == "keras_hub":
        raise DescriptionError("strip_accents: None; keras-hub's tokenizers set it apart")
    strip = lowercase if strip_accents is None else strip_accents
    if flavor == "bert":
        normalizer = [{"type": "bert_clean"}]
        normalizer += [{"type": "cjk_spacing"}] if cjk else []
        normalizer += [{"type": "strip_accents"}] if strip else []
        normalizer += [{"type": "lowercase"}] if lowercase else []
        pre, words, unit = "bert", [], "characters"
    elif flavor == "keras_hub":
        normalizer = [{"type": "cjk_spacing"}] if cjk else []
        normalizer += [{"type": "strip_accents"}] if strip else []
        pre, unit = "keras_hub_bert", "bytes"
        words = [{"type": "nfkc_casefold"}] if lowercase else []
    else:
        raise DescriptionError(f"flavor: {flavor!r}; expected 'bert' or 'keras_hub'")
    return {
        "version": VERSION,
        "normalizer": normalizer,
        "pre_tokenizer": {"type": pre},
        "word_normalizer": words,
        "model": {
            "type": "WordPiece",
            "unk_token": unk_token,
            "prefix": "##",
            "max_word": int(max_word),
            "max_word_unit": unit,
        },
        "post_processor": {
            "type": "bert",
            "cls": cls,
            "sep": sep,
            "pad": pad,
            "mask": mask,
        },
    }


def byte_pair(
    *,
    add_prefix_space=False,
    unk_token="<unk>",
    cls="<s>",
    sep="</s>",
    pad="<pad>",
    mask="<mask>",
):
    """The description of a byte-level BPE (RoBERTa) tokenizer."""
    return {
        "version": VERSION,
        "normalizer": [],
        "pre_tokenizer": {"type": "byte_level", "add_prefix_space": bool(add_prefix_space)},
        "word_normalizer": [],
        "model": {"type": "BPE", "unk_token": unk_token},
        "post_processor": {
            "type": "roberta",
            "cls": cls,
            "sep": sep,
            "pad": pad,
            "mask": mask,
        },
    }


def sentencepiece(
    *,
    lowercase,
    keep_accents,
    cls="[CLS]",
    sep="[SEP]",
    unk_token="<unk>",
    pad="<pad>",
    mask="[MASK]",
):
    """The description of ALBERT's SentencePiece tokenizer (its pre-
    normalisation: quotes, NFKD and marks dropped unless accents are kept,
    lowercase; then the model's own normaliser)."""
    normalizer = [] if keep_accents else [{"type": "nfkd"}, {"type": "strip_accents"}]
    normalizer += [{"type": "lowercase"}] if lowercase else []
    return {
        "version": VERSION,
        "normalizer": normalizer,
        "pre_tokenizer": {"type": "metaspace"},
        "word_normalizer": [],
        "model": {"type": "Unigram", "unk_token": unk_token},
        "post_processor": {
            "type": "bert",
            "cls": cls,
            "sep": sep,
            "pad": pad,
            "mask": mask,
        },
    }


# ------------------------------------------------------------------ reading


def _steps(value, field, allowed):
    if not isinstance(value, list) or len(value) > MAX_STEPS:
        raise DescriptionError(
            f"{field}: {_short(value)}; expected a list of at most {MAX_STEPS} steps"
        )
    steps = []
    for i, step in enumerate(value):
        where = f"{field}[{i}]"
        if not isinstance(step, dict) or set(step) != {"type"}:
            raise DescriptionError(f'{where}: {_short(step)}; expected {{"type": NAME}}')
        if step["type"] not in allowed:
            raise DescriptionError(
                f"{where}.type: {_short(step['type'])}; expected one of {', '.join(allowed)}"
            )
        steps.append({"type": step["type"]})
    return steps


def _token(value, field, optional=False):
    if optional and value is None:
        return None
    if not isinstance(value, str) or not 0 < len(value) <= MAX_TOKEN_CHARS:
        raise DescriptionError(
            f"{field}: {_short(value)}; expected a token spelling of 1 to {MAX_TOKEN_CHARS} characters"
        )
    return value


def _short(value):
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _only(obj, field, allowed):
    if not isinstance(obj, dict):
        raise DescriptionError(f"{field}: {_short(obj)}; expected an object")
    unknown = sorted(set(obj) - set(allowed))
    if unknown:
        raise DescriptionError(
            f"{field + '.' if field else ''}{unknown[0]}: not a field of a tokenization description "
            f"(fields: {', '.join(allowed)})"
        )


def check(value, where="tokenization"):
    """`value` (parsed JSON) as a typed description, or `DescriptionError`
    naming the field (`where` prefixes it: a file and its key)."""
    try:
        return _check(value)
    except DescriptionError as e:
        text = str(e)
        raise DescriptionError(
            f"{where}{text if text.startswith(':') else '.' + text}"
        ) from None


def _check(value):
    top = (
        "version",
        "normalizer",
        "pre_tokenizer",
        "word_normalizer",
        "model",
        "post_processor",
    )
    _only(value, "", top)
    missing = [k for k in top if k not in value]
    if missing:
        raise DescriptionError(f"{missing[0]}: missing")
    if type(value["version"]) is not int or value["version"] != VERSION:
        raise DescriptionError(
            f"version: {_short(value['version'])}; expected {VERSION} (a newer zoo wrote this "
            "file: upgrade, or re-export with this one)"
        )
    out = {"version": VERSION}
    out["normalizer"] = _steps(value["normalizer"], "normalizer", NORMALIZER_STEPS)
    out["word_normalizer"] = _steps(
        value["word_normalizer"], "word_normalizer", WORD_NORMALIZER_STEPS
    )
    pre = value["pre_tokenizer"]
    _only(pre, "pre_tokenizer", ("type", "add_prefix_space"))
    if pre.get("type") not in PRE_TOKENIZERS:
        raise DescriptionError(
            f"pre_tokenizer.type: {_short(pre.get('type'))}; expected one of {', '.join(PRE_TOKENIZERS)}"
        )
    out["pre_tokenizer"] = {"type": pre["type"]}
    if pre["type"] == "byte_level":
        if not isinstance(pre.get("add_prefix_space"), bool):
            raise DescriptionError(
                f"pre_tokenizer.add_prefix_space: {_short(pre.get('add_prefix_space'))}; "
                "expected true or false"
            )
        out["pre_tokenizer"]["add_prefix_space"] = pre["add_prefix_space"]
    elif "add_prefix_space" in pre:
        raise DescriptionError("pre_tokenizer.add_prefix_space: only for byte_level")
    model = value["model"]
    _only(model, "model", ("type", "unk_token", "prefix", "max_word", "max_word_unit"))
    if model.get("type") not in MODELS:
        raise DescriptionError(
            f"model.type: {_short(model.get('type'))}; expected one of {', '.join(MODELS)}"
        )
    out["model"] = {
        "type": model["type"],
        "unk_token": _token(model.get("unk_token"), "model.unk_token", optional=True),
    }
    if model["type"] == "WordPiece":
        if model.get("prefix") != "##":
            raise DescriptionError(
                f"model.prefix: {_short(model.get('prefix'))}; expected '##'"
            )
        size = model.get("max_word")
        if type(size) is not int or not 1 <= size <= MAX_WORD:
            raise DescriptionError(
                f"model.max_word: {_short(size)}; expected an integer from 1 to {MAX_WORD}"
            )
        if model.get("max_word_unit") not in WORD_UNITS:
            raise DescriptionError(
                f"model.max_word_unit: {_short(model.get('max_word_unit'))}; "
                f"expected one of {', '.join(WORD_UNITS)}"
            )
        out["model"].update(
            prefix="##", max_word=size, max_word_unit=model["max_word_unit"]
        )
        if out["model"]["unk_token"] is None:
            raise DescriptionError("model.unk_token: missing; WordPiece needs one")
    post = value["post_processor"]
    _only(post, "post_processor", ("type", "cls", "sep", "pad", "mask"))
    if post.get("type") not in POST_PROCESSORS:
        raise DescriptionError(
            f"post_processor.type: {_short(post.get('type'))}; expected one of "
            f"{', '.join(POST_PROCESSORS)}"
        )
    out["post_processor"] = {
        "type": post["type"],
        "cls": _token(post.get("cls"), "post_processor.cls"),
        "sep": _token(post.get("sep"), "post_processor.sep"),
    }
    for name in ("pad", "mask"):  # optional: the packer's padding, MLM's mask
        if name in post:
            out["post_processor"][name] = _token(post[name], f"post_processor.{name}")
    return out


# ------------------------------------------------------------- runtimes


def steps_of(description, stage):
    return [s["type"] for s in description[stage]]


def wordpiece_arguments(description, runtime="the zoo's WordPiece tokenizer"):
    """The `WordPieceTokenizer` arguments that implement `description`
    exactly: `flavor`, `lowercase`, `strip_accents`, `cjk`, `max_word`,
    `unk_token`; or `DescriptionError` naming the first stage or step
    `runtime` does not implement."""
    d = check(description)
    if d["model"]["type"] != "WordPiece":
        raise DescriptionError(
            f"{runtime} implements WordPiece models; this tokenizer's model is "
            f"{d['model']['type']} (tokenization.model.type)"
        )
    steps = steps_of(d, "normalizer")
    words = steps_of(d, "word_normalizer")
    pre = d["pre_tokenizer"]["type"]
    unit = d["model"]["max_word_unit"]
    if pre == "bert":
        flavor, expected_unit = "bert", "characters"
        order = ["bert_clean", "cjk_spacing", "strip_accents", "lowercase"]
        required = ["bert_clean"]
        if words:
            raise DescriptionError(
                f"{runtime} does not implement word_normalizer step {words[0]!r} with "
                "pre_tokenizer 'bert' (tokenization.word_normalizer)"
            )
    elif pre == "keras_hub_bert":
        flavor, expected_unit = "keras_hub", "bytes"
        order = ["cjk_spacing", "strip_accents"]
        required = []
    else:
        raise DescriptionError(
            f"{runtime} does not implement pre_tokenizer {pre!r} (tokenization.pre_tokenizer.type)"
        )
    for i, step in enumerate(steps):
        if step not in order:
            raise DescriptionError(
                f"{runtime} does not implement normalizer step {step!r} "
                f"(tokenization.normalizer[{i}]) with pre_tokenizer {pre!r}"
            )
    if steps != [s for s in order if s in steps] or len(set(steps)) != len(steps):
        raise DescriptionError(
            f"{runtime} implements the normalizer steps in the order {', '.join(order)}; "
            f"tokenization.normalizer is {', '.join(steps)}"
        )
    for step in required:
        if step not in steps:
            raise DescriptionError(
                f"{runtime} implements pre_tokenizer {pre!r} only after normalizer step {step!r}"
            )
    if unit != expected_unit:
        raise DescriptionError(
            f"{runtime} limits words in {expected_unit} with pre_tokenizer {pre!r}; "
            f"tokenization.model.max_word_unit is {unit!r}"
        )
    return {
        "flavor": flavor,
        "lowercase": "lowercase" in steps or "nfkc_casefold" in words,
        "strip_accents": "strip_accents" in steps,
        "cjk": "cjk_spacing" in steps,
        "max_word": d["model"]["max_word"],
        "unk_token": d["model"]["unk_token"],
        "cls": d["post_processor"]["cls"],
        "sep": d["post_processor"]["sep"],
        "pad": d["post_processor"].get("pad", "[PAD]"),
        "mask": d["post_processor"].get("mask", "[MASK]"),
    }


def summary(description) -> str:
    """One line for notes and errors: 'WordPiece; normalizer: bert_clean,
    cjk_spacing, lowercase; pre-tokenizer: bert; words up to 100 characters'."""
    d = description
    parts = [d["model"]["type"]]
    parts.append("normalizer: " + (", ".join(steps_of(d, "normalizer")) or "none"))
    parts.append("pre-tokenizer: " + d["pre_tokenizer"]["type"])
    if d["word_normalizer"]:
        parts.append("then per word: " + ", ".join(steps_of(d, "word_normalizer")))
    if d["model"]["type"] == "WordPiece":
        parts.append(f"words up to {d['model']['max_word']} {d['model']['max_word_unit']}")
    return "; ".join(parts)


# The runtimes a phone artifact's ids are fed by, beside the zoo's own
# tokenizer (Python, tf.data and the SavedModel's in-graph signatures, which
# run the same layer): the Android app's Java tokenizer implements BERT's
# rule, every lowercase/strip_accents setting (CJK ideographs always spaced),
# words limited in characters (android_demo's TokenizationDescription).
APP = "the Android app's tokenizer"


def app_refusal(description):
    """Why the Android app refuses `description` (naming the stage and the
    step), or None when it implements it exactly."""
    try:
        args = wordpiece_arguments(description, APP)
    except DescriptionError as e:
        return str(e)
    if args["flavor"] != "bert":
        return (
            f"{APP} implements BERT's rule (pre_tokenizer 'bert'); this tokenizer uses "
            f"keras-hub's ({summary(check(description))})"
        )
    if not args["cjk"]:
        # Its Unicode tables space CJK ideographs as part of cleaning.
        return f"{APP} always spaces CJK ideographs; tokenization.normalizer has no cjk_spacing"
    return None


def runtimes(description) -> dict:
    """{runtime: "exact" | "refused: why"} for a phone artifact's
    metadata.json (`tokenizer_runtimes`)."""
    refusal = app_refusal(description)
    return {
        "zoo": "exact",
        "android_app": "exact" if refusal is None else f"refused: {refusal}",
    }
