"""Reading the project's JSON files (zoo_model.json, metadata.json,
manifest.json, args.json) and the JSON configs of checkpoints (config.json,
tokenizer_config.json, a keras-hub preset's config.json) with errors that
name the file and say what to do.

Every one of these files is small (a few kB; a model directory's record or
an artifact's manifest a few dozen kB), and nests fewer than 10 levels, so
a reader refuses, before parsing: anything but a regular file (a FIFO
would block, /dev/zero never end), more than `MAX_BYTES` (16 MB) unless
the caller gives another limit, and nesting deeper than `MAX_DEPTH` (64)
levels, counted on the text, so that neither memory nor Python's recursion
limit decides how a hostile file ends.
"""

from __future__ import annotations

import json
import pathlib
import re

import numpy as np

from zoo.utils.safe_files import UnsafeFileError, read_bounded

MAX_BYTES = 16 << 20
MAX_DEPTH = 64

# A JSON string (escapes included); removed before brackets are counted,
# since a "[" inside a string does not nest anything. Written unrolled
# (no alternation inside the loop) so that a long string is one fast scan.
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEPS = str.maketrans({"[": "\x01", "{": "\x01", "]": "\xff", "}": "\xff"})


class JsonFileError(ValueError):
    """A JSON file that cannot be read as the object it should hold."""


def json_depth(text) -> int:
    """How deeply `text`'s arrays and objects nest (brackets inside strings
    not counted), in C-speed scans: strings and everything but brackets
    removed by regular expressions, then a cumulative sum of +1/-1."""
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    if not brackets:
        return 0
    steps = np.frombuffer(brackets.translate(_STEPS).encode("latin-1"), dtype=np.int8)
    return int(np.cumsum(steps, dtype=np.int64).max())


def read_json_object(path, what="this file", *, max_bytes=MAX_BYTES) -> dict:
    """The JSON object in `path`; `JsonFileError` naming the file when it is
    not a regular file, over `max_bytes`, not UTF-8, not JSON, nested deeper
    than `MAX_DEPTH`, or JSON but not an object. `what` says how to get a
    good copy (e.g. "re-export the artifact")."""
    path = pathlib.Path(path)
    try:
        data = read_bounded(path, max_bytes, what)
    except UnsafeFileError as e:
        raise JsonFileError(str(e)) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise JsonFileError(f"{path}: not UTF-8 text (byte {e.start}); {what}.") from None
    depth = json_depth(text)
    if depth > MAX_DEPTH:
        raise JsonFileError(
            f"{path}: JSON nested {depth:,} levels deep, over the limit of {MAX_DEPTH} (no "
            f"such file nests more than a few levels); {what}."
        )
    try:
        value = json.loads(text)
    except ValueError as e:
        raise JsonFileError(f"{path}: not valid JSON ({e}); {what}.") from None
    except RecursionError:  # cannot happen under MAX_DEPTH; kept as a last guard
        raise JsonFileError(f"{path}: JSON nested too deeply to read; {what}.") from None
    if not isinstance(value, dict):
        raise JsonFileError(
            f"{path}: holds a JSON {type(value).__name__}, not an object; {what}."
        )
    return value
