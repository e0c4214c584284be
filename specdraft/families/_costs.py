"""A family's speed tables: which measured step costs stand for each of its sizes, and its default K.

Why with the family and not in ``specdraft.speed``: the tables say which measurement applies to which of the
family's sizes and kinds, so a new family brings its own beside its module and template (one data file), and
nothing outside the family names a size or a shape. The measurements themselves (``speed/data/host_costs.json``,
``batch_step_costs.json``) stay in ``specdraft.speed``, keyed by entry name: tune reads them for any pair, and a
family's rows name them. ``specdraft.speed.step_model`` turns a row into a step cost; ``planning``'s K decision
reads ``default_k``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Mapping

from pydantic import BaseModel, ConfigDict, Field, model_validator


class Sourced(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    ms: float = Field(gt=0)
    source: str


class NgramStep(BaseModel):
    """ngram_gpu's step measured beside one size on one GPU: the draft-less methods are modelled from it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    step_ms: float = Field(gt=0)
    target_tokens_per_s: float = Field(gt=0)
    """The target alone on the same lease: its step is ``1000 / target_tokens_per_s`` ms."""
    profile: str
    k: int = Field(ge=1)
    source: str

    @property
    def target_step_ms(self) -> float:
        return 1000 / self.target_tokens_per_s


class SizeCosts(BaseModel):
    """The measurements one size of the family was planned with."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    """The size in words, as a basis quotes it (``the 31B``)."""
    shape: dict[str, int]
    """Text-config fields a target must have, all of them, to take these costs (its width and depth)."""
    target_steps_ms: dict[str, Sourced]
    """GPU profile -> the target alone's decode step there: the unit host times measured on another GPU are
    converted with."""
    entries: dict[str, str]
    """Method -> the host-cost entry (``speed/data/host_costs.json``) measured beside this size, as launch plans it."""
    ngram_gpu: NgramStep | None = None


class DefaultK(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    k: int = Field(ge=1)
    reason: str


class BlockDrafter(BaseModel):
    """How a block drafter (DFlash) is modelled where it was not measured: one MTP step scaled by layers."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    layers: int = Field(ge=1)
    mtp_layers: int = Field(ge=1)
    source: str
    dspark: str = ""
    """Why a DSpark drafter takes the DFlash drafter's step, in words (its basis quotes it)."""


DefaultKTable = dict[str, dict[str, DefaultK]]
"""Checkpoint kind of the target (``*``: any) -> GPU profile (``*``: any other) -> K."""


class FamilyCosts(BaseModel):
    """A family's step-cost rows per size and its default K per drafter, target kind and GPU profile."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    stand_in_size: str
    """The size whose costs stand in beside a target of a shape that was not measured."""
    sizes: dict[str, SizeCosts]
    assumed_drafters: dict[str, str] = {}
    """Host-cost entry -> why its drafter's shape is a guess (its basis says so)."""
    sync_penalty_entries: tuple[str, str] | None = None
    """(sync, async) host-cost entries of one drafter: the GPU idle a step gains without async scheduling."""
    block_drafter: BlockDrafter | None = None
    default_k: dict[str, DefaultKTable]
    """``draft_model``, ``assistant`` (an MTP assistant; hidden-state drafters take it) and ``draftless``."""

    @model_validator(mode="after")
    def _rows_are_consistent(self) -> "FamilyCosts":
        if self.stand_in_size not in self.sizes:
            raise ValueError(f"stand_in_size {self.stand_in_size!r} is not among sizes {sorted(self.sizes)}")
        for drafter in ("draft_model", "assistant", "draftless"):
            if "*" not in self.default_k.get(drafter, {}) or "*" not in self.default_k[drafter]["*"]:
                raise ValueError(f"default_k.{drafter} needs a '*' kind with a '*' profile")
        return self

    def size_of(self, text_config: Mapping) -> str | None:
        """The size whose ``shape`` ``text_config`` has, None for a shape that was not measured."""
        return next((key for key, size in self.sizes.items()
                     if all(text_config.get(field) == value for field, value in size.shape.items())), None)

    def default_k_for(self, drafter: str, kind: str | None, profile: str) -> DefaultK:
        """K for ``drafter`` beside a target of ``kind`` on ``profile``: the kind's row where it names the profile,
        else the ``*`` row's, else that row's ``*``."""
        table = self.default_k[drafter]
        row = table.get(kind or "*", {})
        general = table["*"]
        return row.get(profile) or general.get(profile) or general["*"]


def read_family_costs(path: Path) -> FamilyCosts:
    """The tables in ``path`` (keys starting with ``_`` document the file)."""
    document = json.loads(Path(path).read_text(encoding="utf-8"))
    return FamilyCosts.model_validate({key: value for key, value in document.items() if not key.startswith("_")})
