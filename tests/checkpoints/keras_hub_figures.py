"""The keras-hub round trip on real data, measured once (docs/keras_hub.md
quotes the figures; tests/checkpoints/test_keras_hub_in_out.py keeps the
mechanics):

    .venv/bin/python tests/checkpoints/keras_hub_figures.py OUT_DIR [--steps N]

1. keras-hub in: a BertTextClassifier and a DistilBertTextClassifier, small
   backbones on the real MiniLM vocabulary, trained in keras-hub (`fit` on
   raw BBC training texts), saved with `save_to_preset`; `zoo convert`
   turns each into a zoo model directory; `zoo export` writes float32 and
   dynamic-int8 .tflite files (with mediapipe.tflite) and a text-in
   SavedModel. Every artifact runs the BBC test split (426 texts) against
   keras-hub's own `predict`: max |diff| of probabilities, argmax agreement
   (MediaPipe's TextClassifier from .venv-mediapipe for mediapipe.tflite).
   The converted model also runs the multilingual probes (zoo.text.probes),
   with its own tokenizer (keras-hub's rule) and with BERT's rule.
2. keras-hub out: `zoo distill` makes a 1-layer student of the converted
   DistilBERT classifier, `zoo convert --to keras-hub` writes it as a preset,
   and keras-hub's `DistilBertTextClassifier.from_preset` runs it: max |diff|
   of logits against the zoo student.
3. Every other command on the converted DistilBERT classifier (its head has
   the hidden ReLU layer): `zoo predict` on each format, `zoo evaluate`,
   `zoo finetune`, `zoo prune`, and `zoo export` in the remaining modes
   (float16, int8, int4 .tflite, tpu); each validates as it always does.

Writes OUT_DIR/figures.json and prints it; each command line it runs is
printed first.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
PYTHON = sys.executable
MEDIAPIPE_PYTHON = ROOT / ".venv-mediapipe" / "bin" / "python"
LENGTH = 128
SHAPE = dict(num_layers=2, num_heads=2, hidden_dim=128, intermediate_dim=512)


def run_zoo(*args):
    command = [PYTHON, "-m", "zoo", *map(str, args)]
    print("$", " ".join(command[2:]), flush=True)
    subprocess.run(command, check=True, cwd=ROOT)


def softmax(x):
    import numpy as np

    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def compare(reference, probabilities):
    import numpy as np

    return {
        "max_abs_diff_probabilities": float(np.abs(reference - probabilities).max()),
        "argmax_agreement": float(
            (reference.argmax(-1) == probabilities.argmax(-1)).mean()
        ),
    }


def train_keras_hub(kind, texts, labels, names, steps, vocab):
    import keras
    import keras_hub
    import numpy as np

    keras.utils.set_random_seed(0)
    if kind == "bert":
        tokenizer = keras_hub.models.BertTokenizer(vocabulary=vocab, lowercase=True)
        preprocessor = keras_hub.models.BertTextClassifierPreprocessor(
            tokenizer, sequence_length=LENGTH
        )
        backbone = keras_hub.models.BertBackbone(
            vocabulary_size=len(vocab), max_sequence_length=512, **SHAPE
        )
        model = keras_hub.models.BertTextClassifier(
            backbone, num_classes=len(names), preprocessor=preprocessor
        )
    else:
        tokenizer = keras_hub.models.DistilBertTokenizer(vocabulary=vocab, lowercase=True)
        preprocessor = keras_hub.models.DistilBertTextClassifierPreprocessor(
            tokenizer, sequence_length=LENGTH
        )
        backbone = keras_hub.models.DistilBertBackbone(
            vocabulary_size=len(vocab), max_sequence_length=512, **SHAPE
        )
        model = keras_hub.models.DistilBertTextClassifier(
            backbone, num_classes=len(names), preprocessor=preprocessor, hidden_dim=96
        )
    model.compile(
        optimizer=keras.optimizers.Adam(1e-3),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    # The split lists texts by label: shuffled, so the steps see every class
    # (keras-hub's fit turns lists into a dataset it does not shuffle).
    rng = np.random.default_rng(0)
    batch = 16
    order = np.concatenate(
        [rng.permutation(len(texts)) for _ in range(-(-steps * batch // len(texts)))]
    )[: steps * batch]
    x = [texts[i] for i in order]
    y = np.array([names.index(labels[i]) for i in order])
    model.fit(x, y, batch_size=batch, epochs=1, verbose=2)
    return model


def tflite_probabilities(artifact, texts, tokenizer):
    import numpy as np

    from export.runtime import load_signature

    run = load_signature(artifact)
    rows = []
    for text in texts:
        ids = tokenizer([text], sequence_length=LENGTH)
        out = run(**{k: np.asarray(v) for k, v in ids.items()})
        logits = out.get("logits")
        rows.append(softmax(logits[0]) if logits is not None else out["probabilities"][0])
    return np.stack(rows)


def mediapipe_probabilities(model_file, texts, num_classes, work):
    import numpy as np

    texts_file, out_file = work / "mp_texts.json", work / "mp_out.json"
    texts_file.write_text(json.dumps(texts))
    subprocess.run(
        [
            str(MEDIAPIPE_PYTHON),
            str(ROOT / "tests/tools/mediapipe_classify.py"),
            str(model_file),
            str(texts_file),
            str(out_file),
        ],
        check=True,
    )
    result = json.loads(out_file.read_text())
    probabilities = np.zeros((len(texts), num_classes))
    for row, categories in zip(probabilities, result["results"]):
        for index, score in categories:
            row[int(index)] = score
    return probabilities, result["mediapipe"]


def saved_model_probabilities(base, texts):
    import numpy as np
    import tensorflow as tf

    version = max(
        (p for p in (base / "model").iterdir() if p.name.isdigit()),
        key=lambda p: int(p.name),
    )
    serve = tf.saved_model.load(str(version)).signatures["serving_default"]
    rows = [
        serve(text=tf.constant(texts[i : i + 64]))["probabilities"].numpy()
        for i in range(0, len(texts), 64)
    ]
    return np.concatenate(rows)


def probe_figures(model, text):
    """keras-hub's predict against the converted zoo model on the
    multilingual probes (zoo.text.probes.ALL), with the tokenizer the
    conversion builds (keras-hub's rule) and with BERT's rule (HF's ids,
    accents stripped when lowercasing) on the same weights."""
    import numpy as np

    from zoo.text import probes
    from zoo.text.tokenizer import WordPieceTokenizer, tokenize_texts

    texts = list(probes.ALL)
    reference = softmax(model.predict(texts, batch_size=32, verbose=0))
    bert = WordPieceTokenizer(text.tokenizer.vocabulary, lowercase=text.tokenizer.lowercase)
    bert_logits = text(tokenize_texts(bert, texts, LENGTH))["logits"].numpy()
    return {
        "texts": len(texts),
        "tokenizer_flavor": text.tokenizer.flavor,
        "zoo": compare(reference, np.asarray(text.predict(texts))),
        "bert_rule": compare(reference, softmax(bert_logits)),
    }


def keras_hub_in(kind, out, split, names, steps, vocab):
    import numpy as np

    import zoo

    train = split["train"]
    test_texts = [t for t, _ in split["test"]]
    started = time.time()
    model = train_keras_hub(
        kind, [t for t, _ in train], [label for _, label in train], names, steps, vocab
    )
    reference = softmax(model.predict(test_texts, batch_size=32, verbose=0))
    gold = np.array([names.index(y) for _, y in split["test"]])
    preset = out / f"{kind}_keras_hub_preset"
    model.save_to_preset(str(preset))
    model_dir = out / f"{kind}_zoo"
    run_zoo("convert", preset, "--labels", ",".join(names), "--out", model_dir, "--force")
    text = zoo.TextClassifier.from_checkpoint(model_dir)
    ids = text.preprocessor(test_texts)
    logits = text(ids)["logits"].numpy()
    kh_logits = model.predict(test_texts, batch_size=32, verbose=0)
    figures = {
        "keras_hub_class": type(model).__name__,
        "keras_hub_test_accuracy": float((reference.argmax(-1) == gold).mean()),
        "keras_hub_predicted_class_counts": np.bincount(
            reference.argmax(-1), minlength=len(names)
        ).tolist(),
        "zoo_keras": {
            "max_abs_diff_logits": float(np.abs(logits - kh_logits).max()),
            **compare(reference, softmax(logits)),
        },
    }
    figures["probes"] = probe_figures(model, text)
    tokenizer = text.tokenizer
    for mode in ("float32", "dynamic_int8"):
        artifact = out / f"{kind}_tflite_{mode}"
        run_zoo(
            "export", "--model", model_dir, "--format", "tflite", "--quantize", mode,
            "--sequence-lengths", LENGTH, "--data", "bbc", "--out", artifact, "--force",
        )  # fmt: skip
        figures[f"tflite_{mode}"] = compare(
            reference, tflite_probabilities(artifact, test_texts, tokenizer)
        )
        mp, version = mediapipe_probabilities(
            artifact / "mediapipe.tflite", test_texts, len(names), out
        )
        figures[f"mediapipe_{mode}"] = {**compare(reference, mp), "mediapipe": version}
    serving = out / f"{kind}_serving"
    run_zoo(
        "export", "--model", model_dir, "--format", "saved_model", "--sequence-lengths",
        LENGTH, "--data", "bbc", "--out", serving, "--name", "model", "--force",
    )  # fmt: skip
    figures["saved_model_text_in"] = compare(
        reference, saved_model_probabilities(serving, test_texts)
    )
    figures["seconds"] = round(time.time() - started, 1)
    return figures


def keras_hub_out(out, steps):
    import keras_hub
    import numpy as np

    import zoo

    teacher = out / "distil_zoo"
    run = out / "student_run"
    run_zoo(
        "distill", "--teacher", teacher, "--data", "bbc", "--student-layers", 1,
        "--epochs", 1, "--steps-per-epoch", steps, "--batch-size", 16,
        "--sequence-length", LENGTH, "--out", run, "--force",
    )  # fmt: skip
    preset = out / "student_keras_hub_preset"
    run_zoo("convert", run / "model", "--to", "keras-hub", "--out", preset, "--force")
    student = zoo.TextClassifier.from_checkpoint(run / "model")
    back = keras_hub.models.DistilBertTextClassifier.from_preset(str(preset))
    split = zoo.datasets.corpora.bbc_news_split()
    texts = [t for t, _ in split["test"]]
    ours = student(student.preprocessor(texts))["logits"].numpy()
    theirs = back.predict(texts, batch_size=32, verbose=0)
    return {
        "student": f"{type(student.encoder).__name__} L{student.encoder.num_layers} "
        f"H{student.encoder.hidden_dim}, head hidden_dim={student.hidden_dim}",
        "keras_hub_class": type(back).__name__,
        "max_abs_diff_logits": float(np.abs(ours - theirs).max()),
        "argmax_agreement": float((ours.argmax(-1) == theirs.argmax(-1)).mean()),
        "texts": len(texts),
    }


def other_commands(out):
    """Each remaining command once on the converted DistilBERT classifier."""
    model = out / "distil_zoo"
    text = "Shares in the bank fell after the minister's statement."
    for target in (model, out / "distil_tflite_dynamic_int8", out / "distil_serving/model"):
        run_zoo("predict", "--model", target, "--text", text)
    run_zoo("evaluate", "--model", model, "--data", "bbc")
    run_zoo(
        "finetune", "--model", model, "--data", "bbc", "--task", "classify", "--epochs", 1,
        "--steps-per-epoch", 5, "--sequence-length", 64, "--out", out / "finetune_run",
        "--force",
    )  # fmt: skip
    run_zoo("prune", "--model", model, "--data", "bbc", "--out", out / "pruned", "--force")
    for mode in ("float16", "int8", "int4"):
        run_zoo(
            "export", "--model", model, "--format", "tflite", "--quantize", mode,
            "--sequence-lengths", LENGTH, "--data", "bbc",
            "--out", out / f"distil_tflite_{mode}", "--force",
        )  # fmt: skip
    run_zoo(
        "export", "--model", model, "--format", "tpu", "--sequence-lengths", LENGTH,
        "--batch-size", 8, "--data", "bbc", "--out", out / "distil_tpu", "--name", "model",
        "--force",
    )  # fmt: skip
    return (
        "predict (3 formats), evaluate, finetune, prune, export float16/int8/int4/tpu: ok"
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=pathlib.Path)
    parser.add_argument(
        "--steps", type=int, default=280, help="keras-hub training steps (batch 16)"
    )
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)

    import zoo.datasets.corpora as corpora
    from zoo.text.tokenizer import read_vocabulary

    split = corpora.bbc_news_split()
    names = sorted({label for _, label in split["train"]})
    vocab = read_vocabulary(corpora.minilm_checkpoint_dir() / "vocab.txt")
    figures = {"test_texts": len(split["test"]), "sequence_length": LENGTH}
    for kind in ("bert", "distil"):
        figures[kind] = keras_hub_in(kind, args.out, split, names, args.steps, vocab)
        print(json.dumps(figures[kind], indent=2), flush=True)
    figures["distilled_student_to_keras_hub"] = keras_hub_out(args.out, 10)
    (args.out / "figures.json").write_text(json.dumps(figures, indent=2) + "\n")
    figures["other_commands"] = other_commands(args.out)
    (args.out / "figures.json").write_text(json.dumps(figures, indent=2) + "\n")
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
