"""Reliability corpus, area "kills": commands SIGKILLed mid-run (no cleanup
code runs), then run again. The re-run must leave nothing of the killed run
behind (no `.OUT.tmp-*` beside --out, no scratch in $TMPDIR) and a resumed
training run must keep the epochs before the kill in history.json."""

import concurrent.futures
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from tests.reliability.corpus import answer, check_case

pytestmark = pytest.mark.slow

_EXPORT = r"""
import sys
from tests.export.conftest import make_tiny, sentences, VOCABULARY
from zoo.text.tokenizer import WordPieceTokenizer
from export import ServingVersion, Signatures, Validation, export_saved_model, export_tflite
kind, out = sys.argv[1:]
tok = WordPieceTokenizer(VOCABULARY)
validation = Validation(sentences(200))
if kind == "tflite":
    export_tflite(make_tiny(), tok, out, signatures=Signatures((16,)), validation=validation)
else:
    export_saved_model(make_tiny(), tok, out, serving=ServingVersion("tiny"),
                       sequence_length=16, validation=validation)
"""

_TRAIN = r"""
import os, signal, sys, keras
from tests.distill.tiny import teacher_dir, topic_data
from zoo.cli import main
kind, root, kill_after = sys.argv[1], sys.argv[2], int(sys.argv[3])
import pathlib
root = pathlib.Path(root)

class KillAfter(keras.callbacks.Callback):
    def on_epoch_end(self, epoch, logs=None):
        if epoch + 1 == kill_after:
            os.kill(os.getpid(), signal.SIGKILL)

if kill_after:  # the killed run: every training callback list gets the killer
    import zoo.train.callbacks as callbacks
    original = callbacks.HistoryFile.on_epoch_end
    def on_epoch_end(self, epoch, logs=None):
        original(self, epoch, logs)
        KillAfter().on_epoch_end(epoch, logs)
    callbacks.HistoryFile.on_epoch_end = on_epoch_end
teacher = root / "teacher" if (root / "teacher").exists() else teacher_dir(root)
data = root / "news.csv" if (root / "news.csv").exists() else topic_data(root)
sys.exit(main(["distill", "--teacher", str(teacher), "--student-layers", "2",
               "--run-eagerly", "--no-evaluate", "--verbose", "0", "--data", str(data),
               "--out", str(root / kind), "--epochs", "3", "--batch-size", "8",
               "--sequence-length", "12", "--learning-rate", "1e-3"]))
"""


def _env(tmp):
    return dict(os.environ, TMPDIR=str(tmp), TF_CPP_MIN_LOG_LEVEL="3")


def _kill_when(proc, ready, timeout=300):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if ready():
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
            return True
        if proc.poll() is not None:
            return False
        time.sleep(0.05)
    proc.kill()
    return False


def killed_export(kind, tmp_path):
    scratch = tmp_path / f"tmp_{kind}"
    scratch.mkdir()
    out = tmp_path / f"out_{kind}"
    parent = out if kind == "saved_model" else out.parent
    pattern = ".1.tmp-*" if kind == "saved_model" else f".{out.name}.tmp-*"
    inner = (
        (lambda: list((out / "tiny").glob(pattern)))
        if kind == "saved_model"
        else (lambda: list(parent.glob(pattern)))
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", _EXPORT, kind, str(out)],
        env=_env(scratch),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    # Kill once the scratch work has started inside the temporary directory.
    if not _kill_when(proc, lambda: any((t / ".work").exists() for t in inner())):
        raise RuntimeError(
            f"the {kind} export ended before it could be killed: "
            f"{proc.stderr.read().decode()[-1500:]}"
        )
    left_after_kill = [p.name for p in inner()]
    again = subprocess.run(
        [sys.executable, "-c", _EXPORT, kind, str(out)],
        env=_env(scratch),
        capture_output=True,
        text=True,
        timeout=600,
    )
    if again.returncode:
        raise RuntimeError(again.stderr[-1500:])
    # TensorFlow's AutoGraph writes small generated sources to $TMPDIR and
    # removes them at exit; a SIGKILL leaves them. They are TensorFlow's, not
    # the export's scratch (which lives inside the temporary artifact).
    ours = [
        p.name
        for p in scratch.iterdir()
        if not p.name.startswith("__autograph_generated_file")
    ]
    return {
        "left after the kill": left_after_kill,
        "left after the re-run": [p.name for p in inner()],
        "in $TMPDIR": sorted(ours),
    }


def killed_training(kind, tmp_path):
    root = tmp_path / f"train_{kind}"
    root.mkdir()
    run = [sys.executable, "-c", _TRAIN, kind, str(root)]
    killed = subprocess.run(run + ["2"], env=_env(root), capture_output=True, timeout=600)
    if killed.returncode != -signal.SIGKILL:
        raise RuntimeError(
            f"not killed (exit {killed.returncode}): {killed.stderr.decode()[-1500:]}"
        )
    again = subprocess.run(
        run + ["0"], env=_env(root), capture_output=True, text=True, timeout=600
    )
    if again.returncode:
        raise RuntimeError(again.stderr[-1500:])
    history = json.loads((root / kind / "history.json").read_text())
    best = json.loads((root / kind / "model" / "zoo_model.json").read_text())["best"]
    return {
        "epochs": history["epochs"],
        "val_loss": history["history"]["val_loss"],
        "best": best,
        "backup left": (root / kind / "backup").exists(),
    }


def _best_is_the_minimum(result):
    losses = result["val_loss"]
    return (
        result["epochs"] == [1, 2, 3]
        and not result["backup left"]
        and result["best"]["epoch"] == 1 + losses.index(min(losses))
        and abs(result["best"]["value"] - min(losses)) < 1e-6
    )


def _clean(result):
    return not result["left after the re-run"] and not result["in $TMPDIR"]


# name -> (run(tmp), check(result)). A killed `zoo finetune` is
# tests/train/test_finetune.py's test_killed_finetune_resumes_and_ends_the_same,
# which also compares the resumed run with an uninterrupted one.
SCENARIOS = {
    "tflite export killed, then run again": (
        lambda tmp: killed_export("tflite", tmp),
        _clean,
    ),
    "SavedModel export killed, then run again": (
        lambda tmp: killed_export("saved_model", tmp),
        _clean,
    ),
    "distill killed after epoch 2, then resumed": (
        lambda tmp: killed_training("distill", tmp),
        _best_is_the_minimum,
    ),
}


@pytest.fixture(scope="module")
def killed(tmp_path_factory):
    """Every scenario's future, all run side by side (independent
    processes) and finished when the fixture returns."""
    tmp = tmp_path_factory.mktemp("kills")
    with concurrent.futures.ThreadPoolExecutor(len(SCENARIOS)) as pool:
        return {name: pool.submit(run, tmp) for name, (run, _) in SCENARIOS.items()}


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_killed_runs(name, killed):
    check_case("kills", answer(name, killed[name].result, SCENARIOS[name][1]))
