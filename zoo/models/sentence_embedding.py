"""Sentence embeddings from an encoder: mean of the token vectors over real
tokens (`padding_mask`), L2-normalised, so the dot product of two is their
cosine. This is how sentence-transformers checkpoints such as
all-MiniLM-L6-v2 were trained and are used (their pooling config is mean
pooling, then `Normalize`).

    encoder, tokenizer = zoo.load_checkpoint(minilm_dir)
    emb = embed_texts(encoder, tokenizer, ["A man is playing a guitar.",
                                           "Someone is strumming a guitar."])
    float(emb[0] @ emb[1])                     # 0.719, the model card's figure
    pair_cosines(encoder, tokenizer, texts, texts_b)   # one cosine per pair
"""

from __future__ import annotations

import numpy as np
from keras import ops

from zoo.models.bert_encoder import padding_mean

DEFAULT_EMBEDDING_LENGTH = 128
# all-MiniLM-L6-v2's model card publishes two cosines of these sentences:
# guitar/strumming 0.719 and guitar/stock market -0.054 (index pairs below).
# `zoo demo` checks its converted checkpoint against them; so do the tests.
SIMILARITY_SENTENCES = [
    "A man is playing a guitar.",
    "Someone is strumming a guitar.",
    "The stock market fell sharply today.",
    "Shares dropped steeply on Wall Street.",
    "A chef is cooking pasta in the kitchen.",
]
PUBLISHED_SIMILARITY = {(0, 1): 0.719, (0, 2): -0.054}


def sentence_embedding(encoder, inputs):
    """`float32 [B, hidden_dim]` unit vectors for id inputs (`token_ids`,
    `segment_ids`, `padding_mask`): mean pooling over real tokens, then L2
    normalisation. Usable inside a Keras model or on eager tensors."""
    pooled = padding_mean(encoder(inputs)["sequence_output"], inputs["padding_mask"])
    pooled = ops.cast(pooled, "float32")
    norm = ops.sqrt(ops.maximum(ops.sum(pooled * pooled, axis=-1, keepdims=True), 1e-24))
    return pooled / norm


def embed_texts(
    encoder, tokenizer, texts, sequence_length=DEFAULT_EMBEDDING_LENGTH, batch_size=32
):
    """`float32 [N, hidden_dim]` unit-length embeddings of `texts` (each
    truncated to `sequence_length` tokens), in order."""
    texts = list(texts)
    if isinstance(texts, str) or any(not isinstance(t, str) for t in texts):
        raise TypeError("embed_texts: `texts` must be a list of str.")
    if not 3 <= int(sequence_length) <= encoder.max_sequence_length:
        raise ValueError(
            f"sequence_length={sequence_length}: this encoder takes 3 to "
            f"{encoder.max_sequence_length} tokens."
        )
    out = [np.zeros((0, encoder.hidden_dim), np.float32)]
    for start in range(0, len(texts), batch_size):
        batch = tokenizer(
            texts[start : start + batch_size], sequence_length=sequence_length
        )
        out.append(np.asarray(sentence_embedding(encoder, batch), np.float32))
    return np.concatenate(out)


def cosine(a, b):
    """Row-wise cosine of `a [N, D]` and `b [N, D]` (any scale) as float64 [N]."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    norms = np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1)
    return (a * b).sum(-1) / np.maximum(norms, 1e-12)


def pair_cosines(
    encoder,
    tokenizer,
    texts,
    texts_b,
    sequence_length=DEFAULT_EMBEDDING_LENGTH,
    batch_size=32,
):
    """Cosine of each `texts[i]`'s embedding with `texts_b[i]`'s: float64 [N]
    (each text embedded on its own, as a bi-encoder does)."""
    texts, texts_b = list(texts), list(texts_b)
    if len(texts) != len(texts_b):
        raise ValueError(
            f"pair_cosines: {len(texts)} texts against {len(texts_b)} texts_b; "
            "pass one text_b per text."
        )
    emb = embed_texts(encoder, tokenizer, texts + texts_b, sequence_length, batch_size)
    return cosine(emb[: len(texts)], emb[len(texts) :])
