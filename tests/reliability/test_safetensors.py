"""Reliability corpus, area "safetensors files": a `model.safetensors` that is
damaged, relabelled or from another checkpoint than its config.json, read by
`zoo.checkpoints.load_hf_encoder` (and, for a few, by `zoo convert`). Each
must be one clear error naming the file and the field or tensor, or, for a
documented safe cast (F16, BF16, F64 weights), the same model as the F32
file. The files are tiny encoders written by `save_hf`, then edited."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil

import numpy as np
import pytest

import zoo
from tests.reliability.corpus import Case, answer, check_case, error
from zoo.checkpoints.hf import load_hf_encoder, save_hf
from zoo.cli import main

AREA = "safetensors files"
ST = "model.safetensors"
WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(35)]
SIZES = dict(num_layers=2, num_heads=2, hidden_dim=8, intermediate_dim=16)
GAMMA = "embeddings.LayerNorm.weight"
QUERY = "encoder.layer.0.attention.self.query.weight"


def _encoder(family):
    extra = {
        "bert": {},
        "distilbert": dict(num_segments=0, layer_norm_epsilon=1e-12),
        "albert": dict(embedding_dim=4),
        "roberta": dict(num_segments=1),
    }[family]
    config = zoo.EncoderConfig(
        vocabulary_size=len(WORDS),
        max_sequence_length=16,
        family=family,
        **SIZES,
        **extra,
    )
    return zoo.build_encoder(config)


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    """family -> (HF directory, the encoder written there)."""
    root = tmp_path_factory.mktemp("safetensors")
    out = {}
    for family in ("bert", "distilbert", "albert", "roberta"):
        encoder = _encoder(family)
        if family == "roberta":
            save_hf(encoder, root / family)
        else:
            save_hf(encoder, root / family, vocabulary=WORDS, lowercase=True)
        out[family] = (root / family, encoder)
    return out


# --- editing a safetensors file -------------------------------------------


def split(path):
    data = path.read_bytes()
    n = int.from_bytes(data[:8], "little")
    return json.loads(data[8 : 8 + n]), data[8 + n :]


def join(path, header, body):
    text = json.dumps(header).encode()
    path.write_bytes(len(text).to_bytes(8, "little") + text + body)


def edit_header(change):
    def edit(path):
        header, body = split(path)
        change(header)
        join(path, header, body)

    return edit


def set_length(n):
    def edit(path):
        data = path.read_bytes()
        path.write_bytes(n.to_bytes(8, "little") + data[8:])

    return edit


def cut(fraction):
    def edit(path):
        data = path.read_bytes()
        path.write_bytes(data[: int(len(data) * fraction)])

    return edit


def replace_bytes(data):
    return lambda path: path.write_bytes(data)


def garble_header(path):
    data = path.read_bytes()
    n = int.from_bytes(data[:8], "little")
    path.write_bytes(data[:8] + b"\x01not json" + b" " * (n - 9) + data[8 + n :])


def relabel(name, dtype, shape):
    """`name`'s entry says `dtype` and `shape` (same bytes)."""

    def change(header):
        header[name]["dtype"] = dtype
        header[name]["shape"] = shape

    return edit_header(change)


def move_offsets(name, offsets):
    def change(header):
        header[name]["data_offsets"] = offsets

    return edit_header(change)


def overlap(header):
    # The query kernel's entry points at the key kernel's bytes.
    key = "encoder.layer.0.attention.self.key.weight"
    header[QUERY]["data_offsets"] = header[key]["data_offsets"]


def nested(path):
    _, body = split(path)
    text = b"[" * 100_000 + b"]" * 100_000
    path.write_bytes(len(text).to_bytes(8, "little") + text + body)


def duplicate(path):
    header, body = split(path)
    text = json.dumps(header)
    entry = json.dumps(header[GAMMA])
    text = text[:-1] + f', "{GAMMA}": {entry}}}'
    raw = text.encode()
    path.write_bytes(len(raw).to_bytes(8, "little") + raw + body)


def not_utf8(path):
    header, body = split(path)
    raw = json.dumps(header).encode().replace(b"pt", b"\xff\xfe", 1)
    path.write_bytes(len(raw).to_bytes(8, "little") + raw + body)


