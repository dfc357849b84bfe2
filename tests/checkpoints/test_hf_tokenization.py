"""An HF WordPiece checkpoint tokenizes as its tokenizer files say:
tokenizer.json's normalizer (else tokenizer_config.json) decides
strip_accents and the CJK rule apart from do_lower_case, and what the zoo
cannot reproduce is refused by name."""

import json
import shutil

import pytest

from zoo.checkpoints import load_checkpoint
from zoo.checkpoints.hf_tokenization import (
    HFTokenizationError,
    check_vocabulary,
    hf_description,
)
from zoo.cli import main
from zoo.text import description as td
from zoo.text import probes
from zoo.text.tokenizer import WordPieceTokenizer

transformers = pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def kept_accents(minilm_dir, tmp_path_factory):
    """MiniLM with `strip_accents: false` written into both tokenizer files."""
    directory = tmp_path_factory.mktemp("hf_tok") / "minilm_accents"
    shutil.copytree(minilm_dir, directory)
    _edit(directory / "tokenizer_config.json", lambda c: c.update(strip_accents=False))
    _edit(
        directory / "tokenizer.json", lambda t: t["normalizer"].update(strip_accents=False)
    )
    return directory


def _edit(path, change):
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data), encoding="utf-8")


def _differing(ours, reference):
    return sum(
        ours.tokenize(t).to_list()[0] != reference(t, add_special_tokens=False)["input_ids"]
        for t in probes.ALL
    )


def test_strip_accents_apart_from_lowercase_tokenizes_as_transformers(kept_accents):
    reference = transformers.AutoTokenizer.from_pretrained(str(kept_accents))
    _, tokenizer = load_checkpoint(kept_accents)
    assert "strip_accents" not in td.steps_of(tokenizer.description, "normalizer")
    assert _differing(tokenizer, reference) == 0
    # BERT's rule from do_lower_case alone (what a record of `lowercase`
    # gives) differs on the accented probes: the test can fail.
    bert_rule = WordPieceTokenizer(str(kept_accents / "vocab.txt"), lowercase=True)
    assert _differing(bert_rule, reference) >= len(probes.ACCENTED) // 2


def test_the_setting_survives_convert_and_export_records(kept_accents, tmp_path):
    from zoo.checkpoints import save_model_dir
    from zoo.checkpoints.model_dir import load_model_dir

    encoder, tokenizer = load_checkpoint(kept_accents)
    directory = save_model_dir(encoder, tmp_path / "m", tokenizer)
    _, loaded, meta = load_model_dir(directory)
    assert meta["tokenization"] == td.check(tokenizer.description)
    assert (
        loaded.tokenize(probes.ACCENTED[0]).to_list()
        == tokenizer.tokenize(probes.ACCENTED[0]).to_list()
    )


def _config_only(minilm_dir, tmp_path, change):
    directory = tmp_path / "m"
    directory.mkdir()
    for name in ("tokenizer_config.json", "vocab.txt"):
        shutil.copy(minilm_dir / name, directory / name)
    _edit(directory / "tokenizer_config.json", change)
    return directory


def test_tokenizer_config_alone_is_read_typed(minilm_dir, tmp_path):
    directory = _config_only(minilm_dir, tmp_path, lambda c: c.update(strip_accents=False))
    description, source = hf_description(directory)
    assert source.name == "tokenizer_config.json"
    assert td.wordpiece_arguments(description)["strip_accents"] is False
    (directory / "tokenizer_config.json").write_text(
        json.dumps({"do_lower_case": "false"}), encoding="utf-8"
    )
    with pytest.raises(ValueError, match="do_lower_case"):
        hf_description(directory)


def test_chinese_chars_off_is_described_and_refused_by_the_tokenizer(minilm_dir, tmp_path):
    directory = _config_only(
        minilm_dir, tmp_path, lambda c: c.update(tokenize_chinese_chars=False)
    )
    description, _ = hf_description(directory)
    assert "cjk_spacing" not in td.steps_of(description, "normalizer")
    try:
        tokenizer = WordPieceTokenizer.from_description(
            str(directory / "vocab.txt"), description
        )
    except ValueError as e:  # refused by name where the rule is not implemented
        assert "cjk" in str(e)
    else:  # or implemented: then exactly as transformers
        reference = transformers.BertTokenizerFast(
            vocab_file=None,
            vocab={t: i for i, t in enumerate(tokenizer.vocabulary)},
            tokenize_chinese_chars=False,
        )
        assert _differing(tokenizer, reference) == 0


