"""Fixtures for the exporter tests: a tiny randomly initialised classifier on a
hand-written vocabulary for the mechanics, and the real all-MiniLM-L6-v2
encoder with a BBC classifier head for the figures (`assets` tests)."""

import numpy as np
import pytest

WORDS = (
    "the a of to and in is it that was for on are with as his they be at one have this from "
    "or had by hot word but what some we can out other were all there when up use your how "
    "said an each she which do their time if will way about many then them write would like "
    "so these her long make thing see him two has look more day could go come did number "
    "sound no most people my over know water than call first who may down side been now find "
    "market shares bank match goal film music minister vote phone game"
).split()
VOCABULARY = [
    "[PAD]",
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "[MASK]",
    ".",
    ",",
    "?",
    "##s",
    "##ing",
] + WORDS
TINY_LABELS = ["business", "sport", "tech"]
# The real-model tests run BBC articles at 64 tokens (headline and lead):
# MiniLM costs ~0.05 s of CPU per text there, and every figure is per text.
REAL_LENGTH = 64
TINY = dict(
    num_layers=2, num_heads=2, hidden_dim=16, intermediate_dim=32, max_sequence_length=64
)


def sentences(n, seed=0):
    """`n` deterministic sentences over WORDS (tiny-model mechanics only)."""
    rng = np.random.default_rng(seed)
    return [
        " ".join(rng.choice(WORDS, size=int(rng.integers(3, 24)))).capitalize() + "."
        for _ in range(n)
    ]


@pytest.fixture(scope="session")
def tiny_tokenizer():
    from zoo.text.tokenizer import WordPieceTokenizer

    return WordPieceTokenizer(VOCABULARY)


@pytest.fixture(scope="session")
def tiny_texts():
    return sentences(200)


@pytest.fixture(scope="session")
def tiny_labels(tiny_texts):
    return [TINY_LABELS[i % 3] for i in range(len(tiny_texts))]


def make_tiny(kind="classifier", seed=7):
    import keras

    import zoo

    keras.utils.set_random_seed(seed)
    encoder = zoo.BertEncoder(vocabulary_size=len(VOCABULARY), **TINY)
    if kind == "classifier":
        return zoo.Classifier(encoder, 3, pooling="mean", labels=TINY_LABELS)
    if kind == "tagger":
        return zoo.TokenClassifier(encoder, 4, labels=["O", "B-ORG", "I-ORG", "B-PER"])
    return zoo.QuestionAnswerer(encoder)


@pytest.fixture(scope="session")
def tiny_classifier():
    return make_tiny("classifier")


def softmax_regression(x, y, classes, steps=300, learning_rate=0.5, l2=1e-3):
    """Full-batch gradient descent on standardised features; kernel and bias
    for a Dense layer on the raw features. numpy only: a fraction of a second,
    where `fit` on a one-layer model spends seconds in per-step overhead."""
    mean, std = x.mean(0), x.std(0) + 1e-6
    z = (x - mean) / std
    w = np.zeros((x.shape[1], classes))
    b = np.zeros(classes)
    onehot = np.eye(classes)[y]
    for _ in range(steps):
        logits = z @ w + b
        p = np.exp(logits - logits.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        grad = (p - onehot) / len(x)
        w -= learning_rate * (z.T @ grad + l2 * w)
        b -= learning_rate * grad.sum(0)
    return (w / std[:, None]).astype("float32"), (b - (mean / std) @ w).astype("float32")


# --- the real model --------------------------------------------------------------


@pytest.fixture(scope="session")
def bbc_classifier(minilm, bbc_split):
    """The real MiniLM encoder with a BBC head fitted on frozen mean-pooled
    features of 150 training articles (seconds, not a fine-tune: enough for
    margins that make label agreement meaningful; accuracy figures for the
    shipped models come from the fine-tuned teacher)."""
    import keras

    import zoo
    from zoo.datasets.corpora import BBC_LABELS
    from zoo.models.bert_encoder import padding_mean

    encoder, tokenizer = minilm
    keras.utils.set_random_seed(0)
    model = zoo.Classifier(
        encoder, len(BBC_LABELS), pooling="mean", labels=list(BBC_LABELS)
    )
    train = bbc_split["train"][::5][:150]
    ids = tokenizer([t for t, _ in train], sequence_length=REAL_LENGTH)
    features = np.concatenate(
        [
            np.asarray(
                padding_mean(
                    encoder({k: v[i : i + 32] for k, v in ids.items()})["sequence_output"],
                    ids["padding_mask"][i : i + 32],
                )
            )
            for i in range(0, len(train), 32)
        ]
    )
    targets = np.array([BBC_LABELS.index(label) for _, label in train])
    kernel, bias = softmax_regression(features, targets, len(BBC_LABELS))
    model.output_dense.set_weights([kernel, bias])
    return model, tokenizer
