"""zoo.checkpoints.safetensors_file on its own: what it reads equals what
safetensors wrote, the safe casts are exact (or float32's rounding), and the
rules hold at their edges (empty tensors, gaps, the header limit, a FIFO)."""

from __future__ import annotations

import json
import os
import threading

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

import zoo
from zoo.checkpoints import safetensors_file as sf
from zoo.checkpoints.errors import SafetensorsFileError


def write(path, entries, body, metadata=None):
    """A safetensors file from a header dict and the data bytes."""
    header = dict(entries)
    if metadata is not None:
        header["__metadata__"] = metadata
    text = json.dumps(header).encode()
    path.write_bytes(len(text).to_bytes(8, "little") + text + body)
    return path


def test_reads_what_safetensors_wrote(tmp_path):
    rng = np.random.default_rng(0)
    tensors = {
        "a": rng.standard_normal((3, 5)).astype(np.float32),
        "half": rng.standard_normal(7).astype(np.float16),
        "wide": rng.standard_normal((2, 2)),
        "ids": np.arange(6, dtype=np.int64)[None],
        "empty": np.zeros((0, 4), np.float32),
    }
    path = tmp_path / "m.safetensors"
    save_file(tensors, str(path), metadata={"format": "pt"})
    header = sf.read_header(path)
    assert header.metadata == {"format": "pt"}
    assert {n: (e.dtype, e.shape) for n, e in header.tensors.items()} == {
        "a": ("F32", (3, 5)),
        "half": ("F16", (7,)),
        "wide": ("F64", (2, 2)),
        "ids": ("I64", (1, 6)),
        "empty": ("F32", (0, 4)),
    }
    read = sf.read_tensors(path, buffers=("ids",))
    reference = load_file(str(path))
    assert set(read) == set(reference)
    for name, value in read.items():
        expected = reference[name]
        if name != "ids":
            assert value.dtype == np.float32, name
            expected = expected.astype(np.float32)
        assert value.shape == expected.shape
        np.testing.assert_array_equal(value, expected, err_msg=name)
    assert read["ids"].dtype == np.int64


def test_bfloat16_is_float32s_upper_half(tmp_path):
    values = np.array([1.0, -2.5, 3.140625, 0.0, -0.0, 65280.0, 1e-30], np.float32)
    bits = (values.view(np.uint32) >> 16).astype("<u2")
    path = write(
        tmp_path / "b.safetensors",
        {"w": {"dtype": "BF16", "shape": [7], "data_offsets": [0, 14]}},
        bits.tobytes(),
    )
    read = sf.read_tensors(path)["w"]
    assert read.dtype == np.float32
    expected = (values.view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32)
    np.testing.assert_array_equal(read, expected)
    assert read[:6].tolist() == [1.0, -2.5, 3.140625, 0.0, -0.0, 65280.0]


def test_f64_is_rounded_to_float32_and_infinity_kept(tmp_path):
    values = np.array([0.1, -1e-40, np.inf, 3e38], np.float64)
    path = write(
        tmp_path / "d.safetensors",
        {"w": {"dtype": "F64", "shape": [4], "data_offsets": [0, 32]}},
        values.astype("<f8").tobytes(),
    )
    np.testing.assert_array_equal(sf.read_tensors(path)["w"], values.astype(np.float32))


def test_gaps_and_empty_tensors_are_legal_overlaps_are_not(tmp_path):
    entries = {
        "x": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]},  # 8-byte gap first
        "e": {"dtype": "F32", "shape": [0], "data_offsets": [12, 12]},  # inside x: empty
        "y": {"dtype": "F32", "shape": [1], "data_offsets": [16, 20]},
    }
    body = np.arange(5, dtype="<f4").tobytes()
    read = sf.read_tensors(write(tmp_path / "g.safetensors", entries, body))
    assert read["x"].tolist() == [2.0, 3.0] and read["y"].tolist() == [4.0]
    assert read["e"].shape == (0,)
    entries["y"]["data_offsets"] = [12, 16]
    with pytest.raises(SafetensorsFileError, match="'x' .* and 'y' .* share bytes"):
        sf.read_header(write(tmp_path / "o.safetensors", entries, body))


def test_an_empty_header_is_an_empty_file(tmp_path):
    assert sf.read_tensors(write(tmp_path / "e.safetensors", {}, b"")) == {}