@pytest.mark.parametrize(
    "change, where",
    [
        (
            lambda t: t.update(
                normalizer={"type": "Sequence", "normalizers": [{"type": "Replace"}]}
            ),
            "normalizer.normalizers[0].type",
        ),
        (lambda t: t["normalizer"].update(lowercase="true"), "normalizer.lowercase"),
        (lambda t: t["normalizer"].update(clean_text=False), "normalizer.clean_text"),
        (lambda t: t.update(pre_tokenizer={"type": "Whitespace"}), "pre_tokenizer.type"),
        (lambda t: t["model"].update(max_input_chars_per_word=10**9), "max_input_chars"),
        (lambda t: t["model"].update(type="Unigram"), "model.type"),
        (lambda t: t.update(post_processor={"type": "Odd"}), "post_processor.type"),
        # A value of the wrong JSON type is refused by its path, not met with
        # a TypeError ("unhashable type: 'list'") from the reader.
        (lambda t: t.update(pre_tokenizer={"type": ["x"]}), "pre_tokenizer.type"),
        (lambda t: t.update(pre_tokenizer="BertPreTokenizer"), "pre_tokenizer"),
        (lambda t: t.update(normalizer={"type": ["x"]}), "normalizer.type"),
        (
            lambda t: t.update(
                normalizer={
                    "type": "Sequence",
                    "normalizers": [{"type": "NFC"}, {"type": {"a": 1}}],
                }
            ),
            "normalizer.normalizers[1].type",
        ),
        (lambda t: t["post_processor"].update(type=["x"]), "post_processor.type"),
        # TemplateProcessing that packs otherwise than BERT: another type id
        # for the second text, RoBERTa's doubled separator, no separator
        # between the texts, another token in the middle of `single`.
        (
            lambda t: t["post_processor"]["pair"][3]["Sequence"].update(type_id=0),
            "post_processor.pair[3]",
        ),
        (
            lambda t: t["post_processor"]["pair"].insert(3, t["post_processor"]["pair"][2]),
            "post_processor.pair",
        ),
        (lambda t: t["post_processor"]["pair"].pop(2), "post_processor.pair"),
        (
            lambda t: t["post_processor"]["pair"][4]["SpecialToken"].update(id="[CLS]"),
            "post_processor.pair[4]",
        ),
        (
            lambda t: t["post_processor"]["single"].__setitem__(
                1, {"Sequence": {"id": "B", "type_id": 0}}
            ),
            "post_processor.single[1]",
        ),
        (
            lambda t: t["post_processor"]["single"][0]["SpecialToken"].update(type_id=1),
            "post_processor.single[0]",
        ),
        (
            lambda t: t.update(
                pre_tokenizer={"type": "ByteLevel", "add_prefix_space": "false"}
            ),
            "pre_tokenizer.add_prefix_space",
        ),
        (
            lambda t: t.update(
                post_processor={
                    "type": "BertProcessing",
                    "cls": ["[CLS]", "101"],
                    "sep": ["[SEP]", 102],
                }
            ),
            "post_processor.cls[1]",
        ),
    ],
)
def test_a_tokenizer_json_the_zoo_cannot_describe_is_refused_by_path(
    minilm_dir, tmp_path, change, where
):
    directory = tmp_path / "m"
    directory.mkdir()
    shutil.copy(minilm_dir / "tokenizer.json", directory / "tokenizer.json")
    _edit(directory / "tokenizer.json", change)
    with pytest.raises((HFTokenizationError, ValueError)) as e:
        hf_description(directory)
    assert "tokenizer.json" in str(e.value) and where in str(e.value)


def test_a_sequence_with_nfkc_is_described_and_refused_by_wordpiece(minilm_dir, tmp_path):
    directory = tmp_path / "m"
    directory.mkdir()
    shutil.copy(minilm_dir / "tokenizer.json", directory / "tokenizer.json")
    _edit(
        directory / "tokenizer.json",
        lambda t: t.update(
            normalizer={
                "type": "Sequence",
                "normalizers": [{"type": "NFKC"}, {"type": "Lowercase"}],
            }
        ),
    )
    description, _ = hf_description(directory)
    assert td.steps_of(description, "normalizer") == ["nfkc", "lowercase"]
    with pytest.raises(td.DescriptionError, match="nfkc"):
        td.wordpiece_arguments(description)


