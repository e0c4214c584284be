"""vLLM's ``num_speculative_tokens_per_batch_size``: one recommended K per measured batch size, as ranges."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from specdraft.errors import UserError
from specdraft.speed._acceptance import ExtrapolationMethod
from specdraft.speed._speedup_model import recommend


@dataclass(frozen=True)
class SchedulePoint:
    """Measured inputs at one batch size (concurrency level)."""

    batch_size: int
    per_position_acceptance: tuple[float, ...]
    cost_ratio: float
    overhead: float = 0.0


def recommend_schedule(
    points: Sequence[SchedulePoint], *, max_k: int = 8, extrapolation: ExtrapolationMethod = "geometric"
) -> list[tuple[int, int, int]]:
    """vLLM's ``num_speculative_tokens_per_batch_size``: ``[(start, end, K), ...]`` with inclusive ranges.

    Each measured batch size's recommended K holds from that batch size up to the next measured one; the
    first range starts at 1 (vLLM requires it) and vLLM carries the last K past the last range. Adjacent
    ranges with the same K are merged. K = 0 in a range means no speculation at those batch sizes.
    """
    if not points:
        raise UserError("a per-batch-size schedule needs measurements at one or more batch sizes")
    ordered = sorted(points, key=lambda p: p.batch_size)
    sizes = [p.batch_size for p in ordered]
    if len(set(sizes)) != len(sizes) or sizes[0] < 1:
        raise UserError(f"batch sizes must be distinct and >= 1, got {sizes}")
    ks = [
        recommend(p.per_position_acceptance, p.cost_ratio, max_k=max_k, overhead=p.overhead,
                  extrapolation=extrapolation).recommended_k
        for p in ordered
    ]
    return schedule_ranges(list(zip(sizes, ks)))


def schedule_ranges(ks: Sequence[tuple[int, int]], last: int | None = None) -> list[tuple[int, int, int]]:
    """``[(start, end, K), ...]`` from ``(batch size, K)`` pairs in increasing batch size: each K holds from its
    batch size up to the next one, the first from 1, the last up to ``last`` (default: its own batch size);
    adjacent ranges with the same K are merged."""
    schedule: list[tuple[int, int, int]] = []
    for i, (size, k) in enumerate(ks):
        start = 1 if i == 0 else size
        end = ks[i + 1][0] - 1 if i + 1 < len(ks) else (last or size)
        if schedule and schedule[-1][2] == k:
            schedule[-1] = (schedule[-1][0], end, k)
        else:
            schedule.append((start, end, k))
    return schedule
