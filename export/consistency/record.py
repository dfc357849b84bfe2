"""The artifact record: the metadata fields an exporter embeds in the model
file itself (`artifact_record`), and the check of an embedded record
against metadata.json."""

from __future__ import annotations

from export.consistency.refuse import _refuse

RECORD_NAME = "bert_zoo_record"


RECORD_COLLECTION = "bert_zoo_record"


RECORD_FORMAT = "bert-zoo-artifact-record"


# `tokenization` is absent from records and metadata written before the
# description existed: both read as None, and agree.
RECORD_FIELDS = (
    "task",
    "labels",
    "vocabulary_size",
    "vocabulary_sha256",
    "lowercase",
    "tokenization",
)


def artifact_record(meta) -> dict:
    """The record an exporter embeds in the model file: the metadata fields
    a disagreement in which would give silently wrong answers."""
    return {"format": RECORD_FORMAT, **{k: meta.get(k) for k in RECORD_FIELDS}}


def _check_record(directory, meta, record, where):
    if record is None:
        return
    if not isinstance(record, dict) or record.get("format") != RECORD_FORMAT:
        _refuse(directory, "record", f"{where} holds an unreadable artifact record")
    for field in RECORD_FIELDS:
        if record.get(field) != meta.get(field):
            _refuse(
                directory,
                field,
                f"metadata.json says {meta.get(field)!r:.80} but {where} was exported with "
                f"{record.get(field)!r:.80}",
            )
