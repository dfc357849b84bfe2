"""Opening files that a user or an artifact provides: only regular files,
checked before they are opened, and read up to a size limit.

    with open_regular(path, what="re-export the artifact") as f: ...
    data = read_bounded(path, 16 << 20, "use the checkpoint's own config.json")

Opening a FIFO for reading blocks until a writer appears (forever, for a
FIFO planted in a model directory); /dev/zero never ends; a socket or a
directory cannot be read at all. So the type is checked with `os.stat`
before the open, and again with `os.fstat` on the descriptor after it: the
open itself uses O_NONBLOCK, which makes a FIFO swapped in between the two
open at once instead of blocking, and the second check then refuses it.

A size limit is checked against the descriptor's size and enforced on the
read (a file that grows while being read is cut at the limit and refused),
so a 100 MB "config" is refused without reading it.

Errors are `UnsafeFileError`, an `OSError` and a `ValueError` both (as
`io.UnsupportedOperation` is), so callers that turn either into a clear
message handle it; its message names the path, what was found and `what`
to do.
"""

from __future__ import annotations

import os
import stat

from zoo.utils import children

# O_NONBLOCK and O_NOFOLLOW do not exist on Windows, where FIFOs are not files.
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_BINARY = getattr(os, "O_BINARY", 0)

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISLNK, "a symbolic link"),
)


class UnsafeFileError(OSError, ValueError):
    """A file that is not a regular file, or larger than its reader allows."""


def kind(mode) -> str:
    """What an `st_mode` is, in words ("a regular file", "a FIFO (named pipe)", ...)."""
    if stat.S_ISREG(mode):
        return "a regular file"
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def _refuse_kind(path, mode, what):
    raise UnsafeFileError(
        f"{path}: {kind(mode)}, not a regular file; only regular files are read "
        f"(reading {kind(mode)} can block forever or never end). {_fix(what)}"
    )


def _fix(what):
    return f"{what[0].upper()}{what[1:]}." if what else "Replace it with the file itself."


def check_regular(path, what="", *, follow_symlinks=True) -> os.stat_result:
    """`os.stat(path)` when `path` is a regular file; `UnsafeFileError`
    naming its type otherwise (a FIFO, socket, device, directory, or with
    `follow_symlinks=False` a symbolic link). Opens nothing, so it cannot
    block. `FileNotFoundError` when there is no such file."""
    info = os.stat(path, follow_symlinks=follow_symlinks)
    if not stat.S_ISREG(info.st_mode):
        _refuse_kind(path, info.st_mode, what)
    return info


def open_regular(path, mode="rb", what="", *, follow_symlinks=True, encoding=None):
    """`path` opened for reading (`mode` "rb" or "r"), refused unless it is
    a regular file: checked before the open and again on the descriptor (a
    file swapped for a FIFO in between opens without blocking, thanks to
    O_NONBLOCK, and is then refused). With `follow_symlinks=False` a
    symbolic link is refused too (O_NOFOLLOW)."""
    if mode not in ("rb", "r"):
        raise ValueError(f"open_regular reads only; mode {mode!r}")
    check_regular(path, what, follow_symlinks=follow_symlinks)
    flags = os.O_RDONLY | _NONBLOCK | _CLOEXEC | _BINARY
    if not follow_symlinks:
        flags |= _NOFOLLOW
    # The file object owns the descriptor from the moment `os.open` returns
    # (`open`'s opener, with SIGINT/SIGTERM held until `open` is done): an
    # interrupt leaves one owner to close it, never a leaked descriptor nor a
    # second `os.close` that fails with EBADF in place of the interrupt (or
    # closes a descriptor another thread has since opened).
    try:
        handle, pending = children.held(
            open,
            path,
            mode,
            encoding=encoding if mode == "r" else None,
            opener=lambda name, _flags: os.open(name, flags),
        )
    except OSError as e:
        if not follow_symlinks and os.path.islink(path):  # swapped for a link: ELOOP
            raise UnsafeFileError(
                f"{path}: a symbolic link, not a regular file. {_fix(what)}"
            ) from None
        raise e from None
    try:
        children.redeliver(pending)  # an interrupt during the open: here, where it closes
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            _refuse_kind(path, info.st_mode, what)
        if _NONBLOCK:  # a regular file ignores it; clear it all the same
            os.set_blocking(handle.fileno(), True)
    except BaseException:
        handle.close()
        raise
    return handle


def read_bounded(path, limit, what="", *, follow_symlinks=True) -> bytes:
    """The bytes of the regular file `path`, refused (`UnsafeFileError`,
    naming its size and `limit`) when it holds more than `limit` bytes."""
    with open_regular(path, "rb", what, follow_symlinks=follow_symlinks) as f:
        size = os.fstat(f.fileno()).st_size
        if size > limit:
            _too_large(path, size, limit, what)
        data = f.read(limit + 1)  # the file may have grown since fstat
    if len(data) > limit:
        _too_large(path, len(data), limit, what)
    return data


def _too_large(path, size, limit, what):
    raise UnsafeFileError(
        f"{path}: {size:,} bytes, over the {limit:,}-byte limit for this file (no "
        f"such file of this kind is that large; refusing to read it). {_fix(what)}"
    )
