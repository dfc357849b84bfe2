"""Text task models (`zoo.TextClassifier`, `TextTagger`, `TextQuestionAnswerer`,
one module each under zoo/tasks/) and `zoo.TextPreprocessor`, on a tiny
randomly initialised encoder over a hand-written vocabulary: text in equals
ids in, the forms `fit` takes, safe-mode `.keras` round trips in a fresh
process (and files that name the module the classes came from before),
exporters and `zoo predict` taking the models as they are, clear errors."""

import json
import re
import subprocess
import sys
import zipfile

# isort: off
import zoo  # first: sets TensorFlow's log level and Keras's backend

# isort: on
import keras
import numpy as np
import pytest
import tensorflow as tf

from export import Quantization
from export.tflite import export_tflite
from tests.export.conftest import TINY, TINY_LABELS, VOCABULARY, sentences
from zoo.cli import main
from zoo.tasks.decode import word_spans
from zoo.text import features as feats
from zoo.utils.numeric import softmax

LENGTH = 16


def _tokenizer():
    return zoo.WordPieceTokenizer(VOCABULARY)


def _encoder(seed=7):
    keras.utils.set_random_seed(seed)
    return zoo.BertEncoder(vocabulary_size=len(VOCABULARY), **TINY)


def _classifier(max_windows=1, seed=7, length=LENGTH):
    encoder = _encoder(seed)
    return zoo.TextClassifier(
        encoder,
        preprocessor=zoo.TextPreprocessor(_tokenizer(), length),
        labels=TINY_LABELS,
        max_windows=max_windows,
        doc_stride=6,
        pooling="mean",
    )


def _data(n=48, seed=0):
    texts = sentences(n, seed=seed)
    return texts, [TINY_LABELS[i % 3] for i in range(n)]


def _ids_probabilities(model, texts):
    """The id-level path by hand: the tokenizer, the model on ids, softmax."""
    ids = model.tokenizer(texts, sequence_length=model.sequence_length)
    logits = keras.Model.predict(
        model, {k: np.asarray(v) for k, v in ids.items()}, verbose=0
    )
    return softmax(logits["logits"])


def test_preprocessor_packs_buckets_and_runs_in_tf_data():
    tok = _tokenizer()
    pre = zoo.TextPreprocessor(tok, sequence_length=16)
    out = pre(["the market", "a b"])
    ref = tok(["the market", "a b"], sequence_length=16)
    for k in zoo.INPUT_NAMES:
        np.testing.assert_array_equal(out[k], ref[k])
    pairs = pre(("what fell ?", "the market fell"))
    np.testing.assert_array_equal(
        pairs["segment_ids"], tok(["what fell ?"], ["the market fell"], 16)["segment_ids"]
    )
    buckets = zoo.TextPreprocessor(tok, sequence_length=(8, 16, 32))
    assert buckets(["the market"])["token_ids"].shape == (1, 8)
    long = " ".join(["market"] * 12)
    assert buckets(["the", long])["token_ids"].shape == (2, 16)
    assert buckets([" ".join(["market"] * 40)])["token_ids"].shape == (1, 32)
    ds = tf.data.Dataset.from_tensor_slices((["the market", long], [0, 1])).batch(2)
    batch, label = next(iter(ds.map(lambda t, y: (buckets(t), y))))
    assert batch["token_ids"].shape == (2, 16) and list(label.numpy()) == [0, 1]
    config = zoo.TextPreprocessor.from_config(buckets.get_config())
    assert config.lengths == (8, 16, 32) and config.tokenizer.vocabulary == VOCABULARY
    with pytest.raises(ValueError, match="sequence_length"):
        zoo.TextPreprocessor(tok, sequence_length=[2])
    with pytest.raises(TypeError, match="WordPieceTokenizer"):
        zoo.TextPreprocessor(42)
    with pytest.raises(TypeError, match="must hold text"):
        pre([1, 2])


