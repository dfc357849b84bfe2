"""A TF Serving base directory, added to and never rewritten (issue #35).

    BASE/NAME/VERSION/            a SavedModel (`export_saved_model`, atomic)
    BASE/models.config            TF Serving's model list: one `config { ... }`
                                  entry per model. zoo export adds its model's
                                  entry and keeps every other entry verbatim
                                  (comments and layout included).
    BASE/batching_parameters.txt  batching settings, and
    BASE/README.md                the server command: written only when absent
                                  or ours (their first line says so); a user's
                                  own file is kept, and ours goes beside it
                                  (batching_parameters.zoo.txt, README.zoo.md).

An entry for NAME that is not ours is a conflict, refused before the version
is written unless `overwrite` (--force), which points it at BASE/NAME: an
entry with another base_path (TF Serving would serve the other model under
the name), or BASE/NAME holding versions zoo did not write (TF Serving
serves the highest version, so ours would replace the user's). A
models.config this module cannot read is refused, never overwritten.

models.config is protobuf text format (a `ModelServerConfig`). Reading it
with tensorflow-serving-api would add a dependency for one message; a small
scanner suffices (`parse_text_proto`): strings with escapes, `#` comments,
`{}` and `<>` messages, lists, scalars. It keeps every field's offsets, so
an entry can be replaced or added without touching the rest of the text.

models.config is read only when it is a regular file of at most
`MAX_CONFIG_BYTES` (1 MB: an entry is about 150 bytes, a few hundred with a
version policy, so that is thousands of models; a 100 MB file would cost
gigabytes of tokens), and messages may nest `MAX_DEPTH` (32) levels (a
ModelServerConfig nests 5: model_config_list, config, model_version_policy,
specific, and a list), so a hostile file is refused with a line, not by
memory or Python's recursion limit.

The package, one job a module, bottom to top: `text_proto` (the scanner),
`models_config` (models.config read, checked for conflicts, merged with a
model's entry) and `server_files` (the batching parameters and the README,
and `write_serving_files`). This module re-exports their names.
"""

from __future__ import annotations

from export.serving_config.models_config import (
    CONFIG,
    CONFIG_HEADER,
    MAX_CONFIG_BYTES,
    VERSION_KINDS,
    ModelsConfig,
    ServingBaseError,
    check_serving_base,
    config_entry,
    conflicts,
    read_models_config,
)
from export.serving_config.server_files import (
    BATCHING,
    BATCHING_HEADER,
    OWN_BATCHING,
    OWN_README,
    README,
    README_HEADER,
    write_serving_files,
)
from export.serving_config.text_proto import (
    MAX_DEPTH,
    Field,
    Scalar,
    TextProtoError,
    parse_text_proto,
)

# The names importable from export.serving_config, wherever in the package
# they live.
__all__ = [
    "BATCHING",
    "BATCHING_HEADER",
    "CONFIG",
    "CONFIG_HEADER",
    "MAX_CONFIG_BYTES",
    "MAX_DEPTH",
    "OWN_BATCHING",
    "OWN_README",
    "README",
    "README_HEADER",
    "VERSION_KINDS",
    "Field",
    "ModelsConfig",
    "Scalar",
    "ServingBaseError",
    "TextProtoError",
    "check_serving_base",
    "config_entry",
    "conflicts",
    "parse_text_proto",
    "read_models_config",
    "write_serving_files",
]
