"""Vocabulary pruning: a model keeps only the word pieces its task needs.

    model, tokenizer, report = prune_vocabulary(model, tokenizer, train_texts)

A BERT vocabulary has 30,522 word pieces; a classifier fine-tuned on one
corpus meets a fraction of them, yet its token embedding (30,522 x H) is
most of a small student's weights (68% of the demo's 3-layer student). The
pruned model keeps:

- every piece the tokenizer produces on `texts` (the training corpus), so
  those texts tokenize to the same pieces (ids renumbered);
- the special tokens, and every single character and its `##` form, so a
  new word still splits into pieces rather than becoming [UNK] (unless its
  characters were never in the vocabulary); only words that used a
  multi-character piece the corpus never produced split differently.

The embedding rows (and a masked-LM head's output bias) are gathered in the
order of the kept pieces; every other weight is copied unchanged. Greedy
longest-match WordPiece on the pruned vocabulary gives the same pieces for
any word whose original pieces were all kept.

A byte-level BPE vocabulary (RoBERTa's) is pruned with its merges: it keeps
the tokens `texts` produce, every token they are merged from (recursively),
the 256 byte symbols and the special tokens, and the merges whose halves and
result are all kept, in their order. Every merge that fired on `texts` is
kept, and a merge that never fired never was the best pair present, so
`texts` tokenize to the same tokens; any other text still tokenizes (down to
bytes at worst), never to `<unk>`.
"""

from __future__ import annotations

import numpy as np

from zoo.checkpoints import load_model_dir, save_model_dir
from zoo.models import task_of
from zoo.text.byte_pair_tokenizer import BytePairTokenizer, byte_alphabet
from zoo.text.tokenizer import WordPieceTokenizer, split_pairs
from zoo.train.data import load_task_data
from zoo.train.finetune import evaluate_model, evaluation_config


def kept_token_ids(tokenizer, texts, batch_size=256):
    """Sorted ids of the pieces to keep for `texts` (str or (a, b) pairs)."""
    a, b = split_pairs(list(texts))
    used = set()
    for part in (a, b or []):
        for start in range(0, len(part), batch_size):
            pieces = tokenizer.tokenize(part[start : start + batch_size])
            used.update(np.unique(pieces.flat_values.numpy()).tolist())
    vocabulary = tokenizer.vocabulary
    special = {
        tokenizer.cls_id,
        tokenizer.sep_id,
        tokenizer.pad_id,
        tokenizer.unk_id,
        tokenizer.mask_id,
    }
    characters = {
        i
        for i, t in enumerate(vocabulary)
        if len(t) == 1 or (t.startswith("##") and len(t) == 3)
    }
    return sorted(used | special | characters)


def _kept_byte_pair(tokenizer, texts, batch_size=256):
    """(sorted ids to keep, the kept merges as "left right" strings, in their
    order) for a BytePairTokenizer and `texts` (see the module docstring)."""
    a, b = split_pairs(list(texts))
    used = set()
    for part in (a, b or []):
        for start in range(0, len(part), batch_size):
            pieces = tokenizer.tokenize(part[start : start + batch_size])
            used.update(np.unique(pieces.flat_values.numpy()).tolist())
    vocabulary = tokenizer.vocabulary
    index = {token: i for i, token in enumerate(vocabulary)}
    pairs = [tuple(m.split(" ")) for m in tokenizer.merges]
    made_by = {}  # merged token -> every (left, right) that makes it
    for left, right in pairs:
        made_by.setdefault(left + right, []).append((left, right))
    keep = {index[t] for t in byte_alphabet()}
    keep |= {
        getattr(tokenizer, f"{name}_id") for name in ("cls", "sep", "pad", "unk", "mask")
    }
    keep |= used
    todo = [vocabulary[i] for i in used]
    while todo:  # the tokens each kept token is merged from, recursively
        token = todo.pop()
        for halves in made_by.get(token, ()):
            for half in halves:
                if index[half] not in keep:
                    keep.add(index[half])
                    todo.append(half)
    kept = {vocabulary[i] for i in keep}
    merges = [
        f"{left} {right}"
        for left, right in pairs
        if left in kept and right in kept and left + right in kept
    ]
    return sorted(keep), merges


def _gathered(weights, old_size, keep):
    """Each weight with `old_size` rows gathered to `keep`; others unchanged."""
    out = []
    for w in weights:
        w = np.asarray(w)
        out.append(w[keep] if w.ndim >= 1 and w.shape[0] == old_size else w)
    return out


