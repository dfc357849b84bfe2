"""Reliability corpus, areas "special files", "config sizes and depth" and
"hub names" (issue #43, classes 3 and 4): what a file a user or an artifact
provides could make us open, read or trust too much.

- special files: a FIFO, a socket, a character device (a node equal to
  /dev/zero) or a directory where an artifact's manifest.json or a model
  directory's zoo_model.json lists a file, listed with size 0 as a forger
  would record it (a FIFO's size), or not listed; a checkpoint's config.json
  a FIFO or a link to /dev/zero; a serving base's models.config a FIFO.
  Each must be refused naming the file, in seconds: a case still running
  after 10 s is a hang (its FIFO's other end is then opened to free it).
- config sizes and depth: every JSON file we parse over its size limit or
  nested past its depth limit, and a 100 MB and a 200,000-deep
  models.config, each refused in under 5 s and 1.5 GB (measured in a
  fresh process, whose peak resident memory is read from /proc, VmHWM).
- hub names: revisions that break `git check-ref-format`'s rules, repo ids
  the Hub would refuse, a `..` revision that would read a ref planted
  outside the repository's cache folder, and a cached snapshot (or one of
  its files, or its ref) that leads outside that folder; against the
  loopback Hub server (tests/hub_server.py).
"""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import textwrap

import pytest

from export import manifest as mf
from export import runtime
from export import serving_config as sc
from tests.hub_server import HubServer, Repo
from tests.reliability.corpus import Case, answer, check_case, error
from zoo.checkpoints import checkpoint_config, hub, load_model_dir, save_model_dir
from zoo.text.pretraining.documents import read_documents
from zoo.text.readers import read_classification, read_conll, read_regression, read_squad
from zoo.utils.file_record import record_files

ROOT = pathlib.Path(__file__).resolve().parents[2]
EMPTY_SHA = hashlib.sha256(b"").hexdigest()
WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(40)]
HF_CONFIG = {
    "model_type": "bert",
    "vocab_size": len(WORDS),
    "hidden_size": 8,
    "num_hidden_layers": 1,
    "num_attention_heads": 2,
    "intermediate_size": 16,
    "max_position_embeddings": 16,
    "type_vocab_size": 2,
}


# --- what is put in a file's place ----------------------------------------------------


def _fifo(path):
    os.mkfifo(path)


def _socket(path):
    # AF_UNIX paths are limited to ~108 bytes: bind in a short folder, then move.
    short = pathlib.Path(tempfile.mkdtemp(dir="/tmp")) / "s"
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(short))
    os.rename(short, path)
    short.parent.rmdir()


def _device(path):
    try:  # the same device as /dev/zero: reading it never ends
        os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(1, 5))
    except PermissionError:
        pytest.skip("creating a device node needs root")


def _directory(path):
    path.mkdir()


SPECIAL = {"FIFO": _fifo, "socket": _socket, "device": _device, "directory": _directory}


def _release(path):
    """Open a FIFO's writing end and close it, so a reader blocked on it
    gets end-of-file (used only when a case hangs)."""

    def release():
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass

    return release


def _replace(path, what):
    if path.is_dir():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()
    SPECIAL[what](path)


# --- fixtures: a tiny model directory and a stand-in artifact ------------------------


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    import zoo
    from zoo.text.tokenizer import WordPieceTokenizer

    root = tmp_path_factory.mktemp("special")
    encoder = zoo.BertEncoder(
        vocabulary_size=len(WORDS),
        num_layers=1,
        num_heads=2,
        hidden_dim=8,
        intermediate_dim=16,
        max_sequence_length=16,
    )
    save_model_dir(
        zoo.Classifier(encoder, 2, labels=["x", "y"]),
        root / "model",
        WordPieceTokenizer(WORDS),
    )
    return root / "model"


