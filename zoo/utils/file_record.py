"""A record of the files of a directory (name, size, sha256) and the check of
a directory against it: what an export artifact's manifest.json and a model
directory's zoo_model.json hold, so that a file changed, removed or added
after writing is found before anything is loaded.

    files = record_files(directory, skip={"manifest.json"})
    problems = file_differences(directory, files, skip={"manifest.json"})

Every file must be listed: a file the record does not list is a difference
too (otherwise removing a file's entry would let it change unchecked). A
symbolic link anywhere is a difference: a link can point outside the
directory, or at a file that changes later. So is anything else that is
not a regular file (a FIFO, a socket, a device): it is named, never opened,
since opening a FIFO for hashing blocks until a writer comes, and a device
like /dev/zero never ends (`zoo.utils.safe_files`).
"""

from __future__ import annotations

import hashlib
import os
import pathlib
import re
import stat

from zoo.utils.safe_files import kind, open_regular

_CHUNK = 1 << 20
_SHA256 = re.compile(r"[0-9a-f]{64}")


def sha256_file(path, *, follow_symlinks=True) -> str:
    """The sha256 of the regular file `path`; `UnsafeFileError` for anything
    else (checked before opening: a FIFO would block the read forever)."""
    digest = hashlib.sha256()
    with open_regular(path, "rb", follow_symlinks=follow_symlinks) as f:
        for chunk in iter(lambda: f.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def list_files(directory, skip=()):
    """`(files, refused)`: `(name, path)` of every regular file under
    `directory` whose relative POSIX name is not in `skip`, in name order,
    and `{name: what it is}` for everything else found that a record cannot
    hold: symbolic links (not followed), FIFOs, sockets, devices. Types come
    from `lstat`; nothing is opened."""
    directory = pathlib.Path(directory)
    files, refused = [], {}
    for root, dirs, names in os.walk(directory):
        for name in dirs + names:
            path = pathlib.Path(root) / name
            relative = path.relative_to(directory).as_posix()
            try:
                mode = path.lstat().st_mode
            except FileNotFoundError:  # removed while we walked: not there
                continue
            if stat.S_ISREG(mode):
                if relative not in skip:
                    files.append((relative, path))
            elif not stat.S_ISDIR(mode):
                refused[relative] = kind(mode)
    return sorted(files), dict(sorted(refused.items()))


def record_files(directory, skip=()) -> dict:
    """`{name: {"sha256", "size"}}` of every file under `directory` but `skip`."""
    files, refused = list_files(directory, skip)
    if refused:
        raise ValueError(
            f"{directory}: only regular files can be recorded; found "
            + ", ".join(f"{name} ({what})" for name, what in refused.items())
            + "."
        )
    return {
        name: {
            "sha256": sha256_file(path, follow_symlinks=False),
            "size": path.stat().st_size,
        }
        for name, path in files
    }


def entry_problem(name, entry, reserved=()):
    """Why one record entry is malformed, or None."""
    parts = name.split("/") if isinstance(name, str) else []
    if (
        not parts
        or name.startswith("/")
        or any(part in ("", ".", "..") for part in parts)
        or "\\" in name
        or name in reserved
    ):
        return (
            f"{name!r}: not a plain relative path inside the directory (an entry may not "
            f"name '..', an absolute path or {' / '.join(reserved) or 'the record itself'})"
        )
    if not isinstance(entry, dict):
        return f'{name}: entry is {entry!r:.60}, expected {{"sha256": ..., "size": ...}}'
    size, digest = entry.get("size"), entry.get("sha256")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        return f"{name}: size is {size!r:.40}, expected a byte count"
    if not isinstance(digest, str) or not _SHA256.fullmatch(digest):
        return f"{name}: sha256 is {digest!r:.80}, expected 64 lower-case hex digits"
    return None


def malformed_entries(files, reserved=()):
    """One line per malformed entry of a record's `files` (a dict)."""
    return [
        problem
        for name, entry in files.items()
        if (problem := entry_problem(name, entry, reserved))
    ]


def file_differences(directory, files, skip=(), unlisted_ok=None):
    """One line per difference between `directory` and the record `files`
    (well-formed entries, see `malformed_entries`): a listed file missing or
    of another size or sha256, a file not listed (unless `unlisted_ok(name)`),
    a symbolic link, or anything else but a regular file (a FIFO, a socket,
    a device, a directory where a file is listed): named, never opened."""
    present, refused = list_files(directory, skip)
    present = dict(present)
    problems = [
        f"{name}: {what} (only regular files are allowed)" for name, what in refused.items()
    ]
    for name, entry in files.items():
        file = present.get(name)
        if file is None:
            if name in refused:
                continue
            if (pathlib.Path(directory) / name).is_dir():
                problems.append(f"{name}: a directory (only regular files are allowed)")
            else:
                problems.append(f"{name}: missing")
            continue
        size = file.stat().st_size
        if size != entry["size"]:
            problems.append(f"{name}: size {size} bytes, recorded {entry['size']}")
            continue
        # No links: a file swapped for one since the walk is refused, not followed.
        digest = sha256_file(file, follow_symlinks=False)
        if digest != entry["sha256"]:
            problems.append(
                f"{name}: sha256 {digest[:16]}..., recorded {entry['sha256'][:16]}..."
            )
    for name in present:
        if name not in files and not (unlisted_ok and unlisted_ok(name)):
            problems.append(f"{name}: not listed")
    return problems
