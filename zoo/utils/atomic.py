"""Atomic writes: build under a temporary name, then rename into place, so a
crash never leaves a half-written file or directory where a reader looks.

Temporary names carry the writer's process id (`.NAME.tmp-PID-xxxx`), so the
next write to the same place removes what a killed writer left behind
(`remove_stale`): a SIGKILL runs no cleanup code.

Every directory `atomic_directory` publishes holds `OUTPUT_MARKER`
(`.zoo-output`), written first, so manifests list it. It is how the project
knows a directory is its own: `atomic_directory(..., overwrite=True)`
replaces an existing directory only when it holds the marker or is empty,
never a directory of someone else's files, and not one of ours that holds a
file its record (manifest.json, zoo_model.json) does not list: someone put
that file there.

A command's run directory (zoo pretrain / finetune / distill / demo --out)
holds the marker too, with the command's name (`write_run_marker`): it is
ours, but a user may keep notes in it, so it is never replaced whole; the
command removes only the entries it writes (docs/outputs.md).
"""

from __future__ import annotations

import contextlib
import fnmatch
import hashlib
import json
import os
import pathlib
import re
import shutil
import tempfile

from zoo.utils import children

OUTPUT_MARKER = ".zoo-output"
MARKER_TEXT = (
    "written by bert-zoo; --force may replace this directory (and only this one)\n"
)
# The first words of a run directory's marker; the command's name follows.
RUN_MARKER_PREFIX = "written by bert-zoo: the run directory of `zoo "
# The records that list every file of a published directory (an export's
# manifest.json, a model directory's zoo_model.json), the files a record
# never lists but the project writes beside it later (a command's args.json,
# `zoo validate`'s reports), and what a model directory held before its
# record listed files.
RECORDS = ("manifest.json", "zoo_model.json")
WRITTEN_LATER = ("args.json", "validation-*.json")
_UNRECORDED_MODEL_DIR = ("model.keras", "vocab.txt")


# Asked just before anything is renamed into place; each may raise to stop
# it. The `zoo` program adds one (zoo.cli.interrupts.handled): an interrupt
# that a library swallowed on its way up still publishes nothing.
_BEFORE_PUBLISHING = []


@contextlib.contextmanager
def checked_before_publishing(check):
    """Within the block, `check()` runs before every publication (and may
    raise, which removes the temporary instead)."""
    _BEFORE_PUBLISHING.append(check)
    try:
        yield
    finally:
        _BEFORE_PUBLISHING.remove(check)


def _before_publishing():
    for check in list(_BEFORE_PUBLISHING):
        check()


class ForeignDirectoryError(FileExistsError):
    """A directory the project would replace holds files it did not write."""


def written_by_zoo(directory) -> bool:
    """Whether `directory` holds the project's output marker."""
    marker = pathlib.Path(directory) / OUTPUT_MARKER
    return marker.is_file() and not marker.is_symlink()


def output_marker(directory):
    """What `directory`'s marker says: None (no marker), {"kind": "output"}
    (a published directory) or {"kind": "run", "command": NAME} (a command's
    run directory)."""
    if not written_by_zoo(directory):
        return None
    try:
        text = (pathlib.Path(directory) / OUTPUT_MARKER).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return {"kind": "output"}
    if text.startswith(RUN_MARKER_PREFIX):
        command = text[len(RUN_MARKER_PREFIX) :].split("`", 1)[0]
        return {"kind": "run", "command": command}
    return {"kind": "output"}


def write_marker(directory):
    """Mark `directory` as the project's own output (see `written_by_zoo`)."""
    path = pathlib.Path(directory) / OUTPUT_MARKER
    if not path.is_file():
        path.write_text(MARKER_TEXT, encoding="utf-8")
    return path


