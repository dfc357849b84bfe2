"""Early stopping in `finetune`: it stops at `patience`, and a run that is
interrupted and re-run stops where the uninterrupted run would have. A
tiny random-init encoder over the data's own words keeps it fast."""

import json

import keras
import pytest

import zoo
from tests.train import synthetic
from zoo.checkpoints import save_model_dir
from zoo.text.tokenizer import WordPieceTokenizer
from zoo.train.finetune import FinetuneConfig, finetune


class _Interrupted(Exception):
    pass


def _tiny_model_dir(directory, texts):
    words = sorted({w for t in texts for w in t.lower().split()})
    tokenizer = WordPieceTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words])
    encoder = zoo.BertEncoder(
        vocabulary_size=5 + len(words),
        num_layers=2,
        num_heads=2,
        hidden_dim=32,
        intermediate_dim=64,
        max_sequence_length=32,
    )
    save_model_dir(encoder, directory / "model", tokenizer)
    return directory / "model"


@pytest.mark.slow  # a run killed and resumed
def test_early_stopping_counts_across_an_interrupted_run(tmp_path):
    """Validation labels are the training labels swapped, so validation loss
    rises as the model learns: epoch 1 is the best, and patience 2 must stop
    the run after epoch 3 of 8. The run is interrupted after epoch 2 (its
    state saved) and re-run: the re-run trains epoch 3 only and stops, as the
    uninterrupted run would (Keras's EarlyStopping restarts its count at 0
    and trained epochs 3, 4 and 5 here)."""
    data = tmp_path / "topics"
    data.mkdir()
    synthetic.write_topics_csv(data / "train.csv")
    rows = (data / "train.csv").read_text().splitlines()
    swapped = [rows[0]] + [
        r.replace(",sport", ",TECH").replace(",tech", ",sport").replace(",TECH", ",tech")
        for r in rows[1:17]
    ]
    (data / "validation.csv").write_text("\n".join(swapped) + "\n")
    (data / "test.csv").write_text("\n".join(rows[:17]) + "\n")
    model_dir = _tiny_model_dir(
        tmp_path, [r.rsplit(",", 1)[0].strip('"') for r in rows[1:]]
    )
    val_losses = []

    class InterruptAfterEpoch2(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            val_losses.append(logs["val_loss"])
            if epoch == 1:
                raise _Interrupted

    config = FinetuneConfig(
        epochs=8, batch_size=16, sequence_length=32, learning_rate=5e-3, patience=2
    )
    with pytest.raises(_Interrupted):
        finetune(
            model_dir,
            data,
            "classify",
            tmp_path / "out",
            config,
            callbacks=[InterruptAfterEpoch2()],
            verbose=0,
        )
    assert val_losses[1] > val_losses[0], "premise: validation loss rises after epoch 1"
    trained = []

    class Trained(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            trained.append(epoch + 1)

    result = finetune(
        model_dir,
        data,
        "classify",
        tmp_path / "out",
        config,
        callbacks=[Trained()],
        verbose=0,
    )
    history = json.loads((tmp_path / "out" / "history.json").read_text())
    manifest = json.loads((tmp_path / "out" / "model" / "zoo_model.json").read_text())
    print(
        f"\nvalidation loss by epoch {history['history']['val_loss']}; re-run trained "
        f"epochs {trained}, best epoch {manifest['best']['epoch']}, test accuracy "
        f"{result['accuracy']:.3f}"
    )
    assert trained == [3], "the re-run must train epoch 3 only, then stop"
    # history.json keeps the epochs before the interruption.
    assert history["epochs"] == [1, 2, 3]
    assert history["history"]["val_loss"][:2] == pytest.approx(val_losses, rel=1e-6)
    assert history["history"]["val_loss"][2] > val_losses[0]
    assert manifest["best"]["epoch"] == 1
    assert manifest["best"]["value"] == pytest.approx(val_losses[0], rel=1e-6)
