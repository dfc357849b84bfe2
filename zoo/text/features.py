"""Model features for tagging and span QA (host side, once per dataset).

Both split text into words first and tokenize every word in one batched
tokenizer call, so each word piece knows the word it came from:

- tagging: the first piece of a word carries the word's tag, the other
  pieces and the special tokens get -1 (ignored by the loss);
- span QA: contexts are split at whitespace (as BERT's run_squad does), the
  answer's character span maps to words and so to pieces; long contexts are
  cut into windows of `sequence_length` with `doc_stride` pieces of overlap.
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np

IGNORE = -1


def _tokenize_words(tokenizer, words):
    """List of word-piece id lists, one per word (one batched call)."""
    if not words:
        return []
    ragged = tokenizer.tokenize(list(words))
    return [list(map(int, row)) for row in ragged.to_list()]


def tagging_features(sentences, tokenizer, tag_to_id, sequence_length):
    """Dense arrays for `TokenClassifier` from `TaggedSentence`s.

    Returns `(inputs dict, labels [N, L] int32 with -1 = ignore, word_index
    [N, L] int32 with -1 for pieces that carry no label)`. Words past the
    sequence length are cut (their tags cannot be predicted). A tag of None
    (an unlabelled text) labels no piece.
    """
    flat = [w for s in sentences for w in s.words]
    pieces = _tokenize_words(tokenizer, flat)
    n, length = len(sentences), sequence_length
    token_ids = np.full((n, length), tokenizer.pad_id, np.int32)
    labels = np.full((n, length), IGNORE, np.int32)
    word_index = np.full((n, length), IGNORE, np.int32)
    mask = np.zeros((n, length), np.int32)
    cursor = 0
    unknown = set()
    for row, sentence in enumerate(sentences):
        ids, tags, owners = [tokenizer.cls_id], [IGNORE], [IGNORE]
        for w, tag in enumerate(sentence.tags):
            word_pieces = pieces[cursor + w] or [tokenizer.unk_id]
            if tag is None:  # an unlabelled text (zoo distill --unlabelled)
                label = IGNORE
            elif tag in tag_to_id:
                label = tag_to_id[tag]
            else:
                unknown.add(tag)
                continue
            ids += word_pieces
            tags += [label] + [IGNORE] * (len(word_pieces) - 1)
            owners += [w] + [IGNORE] * (len(word_pieces) - 1)
        cursor += len(sentence.words)
        ids, tags, owners = ids[: length - 1], tags[: length - 1], owners[: length - 1]
        ids.append(tokenizer.sep_id)
        tags.append(IGNORE)
        owners.append(IGNORE)
        token_ids[row, : len(ids)] = ids
        labels[row, : len(tags)] = tags
        word_index[row, : len(owners)] = owners
        mask[row, : len(ids)] = 1
    if unknown:
        raise ValueError(
            f"tags {sorted(unknown)} are not in the model's label set "
            f"{sorted(tag_to_id)}; train on data that includes them."
        )
    inputs = {
        "token_ids": token_ids,
        "segment_ids": np.zeros_like(token_ids),
        "padding_mask": mask,
    }
    return inputs, labels, word_index


def tags_from_logits(logits, word_index, sentences, id_to_tag):
    """Per-word predicted tags (the first piece's argmax); words that were cut
    by the sequence length are predicted "O"."""
    predicted = np.argmax(logits, axis=-1)
    out = []
    for row, sentence in enumerate(sentences):
        tags = ["O"] * len(sentence.words)
        for pos in np.flatnonzero(word_index[row] >= 0):
            tags[word_index[row, pos]] = id_to_tag[int(predicted[row, pos])]
        out.append(tags)
    return out


# --- span QA ----------------------------------------------------------------


@dataclasses.dataclass
class QAFeatures:
    inputs: dict  # token_ids, segment_ids, padding_mask [F, L]
    # [F]; 0 ([CLS]) when the answer is not in the window, IGNORE for an
    # example without answers (None: zoo distill --unlabelled)
    start_positions: np.ndarray
    end_positions: np.ndarray
    example_index: np.ndarray  # [F] -> index into the examples
    token_to_word: list  # per feature: {position: word index in the context}
    context_words: list  # per example: list of whitespace-separated words


def _context_words(context):
    """Whitespace words of `context` and, per character, its word index."""
    words, char_to_word, previous_space = [], [], True
    for ch in context:
        if ch.isspace():
            previous_space = True
        else:
            if previous_space:
                words.append(ch)
            else:
                words[-1] += ch
            previous_space = False
        char_to_word.append(max(len(words) - 1, 0))
    return words, char_to_word


def qa_features(
    examples, tokenizer, sequence_length=384, doc_stride=128, max_query_length=64
):
    """Windows of `[CLS] question [SEP] context-window [SEP]` for each example."""
    all_words, spans, questions, unlabelled = [], [], [], []
    for example in examples:
        # No answers at all (None, not ()): an unlabelled example of `zoo
        # distill --unlabelled`; its windows' start and end are IGNORE, which
        # only distillation reads.
        unlabelled.append(example.answers is None)
        words, char_to_word = _context_words(example.context)
        all_words.append(words)
        if example.answers and not example.is_impossible:
            text, start = example.answers[0]
            spans.append((char_to_word[start], char_to_word[start + len(text) - 1]))
        else:
            spans.append(None)
        questions.append(example.question)
    question_ids = [list(map(int, r)) for r in tokenizer.tokenize(questions).to_list()]
    word_pieces = _tokenize_words(tokenizer, [w for ws in all_words for w in ws])

    rows, starts, ends, owners, mapping = [], [], [], [], []
    cursor = 0
    for index, words in enumerate(all_words):
        pieces, piece_word, word_first, word_last = [], [], [], []
        for w in range(len(words)):
            p = word_pieces[cursor + w] or [tokenizer.unk_id]
            word_first.append(len(pieces))
            pieces += p
            piece_word += [w] * len(p)
            word_last.append(len(pieces) - 1)
        cursor += len(words)
        query = question_ids[index][:max_query_length]
        room = sequence_length - len(query) - 3
        if room < 1:
            raise ValueError(
                f"sequence_length={sequence_length} leaves no room for the context after a "
                f"{len(query)}-piece question; raise it or lower max_query_length."
            )
        answer = None
        if spans[index] is not None:
            answer = (word_first[spans[index][0]], word_last[spans[index][1]])
        window_start = 0
        while True:
            window = pieces[window_start : window_start + room]
            ids = (
                [tokenizer.cls_id]
                + query
                + [tokenizer.sep_id]
                + window
                + [tokenizer.sep_id]
            )
            offset = len(query) + 2
            segment = [0] * offset + [1] * (len(window) + 1)
            start = end = IGNORE if unlabelled[index] else 0
            if (
                answer is not None
                and window_start <= answer[0]
                and answer[1] < window_start + len(window)
            ):
                start, end = (
                    answer[0] - window_start + offset,
                    answer[1] - window_start + offset,
                )
            rows.append((ids, segment))
            starts.append(start)
            ends.append(end)
            owners.append(index)
            mapping.append(
                {offset + i: piece_word[window_start + i] for i in range(len(window))}
            )
            if window_start + room >= len(pieces):
                break
            window_start += min(doc_stride, room)

    n = len(rows)
    token_ids = np.full((n, sequence_length), tokenizer.pad_id, np.int32)
    segment_ids = np.zeros((n, sequence_length), np.int32)
    mask = np.zeros((n, sequence_length), np.int32)
    for i, (ids, segment) in enumerate(rows):
        token_ids[i, : len(ids)] = ids
        segment_ids[i, : len(segment)] = segment
        mask[i, : len(ids)] = 1
    return QAFeatures(
        {"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": mask},
        np.array(starts, np.int32),
        np.array(ends, np.int32),
        np.array(owners, np.int32),
        mapping,
        all_words,
    )


def best_spans(features, start_logits, end_logits, n_best=20, max_answer_length=30):
    """Per example index: the best span over its windows and the best null
    ([CLS]) score: `{index: (score, first word, last word, feature, start
    piece, end piece)}` and `{index: null score}`. A span must start and end inside the context, end
    at or after its start and cover at most `max_answer_length` pieces."""
    best = {}
    null = {}
    for f in range(len(features.example_index)):
        index = int(features.example_index[f])
        s, e = start_logits[f], end_logits[f]
        null[index] = max(null.get(index, -np.inf), float(s[0] + e[0]))
        mapping = features.token_to_word[f]
        top_s = np.argsort(s)[::-1][:n_best]
        top_e = np.argsort(e)[::-1][:n_best]
        for i in top_s:
            if i not in mapping:
                continue
            for j in top_e:
                if j not in mapping or j < i or j - i + 1 > max_answer_length:
                    continue
                score = float(s[i] + e[j])
                if index not in best or score > best[index][0]:
                    best[index] = (score, mapping[i], mapping[j], f, int(i), int(j))
    return best, null


def decode_answers(
    features,
    start_logits,
    end_logits,
    examples,
    n_best=20,
    max_answer_length=30,
    null_threshold=0.0,
    allow_null=False,
):
    """Best answer text per example id, from every window's logits
    (`best_spans`). With `allow_null` (SQuAD 2.0) the answer is "" when the
    best [CLS] score beats the best span by more than `null_threshold`."""
    best, null = best_spans(features, start_logits, end_logits, n_best, max_answer_length)
    answers = {}
    for index, example in enumerate(examples):
        words = features.context_words[index]
        if index not in best:
            answers[example.qid] = ""
            continue
        score, first, last = best[index][:3]
        if allow_null and null[index] - score > null_threshold:
            answers[example.qid] = ""
        else:
            answers[example.qid] = " ".join(words[first : last + 1])
    return answers


@dataclasses.dataclass
class TextWindows:
    inputs: dict  # token_ids, segment_ids, padding_mask [W, L]
    example_index: np.ndarray  # [W] -> index into the texts


# The most windows one text is cut into: each is a full forward pass, so
# the bound caps the work a long text (or a recorded max_windows) can ask
# for; 64 windows of a 128-token sequence cover about 8,000 word pieces.
MAX_WINDOWS = 64


# A text longer than this many characters for each word piece its windows
# can use is tokenized in a prefix first (`leading_texts`): English runs
# 4 to 6 characters a piece.
_CHARS_PER_PIECE = 32
# Where a run of ASCII whitespace starts: every tokenizer splits words
# there, and a run cut in its middle would tokenize otherwise (byte-level
# BPE keeps a run's spaces together; control characters such as \x1c,
# which Python calls whitespace, are deleted by BERT's cleaning).
_RUN_START = re.compile(r"(?<![ \t\n\r])[ \t\n\r]")


def leading_texts(texts, tokenizer, pieces):
    """`texts`, each long one cut where a run of whitespace starts, at a
    point that still leaves it at least `pieces` word pieces: its first
    `pieces` are those of the whole text, so windows and the truncating
    packer give the same ids, without tokenizing megabytes to use a few
    hundred pieces (a 46 MB line took 3.5 GB). A text that cannot be cut
    so is kept whole."""
    texts = list(texts)
    limit = max(1, pieces) * _CHARS_PER_PIECE
    todo = [i for i, t in enumerate(texts) if isinstance(t, str) and len(t) > limit]
    while todo:
        cuts = {}
        for i in todo:
            found = _RUN_START.search(texts[i], limit)
            if found is not None:
                cuts[i] = found.start()
        if not cuts:
            break
        order = list(cuts)
        prefixes = [texts[i][: cuts[i]] for i in order]
        counts = tokenizer.tokenize(prefixes).row_lengths().numpy()
        todo = []
        for i, prefix, count in zip(order, prefixes, counts):
            if count >= pieces:
                texts[i] = prefix
            else:  # long words (one [UNK] each): a longer prefix
                todo.append(i)
        limit *= 4
    return texts


def text_windows(texts, tokenizer, sequence_length, doc_stride, max_windows):
    """`[CLS] window [SEP]` features covering up to `max_windows` windows of each text.

    A text of n word pieces gets windows of `sequence_length - 2` pieces
    starting at 0, s, 2s, ... (s = min(doc_stride, sequence_length - 2)) until
    one reaches the end of the text or `max_windows` are made, so a short
    text gives one window identical to the tokenizer's truncating packer.
    Used to classify texts longer than the model's sequence: train on every
    window with the text's label and predict by averaging the windows'
    logits (`average_windows`).
    """

    def whole(value):
        return isinstance(value, (int, np.integer)) and not isinstance(value, bool)

    if not whole(max_windows) or not 1 <= max_windows <= MAX_WINDOWS:
        raise ValueError(
            f"max_windows must be an integer in 1..{MAX_WINDOWS}; received {max_windows!r:.40}."
        )
    if not whole(doc_stride) or doc_stride < 1:
        raise ValueError(f"doc_stride must be a positive integer; received {doc_stride!r}.")
    if not whole(sequence_length) or sequence_length < 3:
        raise ValueError(
            f"sequence_length must be an int >= 3; received {sequence_length!r}."
        )
    room = sequence_length - 2
    step = min(doc_stride, room)
    texts = leading_texts(texts, tokenizer, room + (max_windows - 1) * step)
    ragged = tokenizer.tokenize(texts)
    lengths = ragged.row_lengths().numpy()
    flat = ragged.flat_values.numpy()
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    # Window starts per text: 0, step, ... while the previous window left pieces out.
    counts = np.minimum(1 + np.maximum(0, -(-(lengths - room) // step)), max_windows)
    owner = np.repeat(np.arange(len(lengths)), counts)
    first = np.concatenate([[0], np.cumsum(counts)])[:-1]
    starts = (np.arange(len(owner)) - np.repeat(first, counts)) * step
    taken = np.clip(lengths[owner] - starts, 0, room)  # [W] pieces per window
    positions = np.arange(sequence_length)[None, :]
    source = offsets[owner][:, None] + starts[:, None] + positions - 1
    inside = (positions >= 1) & (positions <= taken[:, None])
    token_ids = np.where(
        inside,
        flat[np.clip(source, 0, max(len(flat) - 1, 0))] if len(flat) else 0,
        tokenizer.pad_id,
    )
    token_ids[:, 0] = tokenizer.cls_id
    token_ids[np.arange(len(owner)), taken + 1] = tokenizer.sep_id
    mask = (positions <= taken[:, None] + 1).astype(np.int32)
    return TextWindows(
        {
            "token_ids": token_ids.astype(np.int32),
            "segment_ids": np.zeros_like(mask),
            "padding_mask": mask,
        },
        owner.astype(np.int32),
    )


def average_windows(logits, example_index, num_examples):
    """Mean of the windows' logits per text: `[num_examples, C]`."""
    logits = np.asarray(logits, np.float64)
    total = np.zeros((num_examples, logits.shape[-1]))
    np.add.at(total, example_index, logits)
    count = np.bincount(example_index, minlength=num_examples)
    if np.any(count == 0):
        raise ValueError("every text needs at least one window; found texts with none.")
    return total / count[:, None]
