"""The MediaPipe file (export/mediapipe.py) read back without MediaPipe: one
subgraph and one `probabilities` output, the TFLite Model Metadata MediaPipe
reads (names, tokenizer unit, label file), the uncompressed zip of vocab.txt
and labels.txt, and the same probabilities as model.tflite's primary
signature in LiteRT. (MediaPipe itself runs the demo's phone file in
tests/test_demo.py.)"""

import io
import zipfile

import flatbuffers
import numpy as np
import pytest
from flatbuffers import encode, packer
from flatbuffers.table import Table

from export import mediapipe
from export.runtime import load_signature
from export.tflite import export_tflite
from tests.export.conftest import TINY_LABELS, VOCABULARY, sentences

try:
    from ai_edge_litert import schema_py_generated as tfl
except ImportError:
    from tensorflow.lite.python import schema_py_generated as tfl


def _tables(table, slot):
    """The tables of vector field `slot` (metadata_schema.fbs order)."""
    offset = table.Offset(4 + 2 * slot)
    start = table.Vector(offset)
    return [Table(table.Bytes, table.Indirect(start + 4 * i))
            for i in range(table.VectorLen(offset))]


def _string(table, slot):
    offset = table.Offset(4 + 2 * slot)
    return table.String(table.Pos + offset).decode() if offset else None


@pytest.fixture(scope="module")
def artifact(tmp_path_factory, tiny_classifier, tiny_tokenizer):
    return export_tflite(tiny_classifier, tiny_tokenizer, tmp_path_factory.mktemp("mp") / "a",
                         quantize="dynamic_int8", sequence_lengths=(16, 32),
                         validation_texts=sentences(200, seed=5),
                         validation_labels=[TINY_LABELS[i % 3] for i in range(200)])



def test_mediapipe_file_structure(artifact, tiny_tokenizer):
    data = (artifact / mediapipe.FILE).read_bytes()
    model = tfl.Model.GetRootAs(data, 0)
    assert data[4:8] == mediapipe.MODEL_IDENTIFIER
    assert model.SubgraphsLength() == 1 and model.SignatureDefsLength() == 1
    graph = model.Subgraphs(0)
    assert graph.OutputsLength() == 1
    signature = model.SignatureDefs(0)
    assert signature.SignatureKey().decode() == "serving_L16"
    assert [signature.Outputs(i).Name().decode() for i in range(signature.OutputsLength())] == [
        "probabilities"]
    entries = {model.Metadata(i).Name().decode(): model.Metadata(i).Buffer()
               for i in range(model.MetadataLength())}
    meta = model.Buffers(entries[mediapipe.METADATA_NAME]).DataAsNumpy().tobytes()
    assert meta[4:8] == mediapipe.METADATA_IDENTIFIER
    # Input metadata names in the subgraph's input order: MediaPipe finds the
    # BERT inputs by these names and requires them at positions {0, 1, 2}.
    by_index = {signature.Inputs(i).TensorIndex(): signature.Inputs(i).Name().decode()
                for i in range(signature.InputsLength())}
    expected = [mediapipe.MEDIAPIPE_INPUTS[by_index[graph.Inputs(i)]]
                for i in range(graph.InputsLength())]
    root = Table(bytearray(meta), encode.Get(packer.uoffset, meta, 0))
    assert _string(root, 7) == mediapipe.MIN_PARSER_VERSION
    (subgraph,) = _tables(root, 3)
    assert [_string(t, 0) for t in _tables(subgraph, 2)] == expected
    (output,) = _tables(subgraph, 3)
    assert _string(output, 0) == "probabilities"
    assert [_string(f, 0) for f in _tables(output, 6)] == ["labels.txt"]
    (unit,) = _tables(subgraph, 5)  # the BERT tokenizer, its vocabulary file
    assert unit.Get(flatbuffers.number_types.Uint8Flags, unit.Pos + unit.Offset(4)) == 4
    archive = zipfile.ZipFile(io.BytesIO(data))
    assert {i.filename: i.compress_type for i in archive.infolist()} == {
        "vocab.txt": zipfile.ZIP_STORED, "labels.txt": zipfile.ZIP_STORED}
    assert archive.read("vocab.txt").decode().split("\n")[:-1] == VOCABULARY
    assert archive.read("labels.txt").decode().split("\n")[:-1] == TINY_LABELS
    # Same weights as model.tflite's primary signature: same probabilities.
    ids = tiny_tokenizer(sentences(8, seed=2), sequence_length=16)
    full, phone = load_signature(artifact), load_signature(artifact, file=mediapipe.FILE)
    for i in range(8):
        one = {k: np.asarray(v[i : i + 1]) for k, v in ids.items()}
        np.testing.assert_allclose(phone(**one)["probabilities"], full(**one)["probabilities"],
                                   atol=1e-6)


def test_cased_models_and_blank_vocabulary_lines_are_refused(artifact):
    content = (artifact / "model.tflite").read_bytes()
    with pytest.raises(mediapipe.MediaPipeExportError, match="lower-cases"):
        mediapipe.mediapipe_classifier(content, "serving_L16", VOCABULARY, TINY_LABELS,
                                       lowercase=False)
    with pytest.raises(mediapipe.MediaPipeExportError, match="empty or blank"):
        mediapipe.mediapipe_classifier(content, "serving_L16", VOCABULARY + [" "],
                                       TINY_LABELS, lowercase=True)
    with pytest.raises(mediapipe.MediaPipeExportError, match="no signature"):
        mediapipe.mediapipe_classifier(content, "serving_L99", VOCABULARY, TINY_LABELS,
                                       lowercase=True)
