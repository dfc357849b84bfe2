"""The demo's stages (zoo.demo.stages) where no demo run is needed."""

import pytest

from export.validate.limits import ExportValidationError
from zoo.demo import DemoConfig, DemoError, stages


def test_an_artifact_missing_its_thresholds_ends_the_demo_in_one_paragraph(
    tmp_path, monkeypatch
):
    """An export that misses its thresholds publishes nothing; the demo says
    which artifact, which thresholds and what to do, without a traceback."""
    monkeypatch.setattr(
        stages, "calibration_and_validation", lambda spec: (["c"], ["t"], ["l"], {})
    )
    monkeypatch.setattr(stages, "load_model_dir", lambda path: (None, None, None))

    def miss(*args, **kwargs):
        line = "saved_model.pb:serving_default: label_agreement = 0.985915, needs >= 0.99"
        raise ExportValidationError(
            f"{tmp_path}/exports/.tmp-1 failed validation (saved_model thresholds):\n"
            f"  {line}\n\nthe full report\n",
            {"failures": [line]},
        )

    monkeypatch.setattr(stages, "export_saved_model", miss)
    with pytest.raises(DemoError) as raised:
        stages.stage_export(tmp_path, DemoConfig.fast())
    message = str(raised.value)
    assert message.startswith(
        "teacher saved_model missed its validation thresholds and was not published "
        "(saved_model.pb:serving_default: label_agreement = 0.985915, needs >= 0.99). "
    )
    assert "the full report" not in message and "--force" in message
