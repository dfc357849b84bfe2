"""Reliability corpus, areas "model directories" and "model directories,
record kept": zoo model directories that are incomplete, edited or damaged.
Loading must fail with an error naming the file (and the field), or, for
damage no reader sees, give the same model; never load a model with a
vocabulary that re-tokenizes silently.

Each change is tried twice. With the record of the directory's files
(zoo_model.json `files`) regenerated after it, as a deliberate edit would:
then only the checks of the files against each other and against the model
can refuse it, naming the field. And as it is: the record refuses it first,
naming the file.

Each case is its own pytest item, its name the id (`CASES`: name -> a
function of the item's `Ctx` that builds the case), in both areas; the
model directories and the reference weights are built once per module."""

import json
import shutil
import types

import numpy as np
import pytest

import zoo
from tests.reliability.corpus import Case, CaseTable, check_case, error, error_or_same
from zoo.checkpoints import load_model_dir, save_model_dir
from zoo.text.tokenizer import WordPieceTokenizer
from zoo.utils.file_record import record_files

WORDS = (
    ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    + [f"w{i}" for i in range(40)]
    + ["a", "man", "the", "goal"]
)


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    root = tmp_path_factory.mktemp("dirs")
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
    small = zoo.BertEncoder(
        vocabulary_size=len(WORDS) - 5,
        num_layers=1,
        num_heads=2,
        hidden_dim=8,
        intermediate_dim=16,
        max_sequence_length=16,
    )
    save_model_dir(zoo.Classifier(small, 2), root / "small", WordPieceTokenizer(WORDS[:-5]))
    return root


AREA = "model directories"
KEPT = "model directories, record kept"
CASES = CaseTable(AREA)  # name -> make(ctx) -> Case
CHANGED = []  # the cases that change a copy of the model: tried again, record kept
# With the record kept, a case that edits two files is refused on the first
# file the record checks: vocab.txt. Every other case names its first name.
RENAMED = {"embedding rows edited to match a cut vocab.txt": ("vocab.txt",)}
FLIPS = {"model.keras": (10, 7907, 31), "vocab.txt": (5, 53, 40)}  # count, step, start


@pytest.fixture(scope="module")
def reference(source):
    """The weights of the unchanged model."""
    return load_model_dir(source / "model")[0].get_weights()


@pytest.fixture
def ctx(source, reference, tmp_path):
    return types.SimpleNamespace(source=source, reference=reference, tmp=tmp_path)


def _case(name, make):
    """Register `make(ctx)`, which builds the case `name`; a name once."""
    CASES[name] = make


def _changed(name, change, *names):
    """Loading a copy of the model after `change(copy, source)` must raise a
    clear error naming `names`."""
    CHANGED.append(name)
    _case(name, lambda c: error(name, _broken(c, change), *names))


def _broken(c, change):
    """`run()`: a copy of the model directory, changed, its record
    regenerated, loaded; `run.as_it_is()` the same with the record left as
    written."""

    def run(rerecord=True):
        copy = c.tmp / ("rerecorded" if rerecord else "as-is")
        shutil.copytree(c.source / "model", copy)
        change(copy, c.source)
        if rerecord:
            _rerecord(copy)
        return load_model_dir(copy)

    run.as_it_is = lambda: run(rerecord=False)
    return run


def _meta(fn):
    def change(d, source):
        m = json.loads((d / "zoo_model.json").read_text())
        fn(m)
        (d / "zoo_model.json").write_text(json.dumps(m))

    return change


def _vocab(fn):
    def change(d, source):
        tokens = (d / "vocab.txt").read_text().split("\n")[:-1]
        (d / "vocab.txt").write_text("\n".join(fn(tokens)) + "\n")

    return change


def _swap(tokens):
    i, j = tokens.index("a"), tokens.index("man")
    tokens[i], tokens[j] = tokens[j], tokens[i]
    return tokens


def _flip(file, offset):
    def change(d, source):
        data = bytearray((d / file).read_bytes())
        data[offset % len(data)] ^= 0x20
        (d / file).write_bytes(bytes(data))

    return change


def _flipped(file, k):
    """Flip `k` of `file`: one byte, at an offset spread over the file (the
    file's size sets it, so the case's name carries it). A flip in vocab.txt
    must be refused; one in model.keras may land in a byte no reader uses,
    and then the model must load unchanged."""
    count, step, start = FLIPS[file]

    def make(c):
        offset = (k * step + start) % (c.source / "model" / file).stat().st_size
        name = f"{file} flip {k} (byte {offset})"
        run = _broken(c, _flip(file, offset))
        if file == "vocab.txt":
            return error(name, run, file)

        def same(loaded):
            weights = loaded[0].get_weights()
            return all(np.array_equal(a, b) for a, b in zip(weights, c.reference))

        return error_or_same(name, run, same, file)

    CHANGED.append(f"{file} flip {k}")
    _case(f"{file} flip {k}", make)


