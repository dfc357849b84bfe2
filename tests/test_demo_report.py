"""The demo report's headline (zoo.demo), from made-up figures: no assets,
no demo run."""

from zoo import demo


def _entry(mode, size_ratio):
    return {
        "student": f"student2 {mode} .tflite, 20,437 word pieces",
        "teacher": "teacher float32 .tflite",
        "size_ratio": size_ratio,
        "speedup": 5.0,
        "accuracy_ratio": 0.993,
        "teacher_accuracy": 0.9648,
        "student_accuracy": 0.9577,
        "agreement_with_teacher": 0.9859,
    }


def test_headline_lists_each_file_once_the_best_first():
    headline = {
        "dynamic_int8": _entry("dynamic_int8", 8.5),
        "int8": _entry("int8", 8.5),
        "int4": _entry("int4", 9.6),
    }
    headline["best"] = dict(headline["int4"], mode="int4")  # as demo._headline adds it
    lines = demo._headline_summary(headline).splitlines()
    assert len(lines) == 3
    assert lines[0].startswith("- Best phone model: **student2 int4 .tflite")
    assert [line.split("**")[1].split()[1] for line in lines] == [
        "int4",
        "dynamic_int8",
        "int8",
    ]
    assert sum("Best phone model" in line for line in lines) == 1


def test_headline_without_a_best_file_lists_every_mode():
    headline = {"dynamic_int8": _entry("dynamic_int8", 8.5), "int8": _entry("int8", 8.5)}
    lines = demo._headline_summary(headline).splitlines()
    assert len(lines) == 2 and not any("Best" in line for line in lines)
    assert demo._headline_summary({}) == ""
