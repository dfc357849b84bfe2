"""BASE/models.config, TF Serving's model list: read (a bounded regular
file holding one model_config_list), checked for what adding BASE/NAME
would take from the user (`conflicts`, `check_serving_base`), and merged
with BASE/NAME's entry, every other entry kept verbatim."""

from __future__ import annotations

import dataclasses
import pathlib
import re

from export.serving_config.text_proto import TextProtoError, parse_text_proto
from zoo.utils.atomic import check_replaceable, written_by_zoo
from zoo.utils.jsonfile import read_json_object
from zoo.utils.safe_files import UnsafeFileError, read_bounded

CONFIG = "models.config"
# The first line of a models.config that zoo export starts (the file absent
# or blank).
CONFIG_HEADER = (
    "# TF Serving's model list. `zoo export` adds its models' entries and keeps every "
    "other entry as it is.\n"
)
# A version directory whose metadata.json names one of these kinds is ours
# (an older zoo wrote no marker).
VERSION_KINDS = ("saved_model", "tpu_saved_model")
# models.config is read up to this size (the package docstring says why).
MAX_CONFIG_BYTES = 1 << 20


class ServingBaseError(ValueError):
    """A TF Serving base that zoo export would have to overwrite to add a model."""


def _quote(value):
    return (
        '"'
        + str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        + '"'
    )


def config_entry(name, base_path, indent="  "):
    """models.config's entry for one model, as zoo export writes it."""
    inner = indent + "  "
    return (
        f"{indent}config {{\n"
        f"{inner}name: {_quote(name)}\n"
        f"{inner}base_path: {_quote(base_path)}\n"
        f'{inner}model_platform: "tensorflow"\n'
        f"{indent}}}\n"
    )


@dataclasses.dataclass
class ModelsConfig:
    """A parsed models.config: its text, the `config` entries of its
    model_config_list, and where that list closes (None: no list yet)."""

    path: pathlib.Path
    text: str
    entries: list
    close: int | None

    def named(self, name):
        return [e for e in self.entries if e.string("name") == name]

    def names(self):
        return [e.string("name") for e in self.entries if e.string("name")]


def read_models_config(base):
    """BASE/models.config, parsed (an empty one when there is none). Raises
    `ServingBaseError` for a file that cannot be read as TF Serving's
    ModelServerConfig with a model_config_list."""
    path = pathlib.Path(base) / CONFIG
    fix = (
        "zoo export adds its model to this file and never overwrites it: fix the file "
        "(TF Serving could not read it either), move it away, or give another --out."
    )
    if not path.exists() and not path.is_symlink():
        return ModelsConfig(path, "", [], None)
    if not path.is_file():
        raise ServingBaseError(f"{path} is not a file; {fix}")
    try:
        data = read_bounded(
            path,
            MAX_CONFIG_BYTES,
            "TF Serving's models.config lists each model in a few hundred bytes; zoo "
            "export adds to it and never overwrites it: fix the file, move it away, or "
            "give another --out",
        )
    except UnsafeFileError as e:
        raise ServingBaseError(str(e)) from None
    try:
        text = data.decode("utf-8")
        fields = parse_text_proto(text)
    except (OSError, UnicodeDecodeError, TextProtoError) as e:
        raise ServingBaseError(
            f"{path}: cannot read it as TF Serving's models.config ({e}); {fix}"
        ) from None
    lists = [f for f in fields if f.name == "model_config_list"]
    other = sorted({f.name for f in fields} - {"model_config_list"})
    if other or len(lists) > 1 or any(not isinstance(f.value, list) for f in lists):
        what = (
            f"top-level field(s) {', '.join(other)}"
            if other
            else "more than one model_config_list"
            if len(lists) > 1
            else "a model_config_list that is not a message"
        )
        raise ServingBaseError(
            f"{path}: {what} (zoo export adds to a single model_config_list). {fix}"
        )
    if not lists:
        return ModelsConfig(path, text, [], None)
    entries = lists[0].fields("config")
    if any(not isinstance(e.value, list) for e in entries):
        raise ServingBaseError(f"{path}: a `config` that is not a message. {fix}")
    return ModelsConfig(path, text, entries, lists[0].end - 1)


def _same_path(written, ours):
    if written is None:
        return False
    if written == str(ours):
        return True
    path = pathlib.Path(written)
    return path.is_absolute() and path.resolve() == ours


