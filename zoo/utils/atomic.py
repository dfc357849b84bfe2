"""Atomic writes: build under a temporary name, then rename into place, so a
crash never leaves a half-written file or directory where a reader looks."""

from __future__ import annotations

import contextlib
import os
import pathlib
import shutil
import tempfile


@contextlib.contextmanager
def atomic_directory(destination, *, overwrite=True):
    """Yield a fresh temporary directory beside `destination`; on success it
    replaces `destination` (the old one, if any, is removed only after the new
    one is complete). On error the temporary directory is deleted."""
    destination = pathlib.Path(destination)
    destination.parent.mkdir(parents=True, exist_ok=True)
    if destination.exists() and not overwrite:
        raise FileExistsError(
            f"{destination} already exists; remove it or pass overwrite=True / --force."
        )
    tmp = pathlib.Path(
        tempfile.mkdtemp(prefix=f".{destination.name}.tmp-", dir=destination.parent)
    )
    try:
        yield tmp
        if destination.exists():
            old = destination.with_name(f".{destination.name}.old-{os.getpid()}")
            os.replace(destination, old)
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
    fd, tmp = tempfile.mkstemp(prefix=f".{destination.name}.tmp-", dir=destination.parent)
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
