"""`zoo.TextClassifier.from_checkpoint(<real all-MiniLM-L6-v2>).fit(texts,
labels)` against `zoo finetune` (`zoo.train.finetune.finetune`, what the
command runs) with the same seed and recipe: the same test accuracy.

CI runs a small budget of the windowed BBC recipe (a fixed subset of the
project's BBC split, 64-token windows) on two of MiniLM's layers
(`minilm2_dir`: what is compared is the two paths, not the depth; 0.86 at
3e-4, half the time of six layers); `make test-full` runs the full recipe
(tests/train/test_bbc_full_recipe.py's, 97%) on the whole checkpoint
through both paths.
"""

import json

import keras
import numpy as np
import pytest

import zoo
from zoo.train.finetune import FinetuneConfig, finetune

pytestmark = [pytest.mark.assets, pytest.mark.slow]


def _write_split(root, split, sizes):
    for name, n in sizes.items():
        # The split is ordered by class: an even stride keeps every class.
        rows = split[name][:: max(1, len(split[name]) // n)][:n]
        with open(root / f"{name}.jsonl", "w", encoding="utf-8") as f:
            for text, label in rows:
                f.write(json.dumps({"text": text, "label": label}) + "\n")


def _both_paths(minilm_dir, data, tmp_path, recipe, callbacks=()):
    cli = finetune(minilm_dir, data, "classify", tmp_path / "cli", recipe, verbose=0)

    from zoo.train.data import load_task_data

    splits = load_task_data(data, "classify")
    keras.utils.set_random_seed(recipe.seed)  # as `zoo finetune --seed` does
    model = zoo.TextClassifier.from_checkpoint(
        minilm_dir,
        labels=splits.labels,
        sequence_length=recipe.sequence_length,
        max_windows=recipe.max_windows,
        doc_stride=recipe.doc_stride,
        pooling=recipe.pooling,
        seed=recipe.seed,
    )
    # the recipe's optimizer settings (the defaults are zoo finetune's defaults too)
    model.compile(
        learning_rate=recipe.learning_rate,
        warmup_fraction=recipe.warmup_fraction,
        weight_decay=recipe.weight_decay,
    )
    train, val, test = (splits.splits[k] for k in ("train", "validation", "test"))
    model.fit(
        [e.text for e in train],
        [e.label for e in train],
        epochs=recipe.epochs,
        batch_size=recipe.batch_size,
        verbose=0,
        validation_data=([e.text for e in val], [e.label for e in val]),
        callbacks=list(callbacks),
    )
    result = model.evaluate(
        [e.text for e in test], [e.label for e in test], return_dict=True, verbose=0
    )
    return cli, result, model, test


def test_text_classifier_fit_matches_zoo_finetune(minilm2_dir, bbc_split, tmp_path):
    data = tmp_path / "bbc_small"
    data.mkdir()
    _write_split(data, bbc_split, {"train": 128, "validation": 32, "test": 96})
    recipe = FinetuneConfig(
        epochs=1,
        batch_size=16,
        sequence_length=64,
        learning_rate=3e-4,
        pooling="mean",
        max_windows=2,
        doc_stride=62,
        seed=0,
    )
    cli, text, model, test = _both_paths(minilm2_dir, data, tmp_path, recipe)
    print(
        f"\nzoo finetune: test accuracy {cli['accuracy']:.4f}; TextClassifier.fit: "
        f"{text['accuracy']:.4f} ({cli['num_test']} test articles, {recipe})"
    )
    assert cli["num_test"] == len(test) == 96
    assert text["accuracy"] == pytest.approx(cli["accuracy"], abs=1e-9)
    assert cli["accuracy"] > 0.5  # it learned (5 classes: chance is 0.2)
    # and the two models are the same model: the CLI's best model directory
    best = zoo.TextClassifier.from_checkpoint(tmp_path / "cli" / "model")
    texts = [e.text for e in test[:16]]
    assert np.abs(best.predict(texts) - model.predict(texts)).max() <= 1e-4


@pytest.mark.full
def test_text_classifier_full_bbc_recipe_matches_zoo_finetune(minilm_dir, tmp_path):
    recipe = FinetuneConfig(
        epochs=2,
        batch_size=16,
        sequence_length=128,
        learning_rate=5e-5,
        pooling="mean",
        max_windows=4,
        doc_stride=126,
        seed=0,
    )
    # `zoo finetune` keeps the epoch of lowest validation loss: the same rule here.
    best = keras.callbacks.EarlyStopping(
        monitor="val_loss", patience=recipe.epochs, restore_best_weights=True
    )
    cli, text, _, _ = _both_paths(minilm_dir, "bbc", tmp_path, recipe, callbacks=[best])
    print(
        f"\nBBC full recipe: zoo finetune {cli['accuracy']:.4f}; TextClassifier.fit "
        f"{text['accuracy']:.4f} ({cli['num_test']} test articles)"
    )
    assert cli["num_test"] == 426
    assert abs(text["accuracy"] - cli["accuracy"]) <= 1 / 426 + 1e-9
