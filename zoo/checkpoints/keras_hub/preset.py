"""A keras-hub preset before any model is built: preset names and
directories, config.json typed into an `EncoderConfig`, the other preset
files checked, keras-hub imported (an optional dependency) and its loader
called. `is_preset_dir` and `preset_config` on a directory need no keras-hub."""

from __future__ import annotations

import dataclasses
import pathlib

from zoo.checkpoints.config_fields import (
    KERAS_HUB_FIELDS,
    checked,
    read_bool,
    read_fields,
    read_int,
)
from zoo.checkpoints.keras_hub.names import (
    BACKBONES,
    INSTALL,
    LAYER_NORM_EPSILON,
    NAME_PREFIXES,
    ZOO_PRESET_FILE,
)
from zoo.configs import EncoderConfig
from zoo.utils.file_record import list_files
from zoo.utils.jsonfile import JsonFileError, read_json_object


def import_keras_hub(why="reading or writing keras-hub models"):
    """The keras_hub module, or an ImportError saying how to install it."""
    try:
        # Optional dependency (the keras-hub extra): only these conversions use it.
        import keras_hub
    except ImportError:
        raise ImportError(
            f"{why} needs keras-hub, an optional dependency of bert-zoo: {INSTALL}."
        ) from None
    return keras_hub


def is_preset_name(value) -> bool:
    return isinstance(value, str) and value.startswith(NAME_PREFIXES)


def _preset_argument(name):
    """What keras-hub's `from_preset` takes for a preset name."""
    return name[len("keras_hub:") :] if name.startswith("keras_hub:") else name


def _preset_json(path, name):
    """`name`'s JSON object in preset directory `path`, or None when absent."""
    file = pathlib.Path(path) / name
    if not file.is_file():
        return None
    return read_json_object(file, "re-save the preset with keras-hub's save_to_preset")


def is_preset_dir(path) -> bool:
    """True for a directory keras-hub's `save_to_preset` wrote (config.json
    naming a `keras_hub>` class, beside model.weights.h5 or its shards)."""
    path = pathlib.Path(path)
    if not (path / "config.json").is_file():
        return False
    try:
        config = _preset_json(path, "config.json")
    except (JsonFileError, OSError):  # not ours to judge: the other readers say why
        return False
    registered = config.get("registered_name")
    return isinstance(registered, str) and registered.startswith("keras_hub>")


def _config_from_backbone_json(config, where, activation=None):
    """EncoderConfig of a backbone's serialized config (config.json): every
    field typed and in range (`config_fields.KERAS_HUB_FIELDS`) and the
    model's memory within the limit, before keras-hub or the zoo builds it."""
    if not isinstance(config, dict):
        raise ValueError(f"{where}: expected a JSON object, not {type(config).__name__}.")
    registered = config.get("registered_name", "")
    name = registered.removeprefix("keras_hub>") if isinstance(registered, str) else ""
    if name not in BACKBONES:
        raise ValueError(
            f"{where}: a keras-hub {name or str(config.get('class_name'))[:80]!r}; the zoo "
            f"reads {', '.join(BACKBONES)} (and their TextClassifier tasks)."
        )
    args = config.get("config") or {}
    fields = read_fields(args, KERAS_HUB_FIELDS[name], where, f"keras-hub {name}")
    fields["layer_norm_epsilon"] = LAYER_NORM_EPSILON
    if name == "BertBackbone":
        config = EncoderConfig(**fields, activation=activation or "gelu_tanh")
    elif name == "DistilBertBackbone":
        config = EncoderConfig(
            **fields, num_segments=0, family="distilbert", activation=activation or "gelu"
        )
    else:
        repetitions = read_int(args, "num_inner_repetitions", where, 1, 1, 1 << 10)
        if repetitions != 1:
            raise ValueError(
                f"{where}: AlbertBackbone num_inner_repetitions={repetitions}; the zoo's "
                "ALBERT (as every released ALBERT) runs each shared block once per layer (1)."
            )
        config = EncoderConfig(
            **fields, family="albert", activation=activation or "gelu_tanh"
        )
    return checked(config, where)


