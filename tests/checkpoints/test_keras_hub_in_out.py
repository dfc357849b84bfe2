"""keras-hub in and out (zoo.checkpoints.keras_hub, `zoo convert`).

In: keras-hub's BertTextClassifier, DistilBertTextClassifier and
AlbertTextClassifier (and bare backbones), as `save_to_preset` writes them or
as live objects, become zoo models with the same logits on raw strings
(<= 1e-5). Out: zoo encoders and classifiers become presets that keras-hub's
`from_preset` loads with the same logits; what keras-hub cannot express is
refused (GELU form, LayerNorm epsilon) or written as a backbone with a note
(heads without a keras-hub task). Tiny models on a hand-written vocabulary
for the mechanics; the `assets` tests use the real MiniLM vocabulary and BBC
News texts. The figures on keras-hub-trained models (.tflite, MediaPipe,
SavedModel, a distilled student) come from tests/checkpoints/keras_hub_figures.py.

keras-hub preset *names* (`keras_hub:NAME`, `kaggle://...`) cannot download
here: the name route is exercised with `keras_hub:` + a local preset
directory, which goes through keras-hub's own `from_preset` as a name would.
"""

from __future__ import annotations

import io
import json
import sys
import warnings

import keras
import keras_hub
import numpy as np
import pytest
import tensorflow as tf

import zoo
from tests.export.conftest import VOCABULARY, sentences
from zoo.checkpoints import checkpoint_config, detect_format, load_model_dir
from zoo.checkpoints import keras_hub as zkh
from zoo.cli import convert
from zoo.cli import main as zoo_main

TOLERANCE = 1e-5
LABELS = ["business", "sport", "tech"]
LENGTH = 32
SHAPE = dict(num_layers=2, num_heads=2, hidden_dim=16, intermediate_dim=32)


def spread(model, seed=0):
    """Weights drawn wide (N(0, 0.3); LayerNorm gammas around 1) so that
    logits vary from text to text and a wrong mapping cannot hide."""
    rng = np.random.default_rng(seed)
    for w in model.weights:
        value = rng.normal(0.0, 0.3, tuple(w.shape)) + (
            1.0 if w.path.endswith("gamma") else 0
        )
        w.assign(value.astype("float32"))
    return model


def sentencepiece_proto():
    """A small SentencePiece model with ALBERT's special pieces."""
    import sentencepiece

    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(sentences(300)),
        model_writer=model,
        vocab_size=80,
        hard_vocab_limit=False,
        user_defined_symbols=["[CLS]", "[SEP]", "[MASK]"],
        pad_id=0,
        unk_id=1,
        bos_id=-1,
        eos_id=-1,
        pad_piece="<pad>",
        unk_piece="<unk>",
        minloglevel=2,
    )
    return model.getvalue()


def keras_hub_classifier(
    kind, vocabulary=VOCABULARY, num_classes=3, seed=0, length=LENGTH, positions=64
):
    """A tiny keras-hub text classifier with spread weights."""
    models = keras_hub.models
    common = dict(vocabulary_size=len(vocabulary), max_sequence_length=positions, **SHAPE)
    if kind == "bert":
        tokenizer = models.BertTokenizer(vocabulary=vocabulary, lowercase=True)
        preprocessor = models.BertTextClassifierPreprocessor(
            tokenizer, sequence_length=length
        )
        task = models.BertTextClassifier(
            models.BertBackbone(**common), num_classes, preprocessor=preprocessor
        )
    elif kind == "distilbert":
        tokenizer = models.DistilBertTokenizer(vocabulary=vocabulary, lowercase=True)
        preprocessor = models.DistilBertTextClassifierPreprocessor(
            tokenizer, sequence_length=length
        )
        task = models.DistilBertTextClassifier(
            models.DistilBertBackbone(**common),
            num_classes,
            preprocessor=preprocessor,
            hidden_dim=24,
        )
    else:
        tokenizer = models.AlbertTokenizer(proto=sentencepiece_proto())
        preprocessor = models.AlbertTextClassifierPreprocessor(
            tokenizer, sequence_length=length
        )
        common["vocabulary_size"] = tokenizer.vocabulary_size()
        backbone = models.AlbertBackbone(
            **{**common, "num_layers": 4}, num_groups=2, embedding_dim=8
        )
        task = models.AlbertTextClassifier(backbone, num_classes, preprocessor=preprocessor)
    return spread(task, seed)


