"""The callbacks every training command shares: the best model directory
reads its best value back (a resumed run compares with the epochs before the
kill, for finetune and distill alike), early stopping counts across a
resume, and without validation data every epoch's model is written."""

import json

import keras

import zoo
from zoo.text.tokenizer import WordPieceTokenizer
from zoo.train.callbacks import BestModelDirectory

WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "goal", "rain", "vote"]


def _model():
    encoder = zoo.BertEncoder(
        vocabulary_size=len(WORDS),
        num_layers=1,
        num_heads=2,
        hidden_dim=8,
        intermediate_dim=16,
        max_sequence_length=8,
    )
    return zoo.Classifier(encoder, 2, labels=["a", "b"])


def _best(directory):
    return json.loads((directory / "zoo_model.json").read_text())["best"]


def test_best_value_is_read_back_and_patience_counts_across_a_resume(tmp_path):
    tokenizer, model, out = WordPieceTokenizer(WORDS), _model(), tmp_path / "model"
    model.stop_training = False  # what fit sets before the first epoch
    first = BestModelDirectory(out, tokenizer, {"task": "classify"}, patience=2)
    first.set_model(model)
    first.on_epoch_end(0, {"val_loss": 0.7})
    first.on_epoch_end(1, {"val_loss": 0.9})  # worse: not written
    assert _best(out) == {"monitor": "val_loss", "value": 0.7, "epoch": 1}
    assert not model.stop_training
    # The run is killed; the re-run's callback starts from the directory.
    resumed = BestModelDirectory(out, tokenizer, {"task": "classify"}, patience=2)
    resumed.set_model(model)
    assert (resumed.best, resumed.best_epoch) == (0.7, 1)
    resumed.on_epoch_end(2, {"val_loss": 0.8})  # better than epoch 2, not than epoch 1
    assert _best(out)["epoch"] == 1
    assert model.stop_training  # two epochs without improvement, counted across the kill


def test_without_validation_every_epoch_is_written(tmp_path):
    tokenizer, model, out = WordPieceTokenizer(WORDS), _model(), tmp_path / "model"
    callback = BestModelDirectory(out, tokenizer, {})
    callback.set_model(model)
    callback.on_epoch_end(0, {"loss": 1.0})
    callback.on_epoch_end(1, {"loss": 0.5})
    assert _best(out) == {"monitor": "val_loss", "value": None, "epoch": 2}
    resumed = BestModelDirectory(out, tokenizer, {})
    assert resumed.best_epoch == 2 and resumed.best == float("inf")


def test_select_saves_part_of_the_trained_model(tmp_path):
    """A distiller trains teacher and student; the directory gets the student."""
    tokenizer, student = WordPieceTokenizer(WORDS), _model()
    holder = keras.Model()
    holder.student = student
    callback = BestModelDirectory(
        tmp_path / "model", tokenizer, {}, select=lambda m: m.student
    )
    callback.set_model(holder)
    callback.on_epoch_end(0, {"val_loss": 0.3})
    saved = json.loads((tmp_path / "model" / "zoo_model.json").read_text())
    assert saved["model_class"] == "Classifier" and saved["best"]["value"] == 0.3


def test_epoch_counter_gives_each_worker_its_own_dropout_masks():
    """Multi-worker runs: the same seed on every worker would draw the same
    dropout masks for every worker's share of the global batch; the
    worker's place in the cluster offsets the generators' state. Worker 0
    keeps the single-process state, so one process and a cluster's chief
    start alike."""
    import numpy as np
    import tensorflow as tf

    from zoo.train.callbacks import EpochCounter

    def masks(worker):
        keras.utils.set_random_seed(3)
        model = _model()  # dropout 0.1
        counter = EpochCounter(tf.Variable(0, dtype=tf.int64), worker=worker)
        counter.set_model(model)
        counter.on_train_begin()
        counter.on_epoch_begin(1)
        x = {
            "token_ids": np.full((2, 8), 5, "int32"),
            "segment_ids": np.zeros((2, 8), "int32"),
            "padding_mask": np.ones((2, 8), "int32"),
        }
        return model(x, training=True)["logits"].numpy()

    single = masks(0)
    np.testing.assert_array_equal(masks(0), single)
    assert not np.allclose(masks(1), single)
