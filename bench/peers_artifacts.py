"""`make bench`'s artifacts, built once in a child process (bench/peers.py):
the peers' torch model and ONNX files (fp32 and dynamic int8) and the
project's SavedModel and .tflite files, from the same weights."""

from __future__ import annotations

# isort: off
import zoo  # noqa: F401  first: TensorFlow's environment (oneDNN, log level)

# isort: on
from bench.peers_inputs import ENCODERS, LENGTH, _ids
from export.saved_model import export_saved_model
from export.specs import ServingVersion, Signatures, Validation
from export.tflite import Quantization, export_tflite
from zoo.checkpoints import load_checkpoint
from zoo.datasets.corpora import minilm_checkpoint_dir
from zoo.models import Classifier
from zoo.text.readers import calibration_and_validation


def build_artifacts(name, work, tflite):
    """The torch model, its ONNX files, and the project's SavedModel and
    .tflite files for encoder `name`, under `work`."""
    # The peers' runtimes come with the test and bench extras, not the runtime.
    import torch
    import transformers
    from onnxruntime.quantization import QuantType, quantize_dynamic

    model, encoder, tokenizer = _peer_model(name, work, transformers)
    model.eval()
    torch.save(model, work / f"{name}_torch.pt")
    onnx = work / f"{name}.onnx"
    if not onnx.exists():
        _export_onnx(model, onnx, torch)
        quantize_dynamic(
            str(onnx), str(work / f"{name}_int8.onnx"), weight_type=QuantType.QInt8
        )
    if encoder is None:
        if not tflite:
            return
        encoder, tokenizer = _converted_checkpoint(name, work, model)
    _project_exports(name, work, encoder, tokenizer, tflite)


def _peer_model(name, work, transformers):
    """The peers' torch `BertModel`, with the project's encoder and tokenizer for MiniLM."""
    if name == "minilm":
        hf_dir = minilm_checkpoint_dir()
        if not (work / "minilm_hf").exists():
            (work / "minilm_hf").symlink_to(hf_dir)
        model = transformers.BertModel.from_pretrained(hf_dir, attn_implementation="eager")
        encoder, tokenizer = load_checkpoint(hf_dir)
    else:
        c = ENCODERS[name]
        model = transformers.BertModel(
            transformers.BertConfig(
                vocab_size=c["vocabulary_size"],
                hidden_size=c["hidden_dim"],
                num_hidden_layers=c["num_layers"],
                num_attention_heads=c["num_heads"],
                intermediate_size=c["intermediate_dim"],
            ),
            add_pooling_layer=True,
        )
        encoder = None
        tokenizer = None
    return model, encoder, tokenizer


def _export_onnx(model, onnx, torch):
    """The torch model's fp32 ONNX file at `onnx` (batch axis dynamic)."""

    class Encoder(torch.nn.Module):  # keyword arguments; the sequence output
        def __init__(self, bert):
            super().__init__()
            self.bert = bert

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.bert(
                input_ids=input_ids,
                attention_mask=attention_mask,
                token_type_ids=token_type_ids,
            ).last_hidden_state

    ids = torch.from_numpy(_ids(1).astype("int64"))
    torch.onnx.export(
        Encoder(model),
        (ids, torch.ones_like(ids), torch.zeros_like(ids)),
        str(onnx),
        input_names=["input_ids", "attention_mask", "token_type_ids"],
        output_names=["last_hidden_state"],
        dynamic_axes={
            k: {0: "batch"} for k in ("input_ids", "attention_mask", "token_type_ids")
        },
        dynamo=False,
    )


def _converted_checkpoint(name, work, model):
    """The project's encoder and tokenizer from the torch model's weights (BERT-Base)."""
    # BERT-Base: the same torch weights, through the project's converter.
    hf = work / f"{name}_hf"
    if not hf.exists():
        model.save_pretrained(hf)
        (hf / "vocab.txt").write_text((minilm_checkpoint_dir() / "vocab.txt").read_text())
    return load_checkpoint(hf)


def _project_exports(name, work, encoder, tokenizer, tflite):
    """The project's SavedModel and (with `tflite`) .tflite files of a 5-way classifier."""
    classifier = Classifier(encoder, 5, labels=[f"c{i}" for i in range(5)], dropout=0.0)
    # Exports validate themselves (agreement with Keras) on real texts.
    _, texts, _, _ = calibration_and_validation("bbc")
    saved = work / f"{name}_saved_model"
    if not saved.exists():
        export_saved_model(
            classifier,
            tokenizer,
            work / "serving",
            serving=ServingVersion(name, 1),
            sequence_length=LENGTH,
            validation=Validation(texts),
        )
        (work / "serving" / name / "1").rename(saved)
    if tflite:
        for mode in ("float32", "dynamic_int8"):
            path = work / f"{name}_tflite_{mode}"
            if not path.exists():
                export_tflite(
                    classifier,
                    tokenizer,
                    path,
                    quantization=Quantization(mode),
                    signatures=Signatures((LENGTH,)),
                    # an untrained 5-way head: near-ties flip labels under
                    # int8; the bench measures speed (validation still runs)
                    validation=Validation(texts, allow_degraded=True),
                )
