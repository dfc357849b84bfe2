"""Reliability corpus, areas "user files: COMMAND": the files of the user.

A directory of someone else's files (a `model/`, `metrics.json`, another
tool's `args.json`, `history.json`, `backup/`, a TF Serving `models.config`
that serves another model, `README.md`, `batching_parameters.txt`, a nested
file) must come out of every writing command byte-identical, whatever the
flags: `--out` that directory, `--out ""` run from inside it (an unset shell
variable), `--out` equal to, inside or around an input of the command, each
with and without `--force` (issue #35). Each case's `kept` hook lists the
watched files that were removed or changed; the corpus counts such a case as
"data lost" whatever the command returned. The command's inputs are watched
too.

The only change allowed to a user's file is the merge of a TF Serving
`models.config` by `zoo export --format saved_model|tpu`: the user's other
entries must stay in it verbatim (`OTHER_ENTRY`).

Every case is a real `zoo` command line (`zoo.cli.main`); the models and
data are tiny, and after the fix the refusals come before anything is
loaded, so the whole file takes a couple of minutes on 2 cores (most of it
the few exports and training runs that must succeed).
"""

import contextlib
import csv
import io
import pathlib
import random
import shutil

import pytest

import zoo
from tests.distill.tiny import TOPICS, WORDS, teacher_dir, topic_data
from tests.reliability.corpus import answer, error, run_area
from zoo.checkpoints import save_model_dir
from zoo.cli import build_parser, main
from zoo.cli.runs import write_run_info
from zoo.text.tokenizer import WordPieceTokenizer

# Slow (every command on the user's files: minutes on 2 cores): `make test`
# runs the corpus, `make test-quick` does not.
pytestmark = pytest.mark.slow

OTHER_ENTRY = (
    "  config {\n"
    '    name: "other"\n'
    "    base_path: \"/srv/models/other\"  # the team's model {keep} 'me'\n"
    '    model_platform: "tensorflow"\n'
    "    model_version_policy { specific { versions: 3 } }\n"
    "  }\n"
)
USER_FILES = {
    "model/model.keras": b"the user's own model, not a zoo one\n",
    "model/notes.txt": b"trained on the 2023 data\n",
    "metrics.json": b'{"accuracy": 0.91, "by": "another tool"}\n',
    "args.json": b'{"tool": "another-trainer", "arguments": {"lr": 0.1}}\n',
    "history.json": b"[1, 2, 3]\n",
    "backup/state.bin": b"\x00\x01 someone's checkpoint",
    "models.config": (
        "# the team's TF Serving config\nmodel_config_list {\n" + OTHER_ENTRY + "}\n"
    ).encode(),
    "README.md": b"# Our serving box\n\nDo not touch.\n",
    "batching_parameters.txt": b"max_batch_size { value: 4 }\n",
    "nested/deep/data.txt": b"a nested file\n",
}
TRAIN = ("--epochs", "1", "--batch-size", "8", "--verbose", "0")
EXPORT = ("--sequence-lengths", "16", "--allow-degraded")


class CliFailure(ValueError):
    """`zoo` exited 2 (a refused command); the message is its stderr."""


def cli(argv, cwd=None, patch=None):
    """A case's `run`: `zoo ARGV` (from `cwd`), exit 2 raised as CliFailure."""

    def run():
        err = io.StringIO()
        with contextlib.ExitStack() as stack:
            mp = stack.enter_context(pytest.MonkeyPatch.context())
            if cwd is not None:
                mp.chdir(cwd)
            if patch is not None:
                patch(mp)
            stack.enter_context(contextlib.redirect_stderr(err))
            stack.enter_context(contextlib.redirect_stdout(io.StringIO()))
            try:
                code = main([str(a) for a in argv])
            except SystemExit as e:  # argparse's own errors
                code = e.code
        if code == 2:
            raise CliFailure(err.getvalue().strip()[-700:])
        return {"exit": code, "stderr": err.getvalue()[-500:]}

    return run


