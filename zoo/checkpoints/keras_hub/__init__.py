"""keras-hub models in and out: `BertBackbone`, `DistilBertBackbone`,
`AlbertBackbone` and their `*TextClassifier` tasks.

    imported = read_keras_hub("presets/news")        # a save_to_preset directory
    imported = read_keras_hub(classifier)             # a live keras-hub object
    imported = read_keras_hub("keras_hub:bert_base_en_uncased")  # keras-hub's loader
    save_imported(imported, "models/news")            # a zoo model directory
    save_keras_hub_preset(model, "presets/back", tokenizer)  # from_preset loads it

In: the backbone becomes the zoo encoder of its family with the same
weights, the task's head a `zoo.Classifier` (BERT and ALBERT tasks: pooled
output -> dropout -> logits, `pooling="pooled"`; DistilBERT's: [CLS] ->
ReLU "pre-classifier" -> dropout -> logits, `pooling="cls"` with
`hidden_dim`), the tokenizer's vocabulary and casing a `WordPieceTokenizer`,
the preprocessor's length the model directory's `sequence_length`.
keras-hub classifiers output logits (a task built with
`activation="softmax"` outputs probabilities: the zoo head keeps the logits
before it, so `predict`'s probabilities agree). keras-hub stores no label
names: they are given (`labels=`, `zoo convert --labels`), read from the
`zoo_preset.json` a zoo export left in the preset, or "0".."N-1".

GELU: keras-hub's BertBackbone and AlbertBackbone hard-code the tanh
approximation (`gelu_approximate`), DistilBertBackbone uses exact GELU; the
activation a backbone actually computes is probed on sample points (a
backbone whose layers were given another GELU converts as what it computes)
and becomes the zoo config's `activation` ("gelu_tanh" or "gelu").

Out: the same tables the other way. What keras-hub cannot express is refused
before anything is written: a BERT or ALBERT encoder with exact GELU (keras-hub
hard-codes the approximation; it would differ by up to ~1e-3 per unit), a
DistilBERT one with the approximation, a LayerNorm epsilon other than 1e-12.
Heads: `pooling="pooled"` -> `BertTextClassifier` / `AlbertTextClassifier`;
a DistilBERT encoder's `pooling="cls"` head -> `DistilBertTextClassifier`
(its own `hidden_dim`, or, without a hidden layer, `hidden_dim = 2H` with
pre-classifier kernel [I, -I], bias 0, and logits kernel [W; -W]: relu(x) -
relu(-x) = x, exactly). Other heads (`mean` pooling; `cls` on a BERT
encoder, whose keras-hub task reads the pooler; a hidden layer on a pooled
head; token, QA and regression heads) have no keras-hub task: the backbone
and preprocessor are written and the notes say the head was not.

Tokenizers: an import builds the zoo's `WordPieceTokenizer` with
`flavor="keras_hub"` and the keras-hub tokenizer's own `lowercase`,
`strip_accents` and `split_on_cjk`: it runs keras-hub's split, case folding
and byte word limit with the same tensorflow-text ops, so the converted
model gets keras-hub's ids on every text. Settings it cannot reproduce are
refused by name (`split=False`, `special_tokens_in_strings=True`, another
suffix than "##"). An export writes a keras_hub-flavored tokenizer's
settings as they are (the round trip is exact); a BERT-flavored one (HF's
ids) is written as keras-hub's tokenizer with `strip_accents` equal to
`lowercase`, which still differs from it where keras-hub's rule does
(NFKC case folding, control and format characters, non-ASCII spaces, the
word limit in bytes; docs/keras_hub.md). ALBERT's keras-hub tokenizer is SentencePiece: its
weights and head convert, but model directories, exports and the CLI take a
WordPiece vocab.txt, so `save_imported` refuses it (the library's
`zoo.text.sentencepiece_tokenizer` is for Python use).

keras-hub is optional (`pip install 'bert-zoo[keras-hub]'`); only
`is_preset_dir` and `preset_config` work without it.

The package, a module a job: `names` (keras-hub's class and file names,
the variable path table), `preset` (preset names and directories,
config.json typed, keras-hub's loader), `read` (keras-hub -> zoo) and
`write` (zoo -> keras-hub).
"""

from zoo.checkpoints.keras_hub.names import (
    BACKBONES,
    CLASSIFIERS,
    INSTALL,
    LAYER_NORM_EPSILON,
    NAME_PREFIXES,
    ZOO_PRESET_FILE,
    keras_hub_path,
)
from zoo.checkpoints.keras_hub.preset import (
    import_keras_hub,
    is_preset_dir,
    is_preset_name,
    preset_config,
)
from zoo.checkpoints.keras_hub.read import KerasHubImport, read_keras_hub, save_imported
from zoo.checkpoints.keras_hub.write import (
    KerasHubExport,
    save_keras_hub_preset,
    to_keras_hub,
)

__all__ = [
    "BACKBONES",
    "CLASSIFIERS",
    "INSTALL",
    "LAYER_NORM_EPSILON",
    "NAME_PREFIXES",
    "ZOO_PRESET_FILE",
    "KerasHubExport",
    "KerasHubImport",
    "import_keras_hub",
    "is_preset_dir",
    "is_preset_name",
    "keras_hub_path",
    "preset_config",
    "read_keras_hub",
    "save_imported",
    "save_keras_hub_preset",
    "to_keras_hub",
]