def random_ids(vocabulary_size, segments=True, seed=3):
    rng = np.random.default_rng(seed)
    ids = {
        "token_ids": rng.integers(5, vocabulary_size, (4, 12)).astype("int32"),
        "segment_ids": np.zeros((4, 12), "int32"),
        "padding_mask": np.ones((4, 12), "int32"),
    }
    ids["padding_mask"][1, 8:] = 0
    if segments:
        ids["segment_ids"][:, 6:] = 1
    return ids


@pytest.fixture(scope="module")
def texts():
    return sentences(24, seed=11) + ["The market SHARES, of the bank?", "x"]


# --- keras-hub -> zoo ---------------------------------------------------------


@pytest.mark.parametrize("kind", ["bert", "distilbert"])
def test_preset_to_model_dir_same_logits(kind, texts, tmp_path):
    task = keras_hub_classifier(kind)
    task.save_to_preset(str(tmp_path / "preset"))
    assert detect_format(tmp_path / "preset") == "keras-hub"
    code = zoo_main(
        ["convert", str(tmp_path / "preset"), "--labels", ",".join(LABELS)]
        + ["--out", str(tmp_path / "model")]
    )
    assert code == 0
    model, tokenizer, meta = load_model_dir(tmp_path / "model")
    assert (meta["source_format"], meta["keras_hub_class"]) == (
        "keras-hub",
        type(task).__name__,
    )
    assert meta["sequence_length"] == LENGTH and meta["task"] == "classify"
    assert model.labels == LABELS
    assert model.encoder.config.activation == ("gelu_tanh" if kind == "bert" else "gelu")
    assert model.hidden_dim == (24 if kind == "distilbert" else None)
    text = zoo.TextClassifier.from_checkpoint(tmp_path / "model")
    assert text.sequence_length == LENGTH
    ours = text(text.preprocessor(texts))["logits"].numpy()
    theirs = task.predict(texts, verbose=0)
    assert np.abs(ours - theirs).max() <= TOLERANCE
    assert np.ptp(theirs, axis=0).min() > 0.1  # outputs vary from text to text
    # Labels default to 0..N-1 when none are given.
    assert zkh.read_keras_hub(tmp_path / "preset").model.labels == ["0", "1", "2"]


def test_live_objects(texts, tmp_path):
    task = keras_hub_classifier("distilbert", seed=4)
    # keras-hub's own rule (accents kept while lowercasing): nothing to warn about.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        text = zoo.from_keras_hub(task, labels=LABELS)
    assert not [w for w in caught if "from_keras_hub" in str(w.message)]
    assert (
        text.preprocessor.tokenizer.flavor,
        text.preprocessor.tokenizer.strip_accents,
    ) == (
        "keras_hub",
        False,
    )
    assert isinstance(text, zoo.TextClassifier) and text.labels == LABELS
    probabilities = keras.ops.softmax(task.predict(texts, verbose=0)).numpy()
    assert np.abs(text.predict(texts) - probabilities).max() <= TOLERANCE
    text.save_model_dir(tmp_path / "model")
    again = zoo.TextClassifier.from_checkpoint(tmp_path / "model")
    assert np.abs(again.predict(texts) - probabilities).max() <= TOLERANCE
    # A bare backbone (with its tokenizer given) comes back as load_checkpoint's pair.
    encoder, tokenizer = zoo.from_keras_hub(task.backbone, tokenizer=task.preprocessor)
    assert isinstance(encoder, zoo.DistilBertEncoder) and tokenizer.vocabulary == VOCABULARY
    ids = tokenizer(texts, sequence_length=LENGTH)
    theirs = task.backbone({k: ids[k] for k in ("token_ids", "padding_mask")})
    assert np.abs(encoder(ids)["sequence_output"].numpy() - theirs.numpy()).max() <= 1e-5


