"""Candidate over baseline: the speedup at each concurrency level two bench runs share, and where speculation pays."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

from specdraft.errors import UserError

if TYPE_CHECKING:
    from specdraft.bench._results import BenchResult


@dataclass(frozen=True)
class Speedup:
    """Candidate over baseline at one concurrency level (> 1 means the candidate is faster)."""

    concurrency: int
    decode_tok_s: float | None
    """Ratio of per-sequence decode tok/s."""
    output_tok_s: float | None
    """Ratio of aggregate output tok/s; None where the baseline made no output tokens (or too few to divide by)."""
    e2e: float | None
    """Baseline mean end-to-end latency / candidate's."""

    def to_json(self) -> dict:
        return {"concurrency": self.concurrency, "decode_tok_s": round_ratio(self.decode_tok_s),
                "output_tok_s": round_ratio(self.output_tok_s), "e2e": round_ratio(self.e2e)}

    @classmethod
    def from_json(cls, data: dict) -> "Speedup":
        def read(name: str) -> float | None:
            value = data.get(name)
            if value is None or (isinstance(value, float) and math.isnan(value)):
                return None  # a bench before the null wrote NaN where a ratio had no denominator
            number = float(value)
            if not (math.isfinite(number) and number >= 0):
                raise ValueError(f"speedup {name} must be a finite number >= 0 or null, got {number}")
            return number

        return cls(int(data["concurrency"]), read("decode_tok_s"), read("output_tok_s"), read("e2e"))


@dataclass(frozen=True)
class WherePays:
    """Per concurrency level, whether the candidate (speculation) beat the baseline on one throughput figure."""

    measure: str
    """``aggregate`` (output tok/s of the whole level) or ``per_sequence`` (decode tok/s of one sequence)."""
    pays_at: tuple[int, ...]
    """Levels where the ratio is at least 1."""
    loses_at: tuple[int, ...]
    """Levels where the ratio is below 1: speculation made this figure slower."""
    ratios: tuple[tuple[int, float], ...]

    @property
    def stops_paying_at(self) -> int | None:
        """The lowest level where speculation loses, None where it pays at every measured level."""
        return self.loses_at[0] if self.loses_at else None

    @classmethod
    def of(cls, measure: str, ratios: Sequence[tuple[int, float | None]]) -> "WherePays":
        known = tuple((level, ratio) for level, ratio in sorted(ratios)
                      if ratio is not None and math.isfinite(ratio))
        return cls(measure, tuple(level for level, r in known if r >= 1.0),
                   tuple(level for level, r in known if r < 1.0), known)

    def sentence(self) -> str:
        """One line for people: where speculation pays and where it stops."""
        shown = {level: f"{ratio:.2f}x" for level, ratio in self.ratios}
        name = self.measure.replace("_", "-")
        if not self.ratios:
            return f"{name}: no level to compare"
        if not self.loses_at:
            return f"{name}: speculation pays at every measured level ({_levels(shown, self.pays_at)})"
        if not self.pays_at:
            return f"{name}: speculation loses at every measured level ({_levels(shown, self.loses_at)})"
        return (f"{name}: speculation pays at {_levels(shown, self.pays_at)} and stops paying at concurrency "
                f"{self.stops_paying_at} (loses at {_levels(shown, self.loses_at)})")

    def to_json(self) -> dict:
        return {"pays_at": list(self.pays_at), "loses_at": list(self.loses_at),
                "stops_paying_at": self.stops_paying_at}


def _levels(shown: dict[int, str], levels: Sequence[int]) -> str:
    return ", ".join(f"{level} ({shown[level]})" for level in levels)


def where_speculation_pays(speedups: Sequence["Speedup"]) -> tuple[WherePays, WherePays]:
    """Aggregate and per-sequence: at which concurrency levels the candidate beat the baseline."""
    return (WherePays.of("aggregate", [(s.concurrency, s.output_tok_s) for s in speedups]),
            WherePays.of("per_sequence", [(s.concurrency, s.decode_tok_s) for s in speedups]))


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    """``numerator / denominator``, or None where there is no such number: a missing or zero denominator, or a
    quotient past the largest float (a denominator of 1e-320 tok/s)."""
    if numerator is None or denominator is None or not denominator > 0:
        return None
    try:
        quotient = numerator / denominator
    except OverflowError:
        return None
    return quotient if math.isfinite(quotient) else None


def round_ratio(value: float | None) -> float | None:
    """A ratio to 4 significant digits: fixed decimals would turn a 0.00054x speedup into 0.0005."""
    return None if value is None else float(f"{value:.4g}")


def compare(candidate: BenchResult, baseline: BenchResult) -> list[Speedup]:
    """Speedup of ``candidate`` over ``baseline`` at every concurrency level both ran."""
    if candidate.max_tokens != baseline.max_tokens:
        raise UserError(
            f"the two runs are not the same workload: max_tokens {candidate.max_tokens} vs {baseline.max_tokens}",
            hint="rerun one of them with the same --max-tokens and prompts",
        )
    speedups = []
    for lv in candidate.levels:
        base = baseline.level(lv.concurrency)
        if base is None:
            continue
        decode = ratio(lv.decode_tok_s, base.decode_tok_s) if lv.decode_tok_s else None
        e2e = ratio(base.e2e_s.mean, lv.e2e_s.mean) if lv.e2e_s and base.e2e_s else None
        output = ratio(lv.output_tok_s, base.output_tok_s)
        speedups.append(Speedup(lv.concurrency, decode, output, e2e))
    if not speedups:
        raise UserError(
            f"the two runs share no concurrency level ({[lv.concurrency for lv in candidate.levels]} vs "
            f"{[lv.concurrency for lv in baseline.levels]})",
            hint="rerun with the same --concurrency",
        )
    return speedups


def why_no_ratio(speedups: Sequence[Speedup], baseline: BenchResult) -> list[str]:
    """The reason for each aggregate ratio that is null: the baseline made no output tokens at that level, or
    so few that the ratio is past the largest float."""
    reasons = []
    for s in (s for s in speedups if s.output_tok_s is None):
        made = baseline.level(s.concurrency).output_tok_s
        what = "no output tokens" if not made else "too few output tok/s to divide by"
        reasons.append(f"concurrency {s.concurrency}: the baseline ({baseline.base_url}) made {what}, so there is "
                       "no aggregate speedup (null)")
    return reasons
