"""Paths the user typed: ``~`` expanded, or one clear error when it cannot be."""

from __future__ import annotations

from pathlib import Path

from specdraft.errors import UserError


def expand_user(value: str | Path, *, option: str) -> Path:
    """``value`` with ``~`` / ``~user`` expanded; a user that does not exist is bad input, not a crash."""
    try:
        return Path(value).expanduser()
    except RuntimeError:  # Path.expanduser raises it for '~nobody' and for '~' without a home directory
        raise UserError(f"{option} {value}: cannot expand '~' (no such user, or no home directory)",
                        hint="give the path without '~', e.g. an absolute path") from None