def test_backbone_preset_and_load_checkpoint(texts, tmp_path):
    task = keras_hub_classifier("bert", seed=5)
    task.backbone.save_to_preset(str(tmp_path / "preset"))
    task.preprocessor.save_to_preset(str(tmp_path / "preset"))
    assert checkpoint_config(tmp_path / "preset") == zkh.preset_config(tmp_path / "preset")
    encoder, tokenizer = zoo.load_checkpoint(tmp_path / "preset")
    ids = tokenizer(texts, sequence_length=LENGTH)
    theirs = task.backbone(ids)
    ours = encoder(ids)
    for key in ("sequence_output", "pooled_output"):
        assert np.abs(ours[key].numpy() - theirs[key].numpy()).max() <= 1e-5
    assert (
        zoo_main(["convert", str(tmp_path / "preset"), "--out", str(tmp_path / "m")]) == 0
    )
    _, _, meta = load_model_dir(tmp_path / "m")
    assert meta["model_class"] == "BertEncoder" and meta["sequence_length"] == LENGTH


def test_swapped_gelu_converts_as_computed(texts):
    """A backbone whose layers compute exact GELU (as the MiniLM oracle in
    test_keras_hub_parity.py builds one) is read as what it computes."""
    task = keras_hub_classifier("bert", seed=6)

    def exact(x):
        return keras.activations.gelu(x, approximate=False)

    for layer in task.backbone.transformer_layers:
        layer.activation = exact
        layer._feedforward_intermediate_dense.activation = exact
    imported = zkh.read_keras_hub(task)
    assert imported.encoder.config.activation == "gelu"
    ids = imported.tokenizer(texts, sequence_length=LENGTH)
    ours = imported.model(ids)["logits"].numpy()
    assert np.abs(ours - task.predict(texts, verbose=0)).max() <= TOLERANCE


def test_albert_weights_convert_and_the_tokenizer_is_explained(tmp_path, capsys):
    task = keras_hub_classifier("albert")
    task.save_to_preset(str(tmp_path / "preset"))
    imported = zkh.read_keras_hub(tmp_path / "preset", labels=LABELS)
    assert imported.tokenizer is None
    assert any("SentencePiece" in note for note in imported.notes)
    assert imported.encoder.config.num_groups == 2
    ids = random_ids(task.backbone.vocabulary_size)
    ours = imported.model(ids)["logits"].numpy()
    # Called, not `predict`: the task's preprocessor would take ids for text.
    assert np.abs(ours - np.asarray(task(ids))).max() <= TOLERANCE
    # The CLI writes model directories with a WordPiece vocab.txt: refused, saying why.
    assert (
        zoo_main(["convert", str(tmp_path / "preset"), "--out", str(tmp_path / "m")]) == 2
    )
    err = capsys.readouterr().err
    assert "SentencePiece" in err and "vocab.txt" in err
    assert not (tmp_path / "m").exists()
    # ... and back out: the weights and head, without a tokenizer.
    exported = zkh.save_keras_hub_preset(imported.model, tmp_path / "back")
    assert any("AlbertTokenizer is SentencePiece" in note for note in exported.notes)
    back = keras_hub.models.AlbertTextClassifier.from_preset(str(tmp_path / "back"))
    assert np.abs(back.predict(ids, verbose=0) - ours).max() <= TOLERANCE