def _artifact(root):
    """The files of an artifact and its manifest: every loader's first
    check (`verify_manifest`, in `runtime.open_artifact`) reads only these."""
    root.mkdir(parents=True)
    (root / "model.tflite").write_bytes(b"TFL3" + bytes(64))
    (root / "vocab.txt").write_text("\n".join(WORDS) + "\n")
    (root / "metadata.json").write_text(json.dumps({"format": mf.METADATA_FORMAT}))
    mf.write_manifest(root)
    return root


def _record(directory, record_file, names, size=0, sha=EMPTY_SHA):
    """Write `names` into the record (manifest.json or zoo_model.json's
    `files`) with `size` and `sha`, as a forger regenerating it would."""
    path = directory / record_file
    meta = json.loads(path.read_text())
    for name in names:
        meta["files"][name] = {"size": size, "sha256": sha}
    path.write_text(json.dumps(meta))


# --- area "special files" -------------------------------------------------------------

WHERE = ["artifact", "model directory"]
HOW = ["listed size 0", "unlisted", "as recorded"]
SPECIAL_CASES = [
    f"{where}: {what} {how}"
    for where in WHERE
    for what in SPECIAL
    for how in HOW
    if not (what == "directory" and how == "unlisted")  # a folder is not a file to list
] + [
    "model directory: zoo_model.json a FIFO",
    "artifact: manifest.json a FIFO",
    "checkpoint: config.json a FIFO",
    "checkpoint: config.json a link to /dev/zero",
    "checkpoint: vocab.txt a FIFO",
    "serving base: models.config a FIFO",
    "serving base: a version's metadata.json a FIFO",
    # --data: every reader (and a FIFO inside a folder of class folders or of
    # pretraining text) refuses it unopened instead of blocking on it.
    *[
        f"data: {form} a FIFO"
        for form in (
            "train.csv",
            "train.jsonl",
            "scores.tsv",
            "squad.json",
            "ner.conll",
            "class folder pos/b.txt",
            "pretraining folder b.txt",
        )
    ],
]


def _special_case(name, tmp_path, model_dir):
    if name.startswith(("artifact:", "model directory:")) and " a FIFO" not in name:
        where, rest = name.split(": ")
        what, how = rest.split(" ", 1)
        if where == "artifact":
            directory = _artifact(tmp_path / "artifact")
            record_file, target, load = "manifest.json", "vocab.txt", runtime.open_artifact
        else:
            directory = tmp_path / "model"
            shutil.copytree(model_dir, directory)
            record_file, target, load = "zoo_model.json", "extra.txt", load_model_dir
            (directory / target).write_text("extra\n")
            meta = json.loads((directory / record_file).read_text())
            meta["files"] = record_files(directory, skip={record_file})
            (directory / record_file).write_text(json.dumps(meta))
        if how == "unlisted":
            target = "planted"
        path = directory / target
        _replace(path, what)
        if how == "listed size 0":
            _record(directory, record_file, [target])
        return Case(
            name,
            lambda: load(directory),
            "error",
            (target,),
            timeout=10,
            release=_release(path),
        )
    if name == "model directory: zoo_model.json a FIFO":
        directory = tmp_path / "model"
        shutil.copytree(model_dir, directory)
        path = directory / "zoo_model.json"
        _replace(path, "FIFO")
        return Case(name, lambda: load_model_dir(directory), "error", (str(directory),),
                    timeout=10, release=_release(path))  # fmt: skip
    if name == "artifact: manifest.json a FIFO":
        directory = _artifact(tmp_path / "artifact")
        path = directory / "manifest.json"
        _replace(path, "FIFO")
        return Case(name, lambda: runtime.open_artifact(directory), "error",
                    ("manifest.json",), timeout=10, release=_release(path))  # fmt: skip
    if name.startswith("checkpoint:"):
        directory = tmp_path / "checkpoint"
        directory.mkdir()
        (directory / "config.json").write_text(json.dumps(HF_CONFIG))
        (directory / "model.safetensors").write_bytes(b"")
        (directory / "vocab.txt").write_text("\n".join(WORDS) + "\n")
        if "vocab.txt" in name:
            path = directory / "vocab.txt"
            _replace(path, "FIFO")
            from zoo.checkpoints import _vocab_path

            run = lambda: _vocab_path(directory, "hf")  # noqa: E731 - where vocab.txt is found
            return Case(name, run, "error", ("vocab.txt",), timeout=10,
                        release=_release(path))  # fmt: skip
        path = directory / "config.json"
        path.unlink()
        if "FIFO" in name:
            _fifo(path)
        else:
            path.symlink_to("/dev/zero")
        return Case(name, lambda: checkpoint_config(directory), "error", (str(directory),),
                    timeout=10, release=_release(path))  # fmt: skip
    if name.startswith("data:"):
        return _data_case(name, tmp_path)
    base = tmp_path / "base"
    base.mkdir()
    if name == "serving base: models.config a FIFO":
        path = base / sc.CONFIG
        _fifo(path)
        return Case(name, lambda: sc.check_serving_base(base, "m"), "error",
                    (sc.CONFIG,), timeout=10, release=_release(path))  # fmt: skip
    # A version with a FIFO for metadata.json: not recognisably zoo's, so a
    # conflict (versions zoo did not write), never a blocked read.
    (base / "m" / "1").mkdir(parents=True)
    path = base / "m" / "1" / "metadata.json"
    _fifo(path)
    return Case(name, lambda: sc.check_serving_base(base, "m"), "error",
                (str(base / "m"),), timeout=10, release=_release(path))  # fmt: skip


