"""The figures on the real all-MiniLM-L6-v2 encoder with a BBC News head.

Run with `-s` to see every figure. BBC articles go in at REAL_LENGTH (64)
tokens; 200 test-split articles validate the artifact (the minimum the
validator accepts). The four quantization modes and the text-in SavedModel
are proven on the real fine-tuned teacher and its distilled student by
`zoo demo --fast` (tests/test_demo.py); here: float32 parity, op lists, the
multi-length file's weight sharing, the manifest on a real file, and XLA
lowering of the TPU endpoint.
"""

import json
import shutil

import pytest

from export import Signatures, Validation, runtime, saved_model, tflite
from export import manifest as mf
from tests.export.conftest import REAL_LENGTH

pytestmark = [pytest.mark.assets, pytest.mark.slow]


@pytest.fixture(scope="module")
def real(bbc_classifier, bbc_split, tmp_path_factory):
    model, tokenizer = bbc_classifier
    texts = [t for t, _ in bbc_split["test"][:200]]
    labels = [label for _, label in bbc_split["test"][:200]]
    root = tmp_path_factory.mktemp("real")
    # One float32 artifact: the other modes, and the text-in SavedModel in the
    # TF1 loader, are proven on the real fine-tuned teacher and distilled
    # student by `zoo demo --fast` (tests/test_demo.py).
    artifacts = {
        "float32": tflite.export_tflite(
            model,
            tokenizer,
            root / "float32",
            signatures=Signatures((REAL_LENGTH,)),
            validation=Validation(texts, labels),
        )
    }
    # The multi-length file: converted only (its mechanics are validated on
    # the tiny model); here it is about bytes.
    tflite.write_phone_saved_model(model, (REAL_LENGTH, 128), root / "multi_sm")
    multi = tflite.convert(root / "multi_sm", ["serving_L64", "serving_L128"], "float32")
    return dict(
        model=model,
        tokenizer=tokenizer,
        texts=texts,
        labels=labels,
        root=root,
        artifacts=artifacts,
        multi=multi,
    )


def _report(path):
    return json.loads((path / "validation.json").read_text())


def _metrics(path):
    return _report(path)["results"][0]


def test_float32_tflite_equals_keras(real):
    row = _metrics(real["artifacts"]["float32"])
    m = row["metrics"]
    print(
        f"\nMiniLM-L6 BBC classifier float32 .tflite, {REAL_LENGTH} tokens, 200 BBC test "
        f"articles: max|d| {m['max_abs_diff']:.2e}, agreement {m['label_agreement']:.4f}, "
        f"p50 {row['latency']['p50_ms']:.2f} ms (LiteRT, 1 thread)"
    )
    assert m["max_abs_diff"] <= 1e-4 and m["label_agreement"] == 1.0


def test_phone_files_hold_builtin_ops_only(real):
    for mode in real["artifacts"]:
        ops = tflite.op_list((real["artifacts"][mode] / "model.tflite").read_bytes())
        print(f"\n{mode}: {ops['builtin']}")
        assert ops["custom"] == [], f"{mode} holds custom/Flex ops {ops['custom']}"
        assert (
            mf.read_metadata(real["artifacts"][mode])["files"]["model.tflite"]["ops"]
            == ops["builtin"]
        )


def test_multi_length_file_shares_one_copy_of_the_weights(real):
    single = (real["artifacts"]["float32"] / "model.tflite").stat().st_size
    multi = len(real["multi"])
    weights = tflite.weight_buffers(real["multi"])
    print(
        f"\nfloat32 [1,64]: {single / 1e6:.2f} MB; [1,64]+[1,128]: {multi / 1e6:.2f} MB "
        f"(+{100 * (multi / single - 1):.2f}%); duplicate weight bytes {weights['duplicate_bytes']}"
    )
    assert multi <= 1.03 * single and weights["duplicate_bytes"] == 0


def test_flipped_byte_of_the_real_file_refuses_to_load(real, tmp_path):
    copy = tmp_path / "f32"
    shutil.copytree(real["artifacts"]["float32"], copy)
    with open(copy / "model.tflite", "r+b") as f:
        f.seek(40_000_000)  # inside the weights
        byte = f.read(1)
        f.seek(40_000_000)
        f.write(bytes([byte[0] ^ 0x01]))
    with pytest.raises(mf.ManifestError, match=r"model\.tflite: sha256"):
        runtime.load_interpreter(copy)


def test_tpu_endpoint_of_the_real_model_lowers_to_xla(real):
    import tensorflow as tf

    model = real["model"]
    spec = saved_model._id_specs([8, 128])
    fn = tf.function(
        lambda ids: saved_model._model_outputs(model, ids),
        input_signature=[spec],
        jit_compile=True,
        autograph=False,
    )
    fn.__name__ = "serve_ids_L128"
    evidence = saved_model.xla_lowering(fn, spec)
    print(
        f"\nMiniLM serve_ids_L128 [8,128]: {evidence['hlo_instructions']} HLO instructions; "
        f"opcodes {evidence['hlo_opcodes']}; string ops {evidence['string_ops']}; host ops "
        f"{evidence['host_ops']}"
    )
    assert evidence["string_ops"] == [] and evidence["host_ops"] == []
    # Not run here: compiling MiniLM with XLA:CPU takes minutes on this
    # machine; the numerics of jit endpoints are checked on the tiny model's
    # TPU export (test_saved_model.py), through the TF1 loader.