def _files(root):
    root = pathlib.Path(root)
    if root.is_file():
        return [root]
    return [p for p in root.rglob("*") if p.is_file() and not p.is_symlink()]


def watch(*roots, merged=False, skip=()):
    """A `kept` hook: the files under `roots` now; after the run, those
    removed or changed. `merged`: models.config may gain entries, but must
    keep `OTHER_ENTRY` verbatim."""
    before = {p: p.read_bytes() for root in roots for p in _files(root)}
    before = {p: v for p, v in before.items() if p.name not in skip}

    def kept():
        lost = []
        for path, data in before.items():
            if not path.is_file():
                lost.append(f"{path.name} removed")
            elif path.read_bytes() != data:
                text = path.read_text(errors="replace")
                if merged and path.name == "models.config" and OTHER_ENTRY in text:
                    continue
                lost.append(f"{path.name} changed")
        return lost

    return kept


def watched(case, kept):
    case.kept = kept
    return case


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    root = tmp_path_factory.mktemp("inputs")
    rng = random.Random(0)
    many = root / "many.csv"  # export validates on >= 200 texts
    with open(many, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["text", "label"])
        seen = set()
        while len(seen) < 210:
            label = sorted(TOPICS)[len(seen) % 3]
            text = " ".join(rng.choices(TOPICS[label], k=3) + rng.choices(WORDS, k=4))
            if text not in seen:
                seen.add(text)
                w.writerow([text, label])
    corpus = root / "corpus.txt"
    corpus.write_text(
        "\n\n".join(
            " ".join(" ".join(rng.choices(WORDS, k=5)).capitalize() + "." for _ in range(4))
            for _ in range(12)
        )
        + "\n"
    )
    tokenizer = WordPieceTokenizer(
        ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS, "."]
    )
    encoder = zoo.BertEncoder(
        vocabulary_size=len(tokenizer.vocabulary),
        num_layers=2,
        num_heads=2,
        hidden_dim=8,
        intermediate_dim=16,
        max_sequence_length=16,
    )
    return {
        "teacher": teacher_dir(root),
        "encoder": save_model_dir(encoder, root / "encoder", tokenizer),
        "data": topic_data(root),
        "many": many,
        "corpus": corpus,
    }


class Places:
    """Fresh directories for one area's cases."""

    def __init__(self, root):
        self.root = pathlib.Path(root)
        self.count = 0

    def fresh(self, name="d"):
        self.count += 1
        path = self.root / f"{self.count:03d}-{name}"
        path.mkdir(parents=True)
        return path

    def user(self):
        """A directory of the user's files, none written by zoo."""
        path = self.fresh("user")
        for name, data in USER_FILES.items():
            (path / name).parent.mkdir(parents=True, exist_ok=True)
            (path / name).write_bytes(data)
        return path

    def copy(self, source, into=None):
        """A copy of an input (a directory or file), fresh or at `into`."""
        source = pathlib.Path(source)
        dest = into if into is not None else self.fresh("input") / source.name
        if source.is_dir():
            shutil.copytree(source, dest)
        else:
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest)
        return dest


def standard(command, build, flag, source, places, *, serving=False):
    """The cases every writing command must pass. `build(out, main_input)`
    is the command line; `flag` names the main input (--model, SRC, ...),
    `source` is that input."""
    cases = []
    for force in ((), ("--force",)):
        tag = " --force" if force else ""
        if not serving:  # a TF Serving base is merged into: see test_export_saved_model
            user = places.user()
            cases.append(
                watched(
                    error(
                        f"{command}: --out a directory of user files{tag}",
                        cli(build(user, source) + list(force)),
                        "--out",
                    ),
                    watch(user),
                )
            )
        user = places.user()
        cases.append(
            watched(
                error(
                    f'{command}: --out "" run inside a directory of user files{tag}',
                    cli(build("", source) + list(force), cwd=user),
                    "--out",
                ),
                watch(user),
            )
        )
        own = places.copy(source)
        cases.append(
            watched(
                error(
                    f"{command}: --out is {flag}{tag}",
                    cli(build(own, own) + list(force)),
                    flag,
                ),
                watch(own),
            )
        )
        own = places.copy(source)
        cases.append(
            watched(
                error(
                    f"{command}: --out inside {flag}{tag}",
                    cli(build(own / "out", own) + list(force)),
                    flag,
                ),
                watch(own),
            )
        )
        user = places.user()
        own = places.copy(source, into=user / "inputs" / pathlib.Path(source).name)
        cases.append(
            watched(
                error(
                    f"{command}: --out holds {flag} among user files{tag}",
                    cli(build(user, own) + list(force)),
                    flag,
                ),
                watch(user),
            )
        )
    return cases