def _data_case(name, tmp_path):
    form = name.removeprefix("data: ").removesuffix(" a FIFO")
    readers = {
        "train.csv": read_classification,
        "train.jsonl": read_classification,
        "scores.tsv": read_regression,
        "squad.json": read_squad,
        "ner.conll": read_conll,
    }
    if form in readers:
        path = tmp_path / form
        _fifo(path)
        read, target = (lambda: readers[form](path)), path
    elif form.startswith("class folder"):
        for label in ("pos", "neg"):
            (tmp_path / "data" / label).mkdir(parents=True)
            (tmp_path / "data" / label / "a.txt").write_text(f"a {label} text\n")
        target = tmp_path / "data" / "pos" / "b.txt"
        _fifo(target)
        read = lambda: read_classification(tmp_path / "data")  # noqa: E731 - the folder's reader
    else:
        (tmp_path / "text").mkdir()
        (tmp_path / "text" / "a.txt").write_text("One sentence here. And a second one.\n")
        target = tmp_path / "text" / "b.txt"
        _fifo(target)
        read = lambda: read_documents(tmp_path / "text")  # noqa: E731 - pretraining's reader
    return Case(name, read, "error", (target.name, "FIFO"), timeout=10,
                release=_release(target))  # fmt: skip


@pytest.mark.parametrize("name", SPECIAL_CASES)
def test_special_files(name, tmp_path, model_dir):
    check_case("special files", _special_case(name, tmp_path, model_dir))


# --- area "config sizes and depth" ------------------------------------------------------

JSON_FILES = ["zoo_model.json", "manifest.json", "metadata.json", "config.json"]
BOMBS = ["over 16 MB", "nested 100 deep", "nested 200,000 deep"]
JSON_CASES = [f"{file}: {bomb}" for file in JSON_FILES for bomb in BOMBS]


def _bomb(value, bomb):
    """`value` (a JSON object) with one more field: 16 MB of padding, or
    arrays nested `bomb`'s depth."""
    if bomb == "over 16 MB":
        value["padding"] = "x" * (16 << 20)
    else:
        depth = 100 if "100" in bomb else 200_000
        return json.dumps(value)[:-1] + ', "nested": ' + "[" * depth + "]" * depth + "}"
    return json.dumps(value)


