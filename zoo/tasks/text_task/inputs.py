"""What a text model's `x` and `y` may be: texts, pairs, targets, ids,
DataFrames and datasets read into lists, and everything else refused with
an error naming the argument, what it received and what to pass."""

from __future__ import annotations

import sys

import numpy as np
import tensorflow as tf

from zoo.text.tokenizer import check_text


def is_ids(x):
    """True when `x` is already encoder input (a dict of id arrays, or a
    dataset yielding one): text models pass it to the id-level model."""
    if isinstance(x, dict):
        return "token_ids" in x
    if isinstance(x, tf.data.Dataset):
        spec = x.element_spec
        first = spec[0] if isinstance(spec, tuple) else spec
        return isinstance(first, dict) and "token_ids" in first
    return False


_REQUIRED = object()


def positive_int(value, name, default=_REQUIRED):
    """`value` as an int >= 1 (None: `default`, when one is given), or one
    TypeError (not an int: a bool, float or str is not taken, since Keras
    and TensorFlow then fail deep inside with their own errors) or
    ValueError (< 1) naming `name` and what was received."""
    if value is None and default is not _REQUIRED:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        hint = (
            f"; pass {value.strip()} (an int), not a str"
            if isinstance(value, str) and value.strip().isdigit()
            else ""
        )
        raise TypeError(
            f"`{name}` must be a positive int; received {describe(value)}{hint}."
        )
    if value < 1:
        raise ValueError(f"`{name}` must be a positive int (1 or more); received {value}.")
    return int(value)


def _pandas_type(value, name):
    """True when `value` is a pandas `name` ("DataFrame", "Series"). pandas
    is optional: a value can only be one if pandas is already imported, so
    it is looked up, never imported here."""
    pandas = sys.modules.get("pandas")
    return pandas is not None and isinstance(value, getattr(pandas, name))


def is_frame(value):
    return _pandas_type(value, "DataFrame")


def _column_names(frame):
    return list(frame.columns)


def frame_column(frame, column, where, *, missing_as=_REQUIRED):
    """One column of a DataFrame as a list; missing values (NaN, None) are
    refused naming the column and rows (as a text they would be the str
    'nan', as a label an unknown one), or, where the column may lack a
    value (a question answerer's `answer`: no answer), read as
    `missing_as`."""
    values = frame[column]
    missing = values.isna()
    if missing_as is not _REQUIRED:
        return [missing_as if m else v for v, m in zip(values.tolist(), missing.tolist())]
    if bool(missing.any()):
        rows = list(frame.index[missing.to_numpy()][:5])
        raise ValueError(
            f"`{where}['{column}']`: {int(missing.sum())} missing values (NaN/None), in rows "
            f"{rows}{' ...' if int(missing.sum()) > 5 else ''}; drop them "
            "(frame.dropna()) or fill them in."
        )
    return values.tolist()


def describe(value):
    """`value` for an error message: its type and a short repr."""
    if isinstance(value, dict):
        return f"a dict with keys {sorted(map(str, value))[:6]}"
    if is_frame(value):
        return f"a DataFrame with columns {_column_names(value)[:10]}"
    if isinstance(value, np.ndarray) and value.ndim != 1:
        return f"a numpy array of shape {value.shape}"
    if isinstance(value, tf.data.Dataset):
        return "a tf.data.Dataset"
    if value is None:
        return "None"
    return f"{type(value).__name__} {str(value)[:60]!r}"


def as_text(value, where):
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ValueError(
                f"{where}: bytes that are not UTF-8 (byte {e.start}: {value[e.start : e.start + 1]!r}); "
                "decode the text yourself (e.g. errors='replace') and pass str."
            ) from None
    if isinstance(value, np.str_):
        return str(value)
    if not isinstance(value, str):
        raise TypeError(f"{where}: expected a str; received {describe(value)}.")
    check_text(value, where)  # a lone surrogate, named here rather than by the tokenizer
    return value


