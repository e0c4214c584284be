"""Writing files that are not ours: replaced only by rename (so readers never see a torn file), judged writable by
their mode bits, and their cached bytecode dropped after a change."""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from pathlib import Path


def is_writable(path: Path) -> bool:
    """Writable by us, judged by mode bits too: root passes ``os.access`` on read-only files."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    return bool(mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)) and os.access(path, os.W_OK)


def write_atomically(path: Path, data: bytes, *, mode: int | None = None) -> None:
    """Replace ``path`` by ``data`` via a temporary file in the same directory, fsync and rename.

    The new file keeps ``path``'s mode and owner when it exists (else ``mode``).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        before = path.stat()
    except FileNotFoundError:
        before = None
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".specdraft-tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if before is not None:
            os.chmod(temporary, stat.S_IMODE(before.st_mode))
            try:
                os.chown(temporary, before.st_uid, before.st_gid)
            except PermissionError:
                pass  # not ours to give away; the mode is what matters to readers
        elif mode is not None:
            os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    except OSError as err:
        if err.errno not in (errno.EINVAL, errno.EBADF):
            raise
    finally:
        os.close(directory)


def drop_bytecode(source: Path) -> list[Path]:
    """Delete every cached ``.pyc`` of ``source`` (all interpreters, all optimisation levels).

    A timestamp ``.pyc`` can survive an edit that keeps size and mtime second, and an
    unchecked-hash ``.pyc`` is never revalidated; without them Python recompiles on next import.
    """
    dropped = []
    for cached in (source.parent / "__pycache__").glob(f"{source.stem}.*.pyc"):
        cached.unlink(missing_ok=True)
        dropped.append(cached)
    return dropped
