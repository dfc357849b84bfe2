"""The Python side of android_demo/: the Java tokenizer's tables and the vector generator.

The JVM suite itself (JUnit, the JNA end-to-end check through libLiteRt.so,
the debug APK) runs in `make android-test`, which `make test` includes; it
is not run again here. `ANDROID_TEST_IN_PYTEST=1 pytest tests/android` runs
it from pytest as well (about 4 minutes on a fresh checkout, 2.5 with
current vectors).
"""

import os
import pathlib
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
TOOLS = REPO / "android_demo" / "tools"
sys.path.insert(0, str(TOOLS))

import make_unicode_tables  # noqa: E402
import make_vectors  # noqa: E402


def test_java_unicode_tables_are_the_python_tokenizers():
    """A stale asset would make the phone tokenize differently from Python."""
    asset = make_unicode_tables.ASSET.read_text(encoding="utf-8")
    assert asset == make_unicode_tables.render(), (
        "android_demo/app/src/main/assets/bert_normalization.txt differs from "
        "zoo/text/normalization_tables.py: run "
        "`.venv/bin/python android_demo/tools/make_unicode_tables.py`"
    )


def test_hard_cases_cover_each_normalizer_rule():
    cases = make_vectors.hard_cases()
    joined = "".join(cases)
    assert any(len(word) > 100 for case in cases for word in case.split()), "over-long word"
    assert any(len(word) == 100 for case in cases for word in case.split()), (
        "word at the limit"
    )
    assert any("\u4e00" <= ch <= "\u9fff" for ch in joined), "CJK"
    assert any(ord(ch) >= 0x1F300 for ch in joined), "emoji"
    assert any(ord(ch) < 0x20 and ch not in "\t\n\r" for ch in joined), "control characters"
    assert "\u0301" in joined and "é" in joined, "accents, composed and combining"
    assert "" in cases, "empty text"
    for case in cases:
        case.encode("utf-8")  # no lone surrogates: every case must have a UTF-8 form


def test_random_texts_are_deterministic_and_encodable():
    import random

    a = make_vectors.random_texts(random.Random(1), 50)
    b = make_vectors.random_texts(random.Random(1), 50)
    assert a == b
    for text in a:
        text.encode("utf-8")


@pytest.mark.skipif(
    os.environ.get("ANDROID_TEST_IN_PYTEST") != "1",
    reason="`make android-test` (part of `make test`) runs the JVM suite; "
    "set ANDROID_TEST_IN_PYTEST=1 to run it from pytest too",
)
def test_android_suite():
    result = subprocess.run(
        ["bash", str(REPO / "android_demo/scripts/android_test.sh"), sys.executable],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    last = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""
    assert result.returncode == 0 and last.endswith(" 0 failed"), (
        result.stdout[-5000:] + result.stderr[-2000:]
    )