def _parsed(argv):
    return build_parser().parse_args([str(a) for a in argv])


def training_cases(command, build, flag, source, places):
    """A training command's own run directory: --force replaces the run,
    keeps a file the user added, and never removes the run's input."""
    cases = []
    # Issue #35: `--model RUN/model --out RUN --force` removed its own input.
    run = places.fresh("run")
    own = places.copy(source, into=run / "model")
    write_run_info(run, _parsed(build(run, places.root / "earlier")))
    (run / "metrics.json").write_text('{"accuracy": 0.5}\n')
    cases.append(
        watched(
            error(
                f"{command}: --out is our earlier run holding {flag} --force",
                cli(build(run, own) + ["--force"]),
                flag,
            ),
            watch(run),
        )
    )
    # Our earlier run (args.json of this command, no marker: an older zoo)
    # with a file the user added: --force starts over and keeps that file.
    run = places.fresh("run")
    places.copy(source, into=run / "model")
    write_run_info(run, _parsed(build(run, places.root / "earlier")))
    (run / "metrics.json").write_text('{"accuracy": 0.5}\n')
    (run / "notes.txt").write_text("the user's notes on this run\n")

    def trained(result, run=run):
        return result["exit"] == 0 and (run / "model" / "zoo_model.json").is_file()

    cases.append(
        watched(
            answer(
                f"{command}: --force on our earlier run keeps a user's file in it",
                cli(build(run, source) + ["--force"]),
                trained,
            ),
            watch(run / "notes.txt"),
        )
    )
    return cases


def replaced_output_cases(command, build, source, places, output):
    """Commands that write one directory (convert, prune, export tflite):
    --force replaces our own earlier output, never a file a user put in it."""
    ours = places.fresh("ours") / "out"
    places.copy(output, into=ours)

    def replaced(result, ours=ours):
        return result["exit"] == 0 and (ours / ".zoo-output").is_file()

    cases = [
        answer(
            f"{command}: --force replaces our earlier output",
            cli(build(ours, source) + ["--force"]),
            replaced,
        )
    ]
    ours = places.fresh("ours") / "out"
    places.copy(output, into=ours)
    (ours / "notes.txt").write_text("the user's notes\n")
    cases.append(
        watched(
            error(
                f"{command}: --force on our output holding a user's file",
                cli(build(ours, source) + ["--force"]),
                "--out",
                "notes.txt",
            ),
            watch(ours / "notes.txt"),
        )
    )
    return cases


def data_case(command, build, source, places, data, *, flag="--data", glob=False):
    """--out around the --data file (or inside a glob's directory)."""
    user = places.user()
    copy = places.copy(data, into=user / "texts" / pathlib.Path(data).name)
    if glob:
        argv = build(user / "texts" / "run", source, data=str(user / "texts" / "*.txt"))
        name = f"{command}: --out inside the directory of a --data glob --force"
    else:
        argv = build(user, source, data=copy)
        name = f"{command}: --out holds the --data file --force"
    return watched(error(name, cli(argv + ["--force"]), flag), watch(user))


def test_convert(inputs, tmp_path):
    places = Places(tmp_path)

    def build(out, src, data=None):
        return ["convert", src, "--out", out]

    cases = standard("convert", build, "SRC", inputs["teacher"], places)
    cases += replaced_output_cases(
        "convert", build, inputs["teacher"], places, inputs["teacher"]
    )
    problems = run_area("user files: convert", cases)
    assert not problems, "\n".join(problems)


