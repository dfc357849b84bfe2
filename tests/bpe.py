"""A small byte-level BPE trained with `tokenizers`, laid out as RoBERTa's
(<s> 0, <pad> 1, </s> 2, <unk> 3, <mask> last): no RoBERTa vocabulary
installs offline, so the RoBERTa tests train one on the texts they use."""

from __future__ import annotations

import json
import pathlib

import tokenizers
from tokenizers import decoders, models, pre_tokenizers, processors, trainers


def train_bpe(texts, directory, vocabulary_size=600) -> pathlib.Path:
    """Write vocab.json, merges.txt and tokenizer.json of a byte-level BPE of
    `vocabulary_size` tokens trained on `texts` into `directory`."""
    directory = pathlib.Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    bpe = tokenizers.Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocabulary_size - 1,
        special_tokens=["<s>", "<pad>", "</s>", "<unk>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(list(texts), trainer)
    bpe.add_special_tokens(["<mask>"])
    bpe.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0))
    bpe.save(str(directory / "tokenizer.json"))
    bpe.model.save(str(directory))
    vocab = json.loads((directory / "vocab.json").read_text(encoding="utf-8"))
    vocab["<mask>"] = len(vocab)
    (directory / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), "utf-8")
    return directory
