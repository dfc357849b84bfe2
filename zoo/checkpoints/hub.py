"""Checkpoints named on the Hugging Face Hub: `hf://OWNER/NAME[@REVISION]`.

    local = fetch("hf://sentence-transformers/all-MiniLM-L6-v2")
    local.path       # a snapshot folder in the Hub cache, read like any HF folder
    local.source     # "hf://sentence-transformers/all-MiniLM-L6-v2@<40-hex commit>"

Every place that reads a checkpoint takes such a name (`zoo.load_checkpoint`,
the `from_checkpoint` of the text models, `zoo convert SRC`, `--model`,
`--teacher`); `fetch` downloads through `huggingface_hub`, so its cache and
settings work as users expect: `HF_HOME` / `HF_HUB_CACHE` (where files go),
`HF_TOKEN` (gated and private repositories), `HF_HUB_OFFLINE=1` (the cache
only, no request), `HF_ENDPOINT` (a mirror). Only the files a BERT-family
checkpoint needs are fetched (`FILES`: config, safetensors weights,
vocabulary, tokenizer settings, the sentence-transformers pooling config),
with huggingface_hub's progress bars. The commit the name resolved to is
what commands record (`source`), so a run can be traced to exact weights.

`pytorch_model.bin` is never read: it is a pickle, and unpickling a file
from the network runs whatever code it carries. A repository that has only
that file is refused with the reason and what to do.

A name is checked before anything is asked or read: the repository id as
the Hub spells one (`huggingface_hub`'s own `validate_repo_id`: no `..` or
`--`, which would collide in the cache's `models--OWNER--NAME` folders),
and the revision as `git check-ref-format` would (`ref_problem`), since
huggingface_hub joins it into a cache path (`refs/REVISION`) unchecked:
`@main/../../../x` would read a ref file outside the repository's folder.
After the download, the snapshot and every file in it (links into
`blobs/`, in the cache's layout) must resolve inside that repository's
cache folder, `<cache>/models--OWNER--NAME/`; a snapshot or file linked
elsewhere is refused, naming it.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import re

import huggingface_hub
from huggingface_hub import constants as hub_constants
from huggingface_hub import errors as hub_errors
from huggingface_hub.file_download import repo_folder_name
from huggingface_hub.utils import HFValidationError, validate_repo_id

PREFIX = "hf://"
# What a BERT, DistilBERT, ALBERT or RoBERTa checkpoint needs, and no more: not the
# other frameworks' weights (pytorch_model.bin, tf_model.h5, onnx/), not
# READMEs or training logs.
FILES = [
    "config.json",
    "model.safetensors",
    "model-*.safetensors",
    "model.safetensors.index.json",
    "vocab.txt",
    "vocab.json",
    "merges.txt",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "spiece.model",
    "modules.json",
    "sentence_bert_config.json",
    "1_Pooling/config.json",
]
_REPO = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*")
_COMMIT = re.compile(r"[0-9a-f]{40}")
# git check-ref-format: no ASCII control character, space, ~ ^ : ? * [ or \.
_REF_BAD_CHARACTER = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]")
MAX_REVISION = 255  # git has no bound; a file name in the cache does


class HubError(ValueError):
    """A Hub name that cannot be fetched; the message says why and what to do."""


@dataclasses.dataclass(frozen=True)
class HubCheckpoint:
    name: str  # as given: hf://OWNER/NAME[@REVISION]
    repo_id: str
    revision: str  # as asked ("main" when none)
    sha: str  # the commit it resolved to
    path: pathlib.Path  # the local snapshot folder

    @property
    def source(self) -> str:
        return f"{PREFIX}{self.repo_id}@{self.sha}"

    def provenance(self) -> dict:
        """What a model directory records about where its weights came from."""
        return {
            "source": self.source,
            "source_format": "hf",
            "hub_repo": self.repo_id,
            "hub_revision": self.revision,
            "hub_commit": self.sha,
            "hub_endpoint": hub_constants.ENDPOINT,
        }


def is_hub_name(value) -> bool:
    return isinstance(value, str) and value.startswith(PREFIX)


def ref_problem(revision):
    """Why `revision` is not a 40-hex commit or a ref name by `git
    check-ref-format --branch`'s rules, or None."""
    if _COMMIT.fullmatch(revision):
        return None
    if len(revision) > MAX_REVISION:
        return f"it is {len(revision)} characters long, over {MAX_REVISION}"
    bad = _REF_BAD_CHARACTER.search(revision)
    if bad:
        return (
            f"it contains {bad.group()!r} (a space, control character or one of ~^:?*[\\)"
        )
    rules = [
        (".." in revision, "it contains '..'"),
        ("@{" in revision, "it contains '@{'"),
        (revision == "@", "it is '@' alone"),
        (revision.startswith("-"), "it starts with '-'"),
        (revision.startswith("/") or revision.endswith("/"), "it starts or ends with '/'"),
        ("//" in revision, "it contains '//'"),
        (revision.endswith("."), "it ends with '.'"),
    ]
    for broken, why in rules:
        if broken:
            return why
    for part in revision.split("/"):
        if part.startswith("."):
            return f"its component {part!r} starts with '.'"
        if part.endswith(".lock"):
            return f"its component {part!r} ends with '.lock'"
    return None