def _finetune(inputs):
    def build(out, model, data=None):
        return [
            "finetune",
            "--model",
            model,
            "--data",
            data or inputs["data"],
            "--task",
            "classify",
            "--out",
            out,
            "--sequence-length",
            "16",
            *TRAIN,
        ]

    return build


def test_finetune(inputs, tmp_path):
    places = Places(tmp_path)
    build = _finetune(inputs)
    cases = standard("finetune", build, "--model", inputs["encoder"], places)
    cases += training_cases("finetune", build, "--model", inputs["encoder"], places)
    cases.append(data_case("finetune", build, inputs["encoder"], places, inputs["data"]))
    problems = run_area("user files: finetune", cases)
    assert not problems, "\n".join(problems)


def test_distill(inputs, tmp_path):
    places = Places(tmp_path)

    def build(out, teacher, data=None):
        return [
            "distill",
            "--teacher",
            teacher,
            "--data",
            data or inputs["data"],
            "--student-layers",
            "1",
            "--out",
            out,
            "--sequence-length",
            "12",
            "--run-eagerly",
            "--no-evaluate",
            *TRAIN,
        ]

    cases = standard("distill", build, "--teacher", inputs["teacher"], places)
    cases += training_cases("distill", build, "--teacher", inputs["teacher"], places)
    cases.append(data_case("distill", build, inputs["teacher"], places, inputs["data"]))
    problems = run_area("user files: distill", cases)
    assert not problems, "\n".join(problems)


def test_pretrain(inputs, tmp_path):
    places = Places(tmp_path)

    def build(out, config, data=None):
        return [
            "pretrain",
            "--config",
            config,
            "--data",
            data or inputs["corpus"],
            "--out",
            out,
            "--sequence-length",
            "16",
            "--steps-per-epoch",
            "2",
            "--batch-size",
            "4",
            "--max-predictions",
            "3",
            "--epochs",
            "1",
            "--verbose",
            "0",
        ]

    cases = standard("pretrain", build, "--config", inputs["encoder"], places)
    cases += training_cases("pretrain", build, "--config", inputs["encoder"], places)
    cases.append(
        data_case("pretrain", build, inputs["encoder"], places, inputs["corpus"], glob=True)
    )
    problems = run_area("user files: pretrain", cases)
    assert not problems, "\n".join(problems)


def test_prune(inputs, tmp_path):
    places = Places(tmp_path)

    def build(out, model, data=None):
        return [
            "prune",
            "--model",
            model,
            "--data",
            data or inputs["data"],
            "--out",
            out,
            "--no-evaluate",
        ]

    cases = standard("prune", build, "--model", inputs["teacher"], places)
    cases += replaced_output_cases(
        "prune", build, inputs["teacher"], places, inputs["teacher"]
    )
    cases.append(data_case("prune", build, inputs["teacher"], places, inputs["data"]))
    problems = run_area("user files: prune", cases)
    assert not problems, "\n".join(problems)


def test_export_tflite(inputs, tmp_path):
    places = Places(tmp_path)

    def build(out, model, data=None):
        return [
            "export",
            "--model",
            model,
            "--format",
            "tflite",
            "--data",
            data or inputs["many"],
            "--out",
            out,
            *EXPORT,
        ]

    cases = standard("export tflite", build, "--model", inputs["teacher"], places)
    cases += replaced_output_cases(
        "export tflite", build, inputs["teacher"], places, inputs["teacher"]
    )
    cases.append(
        data_case("export tflite", build, inputs["teacher"], places, inputs["many"])
    )
    problems = run_area("user files: export tflite", cases)
    assert not problems, "\n".join(problems)