def _json_case(name, tmp_path, model_dir):
    file, bomb = name.split(": ")
    must = (file, "limit") if "16 MB" in bomb or "100 deep" in bomb else (file,)
    if file == "zoo_model.json":
        directory = tmp_path / "model"
        shutil.copytree(model_dir, directory)
        path, run = directory / file, lambda: load_model_dir(directory)
    elif file in ("manifest.json", "metadata.json"):
        directory = _artifact(tmp_path / "artifact")
        path, run = directory / file, lambda: runtime.open_artifact(directory)
    else:
        directory = tmp_path / "checkpoint"
        directory.mkdir()
        (directory / "model.safetensors").write_bytes(b"")
        path, run = directory / file, lambda: checkpoint_config(directory)
        path.write_text(json.dumps(HF_CONFIG))
    path.write_text(_bomb(json.loads(path.read_text()), bomb))
    if file == "metadata.json":  # the manifest regenerated, so that metadata.json is read
        mf.write_manifest(directory)
    return error(name, run, *must)


@pytest.mark.parametrize("name", JSON_CASES)
def test_json_sizes_and_depth(name, tmp_path, model_dir):
    check_case("config sizes and depth", _json_case(name, tmp_path, model_dir))


# models.config, checked in a fresh process so that its peak memory is the
# check's own: `zoo export --format saved_model --serving-base` runs
# `check_serving_base` before it exports anything. The package `__init__`s
# (which load TensorFlow) are skipped: only the modules the check uses load.
_MEASURE = textwrap.dedent(
    """
    import json, pathlib, resource, sys, time, types
    root, base = pathlib.Path(sys.argv[1]), sys.argv[2]

    def peak_mb():
        # VmHWM: this process's own peak (getrusage's ru_maxrss carries the
        # forking parent's peak over exec, here pytest's with TensorFlow).
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    for package in ("zoo", "export"):
        module = types.ModuleType(package)
        module.__path__ = [str(root / package)]
        sys.modules[package] = module
    from export import serving_config
    before = peak_mb()
    start = time.perf_counter()
    try:
        serving_config.check_serving_base(base, "m")
        result = {"returned": True}
    except (ValueError, OSError) as e:
        result = {"error": type(e).__name__, "message": str(e)[:400]}
    except BaseException as e:
        result = {"crash": type(e).__name__, "message": str(e)[:400]}
    result["seconds"] = time.perf_counter() - start
    result["peak_mb"] = peak_mb()
    result["baseline_mb"] = before
    print(json.dumps(result))
    """
)
MEASURED = {}
SECONDS, PEAK_MB = 5.0, 1536


def _write_models_config(path, bomb):
    with open(path, "w") as f:
        if bomb == "100 MB":
            f.write("model_config_list {\n")
            entry = '  config { name: "m%d" base_path: "/models/m%d" model_platform: "tensorflow" }\n'
            written, i = 0, 0
            while written < 100 << 20:
                written += f.write(entry % (i, i))
                i += 1
            f.write("}\n")
        else:
            f.write("model_config_list " + "{ a " * 200_000 + "}" * 200_000 + "\n")


