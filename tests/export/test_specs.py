"""The exporters' grouped arguments: each spec refuses a wrong field when it
is built, naming the field and what it received; an exporter refuses a
loose value where a spec belongs."""

import numpy as np
import pytest

from export import (
    Quantization,
    ServingVersion,
    Signatures,
    TpuBuckets,
    Validation,
    export_saved_model,
    export_tflite,
    export_tpu_saved_model,
)
from export.specs import checked_spec


@pytest.mark.parametrize(
    "build, error, message",
    [
        (lambda: Validation("one text"), TypeError, r"Validation.texts received one str"),
        (
            lambda: Validation(["a", "b"], ["x"]),
            ValueError,
            r"Validation.labels holds 1 labels for 2 texts",
        ),
        (lambda: Validation(labels=["x"]), ValueError, r"labels were given without texts"),
        (
            lambda: Validation(["a"], allow_degraded="yes"),
            TypeError,
            r"Validation.allow_degraded must be True or False; received 'yes'",
        ),
        (
            lambda: Validation(["a"], workers=0),
            ValueError,
            r"Validation.workers .* received 0",
        ),
        (lambda: ServingVersion("../x"), ValueError, r"ServingVersion\(name='../x'\)"),
        (
            lambda: ServingVersion("m", 0),
            ValueError,
            r"ServingVersion.version .* received 0",
        ),
        (lambda: ServingVersion("m", True), ValueError, r"ServingVersion.version"),
        (lambda: ServingVersion("m", overwrite=1), TypeError, r"ServingVersion.overwrite"),
        (
            lambda: TpuBuckets(()),
            ValueError,
            r"TpuBuckets.sequence_lengths .* received \(\)",
        ),
        (lambda: TpuBuckets((32, "64")), ValueError, r"TpuBuckets.sequence_lengths"),
        (
            lambda: TpuBuckets(batch_size=0),
            ValueError,
            r"TpuBuckets.batch_size .* received 0",
        ),
        (
            lambda: TpuBuckets(compute_dtype="float16"),
            ValueError,
            r"TpuBuckets.compute_dtype .* received 'float16'",
        ),
        (lambda: Signatures("128"), TypeError, r"Signatures.sequence_lengths .* '128'"),
        (lambda: Signatures(text_in="yes"), TypeError, r"Signatures.text_in"),
        (
            lambda: Quantization("int16x8"),
            ValueError,
            r"Quantization.mode='int16x8': choose",
        ),
        (
            lambda: Quantization("int8"),
            ValueError,
            r"pass at least 100 str .* Quantization.representative_texts \(received 0\)",
        ),
        (
            lambda: Quantization("int8", [1] * 100),
            ValueError,
            r"Quantization.representative_texts \(received 100\)",
        ),
    ],
)
def test_a_spec_names_the_field_it_refuses(build, error, message):
    with pytest.raises(error, match=message):
        build()


def test_specs_normalise_what_they_accept():
    assert TpuBuckets([32, np.int64(64)]).sequence_lengths == (32, 64)
    assert Signatures(32).sequence_lengths == (32,)
    assert Signatures().sequence_lengths is None
    # The modes that calibrate nothing ignore calibration texts.
    assert Quantization("dynamic_int8", ["a"]).calibration_texts() is None
    # int4 stores no activation range: no texts needed.
    assert Quantization("int4").calibration_texts() is None
    texts = [f"text {i}" for i in range(100)]
    assert Quantization("int8", texts).calibration_texts() == texts
    assert Validation(np.array(["a", "b"]), np.array([0, 1])).labels.tolist() == [0, 1]
    spec = ServingVersion("bbc", 2, overwrite=True)
    with pytest.raises(AttributeError):
        spec.version = 3  # frozen: a spec is what was checked


@pytest.mark.parametrize(
    "export, field",
    [
        (export_tflite, "validation"),
        (export_tflite, "quantization"),
        (export_saved_model, "serving"),
        (export_tpu_saved_model, "buckets"),
    ],
)
def test_an_exporter_refuses_a_loose_value_where_a_spec_belongs(export, field, tmp_path):
    """Checked before the model is looked at: the model here is not one."""
    with pytest.raises(TypeError, match=rf"{export.__name__}\({field}=\.\.\.\) takes a"):
        export(object(), None, tmp_path / "out", **{field: "float32"})
    assert not (tmp_path / "out").exists()
    assert checked_spec("f", "validation", None, Validation) == Validation()


@pytest.mark.parametrize(
    "export", [export_tflite, export_saved_model, export_tpu_saved_model]
)
def test_an_exporter_refuses_too_few_validation_texts_before_touching_the_model(
    export, tmp_path
):
    """The model here is not one: the count is checked before it is looked at."""
    validation = Validation([f"text {i}" for i in range(199)])
    with pytest.raises(
        ValueError,
        match=rf"{export.__name__}: validation needs at least 200 .* received 199",
    ):
        export(object(), None, tmp_path / "out", validation=validation)
    assert not (tmp_path / "out").exists()