def as_texts(values, where):
    """A list of str from a str (a batch of one), a list, tuple, generator,
    numpy array or 1-D tf.string tensor of texts; errors name `where[i]`."""
    if isinstance(values, (str, bytes)):
        values = [values]
    if isinstance(values, tf.Tensor):
        values = values.numpy()
    if isinstance(values, np.ndarray) and values.ndim == 0:
        values = [values.item()]  # one text, as a bare str is
    if isinstance(values, np.ndarray) and values.ndim > 1:
        # Iterated, a 2-D array gives rows: each row would be read as one
        # text (an error at best), or pairs by accident of its width.
        raise TypeError(
            f"`{where}`: a numpy array or tensor of shape {tuple(values.shape)}; texts are "
            "1-D (one str per example). Pairs: a (texts, texts_b) tuple, e.g. "
            "(array[:, 0], array[:, 1])."
        )
    if isinstance(values, (dict, tf.data.Dataset)) or values is None or is_frame(values):
        raise TypeError(
            f"`{where}`: expected texts (a list or array of str); received "
            f"{describe(values)}."
        )
    try:
        values = list(values)
    except TypeError:
        raise TypeError(
            f"`{where}`: expected texts (a list or array of str); received "
            f"{describe(values)}."
        ) from None
    return [as_text(v, f"{where}[{i}]") for i, v in enumerate(values)]


def refuse_non_text(x, where, what, *, datasets=False):
    """TypeError naming `where` unless `x` may be text input: None, a dict
    (other than encoder ids, dispatched before) and, unless `datasets`, a
    tf.data.Dataset are refused; `what` says what to pass instead. (A dict
    iterates as its keys: without this, a dict of texts ran as one text per
    key.)"""
    if (
        x is None
        or isinstance(x, dict)
        or (isinstance(x, tf.data.Dataset) and not datasets)
    ):
        ids = (
            " A dict is taken only as encoder ids ('token_ids', 'segment_ids', "
            "'padding_mask')."
            if isinstance(x, dict)
            else ""
        )
        raise TypeError(f"`{where}`: received {describe(x)}; pass {what}.{ids}")


def dataset_lists(dataset, where, *, labelled=True):
    """`(x, y)` lists from a `tf.data.Dataset`, batched or not, of
    `(text, label)` or `((text, text_b), label)` elements; with
    `labelled=False` also of texts, `(text,)` or `((text, text_b),)` (`y`
    then holds the labels of the elements that have one)."""
    if int(dataset.cardinality()) == int(tf.data.INFINITE_CARDINALITY):
        raise ValueError(
            f"`{where}`: the tf.data.Dataset repeats forever; it is read into memory "
            "once, so pass it without .repeat() (fit: epochs= repeats it)."
        )
    forms = "(text, label) or ((text, text_b), label)" + ("" if labelled else " or texts")
    xs_a, xs_b, ys = [], [], []
    for element in dataset.as_numpy_iterator():
        if isinstance(element, tuple) and len(element) == 2:
            x, y = element
        elif not labelled and isinstance(element, tuple) and len(element) == 1:
            x, y = element[0], None
        elif not labelled and not isinstance(element, (tuple, dict)):
            x, y = element, None
        else:
            raise ValueError(
                f"`{where}`: a tf.data.Dataset must yield {forms}; one element is "
                f"{type(element).__name__} {str(element)[:80]}."
            )
        if isinstance(x, tuple) and len(x) != 2:
            raise ValueError(
                f"`{where}`: a tf.data.Dataset must yield {forms}; one text is a tuple of "
                f"{len(x)}."
            )
        a, b = x if isinstance(x, tuple) else (x, None)
        batched = isinstance(a, np.ndarray) and a.ndim == 1
        xs_a.extend(a if batched else [a])
        if b is not None:
            xs_b.extend(b if batched else [b])
        if y is not None:
            ys.extend(np.asarray(y).tolist() if batched else [np.asarray(y).item()])
    x = (xs_a, xs_b) if xs_b else xs_a
    return x, ys


def targets_name(where):
    """The name of the targets that go with `where` in errors."""
    return "y" if where == "x" else f"{where} (targets)"


def require_examples(n, where):
    """ValueError naming `where` when it holds no examples: fit would run no
    step and return a History, evaluate return no metrics."""
    if n == 0:
        raise ValueError(
            f"`{where}` is empty (0 examples); fit and evaluate need at least one "
            "example with its target."
        )


def as_list(values, where):
    """A list of targets (labels, tag lists, answers) from a list, tuple,
    array or 1-D tensor; a bare str, a dict or a non-sequence is refused
    naming `where` (iterating it would make one target per character/key)."""
    if isinstance(values, tf.Tensor):
        values = values.numpy()
    if isinstance(values, (str, bytes, dict)) or values is None or is_frame(values):
        # A DataFrame iterates over its column names, not its rows.
        raise TypeError(
            f"`{where}`: expected a list (one item per example); received "
            f"{describe(values)}."
        )
    try:
        return list(values)
    except TypeError:
        raise TypeError(
            f"`{where}`: expected a list (one item per example); received "
            f"{describe(values)}."
        ) from None
