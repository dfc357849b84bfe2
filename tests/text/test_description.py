"""zoo.text.description: the tokenization description is typed and bounded
as file data, and each runtime implements it or refuses it by name."""

import copy
import json

import pytest

from zoo.text import description as td

BERT_UNCASED = td.wordpiece(lowercase=True)
BERT_CASED = td.wordpiece(lowercase=False)
KERAS_HUB = td.wordpiece(lowercase=True, strip_accents=False, flavor="keras_hub")


def test_builders_give_checked_descriptions():
    for desc in (
        BERT_UNCASED,
        BERT_CASED,
        KERAS_HUB,
        td.wordpiece(lowercase=True, strip_accents=False, cjk=False),
        td.byte_pair(add_prefix_space=True),
        td.sentencepiece(lowercase=True, keep_accents=False),
    ):
        assert td.check(json.loads(json.dumps(desc))) == desc


def test_bert_rule_follows_lowercase_unless_told():
    assert td.steps_of(BERT_UNCASED, "normalizer") == [
        "bert_clean",
        "cjk_spacing",
        "strip_accents",
        "lowercase",
    ]
    assert td.steps_of(BERT_CASED, "normalizer") == ["bert_clean", "cjk_spacing"]
    kept = td.wordpiece(lowercase=True, strip_accents=False)
    assert "strip_accents" not in td.steps_of(kept, "normalizer")
    with pytest.raises(td.DescriptionError, match="strip_accents"):
        td.wordpiece(lowercase=True, flavor="keras_hub")  # keras-hub sets it apart


def test_keras_hub_case_folds_each_word_and_limits_bytes():
    assert td.steps_of(KERAS_HUB, "normalizer") == ["cjk_spacing"]
    assert td.steps_of(KERAS_HUB, "word_normalizer") == ["nfkc_casefold"]
    assert KERAS_HUB["pre_tokenizer"] == {"type": "keras_hub_bert"}
    assert KERAS_HUB["model"]["max_word_unit"] == "bytes"
    args = td.wordpiece_arguments(KERAS_HUB)
    assert args["flavor"] == "keras_hub" and args["lowercase"] and not args["strip_accents"]


def _edited(desc, path, value):
    desc = copy.deepcopy(desc)
    *parents, last = path
    node = desc
    for key in parents:
        node = node[key]
    if value is _DELETE:
        del node[last]
    else:
        node[last] = value
    return desc


_DELETE = object()


@pytest.mark.parametrize(
    "path, value, field",
    [
        (("version",), 2, "version"),
        (("version",), "1", "version"),
        (("version",), True, "version"),
        (("model", "max_word"), 10**9, "model.max_word"),
        (("model", "max_word"), 0, "model.max_word"),
        (("model", "max_word"), 100.0, "model.max_word"),
        (("model", "max_word"), True, "model.max_word"),
        (("model", "max_word_unit"), "words", "model.max_word_unit"),
        (("model", "prefix"), "@@", "model.prefix"),
        (("model", "type"), "Word", "model.type"),
        (("model", "unk_token"), "x" * 1000, "model.unk_token"),
        (("model", "unk_token"), _DELETE, "model.unk_token"),
        (("normalizer",), {"type": "lowercase"}, "normalizer"),
        (("normalizer",), [{"type": "lowercase"}] * 17, "normalizer"),
        (("normalizer", 0), {"type": "replace"}, "normalizer[0].type"),
        (("normalizer", 0), {"type": "lowercase", "x": 1}, "normalizer[0]"),
        (("normalizer", 0), "lowercase", "normalizer[0]"),
        (("word_normalizer",), [{"type": "lowercase"}], "word_normalizer[0].type"),
        (("pre_tokenizer", "type"), "whitespace", "pre_tokenizer.type"),
        (("pre_tokenizer", "add_prefix_space"), True, "pre_tokenizer.add_prefix_space"),
        (("post_processor", "type"), "template", "post_processor.type"),
        (("post_processor", "cls"), "", "post_processor.cls"),
        (("post_processor", "pad"), 0, "post_processor.pad"),
        (("post_processor", "extra"), 1, "post_processor.extra"),
        (("extra",), 1, "extra"),
        (("post_processor",), _DELETE, "post_processor"),
        (("model",), [], "model"),
    ],
)
def test_malformed_descriptions_are_refused_naming_the_field(path, value, field):
    with pytest.raises(td.DescriptionError) as e:
        td.check(_edited(BERT_UNCASED, path, value), "m/zoo_model.json: tokenization")
    assert f"m/zoo_model.json: tokenization.{field}" in str(e.value)


def test_byte_level_needs_a_typed_prefix_space():
    bad = _edited(td.byte_pair(), ("pre_tokenizer", "add_prefix_space"), "false")
    with pytest.raises(td.DescriptionError, match="add_prefix_space"):
        td.check(bad)


def test_not_a_json_object_is_refused():
    for value in (None, [], "bert", 1):
        with pytest.raises(td.DescriptionError, match="expected an object"):
            td.check(value)


@pytest.mark.parametrize(
    "desc, refused",
    [
        (td.byte_pair(), "model is BPE"),
        (td.sentencepiece(lowercase=True, keep_accents=False), "model is Unigram"),
        (
            _edited(
                BERT_UNCASED, ("normalizer",), [{"type": "bert_clean"}, {"type": "nfc"}]
            ),
            "normalizer step 'nfc'",
        ),
        (
            _edited(BERT_UNCASED, ("word_normalizer",), [{"type": "nfkc_casefold"}]),
            "word_normalizer step 'nfkc_casefold'",
        ),
        (
            _edited(
                BERT_UNCASED,
                ("normalizer",),
                [{"type": "bert_clean"}, {"type": "lowercase"}, {"type": "strip_accents"}],
            ),
            "in the order",
        ),
        (_edited(BERT_UNCASED, ("normalizer",), [{"type": "lowercase"}]), "'bert_clean'"),
        (_edited(BERT_UNCASED, ("model", "max_word_unit"), "bytes"), "max_word_unit"),
        (_edited(KERAS_HUB, ("model", "max_word_unit"), "characters"), "max_word_unit"),
    ],
)
def test_wordpiece_refuses_what_it_does_not_implement_by_name(desc, refused):
    with pytest.raises(td.DescriptionError, match=refused):
        td.wordpiece_arguments(desc)


def test_the_app_implements_bert_and_refuses_keras_hub_by_name():
    for desc in (
        BERT_UNCASED,
        BERT_CASED,
        td.wordpiece(lowercase=True, strip_accents=False),
    ):
        assert td.app_refusal(desc) is None
        assert td.runtimes(desc) == {"zoo": "exact", "android_app": "exact"}
    assert "keras-hub" in td.app_refusal(KERAS_HUB)
    assert td.runtimes(KERAS_HUB)["android_app"].startswith("refused: ")
    assert "BPE" in td.app_refusal(td.byte_pair())
    assert "cjk_spacing" in td.app_refusal(td.wordpiece(lowercase=True, cjk=False))


def test_summary_names_every_stage():
    line = td.summary(KERAS_HUB)
    assert "keras_hub_bert" in line and "nfkc_casefold" in line and "100 bytes" in line