def _our_version(path):
    """A version directory zoo wrote: its marker, or (an older zoo's) a
    metadata.json saying it is a zoo SavedModel."""
    if written_by_zoo(path):
        return True
    try:
        meta = read_json_object(path / "metadata.json")
    except (OSError, ValueError):  # unreadable, too large, or nested too deep
        return False
    return isinstance(meta, dict) and meta.get("kind") in VERSION_KINDS


def _versions(model_dir):
    if not model_dir.is_dir():
        return []
    return sorted(
        (p for p in model_dir.iterdir() if p.is_dir() and p.name.isdigit()),
        key=lambda p: int(p.name),
    )


def conflicts(base, name):
    """Why adding BASE/NAME to BASE's TF Serving config would take something
    from the user (empty when nothing would): an entry NAME serving another
    path, or versions under BASE/NAME that zoo did not write."""
    base = pathlib.Path(base)
    ours = (base / name).resolve()
    config = read_models_config(base)
    found = []
    for entry in config.named(name):
        written = entry.string("base_path")
        if not _same_path(written, ours):
            found.append(
                f"{config.path} serves another model as {name!r} (base_path "
                f"{written!r}, not {str(ours)!r})"
            )
    theirs = [p.name for p in _versions(base / name) if not _our_version(p)]
    if theirs:
        found.append(
            f"{base / name} holds version(s) {', '.join(theirs)} that zoo did not write "
            "(TF Serving serves the highest version: a new one would replace them)"
        )
    return found


def check_serving_base(base, name, version=None, *, overwrite=False):
    """Everything that would refuse adding BASE/NAME/VERSION, checked before
    anything is written: BASE or BASE/NAME a file, models.config unreadable,
    a conflict (`conflicts`) without `overwrite`, an existing VERSION without
    `overwrite` or not written by zoo."""
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", str(name)):
        raise ServingBaseError(
            f"--name {name!r}: use letters, digits, '_', '.', '-' (it is a directory "
            "under the base and a URL path component)."
        )
    base = pathlib.Path(base)
    for path in (base, base / name):
        if path.exists() and not path.is_dir():
            raise ServingBaseError(
                f"{path} is a file; TF Serving's layout needs a directory there "
                "(BASE/NAME/VERSION). Give another --out or --name."
            )
    found = conflicts(base, name)
    if found and not overwrite:
        raise ServingBaseError(
            "; ".join(found)
            + f". Choose another --name, or pass --force to point {name!r} at {base / name} "
            "(the other model's files stay where they are)."
        )
    if version is not None:
        path = base / name / str(version)
        if path.exists() and (path.is_file() or any(path.iterdir())):
            if not overwrite:
                raise FileExistsError(
                    f"{path} already exists; choose another --version (default: the next "
                    "one), or pass --force to replace it (only a version zoo wrote)."
                )
            check_replaceable(path, "--force")


def _merged_config(base, name, overwrite):
    """models.config's new text with BASE/NAME's entry, or None when it
    already has that entry."""
    base = pathlib.Path(base)
    ours = (base / name).resolve()
    config = read_models_config(base)
    same = config.named(name)
    if same and all(_same_path(e.string("base_path"), ours) for e in same):
        return None
    if same and not overwrite:
        raise ServingBaseError("; ".join(conflicts(base, name)))
    text = config.text
    if same:
        # --force: the first entry of that name becomes ours; the rest go
        # (TF Serving refuses a name listed twice).
        first = same[0]
        indent = text[text.rfind("\n", 0, first.start) + 1 : first.start]
        indent = indent if indent and not indent.strip() else "  "
        pieces, at = [], 0
        for e in same:
            pieces.append(text[at : e.start])
            if e is first:  # the span runs from `config` to its `}`
                pieces.append(config_entry(name, ours, indent).strip())
            at = e.end
        pieces.append(text[at:])
        return "".join(pieces)
    entry = config_entry(name, ours)
    if config.close is None:  # no model_config_list yet
        header = "" if text.strip() else CONFIG_HEADER
        separator = "" if not text or text.endswith("\n") else "\n"
        return f"{header}{text}{separator}model_config_list {{\n{entry}}}\n"
    line_start = text.rfind("\n", 0, config.close) + 1
    if text[line_start : config.close].strip():  # `... }` on one line: a new line
        return text[: config.close] + "\n" + entry + text[config.close :]
    return text[:line_start] + entry + text[line_start:]
