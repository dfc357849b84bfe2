"""Does MediaPipe Tasks' TextClassifier run the text-in `model_text.tflite`?

    .venv/bin/python scripts/mediapipe_string_model.py ARTIFACT_DIR [OUT.tflite]

MediaPipe's text_model_utils takes a model whose one input is a string
tensor as a STRING_MODEL (no tokenizer of its own: the graph tokenizes).
This script gives `ARTIFACT_DIR/model_text.tflite` what MediaPipe reads
(one subgraph, only the `probabilities` output, TFLite Model Metadata naming
the `text` input and the labels file, labels.txt zipped inside, as
export/mediapipe.py does for the ids-in file), lists the file's custom
operators and whether MediaPipe's native library carries an operator of
that name, and runs the file in MediaPipe's venv: the classification of one
accented sentence, or MediaPipe's error lines.

An investigation tool: the export does not write this file (docs/android.md,
"MediaPipe Tasks", says what it found and why).
"""

from __future__ import annotations

import io
import json
import pathlib
import subprocess
import sys
import zipfile

import flatbuffers
import numpy as np

from export import mediapipe
from export.mediapipe import AlignedBuffer, _Builder, _one_signature, _text, tfl

SENTENCE = "Der Bäcker öffnet um sechs Uhr früh, während die Straße noch schläft."
RUN = """
import sys
from mediapipe.tasks.python import text
from mediapipe.tasks.python.core.base_options import BaseOptions
options = text.TextClassifierOptions(
    base_options=BaseOptions(model_asset_path=sys.argv[1]), max_results=-1
)
with text.TextClassifier.create_from_options(options) as classifier:
    result = classifier.classify(sys.argv[2])
print([(c.index, round(c.score, 6)) for c in result.classifications[0].categories])
"""


def string_model_file(artifact, signature):
    """(bytes of the MediaPipe string-model file, its custom operator names)."""
    content = (artifact / "model_text.tflite").read_bytes()
    labels = json.loads((artifact / "metadata.json").read_text())["labels"]
    model, _ = _one_signature(content, signature)
    custom = sorted({_text(c.customCode) for c in model.operatorCodes if c.customCode})
    m = _Builder()
    # TensorMetadata of the string input: a name and a description only.
    name, description = m.string("text"), m.string("The text to classify, UTF-8.")
    text_input = m.table(7, [(0, "offset", name), (1, "offset", description)])
    labels_file = m.associated_file(
        mediapipe.LABELS_FILE, "TENSOR_AXIS_LABELS", "One label per class."
    )
    output = m.tensor(
        mediapipe.OUTPUT, "Probability of each label.", files=[labels_file], stats=(0, 1)
    )
    inputs, outputs = m.vector([text_input]), m.vector([output])
    subgraph = m.table(10, [(2, "offset", inputs), (3, "offset", outputs)])
    strings = [m.string(s) for s in ("bert-zoo text-in classifier", "1", "1.0.0")]
    subgraphs = m.vector([subgraph])
    root = m.table(
        8,
        [
            (0, "offset", strings[0]),
            (2, "offset", strings[1]),
            (3, "offset", subgraphs),
            (7, "offset", strings[2]),
        ],
    )
    m.b.Finish(root, file_identifier=mediapipe.METADATA_IDENTIFIER)
    buffer = tfl.BufferT()
    buffer.data = np.frombuffer(bytes(m.b.Output()), np.uint8)
    model.buffers.append(buffer)
    entry = tfl.MetadataT()
    entry.name, entry.buffer = mediapipe.METADATA_NAME, len(model.buffers) - 1
    model.metadata = [
        e for e in model.metadata or [] if _text(e.name) != mediapipe.METADATA_NAME
    ] + [entry]
    model.buffers = [AlignedBuffer.of(b) for b in model.buffers]
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=mediapipe.MODEL_IDENTIFIER)
    out = io.BytesIO(bytes(builder.Output()))
    out.seek(0, io.SEEK_END)
    with zipfile.ZipFile(out, mode="a", compression=zipfile.ZIP_STORED) as archive:
        archive.writestr(
            zipfile.ZipInfo(mediapipe.LABELS_FILE, date_time=(1980, 1, 1, 0, 0, 0)),
            ("\n".join(labels) + "\n").encode(),
        )
    return out.getvalue(), custom


def main(argv):
    artifact = pathlib.Path(argv[0])
    out = pathlib.Path(argv[1] if len(argv) > 1 else "/tmp/mediapipe_text_in.tflite")
    meta = json.loads((artifact / "metadata.json").read_text())
    signature = meta["files"]["model_text.tflite"]["signatures"][0]
    data, custom = string_model_file(artifact, signature)
    out.write_bytes(data)
    python = mediapipe.mediapipe_python()
    if python is None:
        sys.exit(f"no MediaPipe venv: set ${mediapipe.PYTHON_ENV} or `make mediapipe-venv`")
    library = python.parent.parent.glob("lib/python*/site-packages/mediapipe/tasks/c/*.so")
    blob = b"".join(p.read_bytes() for p in library)
    for op in custom:
        found = (b"\0" + op.encode() + b"\0") in blob
        print(f"custom op {op}: {'named' if found else 'NOT named'} in MediaPipe's library")
    proc = subprocess.run(
        [str(python), "-c", RUN, str(out), SENTENCE], capture_output=True, text=True
    )
    print(f"MediaPipe exit status {proc.returncode}")
    print(proc.stdout.strip())
    errors = [line for line in proc.stderr.splitlines() if line.startswith("ERROR")]
    print("\n".join(errors))


if __name__ == "__main__":
    main(sys.argv[1:])
