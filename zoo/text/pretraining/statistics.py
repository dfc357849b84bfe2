"""Measurements of the masking in a pre-training dataset's examples (an
analysis over numpy arrays, not part of the training path).
"""

from __future__ import annotations

import numpy as np

from zoo.text.masking import continuation_table


def masking_statistics(dataset, tokenizer, num_examples=10_000):
    """Measure the masking of the first `num_examples` examples of a
    pre-training dataset (batches of `pretraining_dataset`): the share of
    maskable tokens masked, the spans and their length in words (with
    span masking the positions sharing span boundaries, otherwise maximal
    runs of adjacent masked positions), special or padding tokens masked
    (must be 0), the 80/10/10 split over masked tokens and, per span, how
    many spans mix those actions (`mixed_spans`; 0 for span masking but for
    a random id that hits a special token and is kept instead).

    An analysis over numpy arrays, not part of the training path."""
    specials = np.array(
        [tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id, tokenizer.mask_id]
    )
    piece = continuation_table(tokenizer.vocabulary).numpy()
    seen = masked = maskable = special_masked = as_mask = randomised = mixed = 0
    histograms = []
    for x, y, w in dataset:
        take = min(int(x["token_ids"].shape[0]), num_examples - seen)
        now_ids = x["token_ids"].numpy()[:take]
        valid = x["padding_mask"].numpy()[:take] > 0
        positions = x["masked_positions"].numpy()[:take]
        real = w["mlm_logits"].numpy()[:take] > 0
        rows = np.broadcast_to(np.arange(take)[:, None], positions.shape)[real]
        cols = positions[real]
        was = y["mlm_logits"].numpy()[:take][real]
        now = now_ids[rows, cols]
        original = now_ids.copy()
        original[rows, cols] = was
        maskable += int((valid & ~np.isin(original, specials)).sum())
        masked += len(cols)
        special_masked += int(np.isin(was, specials).sum() + (~valid[rows, cols]).sum())
        is_mask = now == tokenizer.mask_id
        is_random = (now != was) & ~is_mask
        as_mask += int(is_mask.sum())
        randomised += int(is_random.sum())
        if "span_left_positions" in x:
            left = x["span_left_positions"].numpy()[:take][real]
            right = x["span_right_positions"].numpy()[:take][real]
            width = now_ids.shape[1] + 1
            keys = (rows * width + left) * width + right
        else:  # runs of adjacent positions (positions are sorted per row)
            new_run = np.ones(len(cols), bool)
            new_run[1:] = (rows[1:] != rows[:-1]) | (cols[1:] != cols[:-1] + 1)
            keys = np.cumsum(new_run)
        _, span = np.unique(keys, return_inverse=True)
        words = np.bincount(span, weights=~piece[was]).astype(int)
        histograms.append(np.bincount(np.maximum(words, 1)))
        action = np.where(is_mask, 0, np.where(is_random, 1, 2))
        kinds = np.zeros((span.max() + 1 if len(span) else 0, 3), int)
        np.add.at(kinds, (span, action), 1)
        mixed += int(((kinds > 0).sum(1) > 1).sum())
        seen += take
        if seen >= num_examples:
            break
    if seen < num_examples:
        raise ValueError(f"the dataset holds {seen} examples; asked for {num_examples}.")
    size = max(len(h) for h in histograms)
    histogram = sum(np.pad(h, (0, size - len(h))) for h in histograms)[1:]
    spans = int(histogram.sum())
    return {
        "examples": seen,
        "masked_share": masked / max(maskable, 1),
        "spans": spans,
        "mean_span_words": float((np.arange(1, size) * histogram).sum() / max(spans, 1)),
        "span_words_histogram": histogram.tolist(),
        "special_tokens_masked": special_masked,
        "mask_share": as_mask / max(masked, 1),
        "random_share": randomised / max(masked, 1),
        "kept_share": 1 - (as_mask + randomised) / max(masked, 1),
        "mixed_spans": mixed,
    }
