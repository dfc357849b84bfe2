"""manifest.json: every file hashed; one flipped byte is a clear refusal."""

import json

import pytest

from export import manifest as mf


def _artifact(tmp_path):
    d = tmp_path / "artifact"
    (d / "variables").mkdir(parents=True)
    (d / "model.tflite").write_bytes(bytes(range(256)) * 64)
    (d / "variables" / "variables.data-00000-of-00001").write_bytes(b"\x01" * 4096)
    mf.write_vocabulary(d, ["[PAD]", "[UNK]", "hello"])
    mf.write_json(d / mf.METADATA, {"format": mf.METADATA_FORMAT, "format_version": 1})
    mf.write_manifest(d)
    return d


def test_manifest_lists_every_file_with_sha256_and_size(tmp_path):
    d = _artifact(tmp_path)
    manifest = json.loads((d / "manifest.json").read_text())
    assert sorted(manifest["files"]) == [
        "metadata.json",
        "model.tflite",
        "variables/variables.data-00000-of-00001",
        "vocab.txt",
    ]
    entry = manifest["files"]["model.tflite"]
    assert entry == {"sha256": mf.sha256_file(d / "model.tflite"), "size": 256 * 64}
    assert mf.verify_manifest(d) == manifest


@pytest.mark.parametrize(
    "name", ["model.tflite", "variables/variables.data-00000-of-00001"]
)
def test_one_flipped_byte_fails_with_the_file_named(tmp_path, name):
    d = _artifact(tmp_path)
    path = d / name
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(mf.ManifestError) as e:
        mf.verify_manifest(d)
    message = str(e.value)
    assert f"{name}: sha256" in message and "recorded" in message
    assert "refusing to load it" in message and "re-export" in message
    print(f"\nflipped one byte of {name}: {message[:160]}...")


def test_missing_and_truncated_files_and_missing_manifest(tmp_path):
    d = _artifact(tmp_path)
    (d / "vocab.txt").unlink()
    with open(d / "model.tflite", "r+b") as f:
        f.truncate(10)
    with pytest.raises(
        mf.ManifestError,
        match=r"2 file\(s\).*model\.tflite: size 10 bytes.*vocab\.txt: missing",
    ):
        mf.verify_manifest(d)
    (d / "manifest.json").unlink()
    with pytest.raises(mf.ManifestError, match="no manifest.json"):
        mf.verify_manifest(d)


def test_only_validation_reports_may_be_unlisted(tmp_path):
    """`zoo validate`'s reports are written after export and never read; any
    other file the manifest does not list is refused, wherever it is (else
    dropping a file's entry would let it change unchecked)."""
    d = _artifact(tmp_path)
    (d / "validation-20260101T000000.json").write_text("{}")
    mf.verify_manifest(d)
    for name in ("README.md", "variables/extra", "validation-latest.json"):
        (d / name).write_text("added")
        with pytest.raises(mf.ManifestError, match=f"{name}: not listed"):
            mf.verify_manifest(d)
        (d / name).unlink()


def test_dropping_an_entry_does_not_skip_the_check(tmp_path):
    d = _artifact(tmp_path)
    manifest = json.loads((d / "manifest.json").read_text())
    del manifest["files"]["model.tflite"]
    (d / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(mf.ManifestError, match="model.tflite: not listed"):
        mf.verify_manifest(d)
    manifest["files"] = {}
    (d / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(mf.ManifestError, match="4 file"):
        mf.verify_manifest(d)


@pytest.mark.parametrize(
    "name, entry, words",
    [
        ("vocab.txt", "abc", "entry is 'abc'"),
        ("vocab.txt", {"sha256": "0" * 64, "size": "12"}, "size is '12'"),
        ("vocab.txt", {"size": 12}, "sha256 is None"),
        ("vocab.txt", {"sha256": "0" * 64, "size": True}, "size is True"),
        ("../outside", {"sha256": "0" * 64, "size": 1}, "not a plain relative path"),
        ("/etc/passwd", {"sha256": "0" * 64, "size": 1}, "not a plain relative path"),
        ("manifest.json", {"sha256": "0" * 64, "size": 1}, "not a plain relative path"),
    ],
)
def test_malformed_entries_are_refused_by_name(tmp_path, name, entry, words):
    d = _artifact(tmp_path)
    manifest = json.loads((d / "manifest.json").read_text())
    manifest["files"][name] = entry
    (d / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(mf.ManifestError, match="malformed") as e:
        mf.verify_manifest(d)
    assert words in str(e.value)


def test_symbolic_links_are_refused(tmp_path):
    d = _artifact(tmp_path)
    outside = tmp_path / "elsewhere.txt"
    (d / "vocab.txt").rename(outside)
    (d / "vocab.txt").symlink_to(outside)
    with pytest.raises(mf.ManifestError, match="vocab.txt: a symbolic link"):
        mf.verify_manifest(d)


def test_vocabulary_with_a_line_break_is_refused(tmp_path):
    with pytest.raises(ValueError, match="line break"):
        mf.write_vocabulary(tmp_path, ["[PAD]", "two\nlines"])


def test_metadata_of_another_format_is_refused(tmp_path):
    mf.write_json(tmp_path / mf.METADATA, {"format": "something-else"})
    with pytest.raises(ValueError, match="not one this package reads"):
        mf.read_metadata(tmp_path)
    with pytest.raises(FileNotFoundError, match="not a zoo export artifact"):
        mf.read_metadata(tmp_path / "nowhere")
