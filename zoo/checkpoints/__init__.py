"""Checkpoint loading and writing: HF safetensors, google-research TF1,
TF Model Garden, and the project's own model directory."""

from __future__ import annotations

import pathlib

from zoo.checkpoints import hub, keras_hub
from zoo.checkpoints.errors import CheckpointMismatchError
from zoo.checkpoints.garden import (
    config_from_garden,
    load_garden_encoder,
    read_garden_tensors,
)
from zoo.checkpoints.hf import (
    config_from_hf,
    find_hf_dir,
    load_hf_encoder,
    load_hf_weights,
    save_hf,
)
from zoo.checkpoints.hf_tokenization import hf_description
from zoo.checkpoints.model_dir import (
    is_model_dir,
    load_model_dir,
    read_model_dir_meta,
    save_model_dir,
)
from zoo.checkpoints.tf1 import find_tf1_checkpoint, load_tf1_encoder, save_tf1
from zoo.configs import EncoderConfig
from zoo.text.byte_pair_files import merge_list, vocabulary_list
from zoo.text.byte_pair_tokenizer import BytePairTokenizer
from zoo.text.tokenizer import WordPieceTokenizer
from zoo.utils.jsonfile import read_json_object

SUPPORTED = (
    "a zoo model directory (zoo_model.json, model.keras, vocab.txt); "
    "an HF BertModel, DistilBertModel or AlbertModel directory (config.json, "
    "model.safetensors, "
    "vocab.txt), also sentence-transformers layout; an HF RobertaModel directory "
    "(config.json, model.safetensors, vocab.json + merges.txt or tokenizer.json); a google-research BERT release "
    "(bert_config.json, bert_model.ckpt.index/.data-*, vocab.txt); a TF Model Garden "
    "BertEncoder checkpoint (tf.train.Checkpoint files + vocab.txt); a keras-hub preset "
    "(save_to_preset's config.json naming keras_hub>BertBackbone, DistilBertBackbone or "
    "AlbertBackbone, model.weights.h5, tokenizer.json + assets/) or preset name "
    "(keras_hub:NAME, kaggle://...; the keras-hub extra)"
)


def detect_format(path) -> str:
    """'zoo', 'keras-hub', 'hf', 'tf1' or 'garden'; FileNotFoundError naming what was expected.
    A Hub name (`hf://OWNER/NAME[@REVISION]`) is fetched first (`hub.fetch`)."""
    path, _ = hub.resolve(path)
    if keras_hub.is_preset_name(path):
        return "keras-hub"
    path = pathlib.Path(path)
    if not path.exists() and not pathlib.Path(f"{path}.index").exists():
        raise FileNotFoundError(f"{path}: no such file or directory. Expected {SUPPORTED}.")
    if is_model_dir(path):
        return "zoo"
    # Before HF: both keep a config.json; keras-hub's names a keras_hub> class.
    if keras_hub.is_preset_dir(path):
        return "keras-hub"
    if find_hf_dir(path) is not None:
        return "hf"
    if find_tf1_checkpoint(path) is not None:
        return "tf1"
    if _is_garden_checkpoint(path):
        return "garden"
    raise FileNotFoundError(
        f"{path}: not a checkpoint this zoo reads. Expected {SUPPORTED}."
    )


def _is_garden_checkpoint(path) -> bool:
    try:
        read_garden_tensors(path)
    except (FileNotFoundError, ValueError):
        return False
    return True


def _vocab_path(path, fmt):
    path = pathlib.Path(path)
    base = path if path.is_dir() else path.parent
    candidates = [base / "vocab.txt"]
    if fmt == "hf":
        candidates.append(find_hf_dir(path) / "vocab.txt")
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    if any((c.parent / "spiece.model").is_file() for c in candidates):
        # Released ALBERT checkpoints: SentencePiece, not WordPiece.
        raise FileNotFoundError(
            f"{path}: holds spiece.model (a SentencePiece vocabulary, as released "
            "ALBERT checkpoints do) but no vocab.txt; model directories, exports and "
            "the CLI take WordPiece vocabularies only. In Python: encoder = "
            "zoo.checkpoints.load_hf_encoder(path) and tokenizer = "
            "zoo.text.sentencepiece_tokenizer.SentencePieceTokenizer(path) "
            '(BUILD_NOTES.md, "Checkpoint formats"); or use a checkpoint trained with a '
            "WordPiece vocab.txt."
        )
    raise FileNotFoundError(
        f"{path}: no vocab.txt beside the checkpoint; the tokenizer needs the "
        "WordPiece vocabulary the weights were trained with. Copy it next to the weights."
    )


def _byte_pair_tokenizer(path, fmt):
    """A RoBERTa checkpoint's byte-level BPE: tokenizer.json, as transformers'
    fast tokenizer reads it, else vocab.json + merges.txt, beside the
    weights. Where both are there they must hold the same vocabulary and
    merges (the slow tokenizer and other readers use the two files)."""
    path = pathlib.Path(path)
    base = find_hf_dir(path) if fmt == "hf" else (path if path.is_dir() else path.parent)
    files = (base / "vocab.json").is_file() and (base / "merges.txt").is_file()
    if (base / "tokenizer.json").is_file():
        tokenizer = BytePairTokenizer.from_tokenizer_json(base / "tokenizer.json")
        if files:
            _same_byte_pairs(tokenizer, base)
        return tokenizer
    if files:
        return BytePairTokenizer(base / "vocab.json", base / "merges.txt")
    raise FileNotFoundError(
        f"{path}: a RoBERTa checkpoint without its byte-level BPE files; expected "
        "vocab.json and merges.txt (or tokenizer.json) beside the weights. Copy the "
        "checkpoint's own tokenizer files next to them."
    )


