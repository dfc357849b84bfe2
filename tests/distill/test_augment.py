"""`zoo distill --augment-copies K --augment-rate P`: each training batch is
followed by K views of it with P of every text's word pieces masked
(`zoo.distill.augment`), the same views when an epoch is run again, new ones
the next epoch."""

import json

import numpy as np
import pytest
import tensorflow as tf

from tests.distill.tiny import teacher_dir, topic_data
from zoo.checkpoints import load_model_dir
from zoo.cli import main
from zoo.distill.augment import check_augmentation, masked_views
from zoo.train.data import classification_dataset, load_task_data


def _views(tmp_path, copies, rate, epoch=0):
    _, tokenizer, _ = load_model_dir(teacher_dir(tmp_path))
    data = load_task_data(topic_data(tmp_path), "classify")
    epoch_variable = tf.Variable(epoch, dtype=tf.int64)
    train = classification_dataset(
        data.splits["train"], data.labels, tokenizer, 12, 8,
        shuffle=True, epoch_variable=epoch_variable,
    )  # fmt: skip
    views = masked_views(
        train, tokenizer, copies=copies, rate=rate, seed=0,
        epoch_variable=epoch_variable, sequence_length=12,
    )  # fmt: skip
    return tokenizer, epoch_variable, train, views


def _arrays(dataset):
    return [({k: v.numpy() for k, v in x.items()}, y["logits"].numpy()) for x, y in dataset]


def test_each_batch_is_followed_by_its_masked_views(tmp_path):
    tokenizer, _, train, views = _views(tmp_path, copies=2, rate=0.25)
    plain, seen = _arrays(train), _arrays(views)
    assert len(seen) == 3 * len(plain)
    specials = [tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id, tokenizer.mask_id]
    for i, (x, y) in enumerate(plain):
        first, *masked = seen[3 * i : 3 * i + 3]
        for name in x:  # the batch itself comes first, unchanged
            np.testing.assert_array_equal(first[0][name], x[name])
        np.testing.assert_array_equal(first[1], y)
        for view, labels in masked:
            np.testing.assert_array_equal(labels, y)
            np.testing.assert_array_equal(view["padding_mask"], x["padding_mask"])
            np.testing.assert_array_equal(view["segment_ids"], x["segment_ids"])
            changed = view["token_ids"] != x["token_ids"]
            # Only [MASK] goes in, never over a special token or padding.
            assert (view["token_ids"][changed] == tokenizer.mask_id).all()
            assert not np.isin(x["token_ids"][changed], specials).any()
            real = (x["padding_mask"] > 0) & ~np.isin(x["token_ids"], specials)
            expected = np.maximum(np.round(0.25 * real.sum(1)), 1)
            np.testing.assert_array_equal(changed.sum(1), expected)
        a, b = masked
        assert (a[0]["token_ids"] != b[0]["token_ids"]).any()  # two different views


def test_an_epoch_run_again_sees_the_same_views_and_the_next_epoch_new_ones(tmp_path):
    _, epoch_variable, _, views = _views(tmp_path, copies=1, rate=0.3)
    once, again = _arrays(views), _arrays(views)
    for (x1, _), (x2, _) in zip(once, again):
        np.testing.assert_array_equal(x1["token_ids"], x2["token_ids"])
    epoch_variable.assign(1)
    later = _arrays(views)
    assert any((a[0]["token_ids"] != b[0]["token_ids"]).any() for a, b in zip(once, later))


def test_no_copies_is_the_plain_stream(tmp_path):
    _, _, train, views = _views(tmp_path, copies=0, rate=0.15)
    assert views is train


@pytest.mark.parametrize(
    "copies, rate, flag",
    [
        (-1, 0.15, "--augment-copies"),
        (17, 0.15, "--augment-copies"),
        (True, 0.15, "--augment-copies"),
        ("2", 0.15, "--augment-copies"),
        (2, 0.0, "--augment-rate"),
        (2, 1.0, "--augment-rate"),
        (2, float("nan"), "--augment-rate"),
        (2, "0.1", "--augment-rate"),
    ],
)
def test_out_of_range_values_are_refused_by_name(copies, rate, flag):
    with pytest.raises(ValueError, match=flag):
        check_augmentation(copies, rate)


def test_the_flags_triple_the_updates_of_an_epoch(tmp_path, capsys):
    teacher, data = teacher_dir(tmp_path), topic_data(tmp_path)
    counts = {}
    for copies in (0, 2):
        out = tmp_path / f"student{copies}"
        argv = ["distill", "--teacher", str(teacher), "--data", str(data)]
        argv += ["--out", str(out), "--student-layers", "2", "--batch-size", "8"]
        argv += ["--sequence-length", "12", "--verbose", "0", "--no-evaluate"]
        argv += ["--augment-copies", str(copies), "--patience", "1"]
        assert main(argv) == 0
        why = json.loads((out / "metrics.json").read_text())["schedule"]["why"]
        counts[copies] = int(why.split(" updates an epoch")[0].rsplit(" ", 1)[1])
        recorded = json.loads((out / "model" / "zoo_model.json").read_text())
        assert recorded["distill_config"]["augment_copies"] == copies
    assert counts[2] == 3 * counts[0]
    assert main(["distill", "--teacher", str(teacher), "--data", str(data), "--out",
                 str(tmp_path / "bad"), "--student-layers", "2",
                 "--augment-rate", "1.5"]) == 2  # fmt: skip
    assert "--augment-rate must be a number between 0 and 1" in capsys.readouterr().err
