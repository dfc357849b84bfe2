"""Reading the project's JSON files (zoo_model.json, metadata.json,
manifest.json, args.json) with errors that name the file and say what to do."""

from __future__ import annotations

import json
import pathlib


class JsonFileError(ValueError):
    """A JSON file that cannot be read as the object it should hold."""


def read_json_object(path, what="this file") -> dict:
    """The JSON object in `path`; `JsonFileError` naming the file when it is
    not UTF-8, not JSON, or JSON but not an object. `what` says how to get a
    good copy (e.g. "re-export the artifact")."""
    path = pathlib.Path(path)
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as e:
        raise JsonFileError(f"{path}: not UTF-8 text (byte {e.start}); {what}.") from None
    try:
        value = json.loads(text)
    except ValueError as e:
        raise JsonFileError(f"{path}: not valid JSON ({e}); {what}.") from None
    except RecursionError:  # arrays or objects nested ~1,000 deep: no such file of ours
        raise JsonFileError(f"{path}: JSON nested too deeply to read; {what}.") from None
    if not isinstance(value, dict):
        raise JsonFileError(
            f"{path}: holds a JSON {type(value).__name__}, not an object; {what}."
        )
    return value
