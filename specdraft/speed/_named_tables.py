"""The shipped tables of named measured entries (``data/*.json``): each top-level key is an entry's name, keys
starting with ``_`` document the file."""

from __future__ import annotations

import json
from importlib import resources
from typing import TypeVar

from pydantic import BaseModel

from specdraft.errors import UserError

M = TypeVar("M", bound=BaseModel)


def read_named_entries(filename: str, model: type[M]) -> dict[str, M]:
    """Name -> entry of ``specdraft/speed/data/<filename>``, each validated as ``model`` (with its ``name``)."""
    text = resources.files("specdraft.speed").joinpath(f"data/{filename}").read_text()
    return {name: model(name=name, **entry) for name, entry in json.loads(text).items() if not name.startswith("_")}


def named_entry(table: dict[str, M], name: str, what: str) -> M:
    """The entry named ``name``; ``UserError`` naming the known ones otherwise."""
    if name not in table:
        raise UserError(f"no known {what} named {name!r}", hint=f"choose one of: {', '.join(sorted(table))}")
    return table[name]
