"""The tuner's inputs taken from bench results: acceptance, the cost ratio c and the per-step overhead o.

Three runs of the same workload (same prompts, ``--max-tokens`` and ``--concurrency``) give all three:
the speculative server (acceptance, and its tokens/s), the target served alone and the draft served
alone (their decode step times: without speculation one step emits one token per sequence, so the
time per decoded token, 1000 / decode tok/s, is the step time).
"""

from __future__ import annotations

from specdraft.bench._cost import cost_ratio_from_step_times
from specdraft.bench._results import BenchResult, LevelResult
from specdraft.bench._tuner import measured_overhead
from specdraft.errors import UserError


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
    return 1000.0 / level.decode_tok_s


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
        1000.0 / level.decode_tok_s,
        step_ms(target_only, level.concurrency, "target-only"),
        step_ms(draft_only, level.concurrency, "draft-only"),
    )


def measured_speedup(speculative: BenchResult, target_only: BenchResult | None = None,
                     concurrency: int | None = None) -> tuple[int, float] | None:
    """(K the server ran, its measured decode speedup over the target alone), or None if nothing to compare with.

    The baseline is the one ``bench --compare`` embedded in the result, else ``target_only``; both must
    have run the same workload at the chosen concurrency (default: the lowest).
    """
    level = _level(speculative, concurrency, "speculative")
    if level.spec_decode is None or not level.decode_tok_s:
        return None
    baseline = speculative.baseline or target_only
    base_level = baseline.level(level.concurrency) if baseline is not None else None
    if base_level is None or not base_level.decode_tok_s:
        return None
    return level.spec_decode.num_speculative_tokens, level.decode_tok_s / base_level.decode_tok_s