def test_refusals_in(tmp_path):
    task = keras_hub_classifier("bert")
    with pytest.raises(ValueError, match="2 labels given .* head of 3 classes"):
        zkh.read_keras_hub(task, labels=["a", "b"])
    backbone = keras_hub.models.RobertaBackbone(
        vocabulary_size=50, max_sequence_length=64, **SHAPE
    )
    with pytest.raises(ValueError, match="'RobertaBackbone'; the zoo reads BertBackbone"):
        zkh.read_keras_hub(backbone)
    softmax_task = keras_hub.models.BertTextClassifier(
        task.backbone, 3, preprocessor=task.preprocessor, activation="softmax"
    )
    imported = zkh.read_keras_hub(softmax_task)
    assert any("outputs probabilities" in note for note in imported.notes)
    sigmoid = keras_hub.models.BertTextClassifier(task.backbone, 3, activation="sigmoid")
    with pytest.raises(ValueError, match="activation='sigmoid'"):
        zkh.read_keras_hub(sigmoid)
    # Tokenizer settings the zoo's keras_hub flavor does not reproduce.
    injecting = keras_hub.models.BertTokenizer(
        vocabulary=VOCABULARY, lowercase=True, special_tokens_in_strings=True
    )
    with pytest.raises(ValueError, match="special_tokens_in_strings=True"):
        zkh.read_keras_hub(task.backbone, tokenizer=injecting)
    presplit = keras_hub.models.BertTokenizer(vocabulary=VOCABULARY, split=False)
    with pytest.raises(ValueError, match="split=False"):
        zkh.read_keras_hub(task.backbone, tokenizer=presplit)
    # A preset's tokenizer.json setting must be a JSON boolean.
    task.save_to_preset(str(tmp_path / "typed"))
    path = tmp_path / "typed" / "tokenizer.json"
    record = json.loads(path.read_text())
    record["config"]["split_on_cjk"] = "false"
    path.write_text(json.dumps(record))
    with pytest.raises(ValueError, match="split_on_cjk='false'"):
        zkh.read_keras_hub(tmp_path / "typed")


@pytest.mark.parametrize(
    "lowercase, strip, cjk", [(True, False, True), (True, True, False)]
)
def test_keras_hub_tokenizer_settings_round_trip(lowercase, strip, cjk, tmp_path):
    """keras-hub's tokenizer settings in, a zoo model directory, and out
    again: the preset's tokenizer has the same settings and ids."""
    task = keras_hub_classifier("bert")
    task.preprocessor.tokenizer = keras_hub.models.BertTokenizer(
        vocabulary=VOCABULARY, lowercase=lowercase, strip_accents=strip, split_on_cjk=cjk
    )
    imported = zkh.read_keras_hub(task, labels=LABELS)
    tokenizer = imported.tokenizer
    assert (
        tokenizer.flavor,
        tokenizer.lowercase,
        tokenizer.strip_accents,
        tokenizer.cjk,
    ) == (
        "keras_hub",
        lowercase,
        strip,
        cjk,
    )
    zkh.save_imported(imported, tmp_path / "model")
    model = zoo.TextClassifier.from_checkpoint(tmp_path / "model")
    config = model.preprocessor.tokenizer.get_config()
    assert {**config, "name": None} == {**tokenizer.get_config(), "name": None}
    exported = zkh.save_keras_hub_preset(model, tmp_path / "preset")
    back = keras_hub.models.BertTextClassifier.from_preset(str(tmp_path / "preset"))
    if not cjk:
        # keras-hub's tokenizer.json has no split_on_cjk: not written.
        assert back.preprocessor is None
        assert any("split_on_cjk" in note for note in exported.notes)
        return
    kh = back.preprocessor.tokenizer
    assert (kh.lowercase, kh.strip_accents, kh.split_on_cjk) == (lowercase, strip, cjk)
    texts = ["Ｔｈｅ café, 中文 wo\u200brd!", "The bank's SHARES."]
    graph = tf.function(kh, input_signature=[tf.TensorSpec([None], tf.string)])
    assert graph(tf.constant(texts)).to_list() == tokenizer.tokenize(texts).to_list()


# --- names and the optional dependency ---------------------------------------


def test_preset_names_resolve_through_keras_hub(texts, tmp_path):
    """`keras_hub:X` hands X to keras-hub's own `from_preset` (a built-in
    name or a Kaggle handle there; a local directory here, as nothing can
    download in the test environment)."""
    task = keras_hub_classifier("bert", seed=8)
    task.save_to_preset(str(tmp_path / "preset"))
    name = f"keras_hub:{tmp_path / 'preset'}"
    assert detect_format(name) == "keras-hub"
    assert detect_format("keras_hub:bert_base_en_uncased") == "keras-hub"  # no download
    assert detect_format("kaggle://keras/bert/keras/bert_base_en") == "keras-hub"
    assert zkh.preset_config(name) == zkh.preset_config(tmp_path / "preset")
    imported = zkh.read_keras_hub(name)
    assert imported.source == name
    ours = imported.model(imported.tokenizer(texts, sequence_length=LENGTH))["logits"]
    assert np.abs(ours.numpy() - task.predict(texts, verbose=0)).max() <= TOLERANCE
    # The CLI keeps a name as written (a path would fold kaggle://'s slashes).
    assert convert.source("kaggle://keras/bert/keras/bert_base_en") == (
        "kaggle://keras/bert/keras/bert_base_en"
    )
    assert zoo_main(["convert", name, "--out", str(tmp_path / "m")]) == 0