def f64_overflow(path):
    header, body = split(path)
    entry = header[GAMMA]
    begin, end = entry["data_offsets"]
    values = np.full(entry["shape"], 1e300, "<f8").tobytes()
    entry["dtype"] = "F64"
    shift = len(values) - (end - begin)
    for other in header.values():
        if isinstance(other, dict) and "data_offsets" in other:
            b, e = other["data_offsets"]
            if b >= end:
                other["data_offsets"] = [b + shift, e + shift]
    entry["data_offsets"] = [begin, begin + len(values)]
    join(path, header, body[:begin] + values + body[end:])


# name -> (edit of model.safetensors, strings the error must name). Each is
# also a line `zoo convert` must print as one line (CLI below, for some).
BROKEN = {
    "header length 10**12": (set_length(10**12), ("header length",)),
    "header length past the end": (set_length(5_000_000), ("header length",)),
    "header length 0": (set_length(0), ("header length 0",)),
    "header length 2**64-1": (set_length(2**64 - 1), ("header length",)),
    "truncated to half": (cut(0.5), ("past the end",)),
    "truncated inside the header": (
        lambda p: p.write_bytes(p.read_bytes()[:20]),
        ("header length",),
    ),
    "empty file": (replace_bytes(b""), ("0 bytes",)),
    "7 bytes": (replace_bytes(b"\x10\x00\x00\x00\x00\x00\x00"), ("7 bytes",)),
    "non-JSON header": (garble_header, ("not valid JSON",)),
    "header not UTF-8": (not_utf8, ("not UTF-8",)),
    "header a JSON list": (
        lambda p: join(p, [], split(p)[1]),
        ("JSON list",),
    ),
    "header nested 100,000 deep": (nested, ("nest",)),
    "a tensor named twice": (duplicate, (GAMMA, "twice")),
    "overflowing shape": (
        edit_header(lambda h: h[GAMMA].update(shape=[2**62, 2**62, 2**62])),
        (GAMMA, "shape"),
    ),
    "shape product wraps int64": (
        edit_header(lambda h: h[QUERY].update(shape=[2**32, 2**32, 2**32])),
        (QUERY, "bytes"),
    ),
    "negative dimension": (
        edit_header(lambda h: h[GAMMA].update(shape=[-8])),
        (GAMMA, "shape"),
    ),
    "shape of floats": (
        edit_header(lambda h: h[GAMMA].update(shape=[8.0])),
        (GAMMA, "shape"),
    ),
    "shape of bools": (
        edit_header(lambda h: h[GAMMA].update(shape=[True] * 8)),
        (GAMMA, "shape"),
    ),
    "shape a string": (
        edit_header(lambda h: h[GAMMA].update(shape="8")),
        (GAMMA, "shape"),
    ),
    "shape disagrees with offsets": (
        edit_header(lambda h: h[GAMMA].update(shape=[7])),
        (GAMMA, "bytes"),
    ),
    "offsets past the end": (
        move_offsets(GAMMA, [10**9, 10**9 + 32]),
        (GAMMA, "past the end"),
    ),
    "offsets reversed": (move_offsets(GAMMA, [64, 32]), (GAMMA, "data_offsets")),
    "negative offset": (move_offsets(GAMMA, [-32, 0]), (GAMMA, "data_offsets")),
    "offsets not a pair": (move_offsets(GAMMA, [0, 32, 64]), (GAMMA, "data_offsets")),
    "two tensors share bytes": (edit_header(overlap), (QUERY, "share bytes")),
    "unknown dtype": (
        edit_header(lambda h: h[GAMMA].update(dtype="F12")),
        (GAMMA, "dtype 'F12'"),
    ),
    "dtype lower case": (
        edit_header(lambda h: h[GAMMA].update(dtype="f32")),
        (GAMMA, "dtype 'f32'"),
    ),
    "an entry with an unknown field": (
        edit_header(lambda h: h[GAMMA].update(strides=[1])),
        (GAMMA, "fields"),
    ),
    "an entry missing its dtype": (
        edit_header(lambda h: h[GAMMA].pop("dtype")),
        (GAMMA, "fields"),
    ),
    "an entry that is a list": (
        edit_header(lambda h: h.update({GAMMA: [1, 2]})),
        (GAMMA,),
    ),
    "__metadata__ not strings": (
        edit_header(lambda h: h.update(__metadata__={"format": 1})),
        ("__metadata__",),
    ),
    # A weight relabelled with the same bytes: refused, never reinterpreted.
    "LayerNorm gamma relabelled I32": (relabel(GAMMA, "I32", [8]), (GAMMA, "I32")),
    "LayerNorm gamma relabelled I64": (relabel(GAMMA, "I64", [4]), (GAMMA, "I64")),
    "LayerNorm gamma relabelled U8": (relabel(GAMMA, "U8", [32]), (GAMMA, "U8")),
    "LayerNorm gamma relabelled BOOL": (relabel(GAMMA, "BOOL", [32]), (GAMMA, "BOOL")),
    "query kernel relabelled I32": (relabel(QUERY, "I32", [8, 8]), (QUERY, "I32")),
    "query kernel relabelled U32": (relabel(QUERY, "U32", [8, 8]), (QUERY, "U32")),
    "query kernel relabelled F8_E4M3": (
        relabel(QUERY, "F8_E4M3", [16, 16]),
        (QUERY, "F8_E4M3"),
    ),
    "F64 gamma beyond float32's range": (f64_overflow, (GAMMA, "float32's range")),
}


