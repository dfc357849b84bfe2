"""Fixtures for the text tests: real assets via `require_asset`, the
project's tokenizer on the real MiniLM vocabulary, and the reference."""

from __future__ import annotations

import os

import pytest

from zoo.datasets import corpora

# A tiny hand-written vocabulary for unit tests that need no assets.
TINY_VOCAB = [
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",  # ids 0-4
    "a", "b", "c", "##b", "##c", "hello", "world", ",", "!", "?", ".", "[", "]",  # 5-17
    "cl", "##s", "ж", "##ж", "##a", "the", "cat", "e",  # 18-25
]  # fmt: skip


def require_asset(fn):
    """Return `fn()`, an asset reader; handle a missing asset.

    A reader raises `FileNotFoundError` (with the install command) when its
    asset is not installed. In CI (env var `CI` set) that is a test failure,
    since CI must run against the real assets; elsewhere the test is skipped
    with the reader's message, which names the command to run.
    """
    try:
        return fn()
    except FileNotFoundError as e:
        if os.environ.get("CI"):
            pytest.fail(
                f"Missing asset in CI (CI={os.environ['CI']!r}): {e}", pytrace=False
            )
        pytest.skip(str(e))


@pytest.fixture(scope="session")
def minilm_vocab_path():
    return require_asset(corpora.minilm_checkpoint_dir) / "vocab.txt"


@pytest.fixture(scope="session")
def minilm_tokenizer(minilm_vocab_path):
    from zoo.text.tokenizer import WordPieceTokenizer

    return WordPieceTokenizer(minilm_vocab_path)


def make_reference(vocab_path, lowercase=True, strip_accents=None):
    """HF `BertTokenizerFast` on `vocab_path`: the reference tokenizer.

    transformers 5 silently ignores `vocab_file=` (it then tokenizes with a
    five-token vocabulary); the file goes in as `vocab=`, and the size check
    keeps that trap from coming back unnoticed.
    """
    from transformers import BertTokenizerFast

    reference = BertTokenizerFast(
        vocab=str(vocab_path), do_lower_case=lowercase, strip_accents=strip_accents
    )
    lines = vocab_path.read_text(encoding="utf-8").split("\n")
    expected = len(lines) - (lines[-1] == "")
    if len(reference) != expected:
        raise RuntimeError(
            f"BertTokenizerFast loaded {len(reference)} tokens from {vocab_path}, expected {expected}"
        )
    return reference


@pytest.fixture(scope="session")
def reference_tokenizer(minilm_vocab_path):
    return make_reference(minilm_vocab_path)