def _serving(inputs, fmt, name="spam"):
    def build(out, model, data=None, name=name):
        extra = ["--batch-size", "2"] if fmt == "tpu" else []
        return [
            "export",
            "--model",
            model,
            "--format",
            fmt,
            "--data",
            data or inputs["many"],
            "--out",
            out,
            "--name",
            name,
            *EXPORT,
            *extra,
        ]

    return build


def _merged(base, name):
    def check(result):
        config = (base / "models.config").read_text()
        return (
            result["exit"] == 0
            and (base / name / "1" / "saved_model.pb").is_file()
            and OTHER_ENTRY in config
            and f'name: "{name}"' in config
            and str((base / name).resolve()) in config
        )

    return check


def test_export_saved_model(inputs, tmp_path):
    places = Places(tmp_path)
    build = _serving(inputs, "saved_model")
    teacher = inputs["teacher"]
    cases = standard("export saved_model", build, "--model", teacher, places, serving=True)
    # A TF Serving base of the user's: the new model is added, the user's
    # other entry kept verbatim, README.md and batching_parameters.txt kept.
    user = places.user()
    cases.append(
        watched(
            answer(
                "export saved_model: --out a serving base of the user's: merged",
                cli(build(user, teacher)),
                _merged(user, "spam"),
            ),
            watch(user, merged=True),
        )
    )
    # The name of the user's other model: refused, its entry kept.
    user = places.user()
    cases.append(
        watched(
            error(
                "export saved_model: --name of another model in models.config",
                cli(build(user, teacher, name="other")),
                "models.config",
                "other",
            ),
            watch(user),
        )
    )
    # ... unless --force, which points that entry at the new model.
    user = places.user()

    def repointed(result, user=user):
        config = (user / "models.config").read_text()
        return (
            result["exit"] == 0
            and str((user / "other").resolve()) in config
            and "/srv/models/other" not in config
        )

    cases.append(
        watched(
            answer(
                "export saved_model: --name of another model --force repoints it",
                cli(build(user, teacher, name="other") + ["--force"]),
                repointed,
            ),
            watch(user, skip=("models.config",)),
        )
    )
    for force in ((), ("--force",)):
        tag = " --force" if force else ""
        user = places.user()
        (user / "models.config").write_text(
            'model_config_list {\n  config {\n    name: "x\n'
        )
        cases.append(
            watched(
                error(
                    f"export saved_model: a models.config it cannot read{tag}",
                    cli(build(user, teacher) + list(force)),
                    "models.config",
                ),
                watch(user),
            )
        )
    # A version directory of the user's where ours would go.
    user = places.user()
    (user / "spam" / "1").mkdir(parents=True)
    (user / "spam" / "1" / "mine.txt").write_text("the user's version\n")
    cases.append(
        watched(
            error(
                "export saved_model: --version 1 --force over the user's version",
                cli(build(user, teacher) + ["--version", "1", "--force"]),
                "spam",
            ),
            watch(user),
        )
    )
    # The user's own model under NAME, served by its highest version: a new
    # version of ours would take its place in TF Serving.
    user = places.user()
    (user / "spam" / "3").mkdir(parents=True)
    (user / "spam" / "3" / "saved_model.pb").write_bytes(b"the user's model")
    cases.append(
        watched(
            error(
                "export saved_model: NAME holds the user's own versions",
                cli(build(user, teacher)),
                "spam",
            ),
            watch(user),
        )
    )
    cases.append(data_case("export saved_model", build, teacher, places, inputs["many"]))
    problems = run_area("user files: export saved_model", cases)
    assert not problems, "\n".join(problems)


def test_export_tpu(inputs, tmp_path):
    places = Places(tmp_path)
    build = _serving(inputs, "tpu")
    teacher = inputs["teacher"]
    user = places.user()
    cases = [
        watched(
            answer(
                "export tpu: --out a serving base of the user's --force: merged",
                cli(build(user, teacher) + ["--force"]),
                _merged(user, "spam"),
            ),
            watch(user, merged=True),
        )
    ]
    for force in ((), ("--force",)):
        tag = " --force" if force else ""
        user = places.user()
        cases.append(
            watched(
                error(
                    f'export tpu: --out "" run inside a directory of user files{tag}',
                    cli(build("", teacher) + list(force), cwd=user),
                    "--out",
                ),
                watch(user),
            )
        )
        own = places.copy(teacher)
        cases.append(
            watched(
                error(
                    f"export tpu: --out is --model{tag}",
                    cli(build(own, own) + list(force)),
                    "--model",
                ),
                watch(own),
            )
        )
    problems = run_area("user files: export tpu", cases)
    assert not problems, "\n".join(problems)