def _same_byte_pairs(described, base):
    """tokenizer.json's vocabulary and merges (`described`) against
    vocab.json and merges.txt, read as lists only: the first difference,
    by id or rank, refused."""
    tokens, _ = vocabulary_list(base / "vocab.json")
    pairs, _ = merge_list(base / "merges.txt")
    for what, ours, theirs, file in (
        ("vocabulary", described.vocabulary, tokens, "vocab.json"),
        ("merges", described.merges, [f"{a} {b}" for a, b in pairs], "merges.txt"),
    ):
        if ours == theirs:
            continue
        at = next(
            (i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b),
            min(len(ours), len(theirs)),
        )
        here, there = (
            repr(x[at])[:60] if at < len(x) else "nothing" for x in (ours, theirs)
        )
        raise ValueError(
            f"{base}: tokenizer.json and {file} disagree on the {what} ({len(ours):,} "
            f"against {len(theirs):,} entries; at {at:,}, tokenizer.json has "
            f"{here} and {file} {there}): transformers' fast tokenizer "
            f"reads tokenizer.json and its slow one {file}, so the checkpoint has no one "
            "tokenization. Restore the checkpoint's own files (or remove the one that "
            "is not)."
        )


def checkpoint_config(path) -> EncoderConfig:
    """The encoder configuration of a checkpoint, read without loading its
    weights (a zoo model directory's zoo_model.json, an HF config.json, a
    google-research bert_config.json; a Garden checkpoint's tensor shapes)."""
    path, _ = hub.resolve(path)
    fmt = detect_format(path)
    if fmt == "zoo":
        meta = read_model_dir_meta(path)
        return EncoderConfig.from_dict(meta["encoder_config"])
    if fmt == "keras-hub":
        return keras_hub.preset_config(path)
    if fmt == "hf":
        found = find_hf_dir(path)
        return config_from_hf(
            read_json_object(found / "config.json", "use the checkpoint's own config.json"),
            found / "config.json",
        )
    if fmt == "tf1":
        config_path, _ = find_tf1_checkpoint(path)
        return config_from_hf(
            read_json_object(config_path, "use the release's own bert_config.json"),
            config_path,
        )
    return config_from_garden(read_garden_tensors(path))


def load_checkpoint(path, *, lowercase=None, allow_partial=False):
    """Load `(encoder, tokenizer)` from any supported checkpoint.

    `lowercase=None` takes the tokenization from the checkpoint (for HF:
    tokenizer.json's normalizer, else tokenizer_config.json's do_lower_case,
    strip_accents and tokenize_chinese_chars, zoo.checkpoints.hf_tokenization;
    the zoo manifest's description) and defaults to the uncased BERT
    convention where nothing says otherwise; a given `lowercase` overrides
    it with BERT's rule for that casing. `path` may
    be a Hub name, `hf://OWNER/NAME[@REVISION]` (`zoo.checkpoints.hub`).
    """
    path, _ = hub.resolve(path)
    requested_lowercase = lowercase

    fmt = detect_format(path)
    if fmt == "zoo":
        model, tokenizer, _ = load_model_dir(path)
        return getattr(model, "encoder", model), tokenizer
    if fmt == "keras-hub":
        imported = keras_hub.read_keras_hub(path, lowercase=lowercase)
        if imported.tokenizer is None:
            raise ValueError(f"{path}: " + "; ".join(imported.notes))
        return imported.encoder, imported.tokenizer
    description = None
    if fmt == "hf":
        encoder = load_hf_encoder(path, allow_partial=allow_partial)
        if lowercase is None and encoder.config.family != "roberta":
            # tokenizer.json's normalizer (or tokenizer_config.json's
            # do_lower_case, strip_accents, tokenize_chinese_chars).
            description, _ = hf_description(path)
    elif fmt == "tf1":
        encoder = load_tf1_encoder(path, allow_partial=allow_partial)
    else:
        encoder = load_garden_encoder(path, allow_partial=allow_partial)
    if encoder.config.family == "roberta":
        if requested_lowercase:
            raise ValueError(
                f"{path}: lowercase=True for a RoBERTa checkpoint; its byte-level BPE "
                "keeps case (there is no uncased RoBERTa). Leave `lowercase` unset."
            )
        tokenizer = _byte_pair_tokenizer(path, fmt)
        if tokenizer.vocabulary_size != encoder.vocabulary_size:
            raise ValueError(
                f"{path}: the byte-level BPE vocabulary has {tokenizer.vocabulary_size} "
                f"tokens but the encoder's vocabulary_size is {encoder.vocabulary_size}; "
                "they must match. Use the checkpoint's own vocab.json and merges.txt."
            )
        return encoder, tokenizer
    if description is not None:
        tokenizer = WordPieceTokenizer.from_description(
            str(_vocab_path(path, fmt)), description
        )
    else:
        lowercase = True if lowercase is None else lowercase
        tokenizer = WordPieceTokenizer(str(_vocab_path(path, fmt)), lowercase=lowercase)
    if tokenizer.vocabulary_size != encoder.vocabulary_size:
        raise ValueError(
            f"{path}: vocab.txt has {tokenizer.vocabulary_size} tokens but the "
            f"encoder's vocabulary_size is {encoder.vocabulary_size}; they must match."
        )
    return encoder, tokenizer


__all__ = [
    "CheckpointMismatchError",
    "checkpoint_config",
    "detect_format",
    "load_checkpoint",
    "load_hf_encoder",
    "load_hf_weights",
    "load_model_dir",
    "load_tf1_encoder",
    "save_hf",
    "save_model_dir",
    "save_tf1",
]