def write_run_marker(directory, command, entries=()):
    """Mark `directory` as the run directory of `zoo COMMAND`, which writes
    `entries` there (and --force removes those only)."""
    path = pathlib.Path(directory) / OUTPUT_MARKER
    listed = f" ({', '.join(entries)})" if entries else ""
    text = (
        f"{RUN_MARKER_PREFIX}{command}`; --force removes only what that command writes "
        f"here{listed}, never other files\n"
    )
    if not path.is_file() or path.read_text(encoding="utf-8", errors="replace") != text:
        with atomic_file(path, "w") as f:
            f.write(text)
    return path


def _recorded(directory):
    """The relative names of the files `directory`'s record lists, or None
    when it has no record the project can read (then the marker alone says
    the directory is ours)."""
    for record in RECORDS:
        path = directory / record
        if not path.is_file():
            continue
        try:
            files = json.loads(path.read_text(encoding="utf-8")).get("files")
        except (OSError, ValueError, AttributeError):
            return None
        if isinstance(files, dict):
            return set(files) | {record}
        if record == "zoo_model.json":  # written before the record listed files
            return {record, *_UNRECORDED_MODEL_DIR}
        return None
    return None


def unrecorded_files(directory) -> list:
    """Files of a marked `directory` that the project did not write there:
    those its record does not list (besides the marker and `WRITTEN_LATER`)."""
    directory = pathlib.Path(directory)
    recorded = _recorded(directory)
    if recorded is None:
        return []
    extra = []
    for root, dirs, names in os.walk(directory):
        for name in names + [d for d in dirs if os.path.islink(os.path.join(root, d))]:
            rel = pathlib.Path(root, name).relative_to(directory).as_posix()
            if rel == OUTPUT_MARKER or rel in recorded:
                continue
            if "/" not in rel and any(fnmatch.fnmatch(rel, p) for p in WRITTEN_LATER):
                continue
            extra.append(rel)
    return sorted(extra)