def parse(name):
    """`(repo_id, revision)` of `hf://OWNER/NAME[@REVISION]`; `HubError`
    saying which rule a malformed repository id or revision breaks."""
    rest = name[len(PREFIX) :]
    repo_id, at, revision = rest.partition("@")
    usage = (
        "write hf://OWNER/NAME or hf://OWNER/NAME@REVISION (a branch, tag or 40-hex "
        "commit), e.g. hf://sentence-transformers/all-MiniLM-L6-v2."
    )
    why = None
    if not _REPO.fullmatch(repo_id):
        why = f"{repo_id!r} is not OWNER/NAME (letters, digits, '.', '_', '-')"
    else:
        try:
            validate_repo_id(repo_id)
        except HFValidationError as e:
            why = f"{repo_id!r} is not a Hub repository id ({e})"
    if why is None and at:
        problem = "it is empty" if not revision else ref_problem(revision)
        if problem:
            why = f"the revision {revision[:80]!r} is not a git ref name ({problem})"
    if why:
        raise HubError(f"{name[:200]!r}: not a Hub name: {why}; {usage}")
    return repo_id, revision or "main"


def check_inside_cache(name, repo_id, path, cache):
    """`HubError` unless the snapshot `path` and every file under it resolve
    (links followed, as a reader would) inside `repo_id`'s folder of the
    cache: a snapshot or file linked elsewhere is not what the Hub served
    for this name."""
    folder = os.path.realpath(
        os.path.join(cache, repo_folder_name(repo_id=repo_id, repo_type="model"))
    )

    def outside(p):
        real = os.path.realpath(p)
        return real != folder and not real.startswith(folder + os.sep)

    found = [path] if outside(path) else []
    if not found:
        for root, dirs, files in os.walk(path, followlinks=False):
            found += [
                os.path.join(root, n)
                for n in dirs + files
                if outside(os.path.join(root, n))
            ]
    if found:
        shown = ", ".join(f"{p} -> {os.path.realpath(p)}" for p in found[:3])
        raise HubError(
            f"{name}: the cache's copy of {repo_id} leads outside its folder {folder}: "
            f"{shown}{' ...' if len(found) > 3 else ''}. The cache was edited (a link or a "
            f"ref planted); remove {folder} and fetch it again."
        )


def fetch(name) -> HubCheckpoint:
    """Download (or find in the cache) the checkpoint files of `name`."""
    repo_id, revision = parse(name)
    endpoint = hub_constants.ENDPOINT
    offline = hub_constants.HF_HUB_OFFLINE
    cache = _cache()
    try:
        path = pathlib.Path(
            huggingface_hub.snapshot_download(
                repo_id, revision=revision, allow_patterns=FILES, cache_dir=cache
            )
        )
    except hub_errors.GatedRepoError:
        raise HubError(
            f"{name}: a gated repository; accept its conditions on the Hub with your account, "
            "then give a token: set HF_TOKEN (or run `hf auth login`)."
        ) from None
    except hub_errors.RevisionNotFoundError:
        raise HubError(
            f"{name}: {repo_id} has no revision {revision!r} (a branch, tag or commit)."
        ) from None
    except hub_errors.RepositoryNotFoundError:
        token = "set" if huggingface_hub.get_token() else "not set"
        raise HubError(
            f"{name}: no repository {repo_id} at {endpoint} (or a private one your token cannot "
            f"read; HF_TOKEN is {token}). Check the name."
        ) from None
    except hub_errors.LocalEntryNotFoundError:
        if offline:
            raise HubError(
                f"{name}: HF_HUB_OFFLINE is set and the cache ({_cache()}) holds no copy of "
                f"{repo_id}@{revision}; run once with the network, or unset HF_HUB_OFFLINE."
            ) from None
        raise HubError(
            f"{name}: cannot reach {endpoint} and the cache ({_cache()}) holds no copy. "
            "Check the network (or HF_ENDPOINT); with a cached copy, HF_HUB_OFFLINE=1 uses it "
            "without asking the Hub."
        ) from None
    except hub_errors.HfHubHTTPError as e:
        status = getattr(getattr(e, "response", None), "status_code", None)
        if status in (401, 403):
            raise HubError(
                f"{name}: the Hub refused access (HTTP {status}); set HF_TOKEN to a token that "
                "can read it."
            ) from None
        raise HubError(
            f"{name}: the Hub answered HTTP {status} ({str(e)[:200]})."
        ) from None
    check_inside_cache(name, repo_id, path, cache)
    if not any(path.glob("*.safetensors")):
        raise HubError(_no_safetensors(name, repo_id, revision, offline))
    return HubCheckpoint(name, repo_id, revision, path.name, path)


def _no_safetensors(name, repo_id, revision, offline):
    files = []
    if not offline:
        try:
            files = huggingface_hub.list_repo_files(repo_id, revision=revision)
        except (hub_errors.HfHubHTTPError, OSError):
            files = []
    if "pytorch_model.bin" in files:
        return (
            f"{name}: the repository has pytorch_model.bin but no model.safetensors. bert-zoo "
            "does not read .bin files: they are pickles, and loading one runs any code it "
            "carries. Pick a revision with model.safetensors, or convert it on a machine you "
            "trust (transformers: model.save_pretrained(dir, safe_serialization=True)) and "
            "give that folder."
        )
    return f"{name}: no model.safetensors in {repo_id}@{revision}; not a checkpoint this zoo reads."


def _cache():
    """The cache folder: huggingface_hub's (HF_HUB_CACHE, else HF_HOME/hub, read
    when it was imported), passed to it explicitly so that the folder
    checked is the folder written."""
    return os.environ.get("HF_HUB_CACHE") or hub_constants.HF_HUB_CACHE


def resolve(path):
    """`(local path, provenance or None)`: a Hub name fetched, anything else
    as it is."""
    if is_hub_name(path):
        checkpoint = fetch(path)
        return checkpoint.path, checkpoint.provenance()
    return path, None
