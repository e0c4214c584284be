"""A family's served speed by context length: launch's plans served at a few prompt lengths beside each size.

Why beside the step costs and not inside them: the step costs (``_costs.py``) price one short-context step per
method and predict a speedup from acceptance; these rows are whole served plans at fixed acceptance, read as how much
of the short-context speedup is left at a longer context (``ContextReading.factor``). They cover only what was
served: a method or size without rows has no reading, and the plan then says nothing about context for it.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, model_validator


class ServedAtLengths(BaseModel):
    """One served plan's decode speed at each of the table's lengths."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    scenario: str
    """The raw row's name (``TARGET:DRAFT:KV:ALPHA:SEQS:EXTRA``, benchmarks/gpu/realstack/served_real.py)."""
    decode_tok_s: tuple[float, ...]
    method: str | None = None
    drafter: str | None = None
    """What drafted, in words (a row stands for its method, served with this drafter)."""
    k: int | None = None
    alpha: float | None = None
    kv: str | None = None


class SizeContexts(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    alone: ServedAtLengths
    """The target alone: launch's ``--method none`` plan of the same request on the same machine."""
    methods: tuple[ServedAtLengths, ...]


class ContextReading(BaseModel):
    """A method's measured speedup at an expected context, with the short-context one it is read against."""

    model_config = ConfigDict(frozen=True)

    method: str
    drafter: str
    tokens: int
    speedup: float
    """Served speedup over the target alone at ``tokens``, interpolated in log2(tokens) between measured lengths
    (held at the nearest end outside them)."""
    short_speedup: float
    """The same at the shortest measured length."""
    lengths: tuple[int, ...]
    speedups: tuple[float, ...]
    """The measured speedups, one per length."""
    k: int
    alpha: float
    beyond: bool
    """True where ``tokens`` is past the longest measured length (the longest length's speedup is used)."""

    @property
    def factor(self) -> float:
        """How much of the short-context speedup is left at ``tokens``."""
        return self.speedup / self.short_speedup

    def measured_text(self) -> str:
        lengths = ", ".join(f"{speedup:.2f}x at {length // 1024}K"
                            for length, speedup in zip(self.lengths, self.speedups))
        return f"{lengths}; served with {self.drafter}"


class FamilyContexts(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    measured: dict[str, str]
    """vLLM release, GPU, profile and the raw rows' file."""
    lengths: tuple[int, ...] = Field(min_length=2)
    sizes: dict[str, SizeContexts]

    @model_validator(mode="after")
    def _one_figure_per_length(self) -> "FamilyContexts":
        for key, size in self.sizes.items():
            for row in (size.alone, *size.methods):
                if len(row.decode_tok_s) != len(self.lengths):
                    raise ValueError(f"{key}: {row.scenario} has {len(row.decode_tok_s)} figures for "
                                     f"{len(self.lengths)} lengths")
        return self

    def reading(self, size_key: str | None, method: str, tokens: int, alpha: float = 0.85) -> ContextReading | None:
        """``method``'s served speedup beside ``size_key`` at ``tokens`` of context (None: not served there)."""
        size = self.sizes.get(size_key or "")
        row = next((r for r in size.methods if r.method == method and r.alpha == alpha), None) if size else None
        if row is None:
            return None
        speedups = tuple(round(s / a, 3) for s, a in zip(row.decode_tok_s, size.alone.decode_tok_s))
        return ContextReading(method=method, drafter=row.drafter or method, tokens=tokens,
                              speedup=round(_interpolate(self.lengths, speedups, tokens), 3), short_speedup=speedups[0],
                              lengths=self.lengths, speedups=speedups, k=row.k or 0,
                              alpha=alpha, beyond=tokens > self.lengths[-1])

    def readings(self, size_key: str | None, tokens: int, alpha: float = 0.85) -> dict[str, ContextReading]:
        """Every method served beside ``size_key`` at ``alpha``, read at ``tokens`` (empty: that size was not
        served)."""
        size = self.sizes.get(size_key or "")
        methods = sorted({row.method for row in size.methods if row.method}) if size else []
        return {method: reading for method in methods
                if (reading := self.reading(size_key, method, tokens, alpha)) is not None}


def _interpolate(lengths: tuple[int, ...], values: tuple[float, ...], tokens: int) -> float:
    if tokens <= lengths[0]:
        return values[0]
    if tokens >= lengths[-1]:
        return values[-1]
    for (low, a), (high, b) in zip(zip(lengths, values), zip(lengths[1:], values[1:])):
        if tokens <= high:
            share = (math.log2(tokens) - math.log2(low)) / (math.log2(high) - math.log2(low))
            return a + share * (b - a)
    raise AssertionError("unreachable: tokens is within the lengths")


def read_family_contexts(path: Path) -> FamilyContexts:
    return FamilyContexts.model_validate(json.loads(path.read_text()))
