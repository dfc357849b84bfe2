"""Config files that lie: the cases of the "config bombs" and "typed config
fields" areas (issue #43), shared by tests/reliability/test_config_bombs.py
and bench/refusals.py (which runs each in a fresh process for its time and
peak memory).

Each case copies one small, real source -- an HF directory (BERT, DistilBERT,
ALBERT, RoBERTa), a zoo model directory (model.keras and zoo_model.json, the
record regenerated so only the content can give it away) or a keras-hub
preset -- edits one field of its config, and loads it the way a user would.
"""

from __future__ import annotations

import json
import pathlib
import shutil
import zipfile

import zoo
from tests.bpe import train_bpe
from tests.reliability.corpus import Case, answer, error
from zoo.checkpoints import load_checkpoint, load_model_dir, save_hf, save_model_dir
from zoo.text.byte_pair_tokenizer import BytePairTokenizer
from zoo.text.tokenizer import WordPieceTokenizer
from zoo.utils.file_record import record_files

WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(27)]
SHAPE = dict(num_layers=2, num_heads=2, hidden_dim=8, intermediate_dim=16)


def make_sources(root) -> dict:
    """Write the small real sources under `root`; `{kind: path}`."""
    root = pathlib.Path(root)
    sources = {}
    for family, cls in (
        ("bert", zoo.BertEncoder),
        ("distilbert", zoo.DistilBertEncoder),
        ("roberta", zoo.RobertaEncoder),
    ):
        kwargs = dict(vocabulary_size=len(WORDS), max_sequence_length=32, **SHAPE)
        if family == "distilbert":
            kwargs["num_segments"] = 0
        if family == "roberta":
            kwargs["num_segments"] = 1
        path = root / f"hf-{family}"
        if family == "roberta":
            bpe = train_bpe(WORDS * 20, root / "bpe", vocabulary_size=300)
            tokenizer = BytePairTokenizer(bpe / "vocab.json", bpe / "merges.txt")
            kwargs["vocabulary_size"] = len(tokenizer.vocabulary)
            save_hf(cls(**kwargs), path, tokenizer=tokenizer)
        else:
            save_hf(cls(**kwargs), path, vocabulary=WORDS, lowercase=True)
        sources[f"hf-{family}"] = path
    albert = zoo.AlbertEncoder(
        vocabulary_size=len(WORDS), embedding_dim=4, max_sequence_length=32, **SHAPE
    )
    save_hf(albert, root / "hf-albert", vocabulary=WORDS, lowercase=True)
    sources["hf-albert"] = root / "hf-albert"
    encoder = zoo.BertEncoder(vocabulary_size=len(WORDS), max_sequence_length=32, **SHAPE)
    save_model_dir(
        zoo.Classifier(encoder, 2, labels=["x", "y"]),
        root / "zoo",
        WordPieceTokenizer(WORDS),
    )
    sources["zoo"] = root / "zoo"
    try:
        import keras_hub
    except ImportError:  # the test extra has it; bench/refusals.py may run without
        return sources
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=len(WORDS), max_sequence_length=32, **SHAPE
    )
    tokenizer = keras_hub.models.BertTokenizer(vocabulary=WORDS, lowercase=True)
    task = keras_hub.models.BertTextClassifier(
        backbone,
        2,
        preprocessor=keras_hub.models.BertTextClassifierPreprocessor(
            tokenizer, sequence_length=16
        ),
    )
    task.save_to_preset(str(root / "keras-hub"))
    sources["keras-hub"] = root / "keras-hub"
    return sources


