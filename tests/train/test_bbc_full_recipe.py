"""The BBC News fine-tuning recipe that reaches the issue's 97%, at two
seeds, opt-in because each run takes 10 to 25 minutes on 2 cores (`make
test-full`, i.e. `pytest -m full`; CI's budget does not hold it, BUILD_NOTES.md,
"How to build"): all-MiniLM-L6-v2 at 128 tokens on up to 4 windows per article (each a
training example; the prediction is the mean of the windows' logits), 2
epochs at 5e-5, mean pooling, fixed de-duplicated split (1,488 / 213 / 426).

Measured 0.9718 (seed 0) and 0.9765 (seed 1) against 95.3-96.5% for every
first-window recipe: the 97% does not rest on one lucky seed (BUILD_NOTES.md,
"Performance figures"). Seed 0's floor sits half a point under 97%
so that thread-order noise on one or two articles does not fail it, and
above the best first-window run (0.9648).
"""

import dataclasses

import pytest

from zoo.train.finetune import FinetuneConfig, finetune

pytestmark = [pytest.mark.assets, pytest.mark.full]

BBC_RECIPE = FinetuneConfig(
    epochs=2,
    batch_size=16,
    sequence_length=128,
    learning_rate=5e-5,
    pooling="mean",
    max_windows=4,
    doc_stride=126,
)


@pytest.mark.parametrize("seed, floor", [(0, 0.965), (1, 0.97)])
def test_bbc_news_recipe(minilm_dir, tmp_path, seed, floor):
    recipe = dataclasses.replace(BBC_RECIPE, seed=seed)
    result = finetune(minilm_dir, "bbc", "classify", tmp_path / "bbc", recipe, verbose=2)
    print(
        f"\nBBC News seed {seed}: test accuracy {result['accuracy']:.4f} macro-F1 "
        f"{result['macro_f1']:.4f} ({result['num_test']} test articles, "
        f"{result['train_seconds']} s training)"
    )
    assert result["num_test"] == 426 and result["max_windows"] == 4
    assert result["accuracy"] >= floor
