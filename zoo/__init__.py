"""zoo: BERT-family encoders in Keras 3, with real checkpoints, training,
distillation and edge export.

    clf = zoo.TextClassifier.from_checkpoint(path, labels=["neg", "pos"])
    clf.fit(texts, labels, epochs=2)
    clf.predict(["What an amazing movie!"])     # probabilities

    encoder, tokenizer = zoo.load_checkpoint(path)
    batch = tokenizer(["first text", "second"], sequence_length=128)
    out = encoder(batch)
    zoo.BertEncoder.from_preset("bert_base")

This file only re-exports the library's public names (and so registers every
Keras class: after `import zoo`, `keras.saving.load_model` reads any zoo
`.keras` file in safe mode). Modules of the library import each other
directly, never through this file.

On the JAX and PyTorch backends (`KERAS_BACKEND`, issue #39) only the
models, layers and configs are imported here, none of which loads
TensorFlow; the names that need it (checkpoints, tasks, the tokenizers) are
then imported on first use, through the module's `__getattr__`.
"""

import contextlib
import gc
import importlib
import os

# Quiet TensorFlow's C++ start-up banner unless the user asked for it; set
# before anything below imports TensorFlow. On a machine with no NVIDIA
# driver, TensorFlow's CUDA probe logs "failed call to cuInit" at ERROR level
# on the first op of every process, although nothing is wrong: there, ERROR
# lines from C++ are quieted too (errors still raise Python exceptions).
_NO_GPU_DRIVER = not os.path.exists("/proc/driver/nvidia")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3" if _NO_GPU_DRIVER else "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
# TensorFlow's oneDNN kernels (matmul, softmax, GELU, LayerNorm fusions) are on
# by default only on CPUs it deems new enough (AVX-512 and later); on an
# AVX2-only CPU it falls back to its Eigen kernels. With oneDNN on, a MiniLM
# fine-tuning step (batch 16 x 128) takes 0.70x the time and a forward pass
# 0.80x on such a machine (BUILD_NOTES.md, "Training and distribution").
# TensorFlow reads the variable when it loads, so this must precede its
# import; set TF_ENABLE_ONEDNN_OPTS=0 to compare.
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")


@contextlib.contextmanager
def _no_collections():
    """Importing TensorFlow and Keras makes about half a million objects,
    and Python's collector walks the growing heap again and again meanwhile:
    0.7 s of the 3.6 s `import zoo` took on 2 cores. None of it is garbage,
    so the collector waits until the imports are done (and stays off if the
    caller had turned it off)."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


with _no_collections():
    import keras

    # The names whose modules need TensorFlow (tensorflow-text, tf.data, the TF1
    # readers): imported here on the TensorFlow backend, on first use elsewhere.
    _TENSORFLOW_NAMES = {
        "load_checkpoint": "zoo.checkpoints",
        "from_keras_hub": "zoo.tasks.keras_hub_text",
        "TextClassifier": "zoo.tasks",
        "TextQuestionAnswerer": "zoo.tasks",
        "TextTagger": "zoo.tasks",
        "TextPreprocessor": "zoo.text.preprocessor",
        "WordPieceTokenizer": "zoo.text.tokenizer",
        "BytePairTokenizer": "zoo.text.byte_pair_tokenizer",
    }

    if keras.backend.backend() == "tensorflow":
        from zoo.checkpoints import load_checkpoint
        from zoo.tasks.keras_hub_text import from_keras_hub
    from zoo.configs import PRESETS, EncoderConfig, get_preset
    from zoo.models import (
        DEFAULT_SEQUENCE_LENGTH,
        INPUT_NAMES,
        TASKS,
        AlbertEncoder,
        BertEncoder,
        Classifier,
        DistilBertEncoder,
        MaskedLM,
        MaskedLMHead,
        NextSentencePredictor,
        Pretrainer,
        QuestionAnswerer,
        Regressor,
        RobertaEncoder,
        TokenClassifier,
        build_encoder,
        embed_texts,
        pair_cosines,
        task_of,
        with_dtype_policy,
    )

    if keras.backend.backend() == "tensorflow":
        from zoo.tasks import TextClassifier, TextQuestionAnswerer, TextTagger
        from zoo.text.byte_pair_tokenizer import BytePairTokenizer
        from zoo.text.preprocessor import TextPreprocessor
        from zoo.text.tokenizer import WordPieceTokenizer


def __getattr__(name):
    """A TensorFlow-backed name on another backend: imported on first use."""
    if name not in _TENSORFLOW_NAMES:
        raise AttributeError(f"module 'zoo' has no attribute {name!r}")
    value = getattr(importlib.import_module(_TENSORFLOW_NAMES[name]), name)
    globals()[name] = value
    return value


__version__ = "0.1.0"

__all__ = [
    "DEFAULT_SEQUENCE_LENGTH",
    "INPUT_NAMES",
    "PRESETS",
    "TASKS",
    "AlbertEncoder",
    "BertEncoder",
    "BytePairTokenizer",
    "Classifier",
    "DistilBertEncoder",
    "EncoderConfig",
    "MaskedLM",
    "MaskedLMHead",
    "NextSentencePredictor",
    "Pretrainer",
    "QuestionAnswerer",
    "Regressor",
    "RobertaEncoder",
    "TextClassifier",
    "TextPreprocessor",
    "TextQuestionAnswerer",
    "TextTagger",
    "TokenClassifier",
    "WordPieceTokenizer",
    "build_encoder",
    "embed_texts",
    "from_keras_hub",
    "get_preset",
    "load_checkpoint",
    "pair_cosines",
    "task_of",
    "with_dtype_policy",
]