def test_demo(tmp_path):
    """Refusals only (a demo that ran would take minutes)."""
    places = Places(tmp_path)
    fake = places.fresh("checkpoint")
    (fake / "config.json").write_text("{}")
    (fake / "vocab.txt").write_text("[PAD]\n")
    (fake / "model.safetensors").write_bytes(b"not weights")

    def checkpoint(mp):
        import zoo.datasets.corpora
        import zoo.demo

        mp.setattr(zoo.demo, "minilm_checkpoint_dir", lambda: fake)
        mp.setattr(zoo.datasets.corpora, "minilm_checkpoint_dir", lambda: fake)

    base = ["demo", "--fast", "--android-assets", "none"]
    cases = []
    for force in ((), ("--force",)):
        tag = " --force" if force else ""
        user = places.user()
        cases.append(
            watched(
                error(
                    f"demo: --out a directory of user files{tag}",
                    cli(base + ["--out", user, *force], patch=checkpoint),
                    "--out",
                ),
                watch(user),
            )
        )
        user = places.user()
        cases.append(
            watched(
                error(
                    f'demo: --out "" run inside a directory of user files{tag}',
                    cli(base + ["--out", "", *force], cwd=user, patch=checkpoint),
                    "--out",
                ),
                watch(user),
            )
        )
    cases.append(
        watched(
            error(
                "demo: --out inside the checkpoint it reads",
                cli(base + ["--out", fake / "demo"], patch=checkpoint),
                "--out",
                "checkpoint",
            ),
            watch(fake),
        )
    )
    problems = run_area("user files: demo", cases)
    assert not problems, "\n".join(problems)


# --- models.config merges, driven through the library ------------------------------
#
# `write_serving_files(BASE)` adds every BASE/NAME holding a version zoo
# wrote; here BASE/spam/1 is one (its marker and metadata.json), so each
# case is a merge of "spam" into a models.config of the user's.

CONFIGS = {
    "comments and strings holding braces, quotes and #": (
        "# the team's config } { \" '\n"
        "model_config_list {  # served since 2023 }\n"
        '  config { name: "a{b}" base_path: "/srv/#1/}{"  # } not the end\n'
        "    model_platform: 'tensorflow' }\n"
        "}\n"
    ),
    "angle-bracket messages, lists, escapes and negative numbers": (
        "model_config_list: <\n"
        '  config: < name: "q\\"uote\\\\" base_path: "/srv/q" '
        "model_version_policy < specific < versions: [1, 2] > > >\n"
        '  config { name: "n" base_path: "/srv/n" logging_config { sampling_config '
        "{ sampling_rate: -0.5e-1 } } }\n"
        ">\n"
    ),
    "everything on one line": 'model_config_list { config { name: "x" base_path: "/srv/x" } }',
    "an empty file": "",
    "comments only": "# nothing served yet\n",
    "an empty list": "model_config_list {}\n",
}


def _serving_base(places, config_text=None, *, readme=None, batching=None):
    base = places.fresh("base")
    version = base / "spam" / "1"
    version.mkdir(parents=True)
    (version / ".zoo-output").write_text("written by bert-zoo\n")
    (version / "metadata.json").write_text('{"kind": "saved_model"}')
    if config_text is not None:
        (base / "models.config").write_text(config_text)
    if readme is not None:
        (base / "README.md").write_text(readme)
    if batching is not None:
        (base / "batching_parameters.txt").write_text(batching)
    return base