def test_the_header_limit_is_checked_before_the_header_is_read(tmp_path, monkeypatch):
    path = write(
        tmp_path / "m.safetensors",
        {"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}},
        b"\0" * 4,
    )
    monkeypatch.setattr(sf, "MAX_HEADER_BYTES", 16)
    with pytest.raises(SafetensorsFileError, match="over the 16-byte limit"):
        sf.read_header(path)


def test_a_header_near_the_limit_is_read_quickly(tmp_path):
    """About 50,000 entries (4 MB of JSON): the worst a file under the limit
    can ask of the parser; BERT-Large has some 400."""
    import time

    n = 50_000
    entries = {
        f"t.{i:06d}.weight": {
            "dtype": "F32",
            "shape": [0],
            "data_offsets": [0, 0],
        }
        for i in range(n)
    }
    path = write(tmp_path / "big.safetensors", entries, b"")
    assert path.stat().st_size < sf.MAX_HEADER_BYTES
    start = time.perf_counter()
    header = sf.read_header(path)
    assert len(header.tensors) == n
    assert time.perf_counter() - start < 10


def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "model.safetensors"
    os.mkfifo(fifo)
    found = []

    def run():
        try:
            sf.read_header(fifo)
        except (OSError, ValueError) as e:
            found.append(str(e))

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(5)
    if worker.is_alive():
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))  # release it
        pytest.fail("read_header blocked on a FIFO")
    assert found and "FIFO" in found[0] and str(fifo) in found[0]


def test_a_missing_file_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError, match="model.safetensors: no such file"):
        sf.read_header(tmp_path / "model.safetensors")


def test_dtype_rules(tmp_path):
    entries = {
        "w": {"dtype": "F16", "shape": [1], "data_offsets": [0, 2]},
        "position_ids": {"dtype": "I64", "shape": [1], "data_offsets": [2, 10]},
    }
    header = sf.read_header(write(tmp_path / "m.safetensors", entries, b"\0" * 10))
    sf.check_dtypes(header, buffers=("position_ids",))
    with pytest.raises(SafetensorsFileError, match="'position_ids' is stored as I64"):
        sf.check_dtypes(header)
    entries["position_ids"]["dtype"] = "BOOL"
    entries["position_ids"]["shape"] = [8]
    header = sf.read_header(write(tmp_path / "b.safetensors", entries, b"\0" * 10))
    with pytest.raises(SafetensorsFileError, match="'position_ids' is stored as BOOL"):
        sf.check_dtypes(header, buffers=("position_ids",))


def _header_of(encoder, tmp_path):
    from zoo.checkpoints.hf import save_hf

    save_hf(encoder, tmp_path / "hf")
    return sf.read_header(tmp_path / "hf" / "model.safetensors")


@pytest.mark.parametrize("family", ["bert", "distilbert", "albert", "roberta"])
def test_every_family_agrees_with_its_own_config(tmp_path, family):
    extra = {
        "bert": {},
        "distilbert": dict(num_segments=0),
        "albert": dict(embedding_dim=4, num_groups=2),
        "roberta": dict(num_segments=1),
    }[family]
    config = zoo.EncoderConfig(
        vocabulary_size=30,
        num_layers=2,
        num_heads=2,
        hidden_dim=8,
        intermediate_dim=16,
        max_sequence_length=16,
        family=family,
        **extra,
    )
    header = _header_of(zoo.build_encoder(config), tmp_path)
    sf.check_against_config(header, config, "config.json")
    other = zoo.EncoderConfig(**{**config.to_dict(), "vocabulary_size": 31})
    with pytest.raises(SafetensorsFileError, match="vocab_size 31"):
        sf.check_against_config(header, other, "config.json")


def test_absent_tensors_are_left_to_the_loader(tmp_path):
    """The check judges the shapes a file declares; a tensor it lacks is named
    by the loader (CheckpointMismatchError), which `allow_partial` may accept."""
    entries = {"pooler.dense.bias": {"dtype": "F32", "shape": [8], "data_offsets": [0, 32]}}
    header = sf.read_header(write(tmp_path / "m.safetensors", entries, b"\0" * 32))
    config = zoo.EncoderConfig(
        vocabulary_size=30, num_layers=2, num_heads=2, hidden_dim=8, intermediate_dim=16
    )
    sf.check_against_config(header, config, "config.json")
