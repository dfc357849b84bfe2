"""`hf://OWNER/NAME[@REVISION]` names against a loopback server that speaks
the Hub's HTTP file API (tests/hub_server.py), serving the packaged
all-MiniLM-L6-v2 files: the weights equal the local folder's, a second run
works offline from the cache with no request, the resolved commit is
recorded, and each failure is a clear error.

Each environment gets a fresh `zoo` process: huggingface_hub reads
HF_ENDPOINT, HF_HOME, HF_TOKEN and HF_HUB_OFFLINE when it is imported, as a
user's shell would set them. Error cases that share one environment run one
after the other in one process."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from tests.hub_server import HubServer, Repo
from tests.train.synthetic import write_topics_csv
from zoo.checkpoints import load_checkpoint
from zoo.datasets.corpora import minilm_checkpoint_dir

pytestmark = pytest.mark.assets
NAME = "sentence-transformers/all-MiniLM-L6-v2"


@pytest.fixture(scope="module")
def repos(tmp_path_factory):
    root = tmp_path_factory.mktemp("hub")
    source = minilm_checkpoint_dir()
    binonly = root / "binonly"
    binonly.mkdir()
    for f in ("config.json", "vocab.txt"):
        shutil.copy(source / f, binonly / f)
    (binonly / "pytorch_model.bin").write_bytes(b"\x80\x04 not read")
    return {
        NAME: Repo(source),
        "acme/gated-bert": Repo(source, access="gated", token="hf_right"),
        "acme/private-bert": Repo(source, access="private", token="hf_right"),
        "acme/binonly": Repo(binonly),
    }


# `zoo.cli.main` on each argv of a JSON list, in one process: (exit code,
# stderr) of each, written as JSON to the file named last.
_MANY = r"""
import contextlib, io, json, sys, traceback
from zoo.cli import main
results = []
for argv in json.loads(sys.argv[1]):
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as e:
            code = e.code
        except BaseException:
            traceback.print_exc()
            code = None
    results.append([code, err.getvalue()])
with open(sys.argv[2], "w") as f:
    json.dump(results, f)