def _measured(base, name):
    def run():
        # Address space capped at 4 GB so that a reader without a limit fails
        # here instead of taking the machine's memory.
        limit = (
            "import resource; resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))\n"
        )
        proc = subprocess.run(
            [sys.executable, "-c", limit + _MEASURE, str(ROOT), str(base)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        if proc.returncode or not proc.stdout.strip():
            raise RuntimeError(f"exit {proc.returncode}: {proc.stderr[-600:]}")
        result = json.loads(proc.stdout.strip().splitlines()[-1])
        MEASURED[name] = result
        if result["seconds"] > SECONDS or result["peak_mb"] > PEAK_MB:
            raise RuntimeError(
                f"took {result['seconds']:.2f} s and {result['peak_mb']:.0f} MB peak "
                f"(goal: < {SECONDS} s, < {PEAK_MB} MB): {result}"
            )
        if "error" in result:
            raise ValueError(result["message"])
        if "crash" in result:
            raise RuntimeError(f"{result['crash']}: {result['message']}")
        return result

    return run


MODELS_CONFIG_CASES = ["models.config: 100 MB", "models.config: nested 200,000 deep",
                       "models.config: nested 40 deep", "models.config: just over 1 MB"]  # fmt: skip


@pytest.mark.parametrize("name", MODELS_CONFIG_CASES)
def test_models_config_sizes_and_depth(name, tmp_path):
    base = tmp_path / "base"
    base.mkdir()
    path = base / sc.CONFIG
    if name.endswith(("100 MB", "200,000 deep")):
        _write_models_config(path, name.split(": ")[1])
        case = error(name, _measured(base, name), sc.CONFIG)
        case.timeout = 120
    else:
        if name.endswith("40 deep"):
            path.write_text("model_config_list " + "{ a " * 40 + "}" * 40 + "\n")
        else:
            entry = '  config { name: "m" base_path: "/models/m" model_platform: "tensorflow" }\n'
            path.write_text(
                "model_config_list {\n" + entry * ((1 << 20) // len(entry) + 1) + "}\n"
            )
        case = error(name, lambda: sc.check_serving_base(base, "m"), sc.CONFIG)
    try:
        check_case("config sizes and depth", case)
    finally:
        if name in MEASURED:
            print(f"\n{name}: {MEASURED[name]}")


def test_a_real_models_config_still_reads(tmp_path):
    """The limits leave room: 1,000 models' entries (about 100 kB) read."""
    base = tmp_path / "base"
    base.mkdir()
    entries = "".join(sc.config_entry(f"m{i}", f"/models/m{i}") for i in range(1000))
    (base / sc.CONFIG).write_text(f"model_config_list {{\n{entries}}}\n")
    assert len(sc.read_models_config(base).names()) == 1000


# --- area "hub names" --------------------------------------------------------------------

REPO = "acme/tiny-bert"
BAD_REVISIONS = {
    "'..' in a revision": "main/../../../planted_ref",
    "a component starting with '.'": "feature/.hidden",
    "a component ending in .lock": "main.lock",
    "'//'": "a//b",
    "a leading '/'": "/main",
    "a trailing '/'": "main/",
    "a trailing '.'": "main.",
    "'@{'": "main@{1}",
    "'@' alone": "@",
    "a space": "a b",
    "'~'": "main~1",
    "'^'": "main^",
    "':'": "a:b",
    "'?'": "a?",
    "'*'": "a*",
    "'['": "a[0]",
    "a backslash": "a\\b",
    "a control character": "a\x07b",
    "over 255 characters": "r" * 300,
    "empty after '@'": "",
}
BAD_REPOS = {"'..' in a repo id": "acme/a..b", "'--' in a repo id": "ac--me/b",
             "a repo id ending .git": "acme/b.git"}  # fmt: skip
CACHE_CASES = [
    "'..' revision reading a planted ref, Hub unreachable",
    "snapshot a link outside the cache",
    "a snapshot file linked outside the cache",
    "a ref naming a folder outside the repository",
]


@pytest.fixture(scope="module")
def hub_repo(tmp_path_factory):
    """A repository the fetch accepts (config.json, a model.safetensors that
    fetch does not open, vocab.txt) served by the loopback Hub."""
    folder = tmp_path_factory.mktemp("hubrepo")
    (folder / "config.json").write_text(json.dumps(HF_CONFIG))
    (folder / "model.safetensors").write_bytes(b"\x08" + bytes(15))
    (folder / "vocab.txt").write_text("\n".join(WORDS) + "\n")
    return Repo(folder)


@pytest.fixture
def hub_env(hub_repo, tmp_path, monkeypatch):
    """huggingface_hub pointed at the loopback server and a fresh cache
    (its settings are read at import, so the module's values are patched)."""
    from huggingface_hub import constants

    cache = tmp_path / "hf" / "hub"
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.delenv("HF_TOKEN", raising=False)
    with HubServer({REPO: hub_repo}) as server:
        monkeypatch.setattr(constants, "ENDPOINT", server.url)
        monkeypatch.setattr(
            constants,
            "HUGGINGFACE_CO_URL_TEMPLATE",
            server.url + "/{repo_id}/resolve/{revision}/{filename}",
        )
        yield server, cache


def _unreachable(monkeypatch):
    """As with the network down or HF_HUB_OFFLINE=1: the cache answers."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)


@pytest.mark.parametrize(
    "name", [f"revision: {k}" for k in BAD_REVISIONS] + [f"repo: {k}" for k in BAD_REPOS]
)
def test_hub_names(name, hub_env):
    kind, key = name.split(": ", 1)
    if kind == "revision":
        source = f"hf://{REPO}@{BAD_REVISIONS[key]}"
        # As a repr shows it, without the quotes (a control character escaped).
        shown = repr(BAD_REVISIONS[key][:80])[1:-1]
    else:
        source = f"hf://{BAD_REPOS[key]}"
        shown = BAD_REPOS[key]
    check_case("hub names", error(name, lambda: hub.fetch(source), shown))


def _cached(hub_env, hub_repo):
    """The repository downloaded once: its cache folder and commit."""
    server, cache = hub_env
    checkpoint = hub.fetch(f"hf://{REPO}")
    assert checkpoint.sha == hub_repo.sha
    return cache / "models--acme--tiny-bert", checkpoint.sha


@pytest.mark.parametrize("name", CACHE_CASES)
def test_hub_cache_escapes(name, hub_env, hub_repo, tmp_path, monkeypatch):
    folder, sha = _cached(hub_env, hub_repo)
    outside = tmp_path / "outside"
    shutil.copytree(folder / "snapshots" / sha, outside, symlinks=False)
    (outside / "config.json").write_text(json.dumps({**HF_CONFIG, "hidden_size": 16}))
    source = f"hf://{REPO}"
    must = (str(folder.resolve()),)
    if name.startswith("'..'"):
        # refs/main/ as a folder, so that refs/main/../../../planted_ref
        # resolves: huggingface_hub reads hub/planted_ref, naming a commit.
        (folder / "refs" / "main").unlink()
        (folder / "refs" / "main").mkdir()
        (folder.parent / "planted_ref").write_text(sha)
        _unreachable(monkeypatch)
        source, must = f"hf://{REPO}@main/../../../planted_ref", ("'..'",)
    elif name.startswith("snapshot a link"):
        shutil.rmtree(folder / "snapshots" / sha)
        (folder / "snapshots" / sha).symlink_to(outside, target_is_directory=True)
        _unreachable(monkeypatch)
    elif name.startswith("a snapshot file"):
        link = folder / "snapshots" / sha / "config.json"
        link.unlink()
        link.symlink_to(outside / "config.json")
        _unreachable(monkeypatch)
    else:
        # refs/main naming ../../x/snapshots/y: huggingface_hub joins it into
        # the snapshot path as it is.
        other = folder.parent / "models--other--repo" / "snapshots" / sha
        shutil.copytree(outside, other)
        trees = folder / "trees"
        if trees.is_dir():  # the tree listing huggingface_hub checks it against
            for tree in trees.iterdir():
                shutil.copy(tree, trees / tree.name.replace(sha, "x"))
        (folder / "refs" / "main").write_text(f"../../models--other--repo/snapshots/{sha}")
        _unreachable(monkeypatch)
    check_case("hub names", error(name, lambda: hub.fetch(source), *must))


def test_hub_good_names_still_fetch(hub_env, hub_repo):
    """The rules leave real names alone: main, the 40-hex commit, a tag-like
    name with dots and slashes (served as the same commit)."""
    folder, sha = _cached(hub_env, hub_repo)
    for revision in ("main", sha):
        case = answer(
            f"revision {revision}",
            lambda r=revision: hub.fetch(f"hf://{REPO}@{r}"),
            lambda c: c.sha == sha and folder.resolve() in c.path.resolve().parents,
        )
        check_case("hub names", case)
    for revision in ("v1.0", "refs/pr/1", "release/2024.05", "feature-x_y"):
        assert hub.parse(f"hf://{REPO}@{revision}") == (REPO, revision)
