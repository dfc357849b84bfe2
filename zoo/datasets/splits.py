"""De-duplication and the project's fixed, documented split.

For data without its own split, after removing exact duplicate texts
(first occurrence kept, original order otherwise preserved), the example
at index `i` goes to:

- `i % 5 == 0`  -> test (20%)
- `i % 10 == 1` -> validation (10%)
- otherwise     -> train (70%)

This is the rule `zoo.datasets.corpora.bbc_news_split` uses, so a class-sorted
corpus spreads every class evenly over the three parts.
"""

from __future__ import annotations


def deduplicate(examples, key=None):
    """Drop examples whose key (default: the example itself, or its `text`
    and `text_b`) was seen before; keep order."""
    if key is None:

        def key(example):
            if hasattr(example, "text"):
                return (example.text, getattr(example, "text_b", None))
            return example

    seen, out = set(), []
    for example in examples:
        k = key(example)
        if k not in seen:
            seen.add(k)
            out.append(example)
    return out


def repeats(examples, key, target):
    """`(dropped, disagreeing)`: how many examples `deduplicate(examples,
    key)` drops, and how many of those give another target (`target(e)`: a
    label, a score, tags, answers) than the first of their key, which is
    the one kept."""
    first, dropped, disagreeing = {}, 0, 0
    for example in examples:
        k = key(example)
        if k in first:
            dropped += 1
            disagreeing += target(example) != first[k]
        else:
            first[k] = target(example)
    return dropped, disagreeing


def split_examples(examples):
    """{"train", "validation", "test"} lists by the fixed index rule."""
    split = {"train": [], "validation": [], "test": []}
    for i, example in enumerate(examples):
        if i % 5 == 0:
            split["test"].append(example)
        elif i % 10 == 1:
            split["validation"].append(example)
        else:
            split["train"].append(example)
    return split
