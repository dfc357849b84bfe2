"""The BBC News recipe of test_finetune.py at a second seed, opt-in because
it takes about 10 minutes on 2 cores (`make test-full`, i.e. `pytest -m
full`): all-MiniLM-L6-v2 at 128 tokens on up to 4 windows per article, 2
epochs at 5e-5, mean pooling, fixed de-duplicated split (1,488 / 213 / 426).

Seed 0 (the CI test) measured 0.9718, seed 1 0.9765: the issue's 97% does
not rest on one lucky seed (BUILD_NOTES, "Pre-training and fine-tuning").
"""

import dataclasses

import pytest

from tests.train.test_finetune import BBC_RECIPE
from zoo.train.finetune import finetune

pytestmark = [pytest.mark.assets, pytest.mark.full]


def test_bbc_news_recipe_at_a_second_seed(minilm_dir, tmp_path):
    recipe = dataclasses.replace(BBC_RECIPE, seed=1)
    result = finetune(minilm_dir, "bbc", "classify", tmp_path / "bbc", recipe, verbose=2)
    print(f"\nBBC News test accuracy {result['accuracy']:.4f} macro-F1 {result['macro_f1']:.4f}"
          f" ({result['num_test']} test articles, {result['train_seconds']} s training)")
    assert result["num_test"] == 426 and result["max_windows"] == 4
    assert result["accuracy"] >= 0.97