def test_without_keras_hub(monkeypatch, tmp_path, capsys):
    task = keras_hub_classifier("bert")
    task.save_to_preset(str(tmp_path / "preset"))
    monkeypatch.setitem(sys.modules, "keras_hub", None)  # `import keras_hub` fails
    # Detection and the config need no keras-hub ...
    assert detect_format(tmp_path / "preset") == "keras-hub"
    assert checkpoint_config(tmp_path / "preset").num_layers == 2
    # ... reading the weights and names does, and says how to get it.
    for source in (tmp_path / "preset", "keras_hub:bert_base_en_uncased"):
        with pytest.raises(ImportError, match=r"pip install 'bert-zoo\[keras-hub\]'"):
            zkh.read_keras_hub(source)
    with pytest.raises(ImportError, match=r"pip install 'bert-zoo\[keras-hub\]'"):
        zkh.preset_config("keras_hub:bert_base_en_uncased")
    assert (
        zoo_main(["convert", str(tmp_path / "preset"), "--out", str(tmp_path / "m")]) == 2
    )
    assert "bert-zoo[keras-hub]" in capsys.readouterr().err
    encoder = zoo.DistilBertEncoder(vocabulary_size=len(VOCABULARY), **SHAPE)
    with pytest.raises(ImportError, match="keras-hub"):
        zkh.save_keras_hub_preset(encoder, tmp_path / "out")
    assert not (tmp_path / "out").exists()


# --- zoo -> keras-hub ---------------------------------------------------------


def zoo_text_classifier(family, pooling, hidden_dim=None, seed=0):
    keras.utils.set_random_seed(seed)
    common = dict(vocabulary_size=len(VOCABULARY), max_sequence_length=64, **SHAPE)
    if family == "bert":
        encoder = zoo.BertEncoder(**common, activation="gelu_tanh")
    elif family == "distilbert":
        encoder = zoo.DistilBertEncoder(**common)
    else:
        encoder = zoo.AlbertEncoder(**common, embedding_dim=8, activation="gelu_tanh")
    preprocessor = zoo.TextPreprocessor(zoo.WordPieceTokenizer(VOCABULARY), LENGTH)
    model = zoo.TextClassifier(
        encoder, 3, preprocessor, labels=LABELS, pooling=pooling, hidden_dim=hidden_dim
    )
    return spread(model, seed)


@pytest.mark.parametrize(
    "family, pooling, hidden_dim, task_class",
    [
        ("bert", "pooled", None, "BertTextClassifier"),
        ("distilbert", "cls", None, "DistilBertTextClassifier"),  # [I, -I] / [W; -W]
        ("distilbert", "cls", 20, "DistilBertTextClassifier"),
    ],
)
def test_zoo_classifier_to_preset_same_logits(
    family, pooling, hidden_dim, task_class, texts, tmp_path
):
    model = zoo_text_classifier(family, pooling, hidden_dim)
    model.save_model_dir(tmp_path / "model")
    assert zoo_main(["convert", str(tmp_path / "model"), "--to", "keras-hub"] +
                    ["--out", str(tmp_path / "preset")]) == 0  # fmt: skip
    back = getattr(keras_hub.models, task_class).from_preset(str(tmp_path / "preset"))
    assert type(back).__name__ == task_class
    assert back.preprocessor.sequence_length == LENGTH
    ours = model(model.preprocessor(texts))["logits"].numpy()
    assert np.abs(back.predict(texts, verbose=0) - ours).max() <= TOLERANCE
    record = json.loads((tmp_path / "preset" / zkh.ZOO_PRESET_FILE).read_text())
    assert record["labels"] == LABELS and record["notes"] == []
    # And in again: the labels come back from the record.
    imported = zkh.read_keras_hub(tmp_path / "preset")
    assert imported.model.labels == LABELS
    again = imported.model(imported.tokenizer(texts, sequence_length=LENGTH))["logits"]
    assert np.abs(again.numpy() - ours).max() <= TOLERANCE


