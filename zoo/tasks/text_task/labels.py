"""A classifier's or tagger's label names: checked, or reconciled with the
names and class count of a fine-tuned head."""

from __future__ import annotations

from zoo.tasks.text_task.inputs import describe, positive_int


def _check_label_list(labels, who):
    if isinstance(labels, (str, bytes, dict)) or not hasattr(labels, "__iter__"):
        raise TypeError(
            f"{who}: `labels` must be a list of label names; received {describe(labels)}."
        )


def head_label_names(who, head_labels, head_classes, labels, num_classes):
    """The label names of a fine-tuned head with `head_classes` outputs named
    `head_labels` (None: not named), given from_checkpoint's `labels` and
    `num_classes`. Names are honoured where they only name the outputs (a
    head without names, or with the default "0".."N-1", and as many names
    as outputs); refused where they would contradict the head: another
    count, other or reordered names (the head's outputs stay in its order,
    so a reordered list would mislabel every answer)."""
    head = list(head_labels) if head_labels is not None else None
    described = head if head is not None else f"{head_classes} unnamed classes"
    if num_classes is not None and int(num_classes) != head_classes:
        raise ValueError(
            f"{who}: num_classes={num_classes}, but the checkpoint's fine-tuned head has "
            f"{head_classes} classes ({described}); leave num_classes out, or fine-tune a "
            "new head from the checkpoint's encoder."
        )
    if labels is None:
        return head
    _check_label_list(labels, who)
    labels = [str(label) for label in labels]
    if len(labels) != head_classes:
        raise ValueError(
            f"{who}: labels={labels} names {len(labels)} classes, but the checkpoint's "
            f"fine-tuned head has {head_classes} ({described}); leave labels out, or "
            "fine-tune a new head for these labels from the checkpoint's encoder."
        )
    defaults = [str(i) for i in range(head_classes)]
    if head is not None and head != defaults:
        if labels != head:
            raise ValueError(
                f"{who}: labels={labels} differ from the fine-tuned head's labels {head}: "
                "its outputs are in that order, so other names would mislabel its answers. "
                "Leave labels out (the head's own names are used), or fine-tune a new head "
                "for these labels from the checkpoint's encoder."
            )
    elif labels != defaults and sorted(labels) == sorted(defaults):
        raise ValueError(
            f"{who}: labels={labels} reorder the head's unnamed classes {defaults} (output "
            "i is class 'i'); give names in output order that are not class numbers, or "
            "leave labels out."
        )
    return labels


def labels_and_classes(num_classes, labels, who):
    if labels is not None:
        _check_label_list(labels, who)
    if labels is None:
        if num_classes is None:
            raise ValueError(
                f"{who}: give labels=[names] (or num_classes=N for labels '0'..'N-1')."
            )
        labels = [str(i) for i in range(positive_int(num_classes, "num_classes"))]
    labels = [str(label) for label in labels]
    if num_classes is not None and positive_int(num_classes, "num_classes") != len(labels):
        raise ValueError(
            f"{who}: {len(labels)} labels given for num_classes={num_classes}."
        )
    if len(set(labels)) != len(labels) or len(labels) < 2:
        raise ValueError(f"{who}: labels must be >= 2 distinct names; received {labels}.")
    return len(labels), labels
