"""An exported artifact opened once: `open_artifact` runs the checks every
loader needs before a model file is touched and returns an `OpenedArtifact`
holding what they read, which the loaders, the runners, the validator and
`zoo predict` take instead of re-reading and re-checking the directory.

    artifact = open_artifact("exports/bbc_dyn")    # manifest, metadata, model files
    artifact.format, artifact.meta["labels"], artifact.tokenizer
    load_signature(artifact)                        # no second check
"""

from __future__ import annotations

import dataclasses
import pathlib
import threading

from export import manifest as mf
from export.consistency import check_artifact


@dataclasses.dataclass(frozen=True, eq=False)
class OpenedArtifact:
    """A `.tflite` artifact directory or a SavedModel version directory
    whose checks ran once (`open_artifact`): its `directory`, its checked
    metadata.json (`meta`) and its manifest.json (`manifest`, None when
    built from a caller's own metadata). `tokenizer` is built on first use
    from the artifact's tokenizer files and metadata.json's description,
    then kept: every runner of this object tokenizes with the same one.

    Building one directly (not through `open_artifact`) trusts `meta` as
    checked; `open_artifact` is the way that checks."""

    directory: pathlib.Path
    meta: dict
    manifest: dict | None = None
    # The tokenizer once built (or a caller's own, checked: `with_tokenizer`),
    # and the lock that keeps two threads from building it twice.
    _built: dict = dataclasses.field(default_factory=dict, repr=False)
    _lock: threading.Lock = dataclasses.field(default_factory=threading.Lock, repr=False)

    @property
    def format(self) -> str:
        """metadata.json's `kind`: "tflite", "saved_model" or "tpu_saved_model"."""
        return self.meta["kind"]

    @property
    def tokenizer(self):
        """The tokenizer the artifact's files and metadata.json describe
        (`export.manifest.artifact_tokenizer`), built on the first call."""
        with self._lock:
            if "tokenizer" not in self._built:
                self._built["tokenizer"] = mf.artifact_tokenizer(self.directory, self.meta)
            return self._built["tokenizer"]

    def with_tokenizer(self, given) -> OpenedArtifact:
        """This artifact with `given` as its tokenizer, after checking that
        it has the artifact's vocabulary and tokenizes by its description
        (a `ValueError` says which differs); `self` when `given` is None."""
        if given is None:
            return self
        checked = mf.artifact_tokenizer(self.directory, self.meta, given=given)
        return OpenedArtifact(
            self.directory, self.meta, self.manifest, {"tokenizer": checked}
        )


def open_artifact(artifact) -> OpenedArtifact:
    """The checks every loader runs before a model file is touched, once:
    the manifest (every file listed, none changed), metadata.json's fields,
    and metadata.json against what the model files say themselves
    (`export.consistency`). Returns the `OpenedArtifact`; one given is
    returned as it is (its checks ran when it was opened)."""
    if isinstance(artifact, OpenedArtifact):
        return artifact
    directory = pathlib.Path(artifact)
    manifest = mf.verify_manifest(directory)
    meta = mf.read_metadata(directory)
    check_artifact(directory, meta)
    return OpenedArtifact(directory, meta, manifest)
