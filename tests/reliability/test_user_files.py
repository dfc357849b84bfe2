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

Each case is its own pytest item, its name the id (`AREAS`: command ->
name -> a function that builds the case, its directories and its `kept`
hook, from the module's inputs and the item's own `Places`); the models and
data the commands read are built once per module.
"""

import contextlib
import csv
import io
import pathlib
import random
import shutil

import pytest

import zoo
import zoo.datasets.corpora
import zoo.demo
from export.saved_model import write_serving_files
from tests.distill.tiny import TOPICS, WORDS, teacher_dir, topic_data
from tests.reliability.corpus import CaseTable, answer, check_case, error
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


AREAS: dict = {}  # command -> case name -> make(inputs, places, name) -> Case


def _case(command, name, make):
    """Register `make(inputs, places, name)`, which builds the case `name`
    of the area "user files: COMMAND"; a name once per area."""
    AREAS.setdefault(command, CaseTable(f"user files: {command}"))[name] = make


def _check(command, name, inputs, places):
    check_case(f"user files: {command}", AREAS[command][name](inputs, places, name))


@pytest.fixture
def places(tmp_path):
    return Places(tmp_path)


def standard(command, build, flag, source, *, serving=False):
    """The cases every writing command must pass. `build(inputs, out,
    main_input, data=None)` is the command line; `flag` names the main input
    (--model, SRC, ...), `source` is the key of that input in `inputs`."""
    for force in ((), ("--force",)):
        tag = " --force" if force else ""
        force = list(force)

        def user_files(i, places, name, force=force):
            user = places.user()
            return watched(
                error(name, cli(build(i, user, i[source]) + force), "--out"), watch(user)
            )

        def empty_out(i, places, name, force=force):
            user = places.user()
            return watched(
                error(name, cli(build(i, "", i[source]) + force, cwd=user), "--out"),
                watch(user),
            )

        def out_is_input(i, places, name, force=force):
            own = places.copy(i[source])
            return watched(error(name, cli(build(i, own, own) + force), flag), watch(own))

        def out_inside_input(i, places, name, force=force):
            own = places.copy(i[source])
            return watched(
                error(name, cli(build(i, own / "out", own) + force), flag), watch(own)
            )

        def out_holds_input(i, places, name, force=force):
            user = places.user()
            into = user / "inputs" / pathlib.Path(i[source]).name
            own = places.copy(i[source], into=into)
            return watched(error(name, cli(build(i, user, own) + force), flag), watch(user))

        if not serving:  # a TF Serving base is merged into: see the saved_model cases
            _case(command, f"{command}: --out a directory of user files{tag}", user_files)
        _case(
            command,
            f'{command}: --out "" run inside a directory of user files{tag}',
            empty_out,
        )
        _case(command, f"{command}: --out is {flag}{tag}", out_is_input)
        _case(command, f"{command}: --out inside {flag}{tag}", out_inside_input)
        _case(
            command, f"{command}: --out holds {flag} among user files{tag}", out_holds_input
        )


def _parsed(argv):
    return build_parser().parse_args([str(a) for a in argv])


def training_cases(command, build, flag, source):
    """A training command's own run directory: --force replaces the run,
    keeps a file the user added, and never removes the run's input."""

    def own_input(i, places, name):
        # Issue #35: `--model RUN/model --out RUN --force` removed its own input.
        run = places.fresh("run")
        own = places.copy(i[source], into=run / "model")
        write_run_info(run, _parsed(build(i, run, places.root / "earlier")))
        (run / "metrics.json").write_text('{"accuracy": 0.5}\n')
        return watched(error(name, cli(build(i, run, own) + ["--force"]), flag), watch(run))

    def user_file_in_run(i, places, name):
        # Our earlier run (args.json of this command, no marker: an older zoo)
        # with a file the user added: --force starts over and keeps that file.
        run = places.fresh("run")
        places.copy(i[source], into=run / "model")
        write_run_info(run, _parsed(build(i, run, places.root / "earlier")))
        (run / "metrics.json").write_text('{"accuracy": 0.5}\n')
        (run / "notes.txt").write_text("the user's notes on this run\n")

        def trained(result):
            return result["exit"] == 0 and (run / "model" / "zoo_model.json").is_file()

        return watched(
            answer(name, cli(build(i, run, i[source]) + ["--force"]), trained),
            watch(run / "notes.txt"),
        )

    _case(command, f"{command}: --out is our earlier run holding {flag} --force", own_input)
    _case(
        command,
        f"{command}: --force on our earlier run keeps a user's file in it",
        user_file_in_run,
    )