@pytest.mark.parametrize("max_windows", [1, 3])
def test_classifier_text_equals_ids(max_windows):
    model = _classifier(max_windows)
    texts = sentences(12, seed=3) + [" ".join(sentences(6, seed=4))]  # one long text
    probabilities = model.predict(texts)
    assert probabilities.shape == (13, 3) and probabilities.dtype == np.float32
    if max_windows == 1:
        expected = _ids_probabilities(model, texts)
    else:
        w = feats.text_windows(texts, model.tokenizer, LENGTH, 6, max_windows)
        logits = keras.Model.predict(model, w.inputs, verbose=0)["logits"]
        expected = softmax(feats.average_windows(logits, w.example_index, len(texts)))
        assert np.bincount(w.example_index)[-1] == max_windows  # the long text has windows
    assert np.abs(probabilities - expected).max() <= 1e-6
    assert model.predict_labels(texts) == [TINY_LABELS[i] for i in expected.argmax(-1)]
    # ids still go to the id-level model (what exporters and validators call)
    ids = model.tokenizer(texts, sequence_length=LENGTH)
    assert set(model.predict({k: np.asarray(v) for k, v in ids.items()}, verbose=0)) == {
        "logits"
    }


@pytest.mark.slow  # training, exports or a fresh process
def test_fit_forms_agree_and_learn():
    """The three forms of `fit` give the same model, and the fit learned: the
    loss on the training texts, measured without dropout, fell (48 texts, 12
    steps at a peak learning rate of 1e-3; at the default 5e-5 a tiny random
    model barely moves in 12 steps and the epoch losses differed only by
    dropout's noise)."""
    texts, labels = _data()
    untrained = _classifier()
    untrained.compile(learning_rate=1e-3)
    before = untrained.evaluate(texts, labels, return_dict=True, verbose=0)["loss"]
    runs = {}
    for form in ("names", "indices", "batched_dataset"):
        model = _classifier()
        model.compile(learning_rate=1e-3)
        if form == "names":
            history = model.fit(
                texts,
                labels,
                epochs=2,
                batch_size=8,
                verbose=0,
                validation_data=(texts[:12], labels[:12]),
            )
        elif form == "indices":
            history = model.fit(
                np.array(texts),
                np.array([TINY_LABELS.index(y) for y in labels]),
                epochs=2,
                batch_size=8,
                verbose=0,
            )
            # "auto" compile: AdamW, BERT's warmup-and-decay over this fit's 12 steps
            assert isinstance(model.optimizer, keras.optimizers.AdamW)
            assert model.optimizer.iterations.numpy() == 12
            assert float(model.optimizer.learning_rate) == 0.0  # decayed to 0 at the end
            result = model.evaluate(texts, labels, return_dict=True, verbose=0)
            assert 0 <= result["accuracy"] <= 1 and result["loss"] > 0
        else:
            ds = tf.data.Dataset.from_tensor_slices((texts, labels)).batch(5)
            val = tf.data.Dataset.from_tensor_slices((texts[:12], labels[:12]))
            history = model.fit(ds, epochs=2, batch_size=8, verbose=0, validation_data=val)
        runs[form] = (model.predict(texts), history.history)
        if form == "names":
            after = model.evaluate(texts, labels, return_dict=True, verbose=0)["loss"]
    reference, history = runs["names"]
    for form, (probabilities, other) in runs.items():
        assert np.abs(probabilities - reference).max() <= 1e-5, form
        assert np.allclose(other["loss"], history["loss"], atol=1e-5), form
    assert set(history) >= {"loss", "accuracy", "val_loss", "val_accuracy"}
    assert set(runs["batched_dataset"][1]) >= {"val_loss", "val_accuracy"}
    assert after < before - 1e-3, (before, after)