def test_albert_encoder_to_preset(tmp_path):
    model = zoo_text_classifier("albert", "pooled", seed=2)
    exported = zkh.save_keras_hub_preset(model, tmp_path / "preset")
    back = keras_hub.models.AlbertTextClassifier.from_preset(str(tmp_path / "preset"))
    ids = random_ids(len(VOCABULARY))
    ours = model(ids)["logits"].numpy()
    assert np.abs(back.predict(ids, verbose=0) - ours).max() <= TOLERANCE
    assert back.preprocessor is None and exported.notes


@pytest.mark.parametrize(
    "family, pooling, why",
    [
        ("bert", "mean", "pooling='mean'"),
        ("bert", "cls", "pooling='cls' on a bert encoder"),
        ("distilbert", "mean", "pooling='mean'"),
    ],
)
def test_heads_without_a_keras_hub_task_write_the_backbone(
    family, pooling, why, texts, tmp_path, capsys
):
    model = zoo_text_classifier(family, pooling, seed=3)
    model.save_model_dir(tmp_path / "model")
    assert zoo_main(["convert", str(tmp_path / "model"), "--to", "keras-hub"] +
                    ["--out", str(tmp_path / "preset")]) == 0  # fmt: skip
    assert f"note: head not written: {why}" in capsys.readouterr().out
    assert not (tmp_path / "preset" / "task.json").exists()
    backbone = keras_hub.models.Backbone.from_preset(str(tmp_path / "preset"))
    ids = model.preprocessor(texts)
    theirs = backbone(
        ids if family == "bert" else {k: ids[k] for k in ("token_ids", "padding_mask")}
    )
    theirs = theirs["sequence_output"] if family == "bert" else theirs
    ours = model.encoder(ids)["sequence_output"].numpy()
    assert np.abs(np.asarray(theirs) - ours).max() <= 1e-5
    # The preprocessor is written too: a new keras-hub task tokenizes as the zoo did.
    preprocessor = keras_hub.models.TextClassifierPreprocessor.from_preset(
        str(tmp_path / "preset")
    )
    assert np.array_equal(preprocessor(texts)["token_ids"], ids["token_ids"])


def test_refusals_out(tmp_path, capsys):
    common = dict(vocabulary_size=len(VOCABULARY), max_sequence_length=64, **SHAPE)
    exact = zoo.BertEncoder(**common)  # exact GELU, as MiniLM
    with pytest.raises(
        ValueError, match=r"activation='gelu' \(exact \(erf\) GELU\).*BertBackbone"
    ):
        zkh.save_keras_hub_preset(exact, tmp_path / "a")
    tanh_student = zoo.DistilBertEncoder(**common, activation="gelu_tanh")
    with pytest.raises(ValueError, match="DistilBertBackbone hard-codes exact"):
        zkh.save_keras_hub_preset(tanh_student, tmp_path / "b")
    epsilon = zoo.DistilBertEncoder(**common, layer_norm_epsilon=1e-6)
    with pytest.raises(ValueError, match="layer_norm_epsilon=1e-06"):
        zkh.save_keras_hub_preset(epsilon, tmp_path / "c")
    assert not any((tmp_path / name).exists() for name in "abc")
    # The CLI: nothing written, the reason and the ways out on stderr.
    zoo.checkpoints.save_model_dir(
        exact, tmp_path / "m", zoo.WordPieceTokenizer(VOCABULARY)
    )
    assert zoo_main(["convert", str(tmp_path / "m"), "--to", "keras-hub"] +
                    ["--out", str(tmp_path / "p")]) == 2  # fmt: skip
    err = capsys.readouterr().err
    assert "--to hf" in err and "zoo distill" in err and not (tmp_path / "p").exists()
    assert zoo_main(["convert", str(tmp_path / "m"), "--labels", "a,b"] +
                    ["--out", str(tmp_path / "p")]) == 2  # fmt: skip
    assert "--labels names a keras-hub classifier's classes" in capsys.readouterr().err