def _tampered(minilm_dir, tmp_path, name, change):
    """A copy of the real MiniLM checkpoint with `change` applied to `name`."""
    directory = tmp_path / "minilm"
    shutil.copytree(minilm_dir, directory)
    if name == "vocab.txt":
        tokens = (directory / name).read_text(encoding="utf-8").split("\n")
        change(tokens)
        (directory / name).write_text("\n".join(tokens), encoding="utf-8")
    else:
        _edit(directory / name, change)
    return directory


def _swap(table, a="the", b="market"):
    table[a], table[b] = table[b], table[a]


def _swap_lines(tokens):
    i, j = tokens.index("the"), tokens.index("market")
    tokens[i], tokens[j] = tokens[j], tokens[i]


def _bert_processing(t):
    t["post_processor"] = {
        "type": "BertProcessing",
        "cls": ["[CLS]", 101],
        "sep": ["[SEP]", 103],
    }


@pytest.mark.parametrize(
    "name, change, where, received",
    [
        (
            "tokenizer.json",
            lambda t: _swap(t["model"]["vocab"]),
            "model.vocab['the']",
            "3006",
        ),
        ("vocab.txt", _swap_lines, "model.vocab['market']", "3006"),
        (
            "tokenizer.json",
            lambda t: t["post_processor"]["special_tokens"]["[CLS]"].update(ids=[999]),
            "post_processor.special_tokens['[CLS]'].ids[0]",
            "999",
        ),
        (
            "tokenizer.json",
            lambda t: t["added_tokens"][2].update(id=7),
            "added_tokens[2].id",
            "7",
        ),
        ("tokenizer.json", _bert_processing, "post_processor.sep[1]", "103"),
        (
            "tokenizer.json",
            lambda t: t["model"]["vocab"].update(zzqx=30522),
            "model.vocab['zzqx']",
            "30522",
        ),
    ],
)
def test_tokenizer_json_ids_that_differ_from_vocab_txt_are_refused_by_convert(
    minilm_dir, tmp_path, capsys, name, change, where, received
):
    """transformers' fast tokenizer takes tokenizer.json's ids, the zoo
    vocab.txt's: a checkpoint whose two files disagree converted with exit 0
    and tokenized differently from its source."""
    directory = _tampered(minilm_dir, tmp_path, name, change)
    out = tmp_path / "out"
    assert main(["convert", str(directory), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 1, err
    assert f"tokenizer.json: {where}: {received}, but in " in err, err
    assert "vocab.txt" in err and "published with" in err, err
    assert not out.exists()


def test_the_vocabulary_check_holds_when_the_casing_is_given(minilm_dir, tmp_path):
    """`--lowercase` skips tokenizer.json's description, not its ids."""
    directory = _tampered(
        minilm_dir, tmp_path, "tokenizer.json", lambda t: _swap(t["model"]["vocab"])
    )
    with pytest.raises(HFTokenizationError, match=r"model\.vocab\['the'\]: 3006"):
        load_checkpoint(directory, lowercase=True)


def test_the_published_files_agree(minilm_dir):
    assert check_vocabulary(minilm_dir) is None


def test_a_casing_that_does_not_fit_the_vocabulary_is_refused_before_writing(
    minilm_dir, tmp_path, capsys
):
    """tokenizer.json's `lowercase: false` over MiniLM's uncased vocabulary:
    convert wrote a model directory that its own reader then refused."""
    directory = _tampered(
        minilm_dir,
        tmp_path,
        "tokenizer.json",
        lambda t: t["normalizer"].update(lowercase=False),
    )
    out = tmp_path / "out"
    assert main(["convert", str(directory), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "lowercase is false but the vocabulary is uncased" in err, err
    assert not out.exists()


def test_a_null_post_processor_packs_pairs_as_transformers_does(minilm_dir, tmp_path):
    """No post-processor in tokenizer.json: transformers' BertTokenizer
    packs as BERT (measured with transformers 5), and so does the zoo."""
    directory = tmp_path / "null_post"
    shutil.copytree(minilm_dir, directory)
    _edit(directory / "tokenizer.json", lambda t: t.update(post_processor=None))
    reference = transformers.AutoTokenizer.from_pretrained(str(directory))
    _, tokenizer = load_checkpoint(directory)
    theirs = reference("Shares fell.", "The striker scored.")
    n = len(theirs["input_ids"])
    ours = tokenizer(["Shares fell."], ["The striker scored."], sequence_length=n)
    assert ours["token_ids"].numpy()[0].tolist() == theirs["input_ids"]
    assert ours["segment_ids"].numpy()[0].tolist() == theirs["token_type_ids"]
