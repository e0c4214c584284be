"""Paths the user typed: ``~`` expanded, or one clear error when it cannot be; files that are not regular refused
before they are opened."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from specdraft.errors import UserError


def expand_user(value: str | Path, *, option: str) -> Path:
    """``value`` with ``~`` / ``~user`` expanded; a user that does not exist is bad input, not a crash."""
    try:
        return Path(value).expanduser()
    except RuntimeError:  # Path.expanduser raises it for '~nobody' and for '~' without a home directory
        raise UserError(f"{option} {value}: cannot expand '~' (no such user, or no home directory)",
                        hint="give the path without '~', e.g. an absolute path") from None


def refuse_special_file(path: str | os.PathLike, *, what: str, hint: str) -> None:
    """Refuse ``path`` when it exists and is not a regular file: a FIFO waits for a writer that may never come, a
    device may never end. Raises nothing for a missing path (its reader says so in its own words)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return
    if stat.S_ISDIR(mode):
        raise UserError(f"{what} {path} is a directory, not a file", hint=hint)
    if not stat.S_ISREG(mode):
        kind = "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device"
        raise UserError(f"{what} {path} is {kind}, not a regular file; it is not read", hint=hint)