def preset_config(path) -> EncoderConfig:
    """The encoder configuration of a preset, from its config.json, without
    loading weights: what `checkpoint_config` reports. A local directory
    needs no keras-hub; a name is read by keras-hub's loader."""
    if is_preset_name(path):
        import_keras_hub(f"reading the keras-hub preset {path}")
        # keras-hub's loader's helper (pinned keras-hub 0.32.*): one file of a
        # preset, fetched or cached as `from_preset` would.
        from keras_hub.src.utils import preset_utils

        config = preset_utils.load_json(_preset_argument(path), "config.json")
        return _config_from_backbone_json(config, f"{path} config.json")
    config = _preset_json(path, "config.json")
    return _config_from_backbone_json(config, pathlib.Path(path) / "config.json")


def _load_preset(preset):
    """`(keras-hub task or backbone, tokenizer, preprocessor)` of a preset
    directory or name, through keras-hub's own loader."""
    kh = import_keras_hub(f"reading the keras-hub preset {preset}")
    # keras-hub's loader's helpers (pinned keras-hub 0.32.*): whether a file is
    # in a preset, local or remote, without loading it; keras-hub has no public
    # "which task does this preset hold".
    from keras_hub.src.utils import preset_utils

    def has(file):
        return preset_utils.check_file_exists(preset, file)

    if has("task.json"):
        task_class = preset_utils.check_config_class(
            preset_utils.load_json(preset, "task.json")
        )
        if issubclass(task_class, kh.models.TextClassifier):
            task = task_class.from_preset(preset)
            return task, None, task.preprocessor
    backbone = kh.models.Backbone.from_preset(preset)
    tokenizer = (
        kh.tokenizers.Tokenizer.from_preset(preset) if has("tokenizer.json") else None
    )
    preprocessor = None
    if has("preprocessor.json"):
        config = preset_utils.load_json(preset, "preprocessor.json").get("config", {})
        preprocessor = _Length(config.get("sequence_length"))
    return backbone, tokenizer, preprocessor


def _check_preset(path):
    """What keras-hub's `from_preset` would build and open, checked first:
    config.json's sizes (typed, in range, within the memory limit); for a
    local directory also tokenizer.json, task.json and preprocessor.json's
    fields (a string "false" is not a bool; a vocabulary is read from the
    preset's own assets/, never from a path the file names) and every file
    under assets/ a regular file inside the preset."""
    preset_config(path)
    if is_preset_name(str(path)):
        return
    path = pathlib.Path(path)
    tokenizer = _preset_json(path, "tokenizer.json")
    if tokenizer is not None:
        where = path / "tokenizer.json"
        args = tokenizer.get("config") or {}
        if not isinstance(args, dict):
            raise ValueError(f"{where}: config is {type(args).__name__}, not an object.")
        for key in (
            "lowercase",
            "strip_accents",
            "split",
            "split_on_cjk",
            "special_tokens_in_strings",
        ):
            read_bool(args, key, where, None)
        vocabulary = args.get("vocabulary")
        if vocabulary is not None:
            raise ValueError(
                f"{where}: vocabulary={str(vocabulary)[:80]!r}; keras-hub's save_to_preset "
                "writes null here and keeps the vocabulary in the preset's assets/tokenizer/. "
                "A preset that points elsewhere would read a file from outside it; re-save "
                "the preset with save_to_preset."
            )
    task = _preset_json(path, "task.json")
    if task is not None and isinstance(task.get("config"), dict):
        if "num_classes" in task["config"]:
            read_int(task["config"], "num_classes", path / "task.json", None, 1, 1 << 20)
    preprocessor = _preset_json(path, "preprocessor.json")
    if preprocessor is not None and isinstance(preprocessor.get("config"), dict):
        if preprocessor["config"].get("sequence_length") is not None:
            read_int(
                preprocessor["config"],
                "sequence_length",
                path / "preprocessor.json",
                None,
                1,
                1 << 16,
            )
    assets = path / "assets"
    if assets.is_dir():
        # Types from lstat, nothing opened; a link could name a file outside.
        _, refused = list_files(assets)
        if refused:
            name, what = next(iter(refused.items()))
            raise ValueError(
                f"{assets / name}: {what}, not a regular file in the preset's assets; "
                "keras-hub would open what it names. Re-save the preset."
            )


@dataclasses.dataclass
class _Length:
    """A preprocessor as far as the conversion reads one: its length."""

    sequence_length: int | None


def _labels_beside(preset):
    if isinstance(preset, (str, pathlib.Path)) and not is_preset_name(str(preset)):
        saved = _preset_json(preset, ZOO_PRESET_FILE)
        if saved is not None and isinstance(saved.get("labels"), list):
            return saved["labels"]
    return None