"""


def _environment(hub_url, home, env):
    environment = {
        **os.environ,
        "HF_ENDPOINT": hub_url,
        "HF_HOME": str(home),
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "CUDA_VISIBLE_DEVICES": "",
        **env,
    }
    if "HF_TOKEN" not in env:
        environment.pop("HF_TOKEN", None)  # a token in the caller's shell would mask 401s
    return environment


def zoo(args, hub_url, home, **env):
    """`zoo ARGS` in a fresh process against the loopback Hub."""
    proc = subprocess.run(
        [sys.executable, "-m", "zoo", *map(str, args)],
        capture_output=True,
        text=True,
        env=_environment(hub_url, home, env),
        timeout=600,
    )
    return proc.returncode, proc.stdout, proc.stderr


def zoo_many(argvs, hub_url, home, tmp_path, **env):
    """[(exit code, stderr)] of `zoo ARGV` for each argv, one after the
    other in one fresh process with one environment (as a user's shell
    runs them; each process start costs a TensorFlow import)."""
    results = tmp_path / "results.json"
    proc = subprocess.run(
        [sys.executable, "-c", _MANY, json.dumps([list(map(str, a)) for a in argvs]),
         str(results)],
        capture_output=True,
        text=True,
        env=_environment(hub_url, home, env),
        timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    return [tuple(r) for r in json.loads(results.read_text())]


def test_hub_name_converts_to_the_same_weights_then_works_offline(repos, tmp_path):
    home = tmp_path / "hf"
    with HubServer(repos) as hub:
        code, out, err = zoo(
            ["convert", f"hf://{NAME}", "--out", tmp_path / "minilm"], hub.url, home
        )
        assert code == 0, err[-2000:]
        sha = repos[NAME].sha
        fetched = {
            path.split("/resolve/")[1].split("/", 1)[1]
            for m, path in hub.requests
            if m == "GET" and "/resolve/" in path
        }
        # Only what a BERT checkpoint needs: not README.md, data_config.json, .gitattributes.
        assert fetched <= {
            "config.json",
            "model.safetensors",
            "vocab.txt",
            "tokenizer.json",
            "tokenizer_config.json",
            "special_tokens_map.json",
            "modules.json",
            "sentence_bert_config.json",
            "1_Pooling/config.json",
        }
        assert "model.safetensors" in fetched and "README.md" not in fetched
    meta = json.loads((tmp_path / "minilm" / "zoo_model.json").read_text())
    assert meta["source"] == f"hf://{NAME}@{sha}" and meta["hub_commit"] == sha
    args = json.loads((tmp_path / "minilm" / "args.json").read_text())
    assert args["resolved"]["src"] == f"hf://{NAME}@{sha}"

    # Offline, the server gone: the cache answers, no request is made.
    with HubServer(repos) as hub:
        code, out, err = zoo(
            ["convert", f"hf://{NAME}", "--out", tmp_path / "offline"],
            hub.url,
            home,
            HF_HUB_OFFLINE="1",
        )
        assert code == 0, err[-2000:]
        # Fine-tuning from the Hub name: the model directory names the commit
        # its encoder came from.
        data = tmp_path / "topics.csv"
        write_topics_csv(data)
        code, out, err = zoo(
            ["finetune", "--model", f"hf://{NAME}", "--data", data, "--task", "classify"]
            + ["--out", tmp_path / "tuned", "--sequence-length", "16", "--epochs", "1"],
            hub.url,
            home,
            HF_HUB_OFFLINE="1",
        )
        assert code == 0, err[-2000:]
        assert hub.requests == []
    tuned = json.loads((tmp_path / "tuned" / "model" / "zoo_model.json").read_text())
    assert tuned["base_model"]["source"] == f"hf://{NAME}@{sha}"
    assert tuned["base_model"]["hub_commit"] == sha
    a, _ = load_checkpoint(tmp_path / "minilm")
    b, _ = load_checkpoint(minilm_checkpoint_dir())
    c, _ = load_checkpoint(tmp_path / "offline")
    for x, y, z in zip(a.get_weights(), b.get_weights(), c.get_weights()):
        np.testing.assert_array_equal(x, y)
        np.testing.assert_array_equal(x, z)


def test_hub_errors_are_clear(repos, tmp_path):
    home = tmp_path / "hf"
    cases = {
        "gated without a token": ("hf://acme/gated-bert", {}, ["gated", "HF_TOKEN"]),
        "private without a token": (
            "hf://acme/private-bert",
            {},
            ["acme/private-bert", "HF_TOKEN"],
        ),
        "no such repository": (
            "hf://acme/nothing-here",
            {},
            ["no repository", "acme/nothing-here"],
        ),
        "no such revision": (f"hf://{NAME}@v9", {}, ["no revision", "v9"]),
        "only pytorch_model.bin": (
            "hf://acme/binonly",
            {},
            ["pytorch_model.bin", "safetensors", "pickle"],
        ),
        "offline with an empty cache": (
            f"hf://{NAME}",
            {"HF_HUB_OFFLINE": "1"},
            ["HF_HUB_OFFLINE", "no copy"],
        ),
        "not a Hub name": ("hf://just-a-name", {}, ["hf://OWNER/NAME"]),
    }
    with HubServer(repos) as hub:
        # The cases that share the caller's environment run in one process.
        shared = [case for case, (_, env, _) in cases.items() if not env]
        argvs = [["convert", cases[case][0], "--out", tmp_path / "x"] for case in shared]
        answers = dict(zip(shared, zoo_many(argvs, hub.url, home, tmp_path)))
        for case, (name, env, words) in cases.items():
            if case in answers:
                code, err = answers[case]
            else:
                code, _, err = zoo(
                    ["convert", name, "--out", tmp_path / "x"], hub.url, home, **env
                )
            assert code == 2, f"{case}: exit {code}\n{err[-1500:]}"
            assert "Traceback" not in err, f"{case}: {err[-1500:]}"
            for word in words:
                assert word in err, f"{case}: {word!r} not in {err[-800:]!r}"
            assert not (tmp_path / "x").exists(), case
        # With the right token the gated repository converts.
        code, out, err = zoo(
            ["convert", "hf://acme/gated-bert", "--out", tmp_path / "gated"],
            hub.url,
            home,
            HF_TOKEN="hf_right",
        )
        assert code == 0, err[-2000:]
    # No network at all: the server is down.
    code, out, err = zoo(
        ["convert", f"hf://{NAME}@main", "--out", tmp_path / "y"],
        hub.url,
        tmp_path / "empty",
    )
    assert code == 2 and "cannot reach" in err and "Traceback" not in err, err[-1500:]
