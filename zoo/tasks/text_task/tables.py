"""The text models' `x` and `y` for fit/evaluate: pandas Series and
DataFrames read by column name, datasets read into lists, and the
examples checked before any tokenizing."""

from __future__ import annotations

import tensorflow as tf

from zoo.models import Classifier
from zoo.tasks.text_task.inputs import (
    _column_names,
    _pandas_type,
    dataset_lists,
    describe,
    frame_column,
    is_frame,
    refuse_non_text,
    targets_name,
)


class TablesMixin:
    """Each model's input forms (`_x_forms`, its DataFrame columns) and the
    reading of fit/evaluate's `x` and `y` into what its `_dataset` takes."""

    # --- data ----------------------------------------------------------------------------

    def _dataset(self, x, y, batch_size, *, shuffle=False, epoch_variable=None, where="x"):
        """Batches of `(ids, targets)` for fit/evaluate from text and labels."""
        raise NotImplementedError

    # What each model's fit/evaluate/predict take as `x`, for errors.
    _x_forms = "texts: a list of str"

    # The pandas DataFrame columns each model reads: those it needs, those
    # it may take, and its target columns (fit/evaluate read one of them
    # when y is not given; predict ignores them, as Keras ignores a
    # dataset's labels). One needed or optional column read gives a list,
    # two give a tuple of lists: the (texts, texts_b) form.
    _needed_columns = ("text",)
    _optional_columns = ("text_b",)
    _target_columns = ("label", "labels")
    _missing_target = {}  # frame_column's `missing_as` for the target column

    def _columns_help(self):
        optional = "".join(f", optional {c!r}" for c in self._optional_columns)
        targets = " or ".join(repr(c) for c in self._target_columns)
        return (
            f"{type(self).__name__} reads columns "
            f"{', '.join(repr(c) for c in self._needed_columns)}{optional}, and for fit/"
            f"evaluate the targets in {targets}"
        )

    def _tables(self, x, y, where, *, targets):
        """`(x, y)` with pandas read as the lists each model takes: a Series
        as a list of its values; a DataFrame by its column names
        (`_needed_columns`, `_optional_columns`, and with `targets`
        (fit/evaluate) `y` from a `_target_columns` column when y is not
        given). Iterated, a DataFrame gives its column names: any other
        columns, or a name missing, are refused naming the columns received
        and those expected. Everything else passes unchanged."""
        y_name = targets_name(where)
        if _pandas_type(y, "Series"):
            y = y.tolist()
        elif is_frame(y):
            if len(y.columns) != 1:
                raise TypeError(
                    f"`{y_name}`: a DataFrame with columns {_column_names(y)}; give one "
                    "target per example: a list, a Series or a one-column DataFrame."
                )
            y = frame_column(y, y.columns[0], y_name)
        if _pandas_type(x, "Series"):
            return x.tolist(), y
        if not is_frame(x):
            return x, y
        columns = _column_names(x)
        known = (*self._needed_columns, *self._optional_columns, *self._target_columns)
        unknown = [c for c in columns if c not in known]
        missing = [c for c in self._needed_columns if c not in columns]
        present = [c for c in self._target_columns if c in columns]
        problems = [f"no column {c!r}" for c in missing]
        if unknown:
            problems.append(f"columns {unknown} are not read")
        if len(set(map(str, columns))) != len(columns):
            problems.append("a column name twice")
        if problems:
            raise ValueError(
                f"`{where}`: a DataFrame with columns {columns}: {'; '.join(problems)}. "
                f"{self._columns_help()}; select or rename them, e.g. "
                f"frame[{list(self._needed_columns)}]."
            )
        if len(present) > 1:
            raise ValueError(
                f"`{where}`: a DataFrame with columns {columns} holds targets twice "
                f"({present}); keep one."
            )
        read = [c for c in (*self._needed_columns, *self._optional_columns) if c in columns]
        values = [frame_column(x, c, where) for c in read]
        if targets and present:
            if y is not None:
                raise ValueError(
                    f"`{where}`: the DataFrame has a target column {present[0]!r} and "
                    f"`{y_name}` is given as well; pass one of them."
                )
            y = frame_column(x, present[0], where, **self._missing_target)
        return (values[0] if len(values) == 1 else tuple(values)), y

    def _split_xy(self, x, y, where):
        """`(x, y)` for `_dataset` from fit/evaluate's `x` and `y`: a
        classifier's tf.data.Dataset is read into lists; `x` and `y` must be
        sequences (a bare str, a dict or None is refused, naming them)."""
        if isinstance(x, tf.data.Dataset) and not isinstance(self, Classifier):
            raise TypeError(
                f"`{where}`: {type(self).__name__} trains on lists (texts and one "
                "tag list per text / (question, context) pairs and answers); "
                "read the dataset into lists first."
            )
        x, y = self._tables(x, y, where, targets=True)
        refuse_non_text(x, where, self._x_forms, datasets=True)
        if isinstance(x, tf.data.Dataset):
            if y is not None:
                raise ValueError(
                    f"`{where}`: a tf.data.Dataset carries its labels; do not pass y as well."
                )
            return dataset_lists(x, where)
        if isinstance(x, (str, bytes)):
            raise TypeError(
                f"`{where}`: received a single str ({x[:40]!r}); fit and evaluate take a "
                "list of examples, each with its target in `y`: wrap one in a list."
            )
        if y is None:
            raise ValueError(
                f"`{where}`: labels are missing; pass y (one per example), a "
                "tf.data.Dataset of (text, label), or a DataFrame with a column "
                f"{' or '.join(repr(c) for c in self._target_columns)}."
            )
        y_name = "y" if where == "x" else f"{where} labels"
        if isinstance(y, (str, bytes, dict)):
            raise TypeError(
                f"`{y_name}`: received {describe(y)}; give a list with one target per "
                "example."
            )
        return x, y