def replaced_output_cases(command, build, source, output):
    """Commands that write one directory (convert, prune, export tflite):
    --force replaces our own earlier output, never a file a user put in it.
    `output` is the key in `inputs` of a directory to stand for that output."""

    def ours_replaced(i, places, name):
        ours = places.fresh("ours") / "out"
        places.copy(i[output], into=ours)

        def replaced(result):
            return result["exit"] == 0 and (ours / ".zoo-output").is_file()

        return answer(name, cli(build(i, ours, i[source]) + ["--force"]), replaced)

    def user_file_kept(i, places, name):
        ours = places.fresh("ours") / "out"
        places.copy(i[output], into=ours)
        (ours / "notes.txt").write_text("the user's notes\n")
        return watched(
            error(name, cli(build(i, ours, i[source]) + ["--force"]), "--out", "notes.txt"),
            watch(ours / "notes.txt"),
        )

    _case(command, f"{command}: --force replaces our earlier output", ours_replaced)
    _case(
        command, f"{command}: --force on our output holding a user's file", user_file_kept
    )


def data_case(command, build, source, data, *, flag="--data", glob=False):
    """--out around the --data file (or inside a glob's directory); `data`
    is the key of that file in `inputs`."""

    def make(i, places, name):
        user = places.user()
        copy = places.copy(i[data], into=user / "texts" / pathlib.Path(i[data]).name)
        if glob:
            argv = build(
                i, user / "texts" / "run", i[source], data=user / "texts" / "*.txt"
            )
        else:
            argv = build(i, user, i[source], data=copy)
        return watched(error(name, cli(argv + ["--force"]), flag), watch(user))

    if glob:
        name = f"{command}: --out inside the directory of a --data glob --force"
    else:
        name = f"{command}: --out holds the --data file --force"
    _case(command, name, make)


def _convert(i, out, src, data=None):
    return ["convert", src, "--out", out]


standard("convert", _convert, "SRC", "teacher")
replaced_output_cases("convert", _convert, "teacher", "teacher")


@pytest.mark.parametrize("name", list(AREAS["convert"]))
def test_convert(name, inputs, places):
    _check("convert", name, inputs, places)


def _finetune(i, out, model, data=None):
    return [
        "finetune",
        "--model",
        model,
        "--data",
        data or i["data"],
        "--task",
        "classify",
        "--out",
        out,
        "--sequence-length",
        "16",
        *TRAIN,
    ]


standard("finetune", _finetune, "--model", "encoder")
training_cases("finetune", _finetune, "--model", "encoder")
data_case("finetune", _finetune, "encoder", "data")


@pytest.mark.parametrize("name", list(AREAS["finetune"]))
def test_finetune(name, inputs, places):
    _check("finetune", name, inputs, places)