def _config_kept(base, original, skip=()):
    """kept hook: models.config still holds `original` (before its closing
    bracket, where the new entry goes); every other file unchanged."""
    files = watch(base, skip=("models.config", *skip))
    body = original.rstrip()
    if body.endswith(("}", ">")):
        body = body[:-1].rstrip()

    def kept():
        lost = files()
        text = (
            (base / "models.config").read_text()
            if (base / "models.config").is_file()
            else ""
        )
        if body and body not in text:
            lost.append("models.config changed (an entry of the user's lost)")
        return lost

    return kept


def _merge(base):
    def run():
        from export.saved_model import write_serving_files

        write_serving_files(base)
        return (base / "models.config").read_text()

    return run


def _has_spam(base):
    def check(text):
        return (
            f'base_path: "{(base / "spam").resolve()}"' in text and 'name: "spam"' in text
        )

    return check


def test_models_config_merges(tmp_path):
    places = Places(tmp_path)
    cases = []
    for name, text in CONFIGS.items():
        base = _serving_base(places, text)
        cases.append(
            watched(
                answer(f"models.config: {name}", _merge(base), _has_spam(base)),
                _config_kept(base, text),
            )
        )
    # spam is already served from BASE/spam, with the user's version policy:
    # nothing to change, byte for byte.
    base = _serving_base(places)
    (base / "models.config").write_text(
        'model_config_list {\n  config {\n    name: "spam"\n'
        f'    base_path: "{(base / "spam").resolve()}"\n'
        "    model_version_policy { all {} }\n  }\n}\n"
    )
    cases.append(
        watched(
            answer("models.config: our entry already there", _merge(base), lambda t: True),
            watch(base),
        )
    )
    for name, text, names in (
        (
            "spam serves another path",
            'model_config_list { config { name: "spam" base_path: "/srv/their_spam" } }\n',
            ("models.config", "spam", "/srv/their_spam"),
        ),
        (
            "a message not closed",
            'model_config_list { config { name: "x" }\n',
            ("models.config",),
        ),
        (
            "a string not closed",
            'model_config_list { config { name: "x } }\n',
            ("models.config",),
        ),
        ("custom_model_config", "custom_model_config { }\n", ("custom_model_config",)),
        ("not a text proto at all", "[models]\nbbc = /srv/bbc\n", ("models.config",)),
    ):
        base = _serving_base(places, text)
        cases.append(
            watched(error(f"models.config: {name}", _merge(base), *names), watch(base))
        )
    base = _serving_base(places)
    (base / "models.config").mkdir()
    cases.append(
        watched(
            error("models.config: a directory", _merge(base), "models.config"), watch(base)
        )
    )
    # The user's README.md and batching_parameters.txt are kept; ours go beside.
    base = _serving_base(
        places, CONFIGS["comments only"], readme="# mine\n", batching="mine\n"
    )

    def beside(text, base=base):
        return (base / "README.zoo.md").is_file() and (
            base / "batching_parameters.zoo.txt"
        ).is_file()

    cases.append(
        watched(
            answer(
                "models.config: README.md and batching_parameters.txt of the user's",
                _merge(base),
                beside,
            ),
            _config_kept(base, CONFIGS["comments only"]),
        )
    )
    # An older zoo's README.md and batching_parameters.txt are ours: rewritten.
    base = _serving_base(
        places,
        None,
        readme="# TF Serving models exported by `zoo export`\n\nModels: old.\n",
        batching=(
            "max_batch_size { value: 32 }\nbatch_timeout_micros { value: 5000 }\n"
            "max_enqueued_batches { value: 100 }\nnum_batch_threads { value: 2 }\n"
        ),
    )

    def rewritten(text, base=base):
        return (
            "spam" in (base / "README.md").read_text()
            and not (base / "README.zoo.md").exists()
        )

    cases.append(
        answer(
            "models.config: an older zoo's README.md is rewritten", _merge(base), rewritten
        )
    )
    problems = run_area("user files: models.config", cases)
    assert not problems, "\n".join(problems)
