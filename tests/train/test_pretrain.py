"""Pre-training from random initialisation on real text (Austen + WordNet
glosses) within a CI-sized budget: MLM accuracy must rise far above its
step-0 value and chance (1 in 30,522). NSP accuracy is measured and
printed; in this budget (200 steps of bert_tiny) it stays near chance, so it
is not asserted here (see the closing notes of the pre-training issue)."""

import pytest

from zoo.train.pretrain import PretrainConfig, corpus_documents, pretrain

pytestmark = [pytest.mark.assets, pytest.mark.slow]


def test_bert_tiny_pretraining_learns_mlm_and_nsp(tmp_path):
    from tests.conftest import asset_or_fail

    documents = asset_or_fail(lambda: corpus_documents("austen+wordnet"),
                              "Jane Austen + WordNet")
    config = PretrainConfig(epochs=2, batch_size=32, sequence_length=64, max_predictions=10,
                            learning_rate=2e-3, warmup_fraction=0.05, steps_per_epoch=100,
                            eval_batches=10)
    result = pretrain("bert_tiny", documents, tmp_path / "pre", config, verbose=0)
    before, after = result["step_0"], result["trained"]
    print(f"\nbert_tiny on {len(documents):,} real documents, {result['steps']} steps: "
          f"MLM accuracy {before['mlm_accuracy']:.3f} -> {after['mlm_accuracy']:.3f}, "
          f"NSP accuracy {before['nsp_accuracy']:.3f} -> {after['nsp_accuracy']:.3f}; "
          f"pipeline {result['pipeline_examples_per_second']:.0f} ex/s vs training "
          f"{result['train_examples_per_second']:.0f} ex/s")
    assert before["mlm_accuracy"] < 0.005  # a random 30,522-way guess
    assert after["mlm_accuracy"] > 0.01  # ~300x chance (0.024 measured in CI)
    # The input pipeline is never the bottleneck.
    assert result["pipeline_examples_per_second"] > 3 * result["train_examples_per_second"]
    assert (tmp_path / "pre" / "model" / "model.keras").is_file()