def _distill(i, out, teacher, data=None):
    return [
        "distill",
        "--teacher",
        teacher,
        "--data",
        data or i["data"],
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


standard("distill", _distill, "--teacher", "teacher")
training_cases("distill", _distill, "--teacher", "teacher")
data_case("distill", _distill, "teacher", "data")


@pytest.mark.parametrize("name", list(AREAS["distill"]))
def test_distill(name, inputs, places):
    _check("distill", name, inputs, places)


def _pretrain(i, out, config, data=None):
    return [
        "pretrain",
        "--config",
        config,
        "--data",
        data or i["corpus"],
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


standard("pretrain", _pretrain, "--config", "encoder")
training_cases("pretrain", _pretrain, "--config", "encoder")
data_case("pretrain", _pretrain, "encoder", "corpus", glob=True)


@pytest.mark.parametrize("name", list(AREAS["pretrain"]))
def test_pretrain(name, inputs, places):
    _check("pretrain", name, inputs, places)


def _prune(i, out, model, data=None):
    return [
        "prune",
        "--model",
        model,
        "--data",
        data or i["data"],
        "--out",
        out,
        "--no-evaluate",
    ]


standard("prune", _prune, "--model", "teacher")
replaced_output_cases("prune", _prune, "teacher", "teacher")
data_case("prune", _prune, "teacher", "data")


@pytest.mark.parametrize("name", list(AREAS["prune"]))
def test_prune(name, inputs, places):
    _check("prune", name, inputs, places)


def _tflite(i, out, model, data=None):
    return [
        "export",
        "--model",
        model,
        "--format",
        "tflite",
        "--data",
        data or i["many"],
        "--out",
        out,
        *EXPORT,
    ]


standard("export tflite", _tflite, "--model", "teacher")
replaced_output_cases("export tflite", _tflite, "teacher", "teacher")
data_case("export tflite", _tflite, "teacher", "many")


@pytest.mark.parametrize("name", list(AREAS["export tflite"]))
def test_export_tflite(name, inputs, places):
    _check("export tflite", name, inputs, places)


def _serving(fmt):
    def build(i, out, model, data=None, name="spam"):
        extra = ["--batch-size", "2"] if fmt == "tpu" else []
        return [
            "export",
            "--model",
            model,
            "--format",
            fmt,
            "--data",
            data or i["many"],
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


def _saved_model_cases():
    """A TF Serving base of the user's, whose models.config gets our entry."""
    command, build = "export saved_model", _serving("saved_model")

    def merged(i, places, name):
        # The new model is added, the user's other entry kept verbatim,
        # README.md and batching_parameters.txt kept.
        user = places.user()
        return watched(
            answer(name, cli(build(i, user, i["teacher"])), _merged(user, "spam")),
            watch(user, merged=True),
        )

    def other_name(i, places, name):
        # The name of the user's other model: refused, its entry kept.
        user = places.user()
        return watched(
            error(
                name,
                cli(build(i, user, i["teacher"], name="other")),
                "models.config",
                "other",
            ),
            watch(user),
        )

    def other_name_forced(i, places, name):
        # ... unless --force, which points that entry at the new model.
        user = places.user()

        def repointed(result):
            config = (user / "models.config").read_text()
            return (
                result["exit"] == 0
                and str((user / "other").resolve()) in config
                and "/srv/models/other" not in config
            )

        argv = build(i, user, i["teacher"], name="other") + ["--force"]
        return watched(
            answer(name, cli(argv), repointed), watch(user, skip=("models.config",))
        )

    def unreadable(i, places, name, force):
        user = places.user()
        (user / "models.config").write_text(
            'model_config_list {\n  config {\n    name: "x\n'
        )
        return watched(
            error(name, cli(build(i, user, i["teacher"]) + force), "models.config"),
            watch(user),
        )

    def users_version(i, places, name):
        # A version directory of the user's where ours would go.
        user = places.user()
        (user / "spam" / "1").mkdir(parents=True)
        (user / "spam" / "1" / "mine.txt").write_text("the user's version\n")
        argv = build(i, user, i["teacher"]) + ["--version", "1", "--force"]
        return watched(error(name, cli(argv), "spam"), watch(user))

    def users_model(i, places, name):
        # The user's own model under NAME, served by its highest version: a
        # new version of ours would take its place in TF Serving.
        user = places.user()
        (user / "spam" / "3").mkdir(parents=True)
        (user / "spam" / "3" / "saved_model.pb").write_bytes(b"the user's model")
        return watched(error(name, cli(build(i, user, i["teacher"])), "spam"), watch(user))

    standard(command, build, "--model", "teacher", serving=True)
    _case(command, f"{command}: --out a serving base of the user's: merged", merged)
    _case(command, f"{command}: --name of another model in models.config", other_name)
    _case(
        command,
        f"{command}: --name of another model --force repoints it",
        other_name_forced,
    )
    for force in ((), ("--force",)):
        tag = " --force" if force else ""
        _case(
            command,
            f"{command}: a models.config it cannot read{tag}",
            lambda i, places, name, force=list(force): unreadable(i, places, name, force),
        )
    _case(command, f"{command}: --version 1 --force over the user's version", users_version)
    _case(command, f"{command}: NAME holds the user's own versions", users_model)
    data_case(command, build, "teacher", "many")


_saved_model_cases()


@pytest.mark.parametrize("name", list(AREAS["export saved_model"]))
def test_export_saved_model(name, inputs, places):
    _check("export saved_model", name, inputs, places)


def _tpu_cases():
    command, build = "export tpu", _serving("tpu")

    def merged(i, places, name):
        user = places.user()
        return watched(
            answer(
                name, cli(build(i, user, i["teacher"]) + ["--force"]), _merged(user, "spam")
            ),
            watch(user, merged=True),
        )

    def empty_out(i, places, name, force):
        user = places.user()
        return watched(
            error(name, cli(build(i, "", i["teacher"]) + force, cwd=user), "--out"),
            watch(user),
        )

    def out_is_model(i, places, name, force):
        own = places.copy(i["teacher"])
        return watched(error(name, cli(build(i, own, own) + force), "--model"), watch(own))

    _case(command, f"{command}: --out a serving base of the user's --force: merged", merged)
    for force in ((), ("--force",)):
        tag = " --force" if force else ""
        _case(
            command,
            f'{command}: --out "" run inside a directory of user files{tag}',
            lambda i, places, name, force=list(force): empty_out(i, places, name, force),
        )
        _case(
            command,
            f"{command}: --out is --model{tag}",
            lambda i, places, name, force=list(force): out_is_model(i, places, name, force),
        )


_tpu_cases()


@pytest.mark.parametrize("name", list(AREAS["export tpu"]))
def test_export_tpu(name, inputs, places):
    _check("export tpu", name, inputs, places)


def _fake_checkpoint(places):
    """A checkpoint directory `zoo demo` reads (it would fail to load), and
    a patch pointing the demo at it."""
    fake = places.fresh("checkpoint")
    (fake / "config.json").write_text("{}")
    (fake / "vocab.txt").write_text("[PAD]\n")
    (fake / "model.safetensors").write_bytes(b"not weights")

    def patch(mp):
        mp.setattr(zoo.demo, "minilm_checkpoint_dir", lambda: fake)
        mp.setattr(zoo.datasets.corpora, "minilm_checkpoint_dir", lambda: fake)

    return fake, patch


def _demo_cases():
    """Refusals only (a demo that ran would take minutes)."""
    base = ["demo", "--fast", "--android-assets", "none"]

    def user_files(i, places, name, force):
        _, patch = _fake_checkpoint(places)
        user = places.user()
        argv = base + ["--out", user, *force]
        return watched(error(name, cli(argv, patch=patch), "--out"), watch(user))

    def empty_out(i, places, name, force):
        _, patch = _fake_checkpoint(places)
        user = places.user()
        argv = base + ["--out", "", *force]
        return watched(error(name, cli(argv, cwd=user, patch=patch), "--out"), watch(user))

    def inside_checkpoint(i, places, name):
        fake, patch = _fake_checkpoint(places)
        argv = base + ["--out", fake / "demo"]
        return watched(
            error(name, cli(argv, patch=patch), "--out", "checkpoint"), watch(fake)
        )

    for force in ((), ("--force",)):
        tag = " --force" if force else ""
        _case(
            "demo",
            f"demo: --out a directory of user files{tag}",
            lambda i, places, name, force=force: user_files(i, places, name, force),
        )
        _case(
            "demo",
            f'demo: --out "" run inside a directory of user files{tag}',
            lambda i, places, name, force=force: empty_out(i, places, name, force),
        )
    _case("demo", "demo: --out inside the checkpoint it reads", inside_checkpoint)


_demo_cases()


@pytest.mark.parametrize("name", list(AREAS["demo"]))
def test_demo(name, places):
    _check("demo", name, None, places)


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
        write_serving_files(base)
        return (base / "models.config").read_text()

    return run


def _has_spam(base):
    def check(text):
        return (
            f'base_path: "{(base / "spam").resolve()}"' in text and 'name: "spam"' in text
        )

    return check


def _merge_cases():
    command = "models.config"

    def kept_around(i, places, name, text):
        base = _serving_base(places, text)
        return watched(
            answer(name, _merge(base), _has_spam(base)), _config_kept(base, text)
        )

    def already_there(i, places, name):
        # spam is already served from BASE/spam, with the user's version
        # policy: nothing to change, byte for byte.
        base = _serving_base(places)
        (base / "models.config").write_text(
            'model_config_list {\n  config {\n    name: "spam"\n'
            f'    base_path: "{(base / "spam").resolve()}"\n'
            "    model_version_policy { all {} }\n  }\n}\n"
        )
        return watched(answer(name, _merge(base), lambda t: True), watch(base))

    def refused(i, places, name, text, names):
        base = _serving_base(places, text)
        return watched(error(name, _merge(base), *names), watch(base))

    def a_directory(i, places, name):
        base = _serving_base(places)
        (base / "models.config").mkdir()
        return watched(error(name, _merge(base), "models.config"), watch(base))

    def users_readme(i, places, name):
        # The user's README.md and batching_parameters.txt are kept; ours go beside.
        text = CONFIGS["comments only"]
        base = _serving_base(places, text, readme="# mine\n", batching="mine\n")

        def beside(result):
            return (base / "README.zoo.md").is_file() and (
                base / "batching_parameters.zoo.txt"
            ).is_file()

        return watched(answer(name, _merge(base), beside), _config_kept(base, text))

    def older_readme(i, places, name):
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

        def rewritten(result):
            return (
                "spam" in (base / "README.md").read_text()
                and not (base / "README.zoo.md").exists()
            )

        return answer(name, _merge(base), rewritten)

    for label, text in CONFIGS.items():
        _case(
            command,
            f"models.config: {label}",
            lambda i, places, name, text=text: kept_around(i, places, name, text),
        )
    _case(command, "models.config: our entry already there", already_there)
    for label, text, names in REFUSED_CONFIGS:
        _case(
            command,
            f"models.config: {label}",
            lambda i, places, name, text=text, names=names: refused(
                i, places, name, text, names
            ),
        )
    _case(command, "models.config: a directory", a_directory)
    _case(
        command,
        "models.config: README.md and batching_parameters.txt of the user's",
        users_readme,
    )
    _case(command, "models.config: an older zoo's README.md is rewritten", older_readme)


REFUSED_CONFIGS = [  # (label, models.config, what the error must name)
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
]
_merge_cases()


@pytest.mark.parametrize("name", list(AREAS["models.config"]))
def test_models_config_merges(name, places):
    _check("models.config", name, None, places)
