"""The bars an exported artifact must clear: the per-profile thresholds
(`THRESHOLDS`, `REGRESSION_THRESHOLDS`), the check of every result against
them, and the error a miss raises (`ExportValidationError`)."""

from __future__ import annotations

MIN_VALIDATION_TEXTS = 200


SECONDARY_TEXTS = 32


LATENCY_RUNS = 20


REPORT = "validation.json"


# Per validation profile (metadata.json "validation_profile"). Each entry is
# a bound on a metric of every compared signature: `max_abs_diff` is an upper
# bound, the others are lower bounds. float32 must be the Keras model up to
# kernel rounding; quantized modes are judged on the decision they change.
THRESHOLDS = {
    "float32": {"max_abs_diff": 1e-4, "label_agreement": 1.0},
    "float16": {"label_agreement": 0.995},
    "dynamic_int8": {"label_agreement": 0.99},
    # Full-integer activations are the mode whose accuracy collapses quietly
    # (tensorflow#89904): below 97% agreement it is flagged.
    "int8": {"label_agreement": 0.97},
    # int4 weights: the same bar as full int8.
    "int4": {"label_agreement": 0.97},
    # label_string_agreement: the label name the graph answers with (its
    # assets/labels.txt) against the name metadata.json gives the Keras
    # model's class.
    "saved_model": {
        "max_abs_diff": 1e-4,
        "label_agreement": 1.0,
        "token_ids_match": 1.0,
        "label_string_agreement": 1.0,
    },
    "tpu_float32": {"max_abs_diff": 1e-4, "label_agreement": 1.0},
    "tpu_bfloat16": {"label_agreement": 0.99},
}


# A regressor (task "regress", one float `score`) has no label to agree on:
# every profile is gated on the score itself, by its largest difference from
# the Keras model (in the score's own units, 0..5 for STS) and by the Pearson
# r of the two over the validation texts. Measured on two MiniLM regressors
# fine-tuned on WordNet STS, 500 test pairs at 64 tokens (the gates: BUILD_NOTES.md,
# "Export formats and runtimes"): float16 max 5e-4 / 2.2e-3; dynamic_int8 max 0.053 / 0.22,
# r 0.9996 / 0.9991; int8 max 0.40 / 1.70, r 0.979 / 0.921; int4 max 0.31 /
# 1.20, r 0.984 / 0.964. The float16 and dynamic_int8 bounds leave 2-5x
# room; the int8/int4 bounds (r as the classifiers' 0.97 agreement, and a
# fifth of the 0..5 scale) pass the first model and flag the second.
REGRESSION_THRESHOLDS = {
    "float32": {"max_abs_diff": 1e-4},
    "float16": {"max_abs_diff": 0.01, "score_pearson": 0.9999},
    "dynamic_int8": {"max_abs_diff": 0.5, "score_pearson": 0.995},
    "int8": {"max_abs_diff": 1.0, "score_pearson": 0.97},
    "int4": {"max_abs_diff": 1.0, "score_pearson": 0.97},
    "saved_model": {"max_abs_diff": 1e-4, "token_ids_match": 1.0},
    "tpu_float32": {"max_abs_diff": 1e-4},
    # Not measured (no TPU here): bfloat16 keeps 8 bits of mantissa, between
    # float16 and int8.
    "tpu_bfloat16": {"max_abs_diff": 0.25, "score_pearson": 0.995},
}


LOWER_IS_BETTER = {"max_abs_diff", "mean_abs_diff"}


class ExportValidationError(Exception):
    """An exported artifact disagrees with its Keras model beyond the thresholds.

    `.report` holds the full report (the same dict `validate_artifact` returns).
    """

    def __init__(self, message, report):
        super().__init__(message)
        self.report = report


def thresholds(profile, task=None):
    """The limits a `task`'s artifact validated under `profile` must meet."""
    table = REGRESSION_THRESHOLDS if task == "regress" else THRESHOLDS
    if not isinstance(profile, str) or profile not in table:
        # Never an empty set of limits: that would pass anything.
        raise ValueError(
            f"validation profile {profile!r:.60} has no thresholds; expected one of "
            f"{sorted(table)}."
        )
    return table[profile]


def check_thresholds(profile, results, task=None):
    """Failures (one line each) of every result against `thresholds(profile, task)`."""
    limits = thresholds(profile, task)
    failures = []
    for result in results:
        metrics = result.get("metrics", {})
        for name, bound in limits.items():
            if name not in metrics:
                continue
            value = metrics[name]
            bad = value > bound if name in LOWER_IS_BETTER else value < bound
            if bad:
                op = "<=" if name in LOWER_IS_BETTER else ">="
                failures.append(
                    f"{result['file']}:{result['signature']}: {name} = {value:.6g}, needs {op} {bound:g}"
                )
    return failures