def _broken_dir(sources, tmp_path, name):
    directory = tmp_path / "hf"
    shutil.copytree(sources["bert"][0], directory)
    BROKEN[name][0](directory / ST)
    return directory


@pytest.mark.parametrize("name", list(BROKEN))
def test_broken_files(sources, tmp_path, name):
    directory = _broken_dir(sources, tmp_path, name)
    check_case(AREA, error(name, lambda: load_hf_encoder(directory), ST, *BROKEN[name][1]))


# --- safe casts: the same model as the F32 file ------------------------------


def _recast(path, dtype):
    """Every F32 tensor of `path` rewritten as `dtype` (BF16: float32's upper
    16 bits, i.e. truncated)."""
    header, body = split(path)
    out, parts, offset = {}, [], 0
    for name, entry in header.items():
        if name == "__metadata__":
            out[name] = entry
            continue
        begin, end = entry["data_offsets"]
        value = np.frombuffer(body[begin:end], "<f4")
        if dtype == "BF16":
            raw = (value.view("<u4") >> 16).astype("<u2").tobytes()
        else:
            raw = value.astype({"F16": "<f2", "F64": "<f8"}[dtype]).tobytes()
        out[name] = dict(entry, dtype=dtype, data_offsets=[offset, offset + len(raw)])
        parts.append(raw)
        offset += len(raw)
    join(path, out, b"".join(parts))


def _expected(weights, dtype):
    if dtype == "F16":
        return [w.astype(np.float16).astype(np.float32) for w in weights]
    if dtype == "BF16":
        return [
            (w.view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32) for w in weights
        ]
    return weights  # float32 -> float64 -> float32 is exact


def _same_weights(expected):
    def check(encoder):
        return all(
            np.array_equal(a, b)
            for a, b in zip(expected, encoder.get_weights(), strict=True)
        )

    return check


CASTS = [
    (family, dtype)
    for family in ("bert", "distilbert", "albert", "roberta")
    for dtype in ("F16", "BF16", "F64")
]


@pytest.mark.parametrize("family,dtype", CASTS, ids=[f"{f} {d}" for f, d in CASTS])
def test_safe_casts(sources, tmp_path, family, dtype):
    source, encoder = sources[family]
    directory = tmp_path / "hf"
    shutil.copytree(source, directory)
    _recast(directory / ST, dtype)
    expected = _expected(encoder.get_weights(), dtype)
    check_case(
        AREA,
        answer(
            f"{family} weights as {dtype}",
            lambda: load_hf_encoder(directory),
            _same_weights(expected),
        ),
    )


def test_integer_position_ids_buffer_is_read(sources, tmp_path):
    """HF stores `embeddings.position_ids` as I64 beside the weights."""
    from safetensors.numpy import save_file

    source, encoder = sources["bert"]
    directory = tmp_path / "hf"
    shutil.copytree(source, directory)
    from zoo.checkpoints.hf import read_hf_tensors

    tensors = dict(read_hf_tensors(directory))
    tensors["embeddings.position_ids"] = np.arange(16, dtype=np.int64)[None]
    save_file(tensors, str(directory / ST))
    check_case(
        AREA,
        answer(
            "an I64 position_ids buffer",
            lambda: load_hf_encoder(directory),
            _same_weights(encoder.get_weights()),
        ),
    )


