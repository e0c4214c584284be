"""The tuner's inputs taken from bench results: acceptance, the cost ratio c and the per-step overhead o.

Three runs of the same workload (same prompts, ``--max-tokens`` and ``--concurrency``) give all three:
the speculative server (acceptance, and its tokens/s), the target served alone and the draft served
alone (their decode step times: without speculation one step emits one token per sequence, so the
time per decoded token, 1000 / decode tok/s, is the step time).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from specdraft.bench import BenchResult, LevelResult, ratio
from specdraft.errors import UserError
from specdraft.speed._cost_ratio import cost_ratio_from_step_times
from specdraft.speed._speedup_model import measured_overhead


def _level(result: BenchResult, concurrency: int | None, role: str) -> LevelResult:
    if concurrency is None:
        return min(result.levels, key=lambda lv: lv.concurrency)
    level = result.level(concurrency)
    if level is None:
        raise UserError(f"the {role} result ({result.base_url}) has no run at concurrency {concurrency} "
                        f"(it has {[lv.concurrency for lv in result.levels]})",
                        hint=f"rerun it with --concurrency {concurrency}")
    return level


def acceptance_from_result(result: BenchResult, concurrency: int | None = None) -> tuple[float, ...]:
    """Unconditional per-position acceptance measured by a run: one level's, or pooled over all levels."""
    if not result.speculative:
        raise UserError(f"the bench result for {result.base_url} has no acceptance: that server ran without "
                        "speculative decoding", hint="bench the speculative server, or give --per-position-acceptance")
    counters = result.pooled_spec_decode() if concurrency is None else _level(result, concurrency, "speculative").spec_decode
    rates = None if counters is None else counters.per_position_acceptance
    if not rates:
        raise UserError(f"the bench result for {result.base_url} saw no drafts, so there is no acceptance to tune on",
                        hint="bench a workload the drafter can draft for (more or longer prompts)")
    return rates


def step_ms(result: BenchResult, concurrency: int | None = None, role: str = "step-time") -> float:
    """Decode step time (ms) of a server without speculation: 1000 / its per-sequence decode tok/s."""
    if result.speculative:
        raise UserError(f"the {role} result ({result.base_url}) comes from a speculative server: its inter-token "
                        "time is not a model's step time", hint="bench the model served alone, without --speculative-config")
    level = _level(result, concurrency, role)
    if not level.decode_tok_s:
        raise UserError(f"the {role} result ({result.base_url}) timed no decode steps", hint="rerun with --max-tokens >= 2")
    return _step_of(result, role, ratio(1000.0, level.decode_tok_s))


def _step_of(result: BenchResult, role: str, ms: float | None) -> float:
    """A step time in ms that is a number: a decode speed of 1e-320 tok/s gives none."""
    if ms is None:
        raise UserError(f"the {role} result ({result.base_url}) has a decode speed too small to give a step time",
                        hint="rerun the bench; a saved result should hold the tok/s it measured")
    return ms


def cost_ratio_from_results(draft_only: BenchResult, target_only: BenchResult, concurrency: int | None = None) -> float:
    """c = draft step time / target step time, both measured by bench at the same concurrency."""
    return cost_ratio_from_step_times(step_ms(draft_only, concurrency, "draft-only"),
                                      step_ms(target_only, concurrency, "target-only"))


def overhead_from_results(speculative: BenchResult, draft_only: BenchResult, target_only: BenchResult,
                          concurrency: int | None = None) -> float:
    """The per-step overhead o (in target steps) implied by a speculative run at its own K.

    With o calibrated this way the model reproduces that run exactly; its predictions at other K are
    the real test of the model.
    """
    level = _level(speculative, concurrency, "speculative")
    counters = level.spec_decode
    if counters is None or counters.mean_acceptance_length is None or not level.decode_tok_s:
        raise UserError(f"the speculative result ({speculative.base_url}) has no acceptance at concurrency "
                        f"{level.concurrency}", hint="bench the speculative server with a workload it drafts for")
    return measured_overhead(
        counters.mean_acceptance_length,
        counters.num_speculative_tokens,
        _step_of(speculative, "speculative", ratio(1000.0, level.decode_tok_s)),
        step_ms(target_only, level.concurrency, "target-only"),
        step_ms(draft_only, level.concurrency, "draft-only"),
    )