def _missing_or_unreadable():
    _case(
        "no such directory",
        lambda c: error(
            "no such directory", lambda: load_model_dir(c.tmp / "nowhere"), "nowhere"
        ),
    )
    _case(
        "a file, not a directory",
        lambda c: error(
            "a file, not a directory",
            lambda: load_model_dir(c.source / "model" / "vocab.txt"),
            "vocab.txt",
        ),
    )
    for file in ("zoo_model.json", "model.keras", "vocab.txt"):
        _changed(f"{file} missing", lambda d, s, f=file: (d / f).unlink(), file)
    _changed(
        "zoo_model.json holds a list",
        lambda d, s: (d / "zoo_model.json").write_text("[1]"),
        "zoo_model.json",
        "list",
    )
    _changed(
        "zoo_model.json is not JSON",
        lambda d, s: (d / "zoo_model.json").write_text("{format: zoo"),
        "zoo_model.json",
        "JSON",
    )
    _changed(
        "zoo_model.json is not UTF-8",
        lambda d, s: (d / "zoo_model.json").write_bytes(b'{"format": "\xff"}'),
        "zoo_model.json",
        "UTF-8",
    )


def _edited_fields():
    _changed("format: other", _meta(lambda m: m.update(format="other")), "format")
    _changed("format_version 99", _meta(lambda m: m.update(format_version=99)), "format")
    _changed("format_version '1'", _meta(lambda m: m.update(format_version="1")), "format")
    # Version 1 had no record of files: one that carries the field anyway
    # is checked, so a lowered version does not switch the check off.
    _changed(
        "format_version 1 with files: null",
        _meta(lambda m: m.update(format_version=1, files=None)),
        "`files`",
    )
    _changed(
        "format_version 1 with a record, vocab.txt edited",
        lambda d, s: (
            _meta(lambda m: m.update(format_version=1))(d, s),
            _vocab(_swap)(d, s),
        ),
        "vocab.txt",
    )
    _changed(
        "encoder_config missing",
        _meta(lambda m: m.pop("encoder_config")),
        "encoder_config",
    )
    _changed(
        "encoder_config.vocabulary_size a string",
        _meta(lambda m: m["encoder_config"].update(vocabulary_size="49")),
        "encoder_config",
    )
    _changed("labels: 7", _meta(lambda m: m.update(labels=7)), "`labels`")
    _changed("lowercase: 'yes'", _meta(lambda m: m.update(lowercase="yes")), "`lowercase`")


def _edited_vocabularies():
    _changed(
        "vocab.txt cut in half",
        _vocab(lambda t: t[: len(t) // 2]),
        "vocab.txt",
        "rows",
    )
    _changed(
        "vocab.txt with 1,000 extra lines",
        _vocab(lambda t: t + [f"extra{i}" for i in range(1000)]),
        "vocab.txt",
        "rows",
    )
    _changed("vocab.txt: two lines swapped", _vocab(_swap), "vocab.txt", "changed")
    _changed("vocab.txt: a line repeated", _vocab(lambda t: t[:-1] + [t[-2]]), "vocab.txt")
    _changed("vocab.txt empty", lambda d, s: (d / "vocab.txt").write_text(""), "vocab.txt")
    _changed(
        "vocab.txt not UTF-8",
        lambda d, s: (d / "vocab.txt").write_bytes(b"[PAD]\n\xff\xfe\n"),
        "vocab.txt",
        "UTF-8",
    )
    _changed(
        "embedding rows edited to match a cut vocab.txt",
        lambda d, s: (
            _vocab(lambda t: t[:-5])(d, s),
            _meta(
                lambda m: (
                    m["encoder_config"].update(vocabulary_size=len(WORDS) - 5),
                    m.pop("vocabulary_sha256"),
                )
            )(d, s),
        ),
        "model.keras",
        "vocabulary_size",
    )


def _replaced_weights():
    _changed(
        "model.keras of another model",
        lambda d, s: shutil.copyfile(s / "small" / "model.keras", d / "model.keras"),
        "model.keras",
    )
    _changed(
        "model.keras empty",
        lambda d, s: (d / "model.keras").write_bytes(b""),
        "model.keras",
    )
    _changed(
        "model.keras random bytes",
        lambda d, s: (d / "model.keras").write_bytes(np.random.default_rng(0).bytes(5000)),
        "model.keras",
    )
    _changed(
        "model.keras truncated",
        lambda d, s: (d / "model.keras").write_bytes(
            (s / "model" / "model.keras").read_bytes()[:2000]
        ),
        "model.keras",
    )
    for file, (count, _, _) in FLIPS.items():
        for k in range(count):
            _flipped(file, k)


_missing_or_unreadable()
_edited_fields()
_edited_vocabularies()
_replaced_weights()


@pytest.mark.parametrize("name", list(CASES))
def test_model_directories(name, ctx):
    check_case(AREA, CASES[name](ctx))


@pytest.mark.parametrize("name", CHANGED)
def test_model_directories_record_kept(name, ctx):
    """The same change with the record left as written: the file is named."""
    case = CASES[name](ctx)
    names = RENAMED.get(name, case.names[:1])
    check_case(
        KEPT,
        Case(case.name, case.run.as_it_is, case.expect, names, case.check, case.errors),
    )


def _rerecord(directory):
    """Regenerate the record of the directory's files, when zoo_model.json is
    still an object with one."""
    path = directory / "zoo_model.json"
    try:
        meta = json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError, FileNotFoundError):
        return
    if isinstance(meta, dict) and isinstance(meta.get("files"), dict):
        meta["files"] = record_files(directory, skip={"zoo_model.json"})
        path.write_text(json.dumps(meta))
