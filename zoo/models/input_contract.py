"""The contract every encoder input must meet, checked at each boundary an
outside caller can reach: the SavedModel's `serve_ids` (in-graph asserts,
which TF Serving turns into a 400), the Python LiteRT runners and the
Android app (host-side, since LiteRT has no assert op). It is written into
every artifact's metadata.json as `input_contract`.

    contract = input_contract(model)
    check_ids({"token_ids": ..., "segment_ids": ..., "padding_mask": ...}, contract)

Without these checks a negative id wraps around to the end of the
vocabulary, a padding mask of 7 or -1 changes the logits, and an all-zero
mask or an empty sequence still returns logits: silently wrong answers.
"""

from __future__ import annotations

import numpy as np

from zoo.configs import INPUT_NAMES


class InvalidInputError(ValueError):
    """Ids that break the input contract: names the field, what was received
    and what is allowed."""


def input_contract(model) -> dict:
    """The input contract of a zoo encoder or task model, as plain JSON data."""
    encoder = getattr(model, "encoder", model)
    return contract_for(
        encoder.vocabulary_size, encoder.max_sequence_length, encoder.num_segments
    )


def contract_for(vocabulary_size, max_sequence_length, num_segments) -> dict:
    """The input contract of an encoder of these sizes (what `input_contract`
    writes, and what a recorded contract is compared with)."""
    return {
        "inputs": list(INPUT_NAMES),
        "dtype": "int32",
        "shape": "[batch, L], the same for all three inputs",
        "sequence_length": {"min": 1, "max": int(max_sequence_length)},
        "token_ids": {"min": 0, "max": int(vocabulary_size) - 1},
        # A DistilBERT-style encoder ignores segments; the tokenizer still
        # writes 0 and 1 for a pair, so both are accepted.
        "segment_ids": {"min": 0, "max": int(num_segments) - 1 if num_segments else 1},
        "padding_mask": {
            "values": [0, 1],
            "first_token_real": True,
            "real_tokens_first": True,
        },
    }


def _where(array, bad):
    index = tuple(int(i) for i in np.argwhere(bad)[0])
    return f"[{', '.join(map(str, index))}]", array[index]


def check_ids(ids, contract, *, sequence_length=None, batch_size=None) -> None:
    """Raise `InvalidInputError` unless `ids` (a dict of array-likes) meets
    `contract`; `sequence_length` and `batch_size` pin the shape of a
    fixed-shape signature (a phone file's `[1, L]`)."""
    names = contract.get("inputs", list(INPUT_NAMES))
    missing = [n for n in names if n not in ids]
    extra = sorted(set(ids) - set(names))
    if missing or extra:
        raise InvalidInputError(
            f"inputs: expected exactly {names}; missing {missing}, unexpected {extra}."
        )
    arrays = {}
    for name in names:
        value = np.asarray(ids[name])
        if value.dtype.kind not in "iu":
            raise InvalidInputError(
                f"{name}: expected integer ids (int32), received dtype {value.dtype}."
            )
        if value.ndim != 2:
            raise InvalidInputError(
                f"{name}: expected shape [batch, L], received shape {list(value.shape)}."
            )
        arrays[name] = value
    shape = arrays[names[0]].shape
    for name in names[1:]:
        if arrays[name].shape != shape:
            raise InvalidInputError(
                f"{name}: shape {list(arrays[name].shape)} differs from {names[0]}'s "
                f"{list(shape)}; the three inputs describe the same tokens."
            )
    limits = contract["sequence_length"]
    if shape[0] < 1:
        raise InvalidInputError(f"{names[0]}: an empty batch (shape {list(shape)}).")
    if batch_size is not None and shape[0] != batch_size:
        raise InvalidInputError(
            f"{names[0]}: batch of {shape[0]}, but this signature takes exactly {batch_size} "
            "sequence(s) per call."
        )
    if not limits["min"] <= shape[1] <= limits["max"]:
        raise InvalidInputError(
            f"{names[0]}: length {shape[1]} is outside {limits['min']}..{limits['max']} (the "
            "model's maximum sequence length); pack the text with the tokenizer."
        )
    if sequence_length is not None and shape[1] != sequence_length:
        raise InvalidInputError(
            f"{names[0]}: length {shape[1]}, but this signature takes exactly "
            f"{sequence_length} tokens; pad or truncate to it (or use its serving_L{shape[1]} "
            "signature if the file has one)."
        )
    for name in ("token_ids", "segment_ids"):
        low, high = contract[name]["min"], contract[name]["max"]
        bad = (arrays[name] < low) | (arrays[name] > high)
        if bad.any():
            where, value = _where(arrays[name], bad)
            raise InvalidInputError(
                f"{name}{where} = {value}: must be in {low}..{high}"
                + (
                    " (the vocabulary's ids)"
                    if name == "token_ids"
                    else " (the model's segment types)"
                )
                + "; tokenize with the model's own vocab.txt."
            )
    mask = arrays["padding_mask"]
    bad = (mask != 0) & (mask != 1)
    if bad.any():
        where, value = _where(mask, bad)
        raise InvalidInputError(
            f"padding_mask{where} = {value}: must be 0 (padding) or 1 (a real token)."
        )
    if contract["padding_mask"].get("first_token_real") and (mask[:, 0] != 1).any():
        row = int(np.argwhere(mask[:, 0] != 1)[0][0])
        raise InvalidInputError(
            f"padding_mask[{row}, 0] = 0: every sequence starts with a real token ([CLS]); "
            "an all-padding row has no answer."
        )
    if contract["padding_mask"].get("real_tokens_first"):
        bad = mask[:, 1:] > mask[:, :-1]
        if bad.any():
            row, col = (int(i) for i in np.argwhere(bad)[0])
            raise InvalidInputError(
                f"padding_mask[{row}, {col + 1}] = 1 after padding at {col}: real tokens come "
                "first, then padding (pack the text with the tokenizer)."
            )