def _edit_json(path, change):
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def _edit_keras_config(model_dir, change):
    """Change model.keras's config.json (the encoder's config) and
    zoo_model.json's encoder_config alike, then regenerate the record: only
    what the files say can give the forgery away."""
    archive = model_dir / "model.keras"
    with zipfile.ZipFile(archive) as z:
        members = {name: z.read(name) for name in z.namelist()}
    config = json.loads(members["config.json"])
    change(config["config"]["encoder"]["config"])
    members["config.json"] = json.dumps(config).encode()
    with zipfile.ZipFile(archive, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    meta_path = model_dir / "zoo_model.json"
    meta = json.loads(meta_path.read_text())
    change(meta["encoder_config"])
    meta["files"] = record_files(model_dir, skip={"zoo_model.json"})
    meta_path.write_text(json.dumps(meta))


def _set(**fields):
    def change(data):
        data.update(fields)

    return change


def _set_in(key, **fields):
    def change(data):
        data[key].update(fields)

    return change


# (name, source, file, change, names the error must contain). "config.json"
# is HF's or keras-hub's; "model.keras" edits the zoo model directory.
BOMBS = [
    ("hidden_size 10**7", "hf-bert", "config.json", _set(hidden_size=10**7), "hidden_size"),
    ("num_hidden_layers 10**9", "hf-bert", "config.json", _set(num_hidden_layers=10**9),
     "num_hidden_layers"),
    ("vocab_size 10**10", "hf-bert", "config.json", _set(vocab_size=10**10), "vocab_size"),
    ("intermediate_size 10**9", "hf-bert", "config.json", _set(intermediate_size=10**9),
     "intermediate_size"),
    ("max_position_embeddings 10**10", "hf-bert", "config.json",
     _set(max_position_embeddings=10**10), "max_position_embeddings"),
    ("type_vocab_size 10**9", "hf-bert", "config.json", _set(type_vocab_size=10**9),
     "type_vocab_size"),
    ("distilbert dim 10**7", "hf-distilbert", "config.json", _set(dim=10**7, n_heads=1),
     "dim"),
    ("distilbert n_layers 10**9", "hf-distilbert", "config.json", _set(n_layers=10**9),
     "n_layers"),
    ("albert embedding_size 10**10", "hf-albert", "config.json",
     _set(embedding_size=10**10), "embedding_size"),
    ("albert num_hidden_layers 10**9", "hf-albert", "config.json",
     _set(num_hidden_layers=10**9), "num_hidden_layers"),
    ("roberta max_position_embeddings 10**10", "hf-roberta", "config.json",
     _set(max_position_embeddings=10**10), "max_position_embeddings"),
    # Each size in range, together beyond this machine: the memory budget.
    ("in range, too big together", "hf-bert", "config.json",
     _set(num_hidden_layers=256, hidden_size=32768, num_attention_heads=256,
          intermediate_size=131072), "ZOO_MEMORY_LIMIT"),
    ("model.keras hidden_dim 10**7", "zoo", "model.keras", _set(hidden_dim=10**7),
     "hidden_dim"),
    ("model.keras num_layers 10**9", "zoo", "model.keras", _set(num_layers=10**9),
     "num_layers"),
    ("model.keras vocabulary_size 10**10", "zoo", "model.keras",
     _set(vocabulary_size=10**10), "vocabulary_size"),
    ("model.keras in range, too big together", "zoo", "model.keras",
     _set(num_layers=256, hidden_dim=32768, num_heads=256, intermediate_dim=131072),
     "ZOO_MEMORY_LIMIT"),
    ("keras-hub hidden_dim 10**7", "keras-hub", "config.json",
     _set_in("config", hidden_dim=10**7), "hidden_dim"),
    ("keras-hub num_layers 10**9", "keras-hub", "config.json",
     _set_in("config", num_layers=10**9), "num_layers"),
    ("keras-hub vocabulary_size 10**10", "keras-hub", "config.json",
     _set_in("config", vocabulary_size=10**10), "vocabulary_size"),
]  # fmt: skip

# Fields of the wrong type or out of their range, which built a model that
# answers wrongly or ended in a TypeError.
TYPED = [
    ("layer_norm_eps Infinity", "hf-bert", "config.json", _set(layer_norm_eps=float("inf")),
     "layer_norm_eps"),
    ("layer_norm_eps 1e30", "hf-bert", "config.json", _set(layer_norm_eps=1e30),
     "layer_norm_eps"),
    ("layer_norm_eps NaN", "hf-bert", "config.json", _set(layer_norm_eps=float("nan")),
     "layer_norm_eps"),
    ("layer_norm_eps a string", "hf-bert", "config.json", _set(layer_norm_eps="1e-12"),
     "layer_norm_eps"),
    ("layer_norm_eps 0", "hf-bert", "config.json", _set(layer_norm_eps=0), "layer_norm_eps"),
    ("hidden_act a list", "hf-bert", "config.json", _set(hidden_act=["gelu"]), "hidden_act"),
    ("hidden_act a dict", "hf-bert", "config.json", _set(hidden_act={"gelu": 1}),
     "hidden_act"),
    ("hidden_dropout_prob a string", "hf-bert", "config.json",
     _set(hidden_dropout_prob="0.1"), "hidden_dropout_prob"),
    ("attention_probs_dropout_prob 1.5", "hf-bert", "config.json",
     _set(attention_probs_dropout_prob=1.5), "attention_probs_dropout_prob"),
    ("num_hidden_layers true", "hf-bert", "config.json", _set(num_hidden_layers=True),
     "num_hidden_layers"),
    ("num_hidden_layers 2.0", "hf-bert", "config.json", _set(num_hidden_layers=2.0),
     "num_hidden_layers"),
    ("num_hidden_layers '2'", "hf-bert", "config.json", _set(num_hidden_layers="2"),
     "num_hidden_layers"),
    ("vocab_size -1", "hf-bert", "config.json", _set(vocab_size=-1), "vocab_size"),
    ("model_type a list", "hf-bert", "config.json", _set(model_type=["bert"]), "model_type"),
    ("position_embedding_type relative_key", "hf-bert", "config.json",
     _set(position_embedding_type="relative_key"), "position_embedding_type"),
    ("distilbert activation a dict", "hf-distilbert", "config.json",
     _set(activation={"x": 1}), "activation"),
    ("albert inner_group_num '1'", "hf-albert", "config.json", _set(inner_group_num="1"),
     "inner_group_num"),
    ("roberta pad_token_id 1.0", "hf-roberta", "config.json", _set(pad_token_id=1.0),
     "pad_token_id"),
    ("do_lower_case 'false'", "hf-bert", "tokenizer_config.json",
     _set(do_lower_case="false"), "do_lower_case"),
    ("do_lower_case 0", "hf-bert", "tokenizer_config.json", _set(do_lower_case=0),
     "do_lower_case"),
    ("model.keras layer_norm_epsilon 1e30", "zoo", "model.keras",
     _set(layer_norm_epsilon=1e30), "layer_norm_epsilon"),
    ("model.keras dropout '0.1'", "zoo", "model.keras", _set(dropout="0.1"), "dropout"),
    ("model.keras num_layers true", "zoo", "model.keras", _set(num_layers=True),
     "num_layers"),
    ("keras-hub dropout 'high'", "keras-hub", "config.json", _set_in("config", dropout="high"),
     "dropout"),
    ("keras-hub tokenizer lowercase 'false'", "keras-hub", "tokenizer.json",
     _set_in("config", lowercase="false"), "lowercase"),
    ("keras-hub tokenizer vocabulary path", "keras-hub", "tokenizer.json",
     _set_in("config", vocabulary="/etc/passwd"), "vocabulary"),
    ("keras-hub num_classes 10**12", "keras-hub", "task.json",
     _set_in("config", num_classes=10**12), "num_classes"),
]  # fmt: skip


def _rewrite_archive(model_dir, change):
    """Apply `change` to model.keras's members (name -> bytes), write it
    back compressed, and regenerate the record."""
    archive = model_dir / "model.keras"
    with zipfile.ZipFile(archive) as z:
        members = {name: z.read(name) for name in z.namelist()}
    change(members)
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
    meta_path = model_dir / "zoo_model.json"
    meta = json.loads(meta_path.read_text())
    meta["files"] = record_files(model_dir, skip={"zoo_model.json"})
    meta_path.write_text(json.dumps(meta))


def _padded(name, size):
    def change(members):
        members[name] = members.get(name, b"") + b" " * size

    return change


def _nested(depth):
    def change(members):
        config = members["config.json"].decode()
        members["config.json"] = (
            config[:-1] + ', "x": ' + "[" * depth + "]" * depth + "}"
        ).encode()

    return change


def _cut_weights(members):
    members["model.weights.h5"] = members["model.weights.h5"][:1024]


# What model.keras declares it unpacks to (a zip bomb: megabytes of spaces
# compress to kilobytes), nests or holds, with the record regenerated:
# (name, change, names the error must contain).
ARCHIVES = [
    ("an extra member unpacking to 64 MB", _padded("assets/pad.bin", 64 << 20), "unpacks"),
    ("config.json padded to 20 MB", _padded("config.json", 20 << 20), "config.json"),
    ("config.json nested 100,000 deep", _nested(100_000), "config.json"),
    ("weights cut to 1 kB", _cut_weights, "weights"),
]


def make_archive_case(spec, sources, workdir) -> Case:
    name, change, *names = spec

    def run():
        target = pathlib.Path(workdir) / name.replace(" ", "_").replace(",", "")
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(sources["zoo"], target)
        _rewrite_archive(target, change)
        return load_model_dir(target)

    return error(name, run, "model.keras", *names)


def _load(kind, path):
    if kind == "zoo":
        return load_model_dir(path)
    return load_checkpoint(path)


def make_case(spec, sources, workdir) -> Case:
    """The Case of one (name, source, file, change, *names) spec: a fresh
    copy of the source, the one edit, then the load."""
    name, kind, file, change, *names = spec

    def run():
        if kind not in sources:
            raise AssertionError(f"{name}: no {kind} source (keras-hub not installed?)")
        target = pathlib.Path(workdir) / name.replace(" ", "_").replace("'", "")
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(sources[kind], target)
        if file == "model.keras":
            _edit_keras_config(target, change)
        else:
            if not (target / file).exists():
                (target / file).write_text("{}")
            _edit_json(target / file, change)
        return _load(kind, target)

    return error(name, run, file if file != "model.keras" else "zoo_model.json", *names)


def control_cases(sources) -> list:
    """Each source, unedited, loads (the corpus must not refuse the real thing)."""
    return [
        answer(
            f"{kind} unedited", lambda k=kind, p=path: _load(k, p), lambda r: r is not None
        )
        for kind, path in sources.items()
    ]
