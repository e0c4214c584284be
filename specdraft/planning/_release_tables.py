"""Shipped facts per vLLM release: JSON tables in ``data/`` whose ``rules`` are keyed by a PEP 440 range.

Read from the published wheels (see each table's own notes); ``_multimodal`` and ``_async_scheduling``
look their release up here.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version


@lru_cache(maxsize=None)
def load_table(name: str) -> dict | None:
    """``data/<name>`` parsed; None when it is missing or not JSON."""
    entry = resources.files("specdraft.planning").joinpath("data", name)
    try:
        return json.loads(entry.read_text())
    except (FileNotFoundError, ValueError):
        return None


def rule_for(table: dict | None, version: str | None) -> dict | None:
    """The first rule whose ``versions`` range holds ``version``; None for an unknown or unlisted release."""
    try:
        parsed = Version(version or "")
    except InvalidVersion:
        return None
    for rule in (table or {}).get("rules", []):
        try:
            if parsed in SpecifierSet(rule.get("versions", "")):
                return rule
        except InvalidSpecifier:
            continue
    return None
