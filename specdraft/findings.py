"""A finding: one check's verdict, worded for the person at the terminal.

The launch plan's checks (specdraft.planning) and the quantization checks (specdraft.quantization)
both report in this type, so text and ``--json`` output use the same words everywhere.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

Level = Literal["ok", "info", "warning", "error"]
LEVEL_ORDER: dict[str, int] = {"ok": 0, "info": 1, "warning": 2, "error": 3}


class Finding(BaseModel):
    """The result of one check. ``error`` blocks a launch; ``warning`` deserves a look."""

    model_config = ConfigDict(frozen=True)

    level: Level
    check: str
    """The check's name, stable across releases (``vocab-size``, ``hotfixes``, ``fp4-not-native``, ...)."""
    message: str
    """What was found, with the values involved."""
    hint: str | None = None
    """What to run or change next."""

    @classmethod
    def ok(cls, check: str, message: str) -> Finding:
        """A check that passed, with what it saw."""
        return cls(level="ok", check=check, message=message)


def worst_level(findings: list[Finding]) -> Level:
    return max((f.level for f in findings), key=LEVEL_ORDER.__getitem__, default="ok")
