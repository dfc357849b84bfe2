"""`model.safetensors` read by rules we check, before a tensor exists.

The format (huggingface/safetensors, "Format"): 8 bytes, the header's length
N as a little-endian unsigned integer; N bytes of UTF-8 JSON, an object
mapping each tensor's name to `{"dtype", "shape", "data_offsets": [begin,
end]}` (byte offsets into the data section that follows the header) and an
optional `"__metadata__"` object of strings; then the data, little-endian.

The file is untrusted, so `read_header` checks, in this order, before it
reads anything it does not need: the file is a regular one (a FIFO would
block; `zoo.utils.safe_files`); N fits in the file and under
`MAX_HEADER_BYTES`, before the header is read; the header is UTF-8 JSON, an
object without repeated names; every entry is typed (a known dtype, a shape
of at most `MAX_RANK` non-negative ints each up to `MAX_DIM`, two int
offsets begin <= end inside the data section); each tensor's byte length is
`prod(shape) * itemsize(dtype)`; no two tensors overlap. Python's integers
do not overflow, so a shape whose product would wrap in C is simply a size
the data section does not hold.

The tensors are then read by this module too (numpy, at the checked
offsets, one `readinto` each), not by `safetensors.numpy.load_file`: every
rule that decides what is loaded is then one of ours, the header is parsed
once, and the dtype conversions below need the raw bytes anyway.
`np.memmap` is not used: a mapped file truncated by another process while
it is read kills the process with SIGBUS; a short read is an error here.

dtypes (`check_dtypes`): a weight must be floating point; F32 is read as is,
F16 and BF16 are widened to float32 exactly (BF16 is float32's upper 16
bits: numpy has no bfloat16, so the bits are shifted into place), F64 is
rounded to float32 (relative error 2**-24; a value beyond float32's range is
refused, not made infinite). Any other dtype (I32, I64, U8, BOOL, F8, ...)
on a weight is refused: its bytes would be reinterpreted as numbers they
are not. HF's integer buffers (`embeddings.position_ids`, named by the
caller) may be integers.

`check_against_config` compares the header's declared shapes with what
config.json implies (nothing read), so a config and a weights file from two
checkpoints are refused before a model is built.

Every failure is one `SafetensorsFileError` line naming the file, the field
or tensor, what it holds and what to do.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import pathlib

import numpy as np

from zoo.checkpoints.config_fields import HF_FIELDS
from zoo.checkpoints.errors import SafetensorsFileError
from zoo.checkpoints.names import hf_albert_name, hf_distilbert_name, hf_name
from zoo.configs import EncoderConfig
from zoo.utils.safe_files import open_regular

# safetensors' own reader stops at 100 MB. A BERT-Large header is about 40
# kB (some 400 tensors at ~100 bytes each); 4 MiB is 100 times that (some
# 60,000 entries), which this module parses and checks in under a second
# and 50 MB, whereas 16 MiB took 8 s and 200 MB on a busy 2-core VM, and
# 100 MB of JSON objects can take gigabytes in Python.
MAX_HEADER_BYTES = 4 << 20
# BERT-family tensors have rank 1 or 2; 8 leaves room for any weight a
# checkpoint of another layout could carry, and bounds the shape list.
MAX_RANK = 8
# One dimension of 2**40 elements is a terabyte of float32; a zero-sized
# tensor's other dimensions must still be sizes numpy can hold.
MAX_DIM = 1 << 40

# safetensors' dtype names -> (numpy dtype the bytes are read as, itemsize).
# BF16 and the float8 formats have no numpy type: their bits are read as
# unsigned integers (and BF16 widened, float8 refused).
DTYPES = {
    "BOOL": ("|b1", 1),
    "U8": ("|u1", 1),
    "I8": ("|i1", 1),
    "F8_E5M2": ("|u1", 1),
    "F8_E4M3": ("|u1", 1),
    "F8_E8M0": ("|u1", 1),
    "I16": ("<i2", 2),
    "U16": ("<u2", 2),
    "F16": ("<f2", 2),
    "BF16": ("<u2", 2),
    "I32": ("<i4", 4),
    "U32": ("<u4", 4),
    "F32": ("<f4", 4),
    "C64": ("<c8", 8),
    "F64": ("<f8", 8),
    "I64": ("<i8", 8),
    "U64": ("<u8", 8),
}
# What a weight may be stored as: each becomes float32 (see the docstring).
FLOAT_DTYPES = ("F32", "F16", "BF16", "F64")
# What a buffer (position ids, token type ids) may be stored as.
BUFFER_DTYPES = ("I64", "I32", "I16", "I8", "U8", "U16", "U32", "U64", *FLOAT_DTYPES)
_ENTRY_KEYS = ("dtype", "shape", "data_offsets")
_DAMAGED = "the file is damaged or not a safetensors file; download or save it again"


@dataclasses.dataclass(frozen=True)
class TensorEntry:
    name: str
    dtype: str
    shape: tuple
    begin: int  # byte offsets into the data section
    end: int


@dataclasses.dataclass(frozen=True)
class SafetensorsHeader:
    path: pathlib.Path
    size: int  # the file's size in bytes
    header_length: int  # N
    tensors: dict  # name -> TensorEntry, in the header's order
    metadata: dict

    @property
    def data_start(self) -> int:
        return 8 + self.header_length

    def shape(self, name):
        entry = self.tensors.get(name)
        return None if entry is None else entry.shape


def _fail(path, problem, advice=_DAMAGED):
    raise SafetensorsFileError(f"{path}: {problem}; {advice}.")


def _clip(value, limit=80):
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def read_header(path) -> SafetensorsHeader:
    """The checked header of the safetensors file `path` (module docstring)."""
    path = pathlib.Path(path)
    with _open(path) as f:
        return _parse_header(f, path, os.fstat(f.fileno()).st_size)


def _open(path):
    # A missing file is a FileNotFoundError naming it; a FIFO, socket or
    # directory an UnsafeFileError (OSError and ValueError) without blocking.
    try:
        return open_regular(path, "rb", "save the checkpoint's own model.safetensors there")
    except FileNotFoundError:
        raise FileNotFoundError(
            f"{path}: no such file (or a symbolic link to nothing); expected the "
            "checkpoint's model.safetensors."
        ) from None


def _parse_header(f, path, size) -> SafetensorsHeader:
    if size < 8:
        _fail(
            path,
            f"{size} bytes long; a safetensors file starts with an 8-byte header length",
        )
    length = int.from_bytes(f.read(8), "little")
    room = size - 8
    if length > room:
        _fail(
            path,
            f"header length {length:,} bytes, but only {room:,} bytes follow it (the "
            "file is cut short, or this is not its first 8 bytes)",
        )
    if length > MAX_HEADER_BYTES:
        _fail(
            path,
            f"header length {length:,} bytes, over the {MAX_HEADER_BYTES:,}-byte limit "
            "(a BERT-Large header is about 40 kB)",
        )
    if length < 2:
        _fail(path, f"header length {length}; a header is a JSON object, at least '{{}}'")
    raw = f.read(length)
    if len(raw) != length:
        _fail(
            path,
            f"the header was cut short while reading ({len(raw):,} of {length:,} bytes)",
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        _fail(path, f"the header is not UTF-8 text (byte {8 + e.start:,})")

    def no_repeats(pairs):
        names = [k for k, _ in pairs]
        if len(set(names)) != len(names):
            seen = set()
            twice = next(k for k in names if k in seen or seen.add(k))
            _fail(path, f"the header names {_clip(twice)} twice")
        return dict(pairs)

    try:
        value = json.loads(text, object_pairs_hook=no_repeats)
    except SafetensorsFileError:  # no_repeats' own, already clear
        raise
    except ValueError as e:  # json.JSONDecodeError, or an int of > 4,300 digits
        _fail(path, f"the header is not valid JSON ({str(e)[:120]})")
    except RecursionError:
        _fail(path, "the header's JSON nests too deeply to be a safetensors header")
    if not isinstance(value, dict):
        _fail(path, f"the header is a JSON {type(value).__name__}, not an object")
    metadata = value.pop("__metadata__", None) or {}
    if not isinstance(metadata, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()
    ):
        _fail(path, f"__metadata__ is {_clip(metadata)}; expected an object of strings")
    data_length = room - length
    tensors = {name: _entry(path, name, info, data_length) for name, info in value.items()}
    _check_overlaps(path, tensors.values())
    return SafetensorsHeader(path, size, length, tensors, metadata)


def _entry(path, name, info, data_length) -> TensorEntry:
    where = f"tensor {_clip(name)}"
    if not isinstance(info, dict):
        _fail(
            path, f"{where} is {_clip(info)}; expected an object with {list(_ENTRY_KEYS)}"
        )
    unknown = sorted(set(info) - set(_ENTRY_KEYS))
    missing = [k for k in _ENTRY_KEYS if k not in info]
    if unknown or missing:
        _fail(
            path,
            f"{where} has fields {sorted(info)[:8]}; expected exactly {list(_ENTRY_KEYS)}",
        )
    dtype, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
    if not isinstance(dtype, str) or dtype not in DTYPES:
        _fail(path, f"{where} has dtype {_clip(dtype)}; expected one of {sorted(DTYPES)}")
    if (
        not isinstance(shape, list)
        or len(shape) > MAX_RANK
        or not all(_is_int(d) and 0 <= d <= MAX_DIM for d in shape)
    ):
        _fail(
            path,
            f"{where} has shape {_clip(shape)}; expected a list of at most {MAX_RANK} "
            f"integers from 0 to {MAX_DIM:,}",
        )
    if not (
        isinstance(offsets, list)
        and len(offsets) == 2
        and all(_is_int(o) for o in offsets)
        and 0 <= offsets[0] <= offsets[1]
    ):
        _fail(
            path,
            f"{where} has data_offsets {_clip(offsets)}; expected [begin, end], two "
            "integers with 0 <= begin <= end",
        )
    begin, end = offsets
    if end > data_length:
        _fail(
            path,
            f"{where} has data_offsets [{begin:,}, {end:,}], past the end of the data "
            f"({data_length:,} bytes after the header)",
        )
    nbytes = math.prod(shape) * DTYPES[dtype][1]
    if end - begin != nbytes:
        _fail(
            path,
            f"{where} declares {dtype} {shape} ({nbytes:,} bytes) but data_offsets "
            f"[{begin:,}, {end:,}] hold {end - begin:,} bytes",
        )
    return TensorEntry(name, dtype, tuple(shape), begin, end)


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _check_overlaps(path, entries):
    last = None
    for entry in sorted(entries, key=lambda e: (e.begin, e.end)):
        if entry.begin == entry.end:  # an empty tensor occupies no byte
            continue
        if last is not None and entry.begin < last.end:
            _fail(
                path,
                f"tensors {_clip(last.name)} [{last.begin:,}, {last.end:,}] and "
                f"{_clip(entry.name)} [{entry.begin:,}, {entry.end:,}] share bytes",
            )
        if last is None or entry.end > last.end:
            last = entry


def check_dtypes(header: SafetensorsHeader, buffers=()) -> None:
    """Refuse a weight stored as anything but F32/F16/BF16/F64, and a buffer
    (a name in `buffers`: integer position or token-type ids) stored as
    anything but an integer or one of those."""
    for entry in header.tensors.values():
        allowed = BUFFER_DTYPES if entry.name in buffers else FLOAT_DTYPES
        if entry.dtype not in allowed:
            kind = "a buffer" if entry.name in buffers else "a weight"
            _fail(
                header.path,
                f"tensor {_clip(entry.name)} is stored as {entry.dtype}, but it is {kind}, "
                f"which must be one of {list(allowed)} (its bytes would be read as other "
                "numbers)",
                "save the checkpoint again with floating-point weights (float32, "
                "float16, bfloat16 or float64)",
            )


def read_tensors(path, buffers=()) -> dict:
    """name -> numpy array of the safetensors file `path`, every rule checked
    first (`read_header`, `check_dtypes`): weights as float32, the `buffers`
    as stored."""
    path = pathlib.Path(path)
    with _open(path) as f:
        header = _parse_header(f, path, os.fstat(f.fileno()).st_size)
        check_dtypes(header, buffers)
        return {
            entry.name: _read_tensor(f, header, entry)
            for entry in sorted(header.tensors.values(), key=lambda e: e.begin)
        }


def _read_tensor(f, header, entry):
    raw = np.empty(entry.end - entry.begin, np.uint8)
    f.seek(header.data_start + entry.begin)
    if f.readinto(memoryview(raw)) != raw.size:
        _fail(
            header.path,
            f"tensor {_clip(entry.name)} was cut short while reading (the file changed?)",
        )
    value = raw.view(DTYPES[entry.dtype][0]).reshape(entry.shape)
    if entry.dtype == "BF16":
        # bfloat16 is the upper half of a float32: exact.
        return (value.astype(np.uint32) << 16).view(np.float32)
    if entry.dtype == "F64":
        with np.errstate(over="ignore"):  # an overflow is refused just below
            narrowed = value.astype(np.float32)
        if np.isinf(narrowed).any() and not np.array_equal(
            np.isinf(narrowed), np.isinf(value)
        ):
            _fail(
                header.path,
                f"tensor {_clip(entry.name)} (F64) holds values beyond float32's range "
                "(about 3.4e38), which cannot be weights of this model",
            )
        return narrowed
    if entry.dtype in ("F16", "F32"):
        return value.astype(np.float32, copy=False)
    return value


# --- The header against config.json -----------------------------------------

# Per family: the prefix HF's *For* classes add, and how canonical names map.
_NAMING = {
    "bert": ("bert.", hf_name),
    "roberta": ("roberta.", hf_name),
    "distilbert": ("distilbert.", hf_distilbert_name),
    "albert": ("albert.", hf_albert_name),
}
# Canonical (google-research TF1) names of block 0 and 1's query kernel and
# block 0's intermediate kernel (zoo.checkpoints.names); ALBERT's blocks are
# its shared groups.
_BLOCK = {
    "albert": "bert/encoder/transformer/group_{}/inner_group_0/{}",
    "other": "bert/encoder/layer_{}/{}",
}
_QUERY = {"albert": "attention_1/self/query/kernel", "other": "attention/self/query/kernel"}
_INTERMEDIATE = {
    "albert": "ffn_1/intermediate/dense/kernel",
    "other": "intermediate/dense/kernel",
}


def _hf_key(family, field):
    """config.json's key for EncoderConfig's `field` in `family`."""
    for ours, theirs, _ in HF_FIELDS[family]:
        if ours == field:
            return theirs
    return field


def check_against_config(header: SafetensorsHeader, config: EncoderConfig, origin) -> None:
    """Refuse, from the declared shapes alone, a weights file that does not
    belong to `config` (read from `origin`, config.json): the token, position
    and segment tables, the number of blocks, block 0's query and
    intermediate kernels (stored [out, in], as torch's Linear does)."""
    family = config.family
    prefix, naming = _NAMING[family]
    if f"{prefix}embeddings.word_embeddings.weight" not in header.tensors:
        prefix = ""

    def key(canonical):
        return naming(canonical, prefix)[0]

    def field(name):
        return _hf_key(family, name)

    h, e = config.hidden_dim, config.embedding_width
    width = "embedding_size" if family == "albert" else field("hidden_dim")
    expected = [
        (
            key("bert/embeddings/word_embeddings"),
            (config.vocabulary_size, e),
            f"{field('vocabulary_size')} {config.vocabulary_size} x {width} {e}",
        ),
        (
            key("bert/embeddings/position_embeddings"),
            (config.position_table_size, e),
            f"max_position_embeddings {config.position_table_size} x {width} {e}",
        ),
    ]
    if config.num_segments:
        expected.append(
            (
                key("bert/embeddings/token_type_embeddings"),
                (config.num_segments, e),
                f"type_vocab_size {config.num_segments} x {width} {e}",
            )
        )
    if family == "albert":
        expected.append(
            (
                key("bert/encoder/embedding_hidden_mapping_in/kernel"),
                (h, e),
                f"hidden_size {h} x embedding_size {e}",
            )
        )
    layout = "albert" if family == "albert" else "other"
    block = _BLOCK[layout]
    hidden = field("hidden_dim")
    expected += [
        (key(block.format(0, _QUERY[layout])), (h, h), f"{hidden} {h} x {hidden} {h}"),
        (
            key(block.format(0, _INTERMEDIATE[layout])),
            (config.intermediate_dim, h),
            f"{field('intermediate_dim')} {config.intermediate_dim} x {hidden} {h}",
        ),
    ]
    # A tensor that is absent is not judged here: the loader names every
    # missing tensor (and `allow_partial` may accept it).
    for name, shape, says in expected:
        found = header.shape(name)
        if found is not None and found != shape:
            _mismatch(header, origin, f"{name} has shape {list(found)}", says)
    _check_blocks(header, config, origin, key, block, _QUERY[layout], field)


def _check_blocks(header, config, origin, key, block, query, field):
    # The blocks' common key prefix ("encoder.layer.", "transformer.layer.",
    # "albert.encoder.albert_layer_groups.") from two of them.
    first, second = key(block.format(0, query)), key(block.format(1, query))
    stem = os.path.commonprefix([first, second])
    indices = set()
    for name in header.tensors:
        if name.startswith(stem):
            index = name[len(stem) :].split(".", 1)[0]
            if index.isdigit():
                indices.add(int(index))
    if not indices:
        return  # another layout altogether: the loader names what is missing
    wanted = config.num_blocks
    if indices != set(range(wanted)):
        what, count = (
            ("num_hidden_groups", wanted)
            if config.family == "albert"
            else (field("num_layers"), wanted)
        )
        shown = sorted(indices)
        listed = ", ".join(map(str, shown[:8])) + (", ..." if len(shown) > 8 else "")
        _mismatch(
            header,
            origin,
            f"{stem}N holds {len(indices)} block(s) (N = {listed})",
            f"{what} {count}",
        )


def _mismatch(header, origin, found, says):
    raise SafetensorsFileError(
        f"{header.path}: {found} but {pathlib.Path(origin).name} says {says}; the two "
        "files are not from one checkpoint. Use the config.json saved with these "
        "weights."
    )
