"""`filtered_stderr`: the converter's known-harmless native log lines are
dropped, everything else reaches stderr in order, and a failure shows all."""

import os
import sys

import pytest

from zoo.utils.native_log import filtered_stderr

NOISE = (
    "W0000 00:00:1795766844.683422    8896 tf_tfl_flatbuffer_helpers.cc:364] "
    "Ignored output_format.\n"
)


def test_noise_dropped_other_native_and_python_lines_kept_in_order(capfd):
    with filtered_stderr():
        os.write(2, NOISE.encode())
        os.write(2, b"E0000 something the user must see\n")
        print("from python", file=sys.stderr)
        os.write(
            2,
            b"I0000 00:00:1.2    7 mlir_graph_optimization_pass.cc:437] "
            b"MLIR V1 optimization pass is not enabled\n",
        )
    os.write(2, b"after the block\n")
    err = capfd.readouterr().err
    # (pytest captures Python's sys.stderr apart from fd 2, so only the
    # native lines' order is checked.)
    assert "from python\n" in err
    assert err.replace("from python\n", "") == (
        "E0000 something the user must see\nafter the block\n"
    )


def test_nested_blocks_unwind_to_the_original_stderr(capfd):
    with filtered_stderr():
        os.write(2, b"outer\n")
        with filtered_stderr():
            os.write(2, NOISE.encode())
            os.write(2, b"inner\n")
    os.write(2, b"after\n")
    assert capfd.readouterr().err == "outer\ninner\nafter\n"


def test_a_failing_block_shows_every_line_and_raises(capfd):
    with pytest.raises(RuntimeError, match="boom"), filtered_stderr():
        os.write(2, NOISE.encode())
        raise RuntimeError("boom")
    assert capfd.readouterr().err == NOISE


def test_a_real_conversion_prints_no_noise(tmp_path, capfd):
    import tensorflow as tf

    from export import tflite

    class Doubles(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([1, 4], tf.float32)])
        def serve(self, x):
            return {"y": 2.0 * x}

    module = Doubles()
    tf.saved_model.save(module, str(tmp_path / "sm"), signatures={"serve": module.serve})
    # The control: TensorFlow's converter itself prints the line (if a new
    # TensorFlow stops printing it, CONVERTER_NOISE can lose its pattern).
    tf.lite.TFLiteConverter.from_saved_model(str(tmp_path / "sm")).convert()
    assert "Ignored output_format" in capfd.readouterr().err
    tflite.convert(tmp_path / "sm", ["serve"], "float32")
    err = capfd.readouterr().err
    assert "Ignored output_format" not in err and "Ignored drop_control" not in err, err