# --- config.json against the weights' declared shapes ------------------------

# name -> (family, config.json changes, strings the error must name)
LIES = {
    "bert vocab_size larger": ("bert", {"vocab_size": 1_000_000}, ("vocab_size 1000000",)),
    "bert vocab_size smaller": ("bert", {"vocab_size": 30}, ("vocab_size 30",)),
    "bert num_hidden_layers more": (
        "bert",
        {"num_hidden_layers": 3},
        ("num_hidden_layers 3",),
    ),
    "bert num_hidden_layers fewer": (
        "bert",
        {"num_hidden_layers": 1},
        ("num_hidden_layers 1",),
    ),
    "bert hidden_size": ("bert", {"hidden_size": 16}, ("hidden_size 16",)),
    "bert intermediate_size": (
        "bert",
        {"intermediate_size": 32},
        ("intermediate_size 32",),
    ),
    "bert max_position_embeddings": (
        "bert",
        {"max_position_embeddings": 4096},
        ("max_position_embeddings 4096",),
    ),
    "bert type_vocab_size": ("bert", {"type_vocab_size": 3}, ("type_vocab_size 3",)),
    "distilbert n_layers": ("distilbert", {"n_layers": 4}, ("n_layers 4",)),
    "distilbert dim": ("distilbert", {"dim": 16}, ("dim 16",)),
    "distilbert vocab_size": ("distilbert", {"vocab_size": 99}, ("vocab_size 99",)),
    "albert num_hidden_groups": (
        "albert",
        {"num_hidden_groups": 2},
        ("num_hidden_groups 2",),
    ),
    "albert embedding_size": ("albert", {"embedding_size": 6}, ("embedding_size 6",)),
    "albert vocab_size": ("albert", {"vocab_size": 77}, ("vocab_size 77",)),
    "roberta max_position_embeddings": (
        "roberta",
        {"max_position_embeddings": 40},
        ("max_position_embeddings 40",),
    ),
    "roberta num_hidden_layers": (
        "roberta",
        {"num_hidden_layers": 4},
        ("num_hidden_layers 4",),
    ),
}


def _lying_dir(sources, tmp_path, name):
    family, changes, _ = LIES[name]
    directory = tmp_path / "hf"
    shutil.copytree(sources[family][0], directory)
    config = json.loads((directory / "config.json").read_text())
    config.update(changes)
    (directory / "config.json").write_text(json.dumps(config))
    return directory


@pytest.mark.parametrize("name", list(LIES))
def test_config_disagrees_with_weights(sources, tmp_path, name, monkeypatch):
    directory = _lying_dir(sources, tmp_path, name)
    built = []
    import zoo.checkpoints.hf as hf

    # Refused before a layer exists: the build is recorded, not prevented.
    real_build = hf.build_encoder
    monkeypatch.setattr(hf, "build_encoder", lambda c: built.append(c) or real_build(c))

    def run():
        try:
            return load_hf_encoder(directory)
        finally:
            if built:
                raise AssertionError("the model was built before the check")

    case = error(name, run, ST, "config.json", "not from one checkpoint", *LIES[name][2])
    case.errors = (ValueError,)
    check_case(AREA, case)


# --- special files -----------------------------------------------------------


def _fifo_case(sources, tmp_path, name, through_link):
    directory = tmp_path / "hf"
    shutil.copytree(sources["bert"][0], directory)
    (directory / ST).unlink()
    fifo = tmp_path / "pipe" if through_link else directory / ST
    os.mkfifo(fifo)
    if through_link:
        (directory / ST).symlink_to(fifo)

    def release():
        # A reader blocked in open() returns once a writer opens the other end.
        with contextlib.suppress(OSError):
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))

    case = error(name, lambda: load_hf_encoder(directory), ST, "FIFO")
    case.timeout, case.release = 5, release
    return case


def test_fifo_named_model_safetensors(sources, tmp_path):
    check_case(AREA, _fifo_case(sources, tmp_path, "a FIFO as model.safetensors", False))


def test_symlink_to_a_fifo(sources, tmp_path):
    check_case(AREA, _fifo_case(sources, tmp_path, "a symlink to a FIFO", True))


