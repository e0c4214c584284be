"""The K each batch size wants, and the figures behind it.

Measured (``read_load_test``, ``choose_level``): a ``specdraft bench`` result of the speculative server at several
``--concurrency`` levels with a ``--compare`` baseline (the same plan without speculation, ``launch --method none``,
same workload). At each level it gives the acceptance per draft position and the measured speedup at the server's
K; tune's model ``S(K) = E(K) / (1 + K*c)`` then takes the whole measured step time beyond the target's as growing
with K (``c = (E(K_s) / S_measured - 1) / K_s``), so it reproduces the measured speedup at the server's own K and
predicts the others from the acceptance. Modelled (``modelled_levels``): without a load test, the shipped step
costs per batch size (``decisions.k_costs``: a line through the K measured at each batch size, and the method's
default acceptance).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from specdraft.bench import load_result
from specdraft.errors import UserError
from specdraft.planning.decisions.k_costs import ModelledCosts
from specdraft.speed import best_k_per_batch_size, known_batch_step_cost, recommend


class MeasuredLevel(BaseModel):
    """One concurrency level of a load test."""

    model_config = ConfigDict(frozen=True)

    batch_size: int
    per_position_acceptance: tuple[float, ...]
    """vLLM's unconditional acceptance per draft position at this level (counter deltas of the level)."""
    server_k: int
    """The benched server's ``num_speculative_tokens``."""
    speedup: float
    """Per-sequence decode tok/s over the baseline's at the same concurrency."""


class LoadTest(BaseModel):
    """What a load test measured, per level (the fact the schedule is decided from)."""

    model_config = ConfigDict(frozen=True)

    source: str
    levels: tuple[MeasuredLevel, ...]


class LevelChoice(BaseModel):
    """The K for one measured batch size, and the figures behind it."""

    model_config = ConfigDict(frozen=True)

    batch_size: int
    measured_k: int | None
    """The benched server's K (None: planned from the shipped step costs, no server benched)."""
    measured_speedup: float | None
    cost_ratio: float
    """c at this batch size: the measured step time beyond the target's, per drafted token, in target steps."""
    overhead: float = 0.0
    """o at this batch size (shipped step costs: the fitted step's intercept beyond one target step)."""
    best_k: int
    """0: no K beats the target alone at this batch size."""
    predicted: tuple[float, ...]
    """Predicted speedup for K = 1, 2, ... (index K - 1)."""

    def speedup_at(self, k: int) -> float:
        return 1.0 if k == 0 else self.predicted[k - 1]



def read_load_test(path: Path, max_num_seqs: int) -> LoadTest:
    """The per-level measurements of a bench result; ``UserError`` for a result that cannot give a schedule."""
    result = load_result(path)
    again = (f"python -m specdraft bench --base-url SPEC_URL --model NAME --concurrency 1,2,4,...,{max_num_seqs} "
             f"--duration 60 --compare BASELINE_URL --out {path}  (BASELINE_URL: the same launch with --method none)")
    if not result.speculative:
        raise UserError(f"--from-bench {path} is a run without speculative decoding: it has no acceptance",
                        hint=f"bench the speculative server: {again}")
    if result.baseline is None:
        raise UserError(f"--from-bench {path} has no baseline: a K per batch size needs the speedup at each level",
                        hint=f"bench with the same plan without speculation as --compare: {again}")
    levels = [_measured_level(path, lv, result.baseline.level(lv.concurrency), again)
              for lv in result.levels if lv.concurrency <= max_num_seqs]
    if not levels:
        measured = ", ".join(str(lv.concurrency) for lv in result.levels)
        raise UserError(f"--from-bench {path} measured concurrency {measured}, none at or below --max-num-seqs "
                        f"{max_num_seqs}", hint=f"bench the batch sizes this server will run: {again}")
    return LoadTest(source=str(path), levels=tuple(levels))


def _measured_level(path: Path, level, base, again: str) -> MeasuredLevel:
    where = f"--from-bench {path} at concurrency {level.concurrency}"
    rates = level.spec_decode.per_position_acceptance if level.spec_decode is not None else None
    if not rates:
        raise UserError(f"{where} has no acceptance counters (no drafts were counted for that level)",
                        hint=f"bench again with this specdraft, which reads /metrics around every level: {again}")
    if base is None or not (level.decode_tok_s or 0) > 0 or not (base.decode_tok_s or 0) > 0:
        raise UserError(f"{where} has no decode speed for both runs, so no speedup",
                        hint=f"bench both servers at the same levels: {again}")
    speedup = level.decode_tok_s / base.decode_tok_s
    expected = 1.0 + sum(rates)
    if speedup > expected:
        raise UserError(f"{where}: the measured speedup {speedup:.2f}x exceeds the mean acceptance length "
                        f"{expected:.2f}, which no speculative step can; the two runs are not the same workload",
                        hint=f"bench both servers with the same prompts and --max-tokens: {again}")
    return MeasuredLevel(batch_size=level.concurrency, per_position_acceptance=tuple(rates),
                         server_k=level.spec_decode.num_speculative_tokens, speedup=speedup)


def choose_level(level: MeasuredLevel, max_k: int) -> LevelChoice:
    """The best K at one measured batch size by tune's model with this level's c."""
    k = level.server_k
    cost_ratio = (1.0 + sum(level.per_position_acceptance[:k])) / level.speedup - 1.0
    cost_ratio = max(cost_ratio, 0.0) / k
    rec = recommend(level.per_position_acceptance, cost_ratio, max_k=max_k)
    return LevelChoice(batch_size=level.batch_size, measured_k=k, measured_speedup=level.speedup,
                       cost_ratio=cost_ratio, best_k=rec.recommended_k,
                       predicted=tuple(row.predicted_speedup for row in rec.table))



def modelled_levels(modelled: ModelledCosts, max_k: int, max_num_seqs: int) -> list[LevelChoice]:
    """tune's best K at each batch size of the shipped step costs up to ``max_num_seqs``."""
    choices = best_k_per_batch_size(known_batch_step_cost(modelled.costs_name), modelled.acceptance, max_k=max_k,
                                    up_to=max_num_seqs)
    return [LevelChoice(batch_size=c.batch_size, measured_k=None, measured_speedup=None, cost_ratio=c.cost_ratio,
                        overhead=c.overhead, best_k=c.best_k, predicted=c.predicted) for c in choices]

