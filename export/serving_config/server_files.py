"""The files of a TF Serving base beside models.config: the batching
parameters and the README with the server command, each written only where
it is ours (a user's own file is kept and ours goes beside it), and
`write_serving_files`, which adds models to models.config and writes them."""

from __future__ import annotations

import os
import pathlib

from export.serving_config.models_config import (
    CONFIG,
    _merged_config,
    _our_version,
    _versions,
    read_models_config,
)
from zoo.utils.atomic import atomic_file
from zoo.utils.safe_files import open_regular

BATCHING = "batching_parameters.txt"
README = "README.md"
# Where ours go when the user has their own batching_parameters.txt / README.md.
OWN_BATCHING = "batching_parameters.zoo.txt"
OWN_README = "README.zoo.md"
# The first line of each file we write: how a later export knows it is ours.
BATCHING_HEADER = (
    "# written by `zoo export`, which rewrites this file; delete this line to keep "
    "your edits\n"
)
README_HEADER = (
    "<!-- written by `zoo export`, which rewrites this file; delete this line to keep "
    "your edits -->\n"
)
# Batching as an earlier zoo wrote it (no header line): still ours.
_BATCHING_BODY = (
    "max_batch_size { value: 32 }\n"
    "batch_timeout_micros { value: 5000 }\n"
    "max_enqueued_batches { value: 100 }\n"
    "num_batch_threads { value: 2 }\n"
)
_LEGACY_README = "# TF Serving models exported by `zoo export`\n"
# How much of batching_parameters.txt / README.md is read to tell whether
# it is ours (by its first line, or equality with a few-line body).
_HEAD_BYTES = 1 << 16


def _ours(path, header, legacy):
    """Whether a file of BASE is ours to rewrite: absent, or starting with
    our header line (or an older zoo's text)."""
    if not path.exists() and not path.is_symlink():
        return True
    if path.is_symlink() or not path.is_file():
        return False
    try:
        # Ours are a few kB: the head decides (a longer file is not equal to
        # our body, and only our first line counts).
        with open_regular(path, "rb") as f:
            text = f.read(_HEAD_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return False
    return text.startswith(header) or legacy(text)


def _target(base, name, own, header, legacy, kept):
    """Where to write BASE/NAME: there when it is ours (`_ours`), else at
    BASE/OWN (noting the user's file in `kept`), else nowhere (None)."""
    path = base / name
    if _ours(path, header, legacy):
        return path
    kept.append(path)
    if _ours(base / own, header, lambda text: False):
        return base / own
    kept.append(base / own)
    return None


def _write(path, text):
    with atomic_file(path, "w") as f:
        f.write(text)
    # Readable by the server's user (a temporary file is created 0600).
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(path, 0o666 & ~umask)


def write_serving_files(base_dir, name=None, *, overwrite=False):
    """Add BASE/NAME to BASE/models.config (every other entry kept verbatim)
    and write the batching parameters and the README with the server
    command where they are ours. `name=None` adds every BASE/NAME that holds
    a version zoo wrote. Returns what was written and kept:
    `{"command", "models_config", "batching", "readme", "kept"}`."""
    base = pathlib.Path(base_dir).resolve()
    if name is None:
        names = sorted(
            p.name
            for p in base.iterdir()
            if p.is_dir() and any(map(_our_version, _versions(p)))
        )
    else:
        names = [name]
    for n in names:
        text = _merged_config(base, n, overwrite)
        if text is not None:
            _write(base / CONFIG, text)
    served = read_models_config(base).names()
    kept = []
    batching = _target(
        base, BATCHING, OWN_BATCHING, BATCHING_HEADER, _BATCHING_BODY.__eq__, kept
    )
    # Requests carry a handful of texts; batch them server-side. Sizes match
    # what a 2-4 core CPU server sustains at sequence length 128; raise
    # max_batch_size on bigger machines.
    if batching is not None:
        _write(batching, BATCHING_HEADER + _BATCHING_BODY)
    else:  # both are the user's: the server command names theirs
        batching = base / BATCHING
    command = (
        "tensorflow_model_server --port=8500 --rest_api_port=8501 \\\n"
        f"  --model_config_file={base / CONFIG} \\\n"
        "  --enable_batching=true \\\n"
        f"  --batching_parameters_file={batching}"
    )
    readme = _target(
        base,
        README,
        OWN_README,
        README_HEADER,
        lambda t: t.startswith(_LEGACY_README),
        kept,
    )
    first = (names or served or ["NAME"])[0]
    if readme is not None:
        _write(
            readme, README_HEADER + _readme(base, served, first, command, batching, kept)
        )
    return {
        "command": command,
        "models_config": base / CONFIG,
        "batching": batching,
        "readme": readme,
        "kept": kept,
    }


def _readme(base, served, first, command, batching, kept):
    note = ""
    if kept:
        note = (
            "\nKept as they were (yours, not written by zoo export): "
            + ", ".join(f"`{p.name}`" for p in kept)
            + ".\n"
        )
    return f"""# TF Serving models exported by `zoo export`

Models in `models.config`: {", ".join(served) or "(none)"}. Each `NAME/VERSION/` that
zoo export wrote is a SavedModel; TF Serving serves the highest version and picks up
new ones as they appear (each version is published by an atomic rename, so the
server never sees a half-written one). zoo export adds its models' entries to
`models.config` and keeps every other entry as it is.
{note}
Serve them:

```
{command}
```

The binary must be a build that links tensorflow-text's ops (the stock
`tensorflow/serving` images do since 2.x; the text-in signatures need
`FastWordpieceTokenizer` and `tf.strings` ops). Docker:

```
docker run -p 8500:8500 -p 8501:8501 -v {base}:{base} tensorflow/serving:2.20.0 \\
  --model_config_file={base / CONFIG} --enable_batching=true \\
  --batching_parameters_file={batching}
```

Query (REST, raw text in):

```
curl -s -d '{{"signature_name": "serving_default", "inputs": {{"text": ["The striker scored twice."]}}}}' \\
  localhost:8501/v1/models/{first}:predict
```

Text-in models (metadata.json `kind: saved_model`) have the signatures
`serving_default` (text), `serve_text_pair` (text, text_b), `serve_ids` (token_ids,
segment_ids, padding_mask; int32 [B, T]) and `tokenize`; TPU models
(`kind: tpu_saved_model`) take ids at fixed bucket shapes (`serve_ids_L128`, ...),
tokenized on the host with the version's vocab.txt. Each version directory holds `metadata.json` (labels, sequence length, vocabulary sha256),
`manifest.json` (sha256 of every file) and `validation.json` (the comparison with the
Keras model in TF Serving's own loader path).
"""
