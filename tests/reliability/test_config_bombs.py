"""Reliability corpus (issue #43), two areas over real small sources (HF
directories of each family, a zoo model directory, a keras-hub preset),
each with one field of its config edited (tests/reliability/bombs.py):

- "config bombs": sizes of 10**7 to 10**10 (width, layers, vocabulary,
  feed-forward, positions, segment types, ALBERT's embedding) and sizes each
  in range but together beyond the memory limit. Each must be refused from
  the config alone, naming the file and field, before a layer is built
  (bench/refusals.py measures the time and peak memory of each refusal in a
  fresh process).
- "typed config fields": a string where a number or bool belongs, a list
  where a name belongs, an epsilon of Infinity or 1e30, a float where a
  count belongs: refused naming the field, never built into a model that
  answers wrongly.

- "archive sizes" (the next class, found by asking what else a file could
  make us trust): model.keras declaring more than it can need -- a member
  unpacking to 64 MB of spaces (a zip bomb, kilobytes compressed), a 20 MB
  config.json, a config nested 100,000 deep, a weights file too small for
  the recorded encoder: refused from the archive's directory before Keras
  extracts anything.

The unedited sources load (the control cases), so the refusals are the
edits' doing.
"""

# isort: off
import zoo  # noqa: F401 - first: sets TensorFlow's log level and Keras's backend

# isort: on
import pytest

from tests.reliability import bombs
from tests.reliability.corpus import case_ids, check_case


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    return bombs.make_sources(tmp_path_factory.mktemp("sources"))


@pytest.mark.parametrize("spec", bombs.BOMBS, ids=[s[0] for s in bombs.BOMBS])
def test_config_bombs(spec, sources, tmp_path):
    check_case("config bombs", bombs.make_case(spec, sources, tmp_path))


@pytest.mark.parametrize("spec", bombs.TYPED, ids=[s[0] for s in bombs.TYPED])
def test_typed_config_fields(spec, sources, tmp_path):
    check_case("typed config fields", bombs.make_case(spec, sources, tmp_path))


@pytest.mark.parametrize("spec", bombs.ARCHIVES, ids=[s[0] for s in bombs.ARCHIVES])
def test_archive_sizes(spec, sources, tmp_path):
    check_case("archive sizes", bombs.make_archive_case(spec, sources, tmp_path))


def test_unedited_sources_load(sources):
    cases = bombs.control_cases(sources)
    assert {c.name for c in cases} >= {
        "hf-bert unedited",
        "zoo unedited",
        "keras-hub unedited",
    }
    for case in cases:
        check_case("config controls", case)


def test_case_ids_are_unique():
    names = case_ids([bombs.make_case(s, {}, ".") for s in bombs.BOMBS + bombs.TYPED])
    assert len(names) == len(set(names))