def ids_assertions(ids, contract):
    """The same contract as in-graph assert ops for a `tf.function` taking
    int32 ids `[batch, L]` (shape and dtype are fixed by its signature).
    TensorFlow only: the SavedModel exporter calls it."""
    # Loaded here, not at the top: `import zoo.models` on the JAX or PyTorch
    # backend must not need TensorFlow (issue #39); only the exporter calls this.
    import tensorflow as tf

    token_ids, segment_ids, mask = (ids[n] for n in INPUT_NAMES)
    limits = contract["sequence_length"]
    length = tf.shape(token_ids)[1]
    ops = [
        tf.debugging.assert_equal(
            tf.shape(segment_ids),
            tf.shape(token_ids),
            message="segment_ids must have the shape of token_ids",
        ),
        tf.debugging.assert_equal(
            tf.shape(mask),
            tf.shape(token_ids),
            message="padding_mask must have the shape of token_ids",
        ),
        tf.debugging.assert_greater_equal(
            length, limits["min"], message=f"the sequence length must be >= {limits['min']}"
        ),
        tf.debugging.assert_less_equal(
            length,
            limits["max"],
            message=f"the sequence length must be <= {limits['max']} (the model's maximum)",
        ),
    ]
    for name, value in (("token_ids", token_ids), ("segment_ids", segment_ids)):
        low, high = contract[name]["min"], contract[name]["max"]
        ops.append(
            tf.debugging.assert_greater_equal(
                value, low, message=f"{name} must be in {low}..{high}"
            )
        )
        ops.append(
            tf.debugging.assert_less_equal(
                value, high, message=f"{name} must be in {low}..{high}"
            )
        )
    ops.append(
        tf.debugging.assert_equal(
            tf.reduce_all((mask == 0) | (mask == 1)),
            True,
            message="padding_mask must hold only 0 (padding) and 1 (real tokens)",
        )
    )
    if contract["padding_mask"].get("first_token_real"):
        ops.append(
            tf.debugging.assert_equal(
                tf.reduce_all(mask[:, :1] == 1),
                True,
                message="every sequence must start with a real token (padding_mask[:, 0] == 1)",
            )
        )
    if contract["padding_mask"].get("real_tokens_first"):
        ops.append(
            tf.debugging.assert_equal(
                tf.reduce_all(mask[:, 1:] <= mask[:, :-1]),
                True,
                message="padding_mask: real tokens come first, then padding",
            )
        )
    return ops
