"""export.consistency.registry: the checks a format's own module registers,
run by the generic checks and loaders without importing that module."""

import pytest

from export import mediapipe
from export.consistency import registry


def test_export_mediapipe_registers_its_checks_on_import():
    assert mediapipe.check_associated_files in registry.file_checks(
        "tflite", "model.tflite"
    )
    assert registry._SOURCE_GRAPHS[mediapipe.FILE] is mediapipe.same_graph_as_source


def test_file_checks_by_format_then_file(monkeypatch):
    monkeypatch.setattr(registry, "_FILE_CHECKS", {})

    def by_format(directory, meta, file):
        return None

    def by_file(directory, meta, file):
        return None

    registry.register("a.tflite", by_file)
    registry.register("tflite", by_format)
    registry.register("tflite", by_format)  # a module imported again: kept once
    assert registry.file_checks("tflite", "a.tflite") == [by_format, by_file]
    assert registry.file_checks("tflite", "b.tflite") == [by_format]
    assert registry.file_checks("saved_model", "saved_model.pb") == []


def test_a_file_without_a_source_graph_finder_is_not_its_sources(monkeypatch):
    monkeypatch.setattr(registry, "_SOURCE_GRAPHS", {})
    meta = {"files": {"x.tflite": {"derived_from": {"file": "m", "signature": "s"}}}}
    assert registry.same_graph_as_source("d", meta, "x.tflite") is None
    registry.register_source_graph("x.tflite", lambda d, m, f: ("m", "s"))
    assert registry.same_graph_as_source("d", meta, "x.tflite") == ("m", "s")


@pytest.mark.parametrize(
    "call, words",
    [
        (lambda: registry.register("", print), ("`name`", "''")),
        (lambda: registry.register("tflite", "check"), ("`check`", "str")),
        (lambda: registry.register_source_graph(None, print), ("`file`", "None")),
        (lambda: registry.register_source_graph("x", 3), ("`same_graph`", "int")),
    ],
)
def test_bad_registrations_name_the_argument(call, words):
    with pytest.raises(TypeError) as e:
        call()
    for word in words:
        assert word in str(e.value)
