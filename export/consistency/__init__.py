"""What an artifact's model files say about themselves, checked against its
metadata.json before anything runs: the check that a manifest cannot make.

A manifest proves that no file changed since it was written; it cannot tell
whether the files agree with each other, because whoever edits a file can
write a new manifest. So every loader also re-derives from the model files
what they can tell, and refuses an artifact whose metadata.json says
otherwise, naming the field:

    .tflite     each file described in metadata.json `files` and no other;
                signature names; inputs (int32 [1, L] ids, or one string)
                and L against `sequence_lengths`; outputs against the task
                (classify: logits/probabilities [1, C]; tag: [1, L, C]; qa:
                start/end logits [1, L]; regress: score) and C against
                `labels`; token-embedding rows against `vocabulary_size`;
                size and operator counts; the artifact record the exporter
                embedded in the flatbuffer (below); the vocabulary and labels
                zipped into mediapipe.tflite (a check export.mediapipe
                registers: `registry`)
    SavedModel  signature names, inputs and outputs; the length the text
                signatures pad to against `sequence_lengths`; C against
                `labels`; assets/vocab.txt and assets/labels.txt against
                vocab.txt and `labels`; every variable read back with the
                checksum TensorFlow stored beside it; the embedded record

The record (`artifact_record`) holds the fields whose disagreement would
give silently wrong answers (task, labels, vocabulary size and sha256,
lower-casing). The exporters store it inside the model file itself: in a
`.tflite` as a flatbuffer `metadata` entry named `RECORD_NAME`, in a
SavedModel as a string variable (the `RECORD_COLLECTION` variable
collection). Editing metadata.json or vocab.txt then means rewriting the
model file too; artifacts exported before the record existed are checked
without it.

The package: `refuse` (how a disagreement is refused), `record` (the
artifact record), `registry` (the checks a format's own module registers,
so these generic checks never import it), `flatbuffer` (what a `.tflite`
says about itself), `tflite_checks` and `saved_model_checks` (each kind's
files against metadata.json) and `artifact` (`check_artifact`, by kind);
this module re-exports their names.
"""

from __future__ import annotations

from export.consistency.artifact import check_artifact
from export.consistency.flatbuffer import embed_tflite_record, tflite_facts
from export.consistency.record import (
    RECORD_COLLECTION,
    RECORD_FIELDS,
    RECORD_FORMAT,
    RECORD_NAME,
    artifact_record,
)
from export.consistency.refuse import ModelFileError
from export.consistency.registry import register, register_source_graph
from export.consistency.saved_model_checks import (
    check_saved_model_artifact,
    read_variables,
    saved_model_signatures,
)
from export.consistency.tflite_checks import check_tflite_artifact, check_tflite_file

# The names importable from export.consistency, wherever in the package they
# live.
__all__ = [
    "RECORD_COLLECTION",
    "RECORD_FIELDS",
    "RECORD_FORMAT",
    "RECORD_NAME",
    "ModelFileError",
    "artifact_record",
    "check_artifact",
    "check_saved_model_artifact",
    "check_tflite_artifact",
    "check_tflite_file",
    "embed_tflite_record",
    "read_variables",
    "register",
    "register_source_graph",
    "saved_model_signatures",
    "tflite_facts",
]