def measured_speedup(speculative: BenchResult, target_only: BenchResult | None = None,
                     concurrency: int | None = None) -> tuple[int, float] | None:
    """(K the server ran, its measured decode speedup over the target alone), or None if nothing to compare with.

    The baseline is ``target_only`` when given (the run c and o were calibrated on), else the one
    ``bench --compare`` embedded in the result; it must have run the same workload at the chosen
    concurrency (default: the lowest).
    """
    level = _level(speculative, concurrency, "speculative")
    if level.spec_decode is None or not level.decode_tok_s:
        return None
    baseline = target_only or speculative.baseline
    base_level = baseline.level(level.concurrency) if baseline is not None else None
    if base_level is None or not base_level.decode_tok_s:
        return None
    speedup = ratio(level.decode_tok_s, base_level.decode_tok_s)
    return None if speedup is None else (level.spec_decode.num_speculative_tokens, speedup)


@dataclass(frozen=True)
class StepCostFit:
    """A speculative step's time as ``fixed_ms + K * per_draft_token_ms``, fitted over runs at several K.

    In target steps this is the tuner's model: ``c = per_draft_token_ms / target_step_ms`` and
    ``o = (fixed_ms - target_step_ms) / target_step_ms``. Unlike a draft-only step time, the fitted c
    holds everything that grows with K (draft steps inside the speculative loop, a longer verification).
    """

    cost_ratio: float
    overhead: float
    fixed_ms: float
    per_draft_token_ms: float
    target_step_ms: float
    points: tuple[tuple[int, float], ...]
    """(K, measured speculative step ms) the line was fitted to."""
    max_residual_ms: float


def speculative_step_ms(result: BenchResult, concurrency: int | None = None) -> tuple[int, float]:
    """(K, ms per speculative step) of a speculative run: mean acceptance length tokens per step."""
    level = _level(result, concurrency, "speculative")
    counters = level.spec_decode
    if counters is None or counters.mean_acceptance_length is None or not level.decode_tok_s:
        raise UserError(f"the result for {result.base_url} has no speculative steps to time",
                        hint="bench a speculative server (--speculative-config) with a workload it drafts for")
    step = ratio(counters.mean_acceptance_length * 1000.0, level.decode_tok_s)
    return counters.num_speculative_tokens, _step_of(result, "speculative", step)


def fit_step_costs(points: Sequence[tuple[int, float]], target_step_ms: float) -> StepCostFit:
    """Least-squares line through (K, speculative step ms); needs runs at two or more different K."""
    if len({k for k, _ in points}) < 2:
        raise UserError("fitting step costs needs speculative runs at two or more different K",
                        hint="bench the server at another num_speculative_tokens (same workload) and add that result")
    if not target_step_ms > 0:
        raise UserError(f"target step time must be > 0 ms, got {target_step_ms}")
    n = len(points)
    mean_k = sum(k for k, _ in points) / n
    mean_t = sum(t for _, t in points) / n
    slope = (sum((k - mean_k) * (t - mean_t) for k, t in points)
             / sum((k - mean_k) ** 2 for k, _ in points))
    intercept = mean_t - slope * mean_k
    if slope < 0:
        raise UserError(f"the fit gives a negative cost per draft token ({slope:.2f} ms): longer drafts ran faster "
                        f"per step, so noise dominates the runs {sorted(points)}",
                        hint="bench longer (--max-tokens, --requests) or add runs at more K")
    if not intercept > 0:
        raise UserError(f"the fit gives a step with no fixed cost ({intercept:.2f} ms at K = 0, below the target's own "
                        f"{target_step_ms:.2f} ms step): noise dominates the runs {sorted(points)}",
                        hint="bench longer (--max-tokens, --requests) on a quieter machine, or add runs at more K")
    residual = max(abs(t - (intercept + slope * k)) for k, t in points)
    return StepCostFit(
        cost_ratio=slope / target_step_ms,
        overhead=(intercept - target_step_ms) / target_step_ms,
        fixed_ms=intercept,
        per_draft_token_ms=slope,
        target_step_ms=target_step_ms,
        points=tuple(sorted(points)),
        max_residual_ms=residual,
    )
