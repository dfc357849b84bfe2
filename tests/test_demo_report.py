"""The demo report (zoo.demo): its headline, table and linear-baseline
sentence, from made-up figures: no assets, no demo run."""

from zoo import demo
from zoo.utils.provenance import machine


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
    assert lines[0].startswith(
        "- Best phone model (the smallest file that keeps 99% of the teacher's accuracy, "
        "then the fastest): **student2 int4 .tflite"
    )
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


def _row(model, fmt, accuracy, **extra):
    return {
        "model": model,
        "format": fmt,
        "quantization": extra.pop("quantization", "float32"),
        "layers": 6 if model == "teacher" else 2,
        "vocabulary": 30522,
        "size_mb": 91.1 if model == "teacher" else 10.5,
        "latency_ms": 49.4 if model == "teacher" else 11.4,
        "accuracy": accuracy,
        "agreement_with_teacher": 1.0 if model == "teacher" else 0.9859,
        **extra,
    }


def _baseline(accuracy):
    return {
        "model": "linear baseline",
        "format": "scikit-learn",
        "quantization": "float64",
        "description": "TF-IDF word 1-2-grams + LinearSVC",
        "features": 75022,
        "size_mb": 4.83,
        "latency_ms": 0.61,
        "accuracy": accuracy,
        "agreement_with_teacher": 0.9671,
        "train_seconds": 0.7,
        "num_train": 1488,
        "validation": "-",
    }


def _report(baseline_accuracy):
    rows = [
        _row("teacher", "keras", 0.9648),
        _row("student2", "keras", 0.9554),
        _row("student2", "tflite", 0.9577, quantization="int4", validation="passed"),
    ]
    if baseline_accuracy is not None:
        rows.append(_baseline(baseline_accuracy))
    return {
        "config": {"students": [2]},
        "headline": {"int4": _entry("int4", 9.6)},
        "rows": rows,
        "stages": {"measure": {"seconds": 80.0}, "report": {"seconds": 2.0}},
        "texts": 426,
        "sequence_length": 128,
        "versions": {"tensorflow": "2.20.0"},
        "git_revision": None,
    }


def test_report_shows_the_baseline_row_and_its_sentence():
    md = demo.report_markdown(_report(0.9718))
    row = next(line for line in md.splitlines() if line.startswith("| linear baseline"))
    # The model rows' columns: size MB, latency ms, accuracy, agreement, validation.
    assert row == (
        "| linear baseline (TF-IDF word 1-2-grams + LinearSVC, 75,022 features) "
        "| scikit-learn | 4.8 | 0.6 | 0.9718 | 0.9671 | - |"
    )
    assert row.count("|") == md.splitlines()[md.splitlines().index(row) - 1].count("|")
    assert (
        "A linear TF-IDF model (TF-IDF word 1-2-grams + LinearSVC, fitted in 0.7 s on the "
        "same 1,488 training articles) scores 0.972 here, above the best BERT model's "
        "0.965 (teacher keras)"
    ) in md
    assert "buy no accuracy" in md and "first 128 tokens" in md


def test_baseline_sentence_only_within_one_point():
    within = demo.report_markdown(_report(0.9600))
    assert "within one point of the best BERT model's 0.965" in within
    assert "less than one point of accuracy" in within
    below = demo.report_markdown(_report(0.9500))
    assert "| linear baseline (" in below and "A linear TF-IDF model" not in below
    # A run measured before the demo had a baseline: no row, no sentence.
    old = demo.report_markdown(_report(None))
    assert "linear baseline" not in old and "A linear TF-IDF model" not in old
    assert "| teacher (6 layers) | keras | 91.1 | 49.4 | 0.9648 | 1.0000 | - |" in old


def test_report_names_the_machine_its_speeds_were_measured_on():
    report = _report(0.9718)
    report["machine"] = {
        "cpu": "AMD EPYC",
        "cores": 2,
        "int8": "AVX-512 VNNI",
        "bf16": "AVX-512 BF16",
        "load": 1.5,
    }
    md = demo.report_markdown(report)
    assert (
        "Machine: AMD EPYC, 2 cores; int8: AVX-512 VNNI; bfloat16: AVX-512 BF16; "
        "1-minute load 1.5."
    ) in md
    # The detection a live report records.
    info = machine()
    assert set(info) == {"cpu", "cores", "int8", "bf16", "load"}
    assert info["int8"] in ("AMX", "AVX-512 VNNI", "AVX-VNNI", "AVX2 only", "no AVX2")


def test_baseline_sentence_says_whether_the_difference_is_more_than_noise():
    report = _report(0.9718)
    report["rows"][-1]["against_teacher"] = {
        "model_only": 7,
        "baseline_only": 10,
        "p_value": 0.629,
    }
    md = demo.report_markdown(report)
    assert (
        "Article by article, the baseline alone is right on 10 and the teacher alone on 7 "
        "(exact McNemar test p = 0.63): too few to call either better."
    ) in md
    report["rows"][-1]["against_teacher"] = {
        "model_only": 2,
        "baseline_only": 25,
        "p_value": 1e-5,
    }
    assert "more than chance would give" in demo.report_markdown(report)


def test_rows_name_a_student_narrower_than_the_teacher():
    report = _report(None)
    report["rows"][0]["hidden"] = 384
    report["rows"][1]["hidden"] = 256
    report["rows"][2].update(hidden=256, vocabulary=20437)
    md = demo.report_markdown(report)
    assert "| teacher (6 layers) | keras |" in md
    assert "| student2 (2 layers, hidden 256) | keras |" in md
    assert "| student2 (2 layers, hidden 256, 20,437 pieces) | tflite int4 |" in md
