"""A shipped table of rules keyed by vLLM release (``ReleaseTable``: the first rule whose PEP 440 range holds a
release), and the text of its JSON file in ``specdraft/planning/data/`` (package data). Each table's typed model
and loader sit with what it describes: ``knowledge.release_tables`` and ``knowledge.attention_backend_table``.
"""

from __future__ import annotations

from importlib import resources
from typing import Generic, TypeVar

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version
from pydantic import BaseModel, ConfigDict, field_validator


class ReleaseRule(BaseModel):
    """One row of a release table: the releases it holds for."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    versions: str
    """PEP 440 specifier of the releases the rule describes."""

    @field_validator("versions")
    @classmethod
    def _is_a_specifier(cls, versions: str) -> str:
        SpecifierSet(versions)
        return versions

    def holds_for(self, version: Version) -> bool:
        return version in SpecifierSet(self.versions)


Rule = TypeVar("Rule", bound=ReleaseRule)


class ReleaseTable(BaseModel, Generic[Rule]):
    model_config = ConfigDict(frozen=True, extra="ignore")

    rules: list[Rule]

    def rule_for(self, version: str | None) -> Rule | None:
        """The first rule whose range holds ``version``; None for an unknown or unlisted release."""
        try:
            parsed = Version(version or "")
        except InvalidVersion:
            return None
        return next((rule for rule in self.rules if rule.holds_for(parsed)), None)


def data_text(name: str) -> str:
    """The text of ``data/<name>``."""
    return resources.files("specdraft.planning").joinpath("data", name).read_text()