def test_symlinked_file_loads(sources, tmp_path):
    """The Hub's cache links each snapshot's files to its blobs: a link to a
    regular file is read (what it points to is checked like any file)."""
    source, encoder = sources["bert"]
    directory = tmp_path / "hf"
    shutil.copytree(source, directory)
    (directory / ST).rename(tmp_path / "blob")
    (directory / ST).symlink_to(tmp_path / "blob")
    check_case(
        AREA,
        answer(
            "a symlink to the file (the Hub cache's layout)",
            lambda: load_hf_encoder(directory),
            _same_weights(encoder.get_weights()),
        ),
    )


def test_dangling_symlink(sources, tmp_path):
    directory = tmp_path / "hf"
    shutil.copytree(sources["bert"][0], directory)
    (directory / ST).unlink()
    (directory / ST).symlink_to(tmp_path / "nowhere")
    check_case(AREA, error("a symlink to nothing", lambda: load_hf_encoder(directory), ST))


def test_directory_named_model_safetensors(sources, tmp_path):
    directory = tmp_path / "hf"
    shutil.copytree(sources["bert"][0], directory)
    (directory / ST).unlink()
    (directory / ST).mkdir()
    check_case(
        AREA,
        error("a directory as model.safetensors", lambda: load_hf_encoder(directory), ST),
    )


def test_sharded_checkpoint(sources, tmp_path):
    directory = tmp_path / "hf"
    shutil.copytree(sources["bert"][0], directory)
    (directory / ST).rename(directory / "model-00001-of-00001.safetensors")
    index = {"metadata": {}, "weight_map": {GAMMA: "model-00001-of-00001.safetensors"}}
    (directory / "model.safetensors.index.json").write_text(json.dumps(index))
    check_case(
        AREA,
        error(
            "a sharded checkpoint",
            lambda: load_hf_encoder(directory),
            "model.safetensors.index.json",
        ),
    )


# --- the same through `zoo convert` ------------------------------------------


class CliFailure(ValueError):
    """`zoo convert` exited 2 with one line on stderr and no traceback."""


def convert(src, out):
    def run():
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = main(["convert", str(src), "--out", str(out)])
        lines = err.getvalue().strip().splitlines()
        if code == 2 and len(lines) == 1 and "Traceback" not in lines[0]:
            if out.exists():
                raise AssertionError(f"{out} was written")
            raise CliFailure(lines[0])
        return {"exit": code, "stderr": err.getvalue()[-400:]}

    return run


CLI = {
    "zoo convert: header length 10**12": (
        "broken",
        "header length 10**12",
        ("header length",),
    ),
    "zoo convert: truncated to half": ("broken", "truncated to half", ("past the end",)),
    "zoo convert: non-JSON header": ("broken", "non-JSON header", ("not valid JSON",)),
    "zoo convert: LayerNorm gamma relabelled I32": (
        "broken",
        "LayerNorm gamma relabelled I32",
        (GAMMA, "I32"),
    ),
    "zoo convert: bert vocab_size larger": (
        "lie",
        "bert vocab_size larger",
        ("vocab_size 1000000",),
    ),
}


@pytest.mark.parametrize("name", list(CLI))
def test_zoo_convert(sources, tmp_path, name):
    kind, source_case, names = CLI[name]
    build = _broken_dir if kind == "broken" else _lying_dir
    directory = build(sources, tmp_path, source_case)
    check_case(AREA, error(name, convert(directory, tmp_path / "out"), ST, *names))


def test_zoo_convert_fifo(sources, tmp_path):
    case = _fifo_case(sources, tmp_path, "zoo convert: a FIFO as model.safetensors", False)
    # `zoo convert` finds no checkpoint there (a FIFO is not a file) and
    # lists what it expected, model.safetensors among them.
    case.run, case.names = convert(tmp_path / "hf", tmp_path / "out"), (ST,)
    check_case(AREA, case)


def test_zoo_convert_f16_file(sources, tmp_path):
    source, encoder = sources["bert"]
    directory = tmp_path / "hf"
    shutil.copytree(source, directory)
    _recast(directory / ST, "F16")

    def run():
        code = main(["convert", str(directory), "--out", str(tmp_path / "out")])
        return code, zoo.load_checkpoint(tmp_path / "out")[0]

    expected = _expected(encoder.get_weights(), "F16")
    check_case(
        AREA,
        Case(
            "zoo convert: an F16 file",
            run,
            "answer",
            (),
            lambda r: r[0] == 0 and _same_weights(expected)(r[1]),
        ),
    )