def test_windows_train_on_every_window_and_evaluate_by_the_mean():
    texts = [" ".join(sentences(5, seed=i)) for i in range(9)]
    labels = [TINY_LABELS[i % 3] for i in range(9)]
    model = _classifier(max_windows=3)
    model.fit(texts, labels, epochs=1, batch_size=4, verbose=0)
    windows = feats.text_windows(texts, model.tokenizer, LENGTH, 6, 3)
    assert model.optimizer.iterations.numpy() == -(-len(windows.example_index) // 4)
    result = model.evaluate(texts, labels, return_dict=True, verbose=0)
    probabilities = model.predict(texts)
    y = np.array([TINY_LABELS.index(v) for v in labels])
    assert result["accuracy"] == pytest.approx(
        float((probabilities.argmax(-1) == y).mean())
    )
    expected_loss = -np.log(probabilities[np.arange(9), y].astype(np.float64)).mean()
    assert result["loss"] == pytest.approx(expected_loss, rel=1e-5)


@pytest.mark.slow  # training, exports or a fresh process
def test_keras_file_round_trips_in_a_fresh_process_in_safe_mode(tmp_path):
    texts, labels = _data(24)
    model = _classifier(max_windows=2)
    model.fit(texts, labels, epochs=1, batch_size=8, verbose=0)
    path = tmp_path / "clf.keras"
    model.save(path)
    with zipfile.ZipFile(path) as archive:
        config = json.loads(archive.read("config.json"))
    vocabulary = config["config"]["preprocessor"]["config"]["tokenizer"]["config"][
        "vocabulary"
    ]
    assert vocabulary == VOCABULARY  # the file holds the vocabulary
    probe = sentences(10, seed=9) + [" ".join(sentences(4, seed=5))]
    np.save(tmp_path / "texts.npy", np.array(probe))
    np.save(tmp_path / "expected.npy", model.predict(probe))
    script = f"""
import numpy as np, keras, zoo
model = keras.saving.load_model({str(path)!r}, safe_mode=True)
assert type(model) is zoo.TextClassifier and model.max_windows == 2, type(model)
texts = list(np.load({str(tmp_path / "texts.npy")!r}))
got = model.predict([str(t) for t in texts])
print("DIFF", float(np.abs(got - np.load({str(tmp_path / "expected.npy")!r})).max()))
model.fit([str(t) for t in texts], ["sport"] * len(texts), epochs=1, verbose=0)
"""
    run = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert "DIFF 0.0" in run.stdout, run.stdout
    assert "Skipping variable loading" not in run.stderr


def test_keras_files_saved_from_the_old_module_load(tmp_path):
    """Until issue #37 the three text models lived in zoo/tasks/text_models.py,
    and a .keras file records the module its class was saved from. Keras
    finds a class by its registered name ("zoo>TextClassifier", ...), so a
    file that names the old module must load, in safe mode, as the same class
    with the same weights."""
    preprocessor = zoo.TextPreprocessor(_tokenizer(), LENGTH)
    models = [
        _classifier(max_windows=2),
        zoo.TextTagger(_encoder(), preprocessor=preprocessor, labels=["O", "B-ORG"]),
        zoo.TextQuestionAnswerer(_encoder(), preprocessor=preprocessor),
    ]
    for model in models:
        saved = tmp_path / f"{type(model).__name__}.keras"
        model.save(saved)
        old = tmp_path / f"old-{saved.name}"
        with zipfile.ZipFile(saved) as src, zipfile.ZipFile(old, "w") as dst:
            for item in src.infolist():
                data = src.read(item)
                if item.filename == "config.json":
                    config = json.loads(data)
                    assert config["registered_name"] == f"zoo>{type(model).__name__}"
                    config["module"] = "zoo.tasks.text_models"  # gone since the split
                    data = json.dumps(config).encode()
                dst.writestr(item, data)
        loaded = keras.saving.load_model(old, safe_mode=True)
        assert type(loaded) is type(model)
        for a, b in zip(loaded.get_weights(), model.get_weights(), strict=True):
            np.testing.assert_array_equal(a, b)


@pytest.mark.slow  # training, exports or a fresh process
def test_model_directory_export_and_zoo_predict_take_the_text_model(tmp_path, capsys):
    texts, labels = _data(24)
    model = _classifier(max_windows=2)
    model.fit(texts, labels, epochs=1, batch_size=8, verbose=0)
    directory = model.save_model_dir(tmp_path / "model")
    again = zoo.TextClassifier.from_checkpoint(directory)
    assert type(again) is zoo.TextClassifier and again.max_windows == 2
    assert again.sequence_length == LENGTH
    probe = sentences(8, seed=11)
    assert np.abs(again.predict(probe) - model.predict(probe)).max() == 0
    # an id-level Classifier's model directory becomes a TextClassifier with its weights
    plain = zoo.Classifier(model.encoder, 3, pooling="mean", labels=TINY_LABELS)
    plain.set_weights(model.get_weights())
    plain_dir = zoo.checkpoints.save_model_dir(
        plain, tmp_path / "plain", model.tokenizer, extra={"sequence_length": LENGTH}
    )
    adopted = zoo.TextClassifier.from_checkpoint(plain_dir)
    assert (
        np.abs(
            adopted.predict(probe)
            - softmax(
                keras.Model.predict(
                    plain,
                    {
                        k: np.asarray(v)
                        for k, v in model.tokenizer(probe, sequence_length=LENGTH).items()
                    },
                    verbose=0,
                )["logits"]
            )
        ).max()
        <= 1e-6
    )
    with pytest.raises(TypeError, match="TextClassifier"):
        zoo.TextTagger.from_checkpoint(plain_dir)
    # exporters: the text model as it is, tokenizer taken from its preprocessor
    phone = export_tflite(
        model, None, tmp_path / "phone", quantization=Quantization("float32")
    )
    meta = json.loads((phone / "metadata.json").read_text())
    assert meta["files"]["model.tflite"]["sequence_lengths"] == [LENGTH]  # the model's own
    # from_checkpoint's settings apply to a saved text model too
    override = zoo.TextClassifier.from_checkpoint(
        directory, max_windows=1, sequence_length=8
    )
    assert override.max_windows == 1 and override.sequence_length == 8
    assert main(["predict", "--model", str(directory), "--text", probe[0], "--json"]) == 0
    line = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert line["label"] == model.predict_labels(probe[:1])[0]


def test_tagger_fit_predict_entities():
    tags = ["O", "B-ORG", "I-ORG", "B-PER"]
    texts = sentences(24, seed=1)
    y = [
        ["B-ORG" if w.lower() in ("market", "bank") else "O" for w in t.split()]
        for t in texts
    ]
    tagger = zoo.TextTagger(
        _encoder(), preprocessor=zoo.TextPreprocessor(_tokenizer(), 32), labels=tags
    )
    history = tagger.fit(texts, y, epochs=3, batch_size=8, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    probe = ["  the bank   said shares of the market fell ."] + sentences(5, seed=8)
    words = tagger.predict(probe)
    assert [w.shape for w in words] == [(len(t.split()), 4) for t in probe]
    inputs, _, word_index = feats.tagging_features(
        [
            zoo.text.readers.TaggedSentence(tuple(t.split()), ("O",) * len(t.split()))
            for t in probe
        ],
        tagger.tokenizer,
        {t: i for i, t in enumerate(tags)},
        32,
    )
    logits = keras.Model.predict(tagger, inputs, verbose=0)["logits"]
    first = np.argmax(word_index[0] == 1)  # the first piece of word 1 of the first text
    assert np.abs(words[0][1] - softmax(logits[0, first])).max() <= 1e-6
    for text, found in zip(probe, tagger.predict_entities(probe)):
        for e in found:
            assert text[e["start"] : e["end"]] == e["text"] and e["label"] in ("ORG", "PER")
    with pytest.raises(ValueError, match="one tag per whitespace-separated word"):
        tagger.fit(["the bank"], [["O"]], verbose=0)
    with pytest.raises(ValueError, match="not among this model's labels"):
        tagger.fit(["the bank"], [["O", "B-LOC"]], verbose=0)


def test_question_answerer_fit_and_answers_with_offsets():
    contexts = [" ".join(sentences(3, seed=i)) for i in range(16)]
    questions = ["what is it ?"] * 16
    answers = [c.split()[2] for c in contexts]  # a word of each context
    qa = zoo.TextQuestionAnswerer(
        _encoder(), preprocessor=zoo.TextPreprocessor(_tokenizer(), 48), doc_stride=16
    )
    history = qa.fit(
        list(zip(questions, contexts)), answers, epochs=2, batch_size=8, verbose=0
    )
    assert np.isfinite(history.history["loss"]).all()
    got = qa.predict((questions[:4], contexts[:4]))
    for context, answer in zip(contexts, got):
        assert (
            answer["start"] >= 0
            and context[answer["start"] : answer["end"]] == answer["answer"]
        )
        assert 0 < answer["score"] <= 1
    assert qa.predict_answers(
        [{"question": q, "context": c} for q, c in zip(questions[:4], contexts[:4])]
    ) == [a["answer"] for a in got]
    with pytest.raises(ValueError, match="is not in its context"):
        qa.fit([("q ?", "the market")], ["bank"], verbose=0)
    with pytest.raises(ValueError, match=r"\(question, context\) pairs"):
        qa.predict(["what ?"])


def test_bad_input_gets_a_clear_error():
    model = _classifier()
    texts, labels = _data(6)
    with pytest.raises(ValueError, match="labels are missing"):
        model.fit(texts)
    with pytest.raises(ValueError, match=r"label 'politics' is not one of"):
        model.fit(texts, ["politics"] * 6, verbose=0)
    with pytest.raises(ValueError, match="class index 7"):
        model.fit(texts, [7] * 6, verbose=0)
    with pytest.raises(ValueError, match="6 texts but 5 labels"):
        model.fit(texts, labels[:5], verbose=0)
    with pytest.raises(ValueError, match="validation_split"):
        model.fit(texts, labels, validation_split=0.2, verbose=0)
    with pytest.raises(TypeError, match=r"x\[1\]: expected a str"):
        model.predict(["fine", 3])
    with pytest.raises(ValueError, match="labels=\\[names\\]"):
        zoo.TextClassifier(_encoder(), preprocessor=zoo.TextPreprocessor(_tokenizer()))
    with pytest.raises(TypeError, match="TextPreprocessor"):
        zoo.TextClassifier(_encoder(), labels=TINY_LABELS)


def test_misuse_is_refused_naming_the_argument(tmp_path):
    """What a text model would misread: a dict of texts (iterated as its
    keys), empty data (fit trained nothing), a bare str where a list goes;
    and from_checkpoint's labels against a fine-tuned head."""
    model = _classifier()
    texts, labels = _data(4)
    with pytest.raises(TypeError, match=r"`x`: received a dict with keys \['text'\]"):
        model.predict({"text": texts})
    with pytest.raises(TypeError, match="`x`: received None"):
        model.predict_labels(None)
    with pytest.raises(ValueError, match="`x` is empty"):
        model.fit([], [], verbose=0)
    with pytest.raises(ValueError, match="`validation_data` is empty"):
        model.fit(texts, labels, validation_data=([], []), verbose=0)
    with pytest.raises(TypeError, match="`y`: received str"):
        model.fit(texts[:1], "sport", verbose=0)
    ds = tf.data.Dataset.from_tensor_slices((texts, labels)).batch(3)
    assert np.abs(model.predict(ds) - model.predict(texts)).max() <= 1e-6
    pairs = tf.data.Dataset.from_tensor_slices((texts, texts))  # (text, text_b)?
    with pytest.raises(ValueError, match="not one of this model's labels"):
        model.predict(pairs)
    tagger = zoo.TextTagger(
        _encoder(), preprocessor=zoo.TextPreprocessor(_tokenizer(), 16), labels=["O", "B"]
    )
    with pytest.raises(TypeError, match=r"`y\[0\]`: .*received str"):
        tagger.fit(["bank"], ["O"], verbose=0)
    qa = zoo.TextQuestionAnswerer(
        _encoder(), preprocessor=zoo.TextPreprocessor(_tokenizer(), 16)
    )
    with pytest.raises(TypeError, match="`x`: received a dict"):
        qa.predict({"question": ["q"], "context": ["c"]})
    with pytest.raises(ValueError, match="`x` is empty"):
        qa.fit([], [], verbose=0)

    named = zoo.Classifier(model.encoder, 3, pooling="mean", labels=TINY_LABELS)
    unnamed = zoo.Classifier(model.encoder, 3, pooling="mean")
    extra = {"sequence_length": LENGTH}
    named_dir = zoo.checkpoints.save_model_dir(
        named, tmp_path / "n", model.tokenizer, extra=extra
    )
    unnamed_dir = zoo.checkpoints.save_model_dir(
        unnamed, tmp_path / "u", model.tokenizer, extra=extra
    )
    reverse = TINY_LABELS[::-1]
    with pytest.raises(
        ValueError,
        match=re.escape(
            f"labels={reverse} differ from the fine-tuned head's labels {TINY_LABELS}"
        ),
    ):
        zoo.TextClassifier.from_checkpoint(named_dir, labels=reverse)
    with pytest.raises(
        ValueError, match="names 2 classes, but the checkpoint's fine-tuned head has 3"
    ):
        zoo.TextClassifier.from_checkpoint(unnamed_dir, labels=["neg", "pos"])
    assert (
        zoo.TextClassifier.from_checkpoint(named_dir, labels=TINY_LABELS).labels
        == TINY_LABELS
    )
    renamed = zoo.TextClassifier.from_checkpoint(unnamed_dir, labels=["a", "b", "c"])
    plain = zoo.TextClassifier.from_checkpoint(unnamed_dir)
    assert renamed.labels == ["a", "b", "c"] and plain.labels == ["0", "1", "2"]
    assert np.abs(renamed.predict(texts) - plain.predict(texts)).max() == 0


def test_edges_empty_inputs_lengths_pruning_and_epoch_offsets():
    model = _classifier()
    assert model.predict([]).shape == (0, 3) and model.predict_labels([]) == []
    tagger = zoo.TextTagger(
        _encoder(),
        preprocessor=zoo.TextPreprocessor(_tokenizer(), 16),
        labels=["O", "B-ORG"],
    )
    assert tagger.predict([]) == [] and tagger.predict_entities([]) == []
    with pytest.raises(TypeError, match="trains on lists"):
        tagger.fit(tf.data.Dataset.from_tensor_slices((["a"], ["O"])), verbose=0)
    with pytest.raises(ValueError, match="repeats forever"):
        model.fit(
            tf.data.Dataset.from_tensor_slices((["a"], ["sport"])).repeat(), verbose=0
        )
    with pytest.raises(ValueError, match="at most 64"):
        zoo.TextClassifier(
            _encoder(),
            preprocessor=zoo.TextPreprocessor(_tokenizer(), 128),
            labels=TINY_LABELS,
        )
    qa = zoo.TextQuestionAnswerer(
        _encoder(), preprocessor=zoo.TextPreprocessor(_tokenizer(), 32)
    )
    assert qa.sequence_length == 32 and qa.predict([]) == []
    # an empty answer (also as SQuAD's dict) is "no answer": the [CLS] target
    ds = qa._dataset(
        [("what ?", "the market fell")] * 2, [{"text": "", "answer_start": 0}, b""], 2
    )
    _, targets = next(iter(ds))
    assert list(targets["start_logits"].numpy()) == [0, 0]
    # pruning a text model prunes the vocabulary its preprocessor carries
    from zoo.distill.prune import prune_vocabulary

    texts = sentences(20, seed=12)
    pruned, tokenizer, _ = prune_vocabulary(model, model.tokenizer, texts)
    assert pruned.tokenizer.vocabulary == tokenizer.vocabulary != model.tokenizer.vocabulary
    assert np.abs(pruned.predict(texts) - model.predict(texts)).max() <= 1e-6
    # a later fit call continues the epoch count (shuffle and dropout differ)
    from zoo.train.callbacks import EpochCounter

    variable = tf.Variable(0, dtype=tf.int64)
    counter = EpochCounter(variable, offset=3)
    counter.on_epoch_begin(1)
    assert int(variable.numpy()) == 4


def test_word_spans_are_shared_with_zoo_predict():
    assert word_spans("  a  bc d ") == [(2, 3), (5, 7), (8, 9)]
