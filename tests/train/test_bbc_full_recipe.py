"""BBC News at the best recipe measured here, opt-in because it takes about
10 minutes on 2 cores (`make test-full`, i.e. `pytest -m full`): the real
all-MiniLM-L6-v2 fine-tuned at 128 tokens, 3 epochs at 5e-5 with mean
pooling, on the fixed de-duplicated split (1,488 / 213 / 426).

Measured 0.9648 (seed 0) and 0.9577 (seed 1); 256 tokens gave 0.9624. The
pre-training issue asks for 97%, which no recipe tried here reaches
(BUILD_NOTES, "Pre-training and fine-tuning"); the floor below guards the
measured level. CI runs the one-epoch, 64-token version in test_finetune.py.
"""

import pytest

from zoo.train.finetune import FinetuneConfig, finetune

pytestmark = [pytest.mark.assets, pytest.mark.full]

BEST_RECIPE = FinetuneConfig(epochs=3, batch_size=16, sequence_length=128,
                             learning_rate=5e-5, pooling="mean")


def test_bbc_news_best_recipe(minilm_dir, tmp_path):
    result = finetune(minilm_dir, "bbc", "classify", tmp_path / "bbc", BEST_RECIPE, verbose=2)
    print(f"\nBBC News test accuracy {result['accuracy']:.4f} macro-F1 {result['macro_f1']:.4f}"
          f" ({result['num_test']} test articles, {result['train_seconds']} s training)")
    assert result["num_test"] == 426
    assert result["accuracy"] >= 0.955