def check_replaceable(destination, what="it"):
    """Raise `ForeignDirectoryError` unless `destination` is missing, empty,
    or the project's own published output with no file added to it since."""
    destination = pathlib.Path(destination)
    if not destination.exists() or (
        destination.is_dir() and not any(destination.iterdir())
    ):
        return
    marker = output_marker(destination) if destination.is_dir() else None
    if marker is None:
        raise ForeignDirectoryError(
            f"{destination} holds files bert-zoo did not write (no {OUTPUT_MARKER} marker "
            f"in it); {what} never replaces them, not even with --force. Choose another "
            "directory, or move those files away yourself."
        )
    if marker["kind"] == "run":
        raise ForeignDirectoryError(
            f"{destination} is the run directory of `zoo {marker['command']}` (its "
            f"{OUTPUT_MARKER} says so); {what} never replaces a run directory whole, not even "
            "with --force (files you keep there would go with it). Choose another directory."
        )
    extra = unrecorded_files(destination)
    if extra:
        shown = ", ".join(extra[:5]) + (
            f" and {len(extra) - 5} more" if len(extra) > 5 else ""
        )
        raise ForeignDirectoryError(
            f"{destination} was written by bert-zoo, but holds files it did not write "
            f"there ({shown}); {what} never replaces them, not even with --force. Move "
            "them out first, or choose another directory."
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


def _remove(path):
    """Remove a temporary file or directory, even when a second Ctrl-C comes
    while it goes: the first interrupt is already on its way up, and a
    temporary left behind would wait for the next write to remove it."""
    path = pathlib.Path(path)
    while True:
        try:
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            else:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
            return
        except KeyboardInterrupt:
            continue


@contextlib.contextmanager
def signals_deferred():
    """Hold SIGINT and SIGTERM until the block ends, then deliver what came
    (`zoo.utils.children.holding`): for steps that must not be cut in half.
    Only the main thread receives signals; elsewhere a no-op."""
    pending = []
    try:
        with children.holding(pending):
            yield
    finally:
        children.redeliver(pending)


# What tempfile.mkdtemp/mkstemp append to a prefix (8 random characters),
# and room for the longest process id Linux hands out (pid_max <= 2**22, 7
# digits; 10 covers any 32-bit pid).
_RANDOM_SUFFIX = 8
_PID_DIGITS = 10


def _name_max(directory) -> int:
    try:
        return os.pathconf(directory, "PC_NAME_MAX")
    except (OSError, ValueError):
        return 255  # NAME_MAX of every Linux file system we write to


def _short_name(destination, kind) -> str:
    """The name part of `destination`'s temporaries: its own name when
    `.NAME.KIND-PID-XXXXXXXX` fits the file system's name limit, else a cut
    of it (on a UTF-8 character boundary) plus a hash of the whole name, so
    every legal --out keeps legal temporaries and two long names that share
    a beginning still get different ones. Deterministic, so `remove_stale`
    finds what a killed writer of the same destination left."""
    destination = pathlib.Path(destination)
    name = destination.name
    fixed = len(f"..{kind}--".encode()) + _PID_DIGITS + _RANDOM_SUFFIX
    room = _name_max(destination.parent if destination.parent.is_dir() else ".") - fixed
    encoded = name.encode("utf-8", "surrogateescape")
    if len(encoded) <= room:
        return name
    digest = "~" + hashlib.sha256(encoded).hexdigest()[:16]
    cut = encoded[: max(room - len(digest), 0)].decode("utf-8", "ignore")
    return cut + digest


def stale_prefix(destination, kind="tmp") -> str:
    """`.NAME.KIND-`: the name prefix of every process's temporaries for
    `destination` (what `remove_stale` takes)."""
    return f".{_short_name(destination, kind)}.{kind}-"


def temporary_prefix(destination, kind="tmp") -> str:
    """`.NAME.KIND-PID-`: the name prefix of this process's temporaries
    (NAME shortened when the whole would pass the name limit)."""
    return f"{stale_prefix(destination, kind)}{os.getpid()}-"


def _clean_beside(destination):
    for kind in ("tmp", "old"):
        remove_stale(pathlib.Path(destination).parent, stale_prefix(destination, kind))


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
    made, pending = children.held(
        tempfile.mkdtemp, prefix=temporary_prefix(destination), dir=destination.parent
    )
    tmp = pathlib.Path(made)
    try:
        children.redeliver(
            pending
        )  # an interrupt while it was made: here, where it is removed
        write_marker(tmp)
        yield tmp
        # Checked again: the destination may have been filled meanwhile.
        check_replaceable(destination)
        _before_publishing()
        if destination.exists():
            # Two renames: an interrupt between them would leave no
            # destination, and the old one in a temporary that the next
            # write removes. Signals wait until the old one's temporary is
            # made, both renames are done and it is gone.
            with signals_deferred():
                old = pathlib.Path(
                    tempfile.mkdtemp(
                        prefix=temporary_prefix(destination, "old"), dir=destination.parent
                    )
                )
                os.replace(destination, old / "replaced")
                os.replace(tmp, destination)
                _remove(old)
        else:
            os.replace(tmp, destination)
    except BaseException:
        _remove(tmp)
        raise


def _open_temporary(destination, mode):
    fd, tmp = tempfile.mkstemp(prefix=temporary_prefix(destination), dir=destination.parent)
    try:
        return tmp, os.fdopen(fd, mode)
    except BaseException:  # no interrupt here (held): fdopen itself failed
        os.close(fd)
        _remove(tmp)
        raise


@contextlib.contextmanager
def atomic_file(destination, mode="wb"):
    """Yield a file object writing to a temporary file renamed onto
    `destination` when the block succeeds (fsynced first)."""
    destination = pathlib.Path(destination)
    destination.parent.mkdir(parents=True, exist_ok=True)
    remove_stale(destination.parent, stale_prefix(destination))
    (tmp, handle), pending = children.held(_open_temporary, destination, mode)
    try:
        children.redeliver(
            pending
        )  # an interrupt while it was made: here, where it is removed
        with handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        _before_publishing()
        os.replace(tmp, destination)
    except BaseException:
        _remove(tmp)
        raise