# --- the head option on zoo.Classifier ----------------------------------------


def test_classifier_hidden_layer(texts, tmp_path):
    from zoo.distill.distiller import with_internals
    from zoo.distill.student_init import make_student

    model = zoo_text_classifier("distilbert", "cls", hidden_dim=12, seed=9)
    ids = model.preprocessor(texts)
    logits = model(ids)["logits"].numpy()
    config = model.get_config()
    assert config["hidden_dim"] == 12
    clone = zoo.TextClassifier.from_config(config)
    clone.set_weights(model.get_weights())
    assert np.array_equal(clone(ids)["logits"].numpy(), logits)
    # The distiller re-applies the head, hidden layer included.
    assert np.abs(with_internals(model)(ids)["logits"].numpy() - logits).max() <= 1e-6
    # A student of the teacher's depth starts as the teacher, head and all.
    student = make_student(model, num_layers=2)
    assert student.hidden_dim == 12
    assert np.abs(student(ids)["logits"].numpy() - logits).max() <= 1e-6
    # Saved and read back as a model directory, also through the text model.
    model.save_model_dir(tmp_path / "m")
    loaded, _, _ = load_model_dir(tmp_path / "m")
    assert np.abs(loaded(ids)["logits"].numpy() - logits).max() <= 1e-6
    half = zoo.with_dtype_policy(loaded, "mixed_bfloat16")
    assert half.hidden_dim == 12
    with pytest.raises(ValueError, match="hidden_dim=0; expected a positive int"):
        zoo.Classifier(model.encoder, 3, hidden_dim=0)


# --- real assets: the MiniLM vocabulary and BBC News texts --------------------


@pytest.fixture(scope="module")
def minilm_vocabulary():
    from zoo.datasets.corpora import minilm_checkpoint_dir
    from zoo.text.tokenizer import read_vocabulary

    return read_vocabulary(minilm_checkpoint_dir() / "vocab.txt")


@pytest.fixture(scope="module")
def bbc_test_texts():
    from zoo.datasets.corpora import bbc_news_split

    return [text for text, _ in bbc_news_split()["test"]]


@pytest.mark.assets
def test_real_vocabulary_bbc_parity(minilm_vocabulary, bbc_test_texts, tmp_path):
    """Ids and logits on 213 real BBC test articles (truncated at 128
    tokens) through keras-hub's own preprocessor and the zoo's."""
    texts = bbc_test_texts[::2]
    task = keras_hub_classifier(
        "bert", vocabulary=minilm_vocabulary, num_classes=5, length=128, positions=128
    )
    task.save_to_preset(str(tmp_path / "preset"))
    assert (
        zoo_main(["convert", str(tmp_path / "preset"), "--out", str(tmp_path / "m")]) == 0
    )
    text = zoo.TextClassifier.from_checkpoint(tmp_path / "m")
    ids = text.preprocessor(texts)
    theirs_ids = task.preprocessor(texts)
    for key in ("token_ids", "padding_mask", "segment_ids"):
        assert np.array_equal(np.asarray(theirs_ids[key]), ids[key].numpy()), key
    ours = text(ids)["logits"].numpy()
    theirs = task.predict(texts, batch_size=32, verbose=0)
    assert np.abs(ours - theirs).max() <= TOLERANCE
    assert np.ptp(theirs, axis=0).min() > 0.05  # outputs vary from article to article


def probabilities(logits):
    return keras.ops.softmax(np.asarray(logits, "float32")).numpy()


