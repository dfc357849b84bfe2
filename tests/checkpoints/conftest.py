"""Fixtures for the checkpoint parity tests: MiniLM as a bare encoder, a
padded batch of real sentences, 96 real BBC sentences, and the optional
Model Garden package.

`minilm_dir` comes from tests/conftest.py. A missing extra skips with the
command that installs it, except in CI (env `CI` set), where it fails: CI
must not pass by skipping the parity tests.
"""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

# Twenty sentences of ordinary English, 1 to ~60 WordPiece tokens, so that one
# padded batch mixes long rows, short rows and a lot of padding.
SENTENCES = [
    "Hello.",
    "The cat sat on the mat.",
    "Interest rates were left unchanged by the central bank this month.",
    "She walked to the station in the rain, late again, and missed the early train.",
    "Why?",
    "The new bridge over the river is expected to open to traffic next spring.",
    "Photosynthesis converts light energy into chemical energy stored in sugar.",
    "I can't believe it's already December!",
    "The committee, after a long and sometimes heated debate that lasted well into "
    "the night, finally agreed to postpone the vote on the proposed budget until "
    "the spring meeting, when more members would be able to attend in person.",
    "Dogs bark.",
    "A quick brown fox jumps over the lazy dog near the riverbank.",
    "Please send the report to the finance team before Friday afternoon.",
    "The museum's collection includes paintings, sculptures and ancient coins.",
    "He scored twice in the second half to win the match for his side.",
    "Tokenization splits unfamiliar words like 'unbelievably' into pieces.",
    "Rain is forecast for most of the country tomorrow, with strong winds in the north.",
    "Thank you very much.",
    "The software update fixes a bug that caused the application to crash on startup.",
    "Water boils at one hundred degrees Celsius at sea level.",
    "After years of research, the team published its findings in a leading journal.",
]


def _missing(what: str, install: str):
    message = f"{what} is not installed; install it with: {install}"
    if os.environ.get("CI"):
        pytest.fail(f"{message} (CI is set, so this fails instead of skipping)")
    pytest.skip(message)


@pytest.fixture(scope="session")
def minilm_encoder(minilm_dir):
    """MiniLM as a bare `BertEncoder`, loaded by the HF loader alone (no zoo
    tokenizer involved)."""
    from zoo.checkpoints.hf import load_hf_encoder

    return load_hf_encoder(minilm_dir)


@pytest.fixture(scope="session")
def sentence_batch(minilm_dir) -> dict[str, np.ndarray]:
    """SENTENCES tokenized by HF's BertTokenizerFast with MiniLM's vocab.txt and
    padded to the longest: int32 `token_ids`, `segment_ids`, `padding_mask`.

    HF's tokenizer (not zoo's) keeps these tests independent of zoo.text.
    The vocabulary goes in as a dict: transformers 5 accepts
    `BertTokenizerFast(vocab_file=...)` but ignores the file and tokenizes
    with a five-token vocabulary (everything becomes [UNK]).
    """
    transformers = pytest.importorskip("transformers")
    lines = (minilm_dir / "vocab.txt").read_text(encoding="utf-8").splitlines()
    vocab = {token: index for index, token in enumerate(lines)}
    tokenizer = transformers.BertTokenizerFast(vocab=vocab, do_lower_case=True)
    encoded = tokenizer(SENTENCES, padding="longest", return_tensors="np")
    ids = encoded["input_ids"]
    if not (ids[:, 0] == vocab["[CLS]"]).all() or (ids == vocab["[UNK]"]).mean() > 0.01:
        raise RuntimeError(f"BertTokenizerFast did not use {minilm_dir / 'vocab.txt'}")
    batch = {
        "token_ids": encoded["input_ids"],
        "segment_ids": encoded["token_type_ids"],
        "padding_mask": encoded["attention_mask"],
    }
    return {k: v.astype("int32") for k, v in batch.items()}


@pytest.fixture(scope="session")
def bbc_sentences(bbc_texts):
    """96 real sentences from BBC bodies, spread from 3 to ~60 words."""
    sentences = []
    for text in bbc_texts[::7]:
        sentences += [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if s.strip()]
    sentences = sorted(set(sentences), key=lambda s: (len(s.split()), s))
    picks = np.linspace(0, len(sentences) - 1, 96).astype(int)
    return [sentences[i] for i in picks]


@pytest.fixture(scope="session")
def garden_networks():
    """`official.nlp.modeling.networks` (the `garden` extra)."""
    from zoo.checkpoints.garden import GARDEN_INSTALL, import_garden_networks

    try:
        return import_garden_networks()
    except ImportError:
        _missing("TF Model Garden (tf-models-official)", GARDEN_INSTALL)


def max_diffs(ours, theirs, padding_mask) -> dict[str, float]:
    """Max |diff| of `sequence_output` over real (non-padding) positions and of
    `pooled_output`; padding positions are free to differ between
    implementations (their outputs are never used)."""
    real = np.asarray(padding_mask, bool)[..., None]
    seq = np.abs(
        np.asarray(ours["sequence_output"]) - np.asarray(theirs["sequence_output"])
    )
    pooled = np.abs(np.asarray(ours["pooled_output"]) - np.asarray(theirs["pooled_output"]))
    return {
        "sequence_output": float(np.where(real, seq, 0.0).max()),
        "pooled_output": float(pooled.max()),
    }


@pytest.fixture(scope="session")
def compare_outputs():
    return max_diffs
