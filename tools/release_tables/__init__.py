"""The readers that derive specdraft's shipped per-release tables (``specdraft/planning/data/*.json``) from
published vLLM release trees (``tools.release_trees``). The runtime only loads the tables; the tests re-derive
each table with these readers, so a table that no longer matches the releases fails its test.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel


def table_rules(trees: dict[str, Path], read: Callable[[Path], BaseModel | None]) -> list[dict]:
    """A per-release table's rules for release trees given oldest first (``read``: one tree's facts):
    consecutive releases with equal facts share one."""
    groups: list[tuple[list[str], dict]] = []
    for version, tree in trees.items():
        support = read(tree)
        if support is None:
            raise SystemExit(f"{tree}: no readable vLLM source")
        facts = support.model_dump(mode="json")
        if groups and groups[-1][1] == facts:
            groups[-1][0].append(version)
        else:
            groups.append(([version], facts))
    rules = []
    for index, (read, facts) in enumerate(groups):
        if index + 1 < len(groups):
            upper = groups[index + 1][0][0]
        else:
            major, minor = read[-1].split(".")[:2]
            upper = f"{major}.{int(minor) + 1}.0"
        rules.append({"versions": f">={read[0]},<{upper}", "read": read, **facts})
    return rules
