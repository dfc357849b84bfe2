"""The validator's own parts on hand-made numbers: the comparison metrics of
each task, the threshold rule, the QA span rule, the report table, the Keras
reference cache, and the input checks. (Whole artifacts are validated in
test_tflite.py and test_saved_model.py.)"""

import numpy as np
import pytest

from export import validate

SEP = 3


def _ids(mask, segments=None, tokens=None):
    mask = np.asarray(mask, "int32")
    return {
        "token_ids": np.where(mask == 1, 7, 0) if tokens is None else np.asarray(tokens),
        "segment_ids": np.zeros_like(mask) if segments is None else np.asarray(segments),
        "padding_mask": mask,
    }


def test_compare_classification_counts_agreement_and_accuracy():
    reference = {"logits": np.array([[2.0, 0.0], [0.0, 1.0], [1.0, 0.5], [0.0, 3.0]])}
    artifact = {"logits": np.array([[1.5, 0.0], [0.0, 1.2], [0.4, 0.5], [0.0, 3.0]])}
    m = validate.compare(
        "classify",
        artifact,
        reference,
        _ids(np.ones((4, 3))),
        labels=["a", "b", "a", "b"],
        label_names=["a", "b"],
    )
    assert m["num_texts"] == 4
    assert m["label_agreement"] == 0.75  # row 2 flips from a to b
    assert m["max_abs_diff"] == pytest.approx(0.6)
    assert m["accuracy_keras"] == 1.0 and m["accuracy_artifact"] == 0.75
    assert m["accuracy_delta"] == pytest.approx(-0.25)


def test_compare_tagging_ignores_padding_positions():
    mask = np.array([[1, 1, 0]])
    reference = {"logits": np.array([[[1.0, 0.0], [0.0, 1.0], [5.0, 0.0]]])}
    artifact = {"logits": np.array([[[1.0, 0.0], [0.0, 1.0], [0.0, 9.0]]])}
    m = validate.compare("tag", artifact, reference, _ids(mask))
    assert m["label_agreement"] == 1.0 and m["max_abs_diff"] == 0.0


def test_best_spans_stay_in_the_context_and_within_the_length():
    # [CLS] q q [SEP] c c c [SEP] pad: context is positions 4..6 (segment 1).
    tokens = np.array([[2, 9, 9, SEP, 8, 8, 8, SEP, 0]])
    segments = np.array([[0, 0, 0, 0, 1, 1, 1, 1, 0]])
    mask = np.array([[1, 1, 1, 1, 1, 1, 1, 1, 0]])
    ids = _ids(mask, segments, tokens)
    start = np.array([[9.0, 9.0, 0, 0, 1.0, 0, 0, 0, 0]])  # question tokens score higher
    end = np.array([[0, 0, 0, 0, 0, 0, 2.0, 0, 9.0]])  # padding scores highest
    assert validate.best_spans(start, end, ids, SEP).tolist() == [[4, 6]]
    assert validate.best_spans(start, end, ids, SEP, max_answer_length=2).tolist() == [
        [5, 6]
    ]


def test_thresholds_bound_in_the_right_direction():
    results = [
        {
            "file": "model.tflite",
            "signature": "serving_L8",
            "metrics": {"max_abs_diff": 2e-4, "label_agreement": 1.0},
        },
        {
            "file": "model.tflite",
            "signature": "serving_L16",
            "metrics": {"max_abs_diff": 1e-6, "label_agreement": 0.99},
        },
    ]
    failures = validate.check_thresholds("float32", results)
    assert len(failures) == 2
    assert "serving_L8: max_abs_diff = 0.0002, needs <= 0.0001" in failures[0]
    assert "serving_L16: label_agreement = 0.99, needs >= 1" in failures[1]
    assert validate.check_thresholds("dynamic_int8", results) == []


def test_report_table_shows_each_signature_and_the_verdict():
    report = {
        "artifact": "a",
        "kind": "tflite",
        "task": "classify",
        "validation_profile": "int8",
        "runtime": "LiteRT",
        "num_texts": 200,
        "reference": "given",
        "thresholds": {"label_agreement": 0.97},
        "file_sizes": {"model.tflite": 2_000_000},
        "results": [
            {
                "file": "model.tflite",
                "signature": "serving_L8",
                "sequence_length": 8,
                "latency": {"p50_ms": 1.5, "batch": 1},
                "metrics": {"label_agreement": 0.9, "accuracy_artifact": 0.8},
            }
        ],
        "failures": ["model.tflite:serving_L8: label_agreement = 0.9, needs >= 0.97"],
        "degraded": True,
    }
    text = validate.format_report(report)
    assert "model.tflite:serving_L8" in text and "0.9000" in text and "2.00 MB" in text
    assert "DEGRADED (recorded, allowed)" in text
    report["degraded"] = False
    assert "FAILED" in validate.format_report(report)


def test_keras_reference_is_cached_until_the_weights_change(
    tiny_classifier, tiny_tokenizer, tiny_texts
):
    from zoo.text.tokenizer import tokenize_texts

    ids = tokenize_texts(tiny_tokenizer, tiny_texts[:8], 16)
    first = validate.keras_outputs(tiny_classifier, ids)
    assert validate.keras_outputs(tiny_classifier, ids) is first  # cached
    kernel = tiny_classifier.output_dense.kernel
    saved = kernel.numpy()
    try:
        kernel.assign(saved + np.random.default_rng(0).normal(size=saved.shape))
        again = validate.keras_outputs(tiny_classifier, ids)
        assert again is not first and np.abs(again["logits"] - first["logits"]).max() > 1e-3
    finally:
        kernel.assign(saved)


def test_validation_texts_are_checked(tiny_texts):
    with pytest.raises(TypeError, match="list of str"):
        validate.validate_artifact("nowhere", "one text")
    with pytest.raises(ValueError, match="at least 200 real texts"):
        validate.validate_artifact("nowhere", tiny_texts[:10])
    with pytest.raises(ValueError, match="3 labels for 200 texts"):
        validate.validate_artifact("nowhere", tiny_texts, ["a", "b", "c"])
