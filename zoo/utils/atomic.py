"""Atomic writes: build under a temporary name, then rename into place, so a
crash never leaves a half-written file or directory where a reader looks.

Temporary names carry the writer's process id (`.NAME.tmp-PID-xxxx`), so the
next write to the same place removes what a killed writer left behind
(`remove_stale`): a SIGKILL runs no cleanup code.

Every directory `atomic_directory` publishes holds `OUTPUT_MARKER`
(`.zoo-output`), written first, so manifests list it. It is how the project
knows a directory is its own: `atomic_directory(..., overwrite=True)`
replaces an existing directory only when it holds the marker or is empty,
never a directory of someone else's files.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import re
import shutil
import tempfile

OUTPUT_MARKER = ".zoo-output"
MARKER_TEXT = (
    "written by bert-zoo; --force may replace this directory (and only this one)\n"
)


class ForeignDirectoryError(FileExistsError):
    """A directory the project would replace holds files it did not write."""


def written_by_zoo(directory) -> bool:
    """Whether `directory` holds the project's output marker."""
    marker = pathlib.Path(directory) / OUTPUT_MARKER
    return marker.is_file() and not marker.is_symlink()


def write_marker(directory):
    """Mark `directory` as the project's own output (see `written_by_zoo`)."""
    path = pathlib.Path(directory) / OUTPUT_MARKER
    if not path.is_file():
        path.write_text(MARKER_TEXT, encoding="utf-8")
    return path


def check_replaceable(destination, what="it"):
    """Raise `ForeignDirectoryError` unless `destination` is missing, empty,
    or marked as the project's own output."""
    destination = pathlib.Path(destination)
    if not destination.exists() or (
        destination.is_dir() and not any(destination.iterdir())
    ):
        return
    if destination.is_dir() and written_by_zoo(destination):
        return
    raise ForeignDirectoryError(
        f"{destination} holds files bert-zoo did not write (no {OUTPUT_MARKER} marker in it); "
        f"{what} never replaces them, not even with --force. Choose another directory, or "
        "move those files away yourself."
    )


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


def remove_stale(directory, prefix) -> list:
    """Remove entries of `directory` named `{prefix}{pid}-...` whose process
    is gone; return their paths. Entries of live processes stay."""
    directory = pathlib.Path(directory)
    removed = []
    if not directory.is_dir():
        return removed
    pattern = re.compile(re.escape(prefix) + r"(\d+)-")
    for entry in directory.iterdir():
        match = pattern.match(entry.name)
        if not match or int(match.group(1)) == os.getpid() or _alive(int(match.group(1))):
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                entry.unlink()
        removed.append(entry)
    return removed


def temporary_prefix(destination, kind="tmp") -> str:
    """`.NAME.KIND-PID-`: the name prefix of this process's temporaries."""
    return f".{pathlib.Path(destination).name}.{kind}-{os.getpid()}-"


def _clean_beside(destination):
    name = pathlib.Path(destination).name
    for kind in ("tmp", "old"):
        remove_stale(pathlib.Path(destination).parent, f".{name}.{kind}-")


@contextlib.contextmanager
def atomic_directory(destination, *, overwrite=True):
    """Yield a fresh temporary directory beside `destination`, holding the
    output marker; on success it replaces `destination` (the old one, if any,
    is removed only after the new one is complete). An existing
    `destination` is replaced only with `overwrite` and only when it is empty
    or marked as the project's own (`ForeignDirectoryError` otherwise, checked
    before anything is written). On error the temporary directory is
    deleted; after a kill, the next `atomic_directory` for the same
    destination deletes it."""
    destination = pathlib.Path(destination)
    destination.parent.mkdir(parents=True, exist_ok=True)
    if destination.exists() and not destination.is_dir():
        raise NotADirectoryError(
            f"{destination} is a file; give a directory path (new, or one to replace)."
        )
    if destination.exists() and not overwrite and any(destination.iterdir()):
        raise FileExistsError(
            f"{destination} already exists; remove it or pass overwrite=True / --force."
        )
    check_replaceable(destination)
    _clean_beside(destination)
    tmp = pathlib.Path(
        tempfile.mkdtemp(prefix=temporary_prefix(destination), dir=destination.parent)
    )
    try:
        write_marker(tmp)
        yield tmp
        # Checked again: the destination may have been filled meanwhile.
        check_replaceable(destination)
        if destination.exists():
            old = pathlib.Path(
                tempfile.mkdtemp(
                    prefix=temporary_prefix(destination, "old"), dir=destination.parent
                )
            )
            os.replace(destination, old / "replaced")
            os.replace(tmp, destination)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, destination)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


@contextlib.contextmanager
def atomic_file(destination, mode="wb"):
    """Yield a file object writing to a temporary file renamed onto
    `destination` when the block succeeds (fsynced first)."""
    destination = pathlib.Path(destination)
    destination.parent.mkdir(parents=True, exist_ok=True)
    remove_stale(destination.parent, f".{destination.name}.tmp-")
    fd, tmp = tempfile.mkstemp(prefix=temporary_prefix(destination), dir=destination.parent)
    try:
        with os.fdopen(fd, mode) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, destination)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