def prune_vocabulary(model, tokenizer, texts):
    """`(pruned model, pruned tokenizer, report)` keeping the pieces `texts`
    need (see the module docstring). `model` is a zoo encoder or task model."""
    encoder = getattr(model, "encoder", model)
    old_size = int(encoder.vocabulary_size)
    if len(tokenizer.vocabulary) != old_size:
        raise ValueError(
            f"the tokenizer has {len(tokenizer.vocabulary)} tokens but the model's "
            f"embedding {old_size} rows; pass the model's own tokenizer."
        )
    byte_pair = isinstance(tokenizer, BytePairTokenizer)
    if byte_pair:
        keep, merges = _kept_byte_pair(tokenizer, texts)
    else:
        keep = kept_token_ids(tokenizer, texts)
    config = model.get_config()
    target = config["encoder"]["config"] if "encoder" in config else config
    target["vocabulary_size"] = len(keep)
    if isinstance(config.get("preprocessor"), dict):
        # A text model (zoo.TextClassifier, ...) tokenizes with its own copy
        # of the vocabulary: it must shrink with the embedding.
        carried = config["preprocessor"]["config"]["tokenizer"]["config"]
        carried["vocabulary"] = [tokenizer.vocabulary[i] for i in keep]
    pruned = type(model).from_config(config)
    weights = model.get_weights()
    if any(
        np.asarray(w).shape[:1] == (old_size,)
        and np.asarray(w).ndim == 2
        and np.asarray(w).shape[1] == old_size
        for w in weights
    ):
        raise ValueError("a [V, V] weight cannot be pruned by rows")
    pruned.set_weights(_gathered(weights, old_size, keep))
    vocabulary = tokenizer.vocabulary
    if byte_pair:
        new_tokenizer = BytePairTokenizer(
            [vocabulary[i] for i in keep],
            merges,
            add_prefix_space=tokenizer.add_prefix_space,
            **{
                f"{name}_token": getattr(tokenizer, f"{name}_token")
                for name in ("cls", "sep", "pad", "unk", "mask")
            },
        )
        if new_tokenizer.pad_id != tokenizer.pad_id:
            # RobertaEncoder's positions count past padding id 1.
            raise ValueError(
                f"vocabulary pruning: the pad token's id would change from "
                f"{tokenizer.pad_id} to {new_tokenizer.pad_id}; RoBERTa's positions "
                "count from it. Keep a vocabulary whose special tokens come first."
            )
    else:
        # The same tokenization (its description: rule, casing, word limit,
        # special tokens) on the kept tokens.
        new_tokenizer = WordPieceTokenizer.from_description(
            [vocabulary[i] for i in keep], tokenizer.description
        )
    report = {
        "vocabulary_before": old_size,
        "vocabulary_after": len(keep),
        "parameters_before": int(model.count_params()),
        "parameters_after": int(pruned.count_params()),
        "texts": len(list(texts)),
    }
    return pruned, new_tokenizer, report


def tokenized_differently(old, new, texts, batch_size=256):
    """How many of `texts` (str or (a, b) pairs) the pruned tokenizer splits
    into other pieces than the original (compared as piece strings: ids are
    renumbered)."""
    a, b = split_pairs(list(texts))
    old_vocabulary, new_vocabulary = old.vocabulary, new.vocabulary
    changed = np.zeros(len(a), bool)
    for part in [a] + ([b] if b else []):
        for start in range(0, len(part), batch_size):
            chunk = part[start : start + batch_size]
            for i, (x, y) in enumerate(
                zip(old.tokenize(chunk).to_list(), new.tokenize(chunk).to_list())
            ):
                if [old_vocabulary[j] for j in x] != [new_vocabulary[j] for j in y]:
                    changed[start + i] = True
    return int(changed.sum())


def example_texts(examples):
    """The texts a task's examples hold (classification pairs, tagged
    sentences' words, QA questions and contexts)."""
    texts = []
    for e in examples:
        if hasattr(e, "question"):
            texts += [e.question, e.context]
        elif hasattr(e, "words"):
            texts.append(" ".join(e.words))
        else:
            texts.append(e.text if e.text_b is None else (e.text, e.text_b))
    return texts


# Fields save_model_dir writes itself, and the best-epoch record of the
# training run (the pruned model was not selected by validation loss).
_OWN_FIELDS = {
    "format",
    "format_version",
    "model_class",
    "encoder_class",
    "encoder_config",
    "lowercase",
    "labels",
    "num_parameters",
    "vocabulary_size",
    "vocabulary_sha256",
    "tokenizer",
    "merges_sha256",
    "best",
}


def prune_model_dir(model_dir, data, out_dir, *, evaluate=True, run_info=None):
    """Prune the zoo model at `model_dir` to the pieces of `data`'s training
    split; write the pruned model directory `out_dir`; return the report
    (rows kept, parameters, test texts tokenized differently, and with
    `evaluate` the test metrics before and after). `run_info`: the command's
    args.json, written into `out_dir` with the model (`save_model_dir`)."""
    model, tokenizer, meta = load_model_dir(model_dir)
    task = task_of(model)
    loaded = load_task_data(data, task)
    pruned, pruned_tokenizer, report = prune_vocabulary(
        model, tokenizer, example_texts(loaded.splits["train"])
    )
    test_name = "test" if loaded.splits.get("test") else "validation"
    test = loaded.splits[test_name]
    report.update(
        test_split=test_name,
        test_texts=len(test),
        test_texts_tokenized_differently=tokenized_differently(
            tokenizer, pruned_tokenizer, example_texts(test)
        ),
    )
    if evaluate:
        config = evaluation_config(meta)
        labels = meta.get("labels")
        report["before"] = evaluate_model(model, tokenizer, task, test, labels, config)
        report["after"] = evaluate_model(
            pruned, pruned_tokenizer, task, test, labels, config
        )
    extra = {k: v for k, v in meta.items() if k not in _OWN_FIELDS}
    extra.update(pruned_from=str(model_dir), data=str(data), vocabulary_pruning=report)
    save_model_dir(pruned, out_dir, pruned_tokenizer, extra=extra, run_info=run_info)
    return report
