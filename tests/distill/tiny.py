"""A tiny teacher model directory and topic data for distillation tests."""

import csv

import numpy as np

import zoo
from zoo.checkpoints import save_model_dir
from zoo.distill.pipeline import DistillConfig
from zoo.text.tokenizer import WordPieceTokenizer

WORDS = (
    "goal match team win cup rain storm cloud wind sun vote law party "
    "minister tax the a of is"
).split()
TOPICS = {"sport": WORDS[:5], "weather": WORDS[5:10], "politics": WORDS[10:15]}

# Two epochs of the tiny teacher's data into a 2-layer student, teacher cached.
TINY_RUN = DistillConfig(
    student_layers=2,
    layer_map=(1, 3),
    epochs=2,
    batch_size=8,
    sequence_length=12,
    learning_rate=1e-3,
    seed=3,
    run_eagerly=True,
    evaluate=False,
    cache_teacher=True,
)


def teacher_dir(tmp_path):
    tokenizer = WordPieceTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS])
    encoder = zoo.BertEncoder(
        vocabulary_size=len(tokenizer.vocabulary),
        num_layers=4,
        num_heads=2,
        hidden_dim=8,
        intermediate_dim=16,
        max_sequence_length=16,
    )
    teacher = zoo.Classifier(encoder, 3, labels=sorted(TOPICS))
    return save_model_dir(teacher, tmp_path / "teacher", tokenizer)


def topic_data(tmp_path):
    rng = np.random.default_rng(0)
    path = tmp_path / "news.csv"
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["text", "label"])
        for i in range(40):
            label = sorted(TOPICS)[i % 3]
            words = list(rng.choice(TOPICS[label], 4)) + list(rng.choice(WORDS[15:], 2))
            w.writerow([" ".join(words) + f" {i % 7}", label])  # unique rows
    return path