@pytest.mark.assets
def test_real_vocabulary_probes_parity(minilm_vocabulary, tmp_path):
    """A BertTextClassifier with keras-hub's default uncased tokenizer
    (lowercase, accents kept), converted with `zoo convert`, answers every
    multilingual probe (zoo.text.probes.ALL: accents, CJK, NFKC, controls,
    long words) as keras-hub's own predict does; the same model fed by the
    BERT-flavored tokenizer (the conversion's former rule: accents stripped
    when lowercasing) does not."""
    from zoo.text import probes
    from zoo.text.tokenizer import WordPieceTokenizer, tokenize_texts

    texts = list(probes.ALL)
    task = keras_hub_classifier(
        "bert", vocabulary=minilm_vocabulary, num_classes=5, length=128, positions=128
    )
    # A head that reads the pooled output's main directions of variation
    # over the probes (random weights leave one class ahead on every text),
    # so that labels follow the text and a changed token can change one.
    inputs = task.preprocessor(texts)
    pooled = np.asarray(task.backbone(inputs)["pooled_output"], "float64")
    mean = pooled.mean(0)
    _, scales, directions = np.linalg.svd(pooled - mean, full_matrices=False)
    kernel = directions[:5].T / scales[:5] * 8
    task.output_dense.kernel.assign(kernel.astype("float32"))
    task.output_dense.bias.assign((-mean @ kernel).astype("float32"))
    task.save_to_preset(str(tmp_path / "preset"))
    assert (
        zoo_main(["convert", str(tmp_path / "preset"), "--out", str(tmp_path / "m")]) == 0
    )
    text = zoo.TextClassifier.from_checkpoint(tmp_path / "m")
    assert text.preprocessor.tokenizer.flavor == "keras_hub"
    theirs = probabilities(task.predict(texts, batch_size=16, verbose=0))
    ours = np.asarray(text.predict(texts))
    after = np.abs(ours - theirs).max()
    bert = WordPieceTokenizer(minilm_vocabulary, lowercase=True)
    before_ids = tokenize_texts(bert, texts, 128)
    before = probabilities(text(before_ids)["logits"])
    agree_before = (before.argmax(1) == theirs.argmax(1)).sum()
    print(
        f"probes ({len(texts)}): keras_hub flavor {(ours.argmax(1) == theirs.argmax(1)).sum()}"
        f"/{len(texts)} labels, max |dp| {after:.2e}; bert flavor {agree_before}/"
        f"{len(texts)} labels, max |dp| {np.abs(before - theirs).max():.2e}"
    )
    assert after <= TOLERANCE
    assert (ours.argmax(1) == theirs.argmax(1)).all()
    assert np.abs(before - theirs).max() > 100 * TOLERANCE and agree_before < len(texts)
    assert np.ptp(theirs, axis=0).min() > 0.02  # outputs vary from probe to probe


@pytest.mark.assets
def test_real_vocabulary_tokenizer_differences(minilm_vocabulary):
    """Where keras-hub's BertTokenizer and the zoo's (HF's ids) part, as
    docs/keras_hub.md lists: accents (keras-hub keeps them when lowercasing,
    unless strip_accents=True, which a zoo export writes), NFKC case
    folding, control and format characters."""
    from zoo.text.tokenizer import WordPieceTokenizer

    zoo_tokenizer = WordPieceTokenizer(minilm_vocabulary)
    default = keras_hub.models.BertTokenizer(vocabulary=minilm_vocabulary, lowercase=True)
    exported = keras_hub.models.BertTokenizer(
        vocabulary=minilm_vocabulary, lowercase=True, strip_accents=True
    )

    def pieces(tokenizer, text):
        ids = tokenizer([text])
        ids = ids.to_list()[0] if hasattr(ids, "to_list") else list(ids[0])
        return [minilm_vocabulary[int(i)] for i in ids]

    def zoo_pieces(text):
        return [minilm_vocabulary[i] for i in zoo_tokenizer.tokenize([text]).to_list()[0]]

    assert zoo_pieces("Café naïve") == ["cafe", "naive"]
    assert pieces(default, "Café naïve") == ["[UNK]", "[UNK]"]  # accents kept: not in vocab
    assert pieces(exported, "Café naïve") == ["cafe", "naive"]
    for text in ("ﬁnance", "Ｆｕｌｌ", "a\u200bb"):  # NFKC folding, format characters
        assert pieces(exported, text) != zoo_pieces(text)
    assert pieces(exported, "Plain ASCII text, 42 times!") == zoo_pieces(
        "Plain ASCII text, 42 times!"
    )
