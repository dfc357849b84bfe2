"""Host-side steps around a model's ids-in, logits-out run: raw text in,
answers out. Shared by the text task models (`zoo.TextClassifier`, ...)
and `zoo predict` (every format), so one text gets one answer whichever
runs it.

`run_ids(inputs) -> outputs` is any runner of a task model on
`{token_ids, segment_ids, padding_mask}` int32 `[N, L]` numpy arrays
(Keras `predict`, a LiteRT signature, a SavedModel signature).
Character offsets index the input strings (end exclusive).
"""

from __future__ import annotations

import re

import numpy as np

from zoo.text import features as feats
from zoo.text.readers import QAExample, TaggedSentence
from zoo.text.tag_schemes import tag_entities, tag_scheme
from zoo.utils.numeric import softmax


def word_spans(text):
    """`[(start, end)]` of the whitespace-separated words of `text` (the
    words tagging and QA features are built from)."""
    return [m.span() for m in re.finditer(r"[^\s]+", text)]


def classify_logits(
    texts, texts_b, tokenizer, sequence_length, run_ids, *, max_windows=1, doc_stride=128
):
    """`(logits [N, C] float64, windows [N])`: pairs (or `max_windows` 1) take
    the tokenizer's truncating packer; single texts with `max_windows` > 1
    the windows of `zoo finetune --max-windows`, their logits averaged."""
    texts = list(texts)
    if texts_b is not None or max_windows == 1:
        ids = tokenizer(
            feats.leading_texts(texts, tokenizer, sequence_length),
            texts_b
            if texts_b is None
            else feats.leading_texts(texts_b, tokenizer, sequence_length),
            sequence_length=sequence_length,
        )
        logits = run_ids({k: np.asarray(v) for k, v in ids.items()})["logits"]
        return np.asarray(logits, np.float64), np.ones(len(texts), int)
    w = feats.text_windows(texts, tokenizer, sequence_length, doc_stride, max_windows)
    logits = feats.average_windows(run_ids(w.inputs)["logits"], w.example_index, len(texts))
    return logits, np.bincount(w.example_index, minlength=len(texts))


def regression_scores(texts, texts_b, tokenizer, sequence_length, run_ids):
    """`scores [N]` float64 of a regression head: one window per text or pair
    (the tokenizer's truncating packer, as `zoo finetune --task regress`)."""
    ids = tokenizer(
        feats.leading_texts(texts, tokenizer, sequence_length),
        texts_b
        if texts_b is None
        else feats.leading_texts(texts_b, tokenizer, sequence_length),
        sequence_length=sequence_length,
    )
    scores = run_ids({k: np.asarray(v) for k, v in ids.items()})["score"]
    return np.asarray(scores, np.float64).reshape(-1)


def tag_words(texts, tokenizer, labels, sequence_length, run_ids):
    """Per text: `(spans, probabilities [words, tags])` of its whitespace
    words (each word's first piece; a word cut off by the sequence gets
    a row of NaN)."""
    spans = [word_spans(t) for t in texts]
    sentences = [
        TaggedSentence(tuple(t[a:b] for a, b in s), (labels[0],) * len(s))
        for t, s in zip(texts, spans)
    ]
    tag_to_id = {t: i for i, t in enumerate(labels)}
    inputs, _, word_index = feats.tagging_features(
        sentences, tokenizer, tag_to_id, sequence_length
    )
    probabilities = softmax(run_ids(inputs)["logits"])
    out = []
    for row, span in enumerate(spans):
        words = np.full((len(span), len(labels)), np.nan)
        for pos in np.flatnonzero(word_index[row] >= 0):
            words[word_index[row, pos]] = probabilities[row, pos]
        out.append((span, words))
    return out


def entities(text, span, words, labels):
    """`{"entities": [{"label", "text", "start", "end", "score"}], "tags"}`
    from one text's word probabilities (tags in the scheme of `labels`:
    BIO, BIOES or bare types; a word without a row is O)."""
    tags, score = [], []
    for row in words:
        if np.isnan(row).any():
            tags.append("O")
            score.append(1.0)
        else:
            best = int(np.argmax(row))
            tags.append(labels[best])
            score.append(float(row[best]))
    found = []
    spans = tag_entities(tags, tag_scheme(labels))
    for kind, first, end in sorted(spans, key=lambda e: e[1]):
        start, stop = span[first][0], span[end - 1][1]
        found.append(
            {
                "label": kind,
                "text": text[start:stop],
                "start": start,
                "end": stop,
                "score": round(float(np.mean(score[first:end])), 6),
            }
        )
    return {"entities": found, "tags": tags}


def answer_spans(
    questions,
    contexts,
    tokenizer,
    sequence_length,
    run_ids,
    *,
    doc_stride=128,
    max_answer_length=30,
):
    """`[{"answer", "start", "end", "score"}]`: the best span of each context
    over its windows ("" and -1 when no span fits); `score` is the
    probability of its start times that of its end in the window it was
    found in."""
    examples = [
        QAExample(str(i), q, c, ()) for i, (q, c) in enumerate(zip(questions, contexts))
    ]
    features = feats.qa_features(examples, tokenizer, sequence_length, doc_stride)
    out = run_ids(features.inputs)
    start_logits = np.asarray(out["start_logits"], np.float64)
    end_logits = np.asarray(out["end_logits"], np.float64)
    best, _ = feats.best_spans(
        features, start_logits, end_logits, max_answer_length=max_answer_length
    )
    answers = []
    for index, context in enumerate(contexts):
        if index not in best:
            answers.append({"answer": "", "start": -1, "end": -1, "score": 0.0})
            continue
        _, first, last, f, i, j = best[index]
        span = word_spans(context)
        start, stop = span[first][0], span[last][1]
        score = softmax(start_logits[f])[i] * softmax(end_logits[f])[j]
        answers.append(
            {
                "answer": context[start:stop],
                "start": start,
                "end": stop,
                "score": round(float(score), 6),
            }
        )
    return answers
