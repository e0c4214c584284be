"""Tune's inputs resolved: acceptance, c, o and the host line from a ``TuneRequest``, each with its source.

``resolve_tune_inputs(request) -> TuneInputs`` turns the measurements or given values a request names into
numbers, each with the words that say where it came from; a value that cannot be had is a ``UserError`` naming the
option to add. Each bench result file is read once per call (``BenchRuns``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Generic, TypeVar

from pydantic import BaseModel, ConfigDict

from specdraft.bench import BenchResult, load_result
from specdraft.errors import UserError
from specdraft.speed._acceptance import validate_acceptance
from specdraft.speed._batch_step_costs import known_batch_step_cost
from specdraft.speed._calibration import (
    acceptance_from_result,
    cost_ratio_from_results,
    fit_step_costs,
    measured_speedup,
    overhead_from_results,
    speculative_step_ms,
    step_ms,
)
from specdraft.speed._cost_ratio import estimate_cost_ratio, footprint_of
from specdraft.speed._known_host_costs import KnownHostCost, known_host_cost
from specdraft.speed._speedup_model import HostCost, host_cost_from_ms, overhead_fraction
from specdraft.speed._tune_request import TuneRequest

T = TypeVar("T")


class Sourced(BaseModel, Generic[T]):
    """A value and where it came from, in words."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    value: T
    source: str


class MeasuredRun(BaseModel):
    """The benched speculative server's K and its measured decode speedup over the target alone."""

    model_config = ConfigDict(frozen=True)

    k: int
    speedup: float


class TuneInputs(BaseModel):
    """The model's inputs, each with its source."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    acceptance: Sourced[tuple[float, ...]]
    cost_ratio: Sourced[float]
    overhead: Sourced[float]
    host: HostCost | None = None
    """The host line (its ``source`` says where it came from), or None for the GPU line alone."""
    measured: MeasuredRun | None = None
    """Set when the speculative run and a target-alone run of the same workload are at hand."""


@dataclass(frozen=True)
class BenchRuns:
    """The bench results a request names, each read once."""

    speculative: BenchResult | None
    draft_only: BenchResult | None
    target_only: BenchResult | None

    @classmethod
    def load(cls, request: TuneRequest) -> "BenchRuns":
        target_path = request.step_times[1] if request.step_times else request.target_bench
        return cls(
            speculative=load_result(request.from_bench) if request.from_bench is not None else None,
            draft_only=load_result(request.step_times[0]) if request.step_times else None,
            target_only=load_result(target_path) if target_path is not None else None,
        )


def resolve_tune_inputs(request: TuneRequest) -> TuneInputs:
    """Acceptance, c, o and the host line for ``request``, each with its source; ``UserError`` when one
    cannot be had (the message names the option to add)."""
    return resolve_from_runs(request, BenchRuns.load(request))


def resolve_from_runs(request: TuneRequest, runs: BenchRuns) -> TuneInputs:
    """``resolve_tune_inputs`` over bench results already read (``tune`` reads them once for its schedule too)."""
    _refuse_conflicts(request)
    acceptance = resolve_acceptance(request, runs)
    known = known_host_cost(request.host_costs) if request.host_costs else None
    cost, fitted_overhead = _cost_ratio(request, runs, known)
    overhead = fitted_overhead if fitted_overhead is not None else _overhead(request, runs, known)
    measured = None
    if runs.speculative is not None:
        found = measured_speedup(runs.speculative, runs.target_only, request.concurrency)
        measured = None if found is None else MeasuredRun(k=found[0], speedup=found[1])
    return TuneInputs(acceptance=acceptance, cost_ratio=cost, overhead=overhead,
                      host=_host(request, runs, known), measured=measured)


def _refuse_conflicts(request: TuneRequest) -> None:
    if (request.from_bench is None) == (request.per_position_acceptance is None):
        raise UserError("tune needs the acceptance from exactly one source",
                        hint="give --from-bench RESULT.json or --per-position-acceptance A1,A2,...")
    overheads = [request.overhead_fraction is not None, request.overhead_ms is not None, request.measure_overhead]
    if request.fit_steps and any(overheads):
        raise UserError("--fit-steps fits the per-step overhead itself; drop the --overhead option")
    if request.batch_costs and any(overheads):
        raise UserError("--batch-costs fits the per-step overhead at each batch size; drop the --overhead option")
    if request.overhead_fraction is not None and not (request.overhead_fraction >= 0 and
                                                      math.isfinite(request.overhead_fraction)):
        raise UserError(f"--overhead-fraction must be a finite number >= 0 (target steps per speculative step), "
                        f"got {request.overhead_fraction}", hint="e.g. --overhead-fraction 0.1, or leave it out")


def resolve_acceptance(request: TuneRequest, runs: BenchRuns) -> Sourced[tuple[float, ...]]:
    """The given rates, checked, or the speculative run's measured ones (at ``concurrency``, else pooled)."""
    if runs.speculative is None:
        return Sourced(value=validate_acceptance(request.per_position_acceptance), source="given")
    where = "pooled over all levels" if request.concurrency is None else f"at concurrency {request.concurrency}"
    return Sourced(value=acceptance_from_result(runs.speculative, request.concurrency),
                   source=f"measured by bench ({request.from_bench}, {where})")


def _cost_ratio(request: TuneRequest, runs: BenchRuns,
                known: KnownHostCost | None) -> tuple[Sourced[float], Sourced[float] | None]:
    """c with its source, and o when the way c was found also fits it."""
    if request.cost_ratio is not None:
        return Sourced(value=request.cost_ratio, source="given"), None
    if request.fit_steps:
        fit = fit_step_costs([speculative_step_ms(load_result(path), request.concurrency)
                              for path in request.fit_steps], _target_step_ms(request, runs, "--fit-steps"))
        source = (f"fitted: a speculative step takes {fit.fixed_ms:.2f} ms + K x {fit.per_draft_token_ms:.2f} ms "
                  f"over runs at K = {', '.join(str(k) for k, _ in fit.points)} (largest residual "
                  f"{fit.max_residual_ms:.2f} ms), per {fit.target_step_ms:.2f} ms target step")
        return (Sourced(value=fit.cost_ratio, source=source),
                Sourced(value=fit.overhead, source="fitted with c (the intercept beyond one target step)"))
    if request.step_times:
        draft_path, target_path = request.step_times
        return Sourced(value=cost_ratio_from_results(runs.draft_only, runs.target_only, request.concurrency),
                       source=f"measured: draft step / target step from {draft_path} and {target_path}"), None
    if request.shapes:
        return _cost_ratio_from_shapes(request), None
    if request.batch_costs:
        return _cost_ratio_from_batch_costs(request)
    if known is not None:
        target_ms = _target_step_ms(request, runs, "--host-costs")
        return Sourced(value=known.gpu_draft_ms_per_token / target_ms,
                       source=f"known: {known.gpu_draft_ms_per_token} ms of drafter GPU time per token "
                              f"({known.name}) over a {target_ms:.2f} ms target step"), None
    raise UserError("tune needs the cost ratio c of a draft step to a target step",
                    hint="add --cost-ratio C, --step-times DRAFT_ONLY.json TARGET_ONLY.json, "
                         "--shapes TARGET DRAFT, or --host-costs NAME --target-step-ms MS")


def _cost_ratio_from_batch_costs(request: TuneRequest) -> tuple[Sourced[float], Sourced[float]]:
    costs = known_batch_step_cost(request.batch_costs)
    sizes = [level.batch_size for level in costs.levels if costs.fit(level) is not None]
    size = request.concurrency or (sizes[0] if sizes else None)
    level = next((level for level in costs.levels if level.batch_size == size), None)
    fit = costs.fit(level) if level is not None else None
    if not sizes:
        raise UserError(f"--batch-costs {costs.name} measured one K per batch size: no step line to fit",
                        hint="use --host-costs or --fit-steps, or bench the server at two or more K per level")
    if fit is None:
        raise UserError(f"--batch-costs {costs.name} has no step line at batch size {size}: two or more K were "
                        f"measured at batch size {', '.join(map(str, sizes))}",
                        hint=f"pick one of them with --concurrency N (e.g. --concurrency {sizes[0]})")
    source = (f"measured per batch size ({costs.name}, batch size {size}): a speculative step takes "
              f"{fit.fixed_ms:.2f} ms + K x {fit.per_draft_token_ms:.2f} ms over K = "
              f"{', '.join(str(k) for k, _ in fit.points)}, per {fit.target_step_ms:.2f} ms target step")
    return (Sourced(value=fit.cost_ratio, source=source),
            Sourced(value=fit.overhead, source="fitted with c (the intercept beyond one target step)"))


def _cost_ratio_from_shapes(request: TuneRequest) -> Sourced[float]:
    target = footprint_of(request.shapes[0], dtype=request.target_dtype, context_tokens=request.context)
    draft = footprint_of(request.shapes[1], dtype=request.draft_dtype, context_tokens=request.context)
    return Sourced(value=estimate_cost_ratio(draft, target),
                   source=f"estimated from bytes read per token at {request.context} tokens of context: draft "
                          f"{draft.bytes_per_token / 1e9:.2f} GB ({draft.basis}) / target "
                          f"{target.bytes_per_token / 1e9:.2f} GB ({target.basis}); a lower bound: small drafts "
                          "rarely reach full memory bandwidth")


def _overhead(request: TuneRequest, runs: BenchRuns, known: KnownHostCost | None) -> Sourced[float]:
    if request.overhead_fraction is not None:
        return Sourced(value=request.overhead_fraction, source="given")
    if request.overhead_ms is not None:
        target_ms = _target_step_ms(request, runs, "--overhead-ms")
        return Sourced(value=overhead_fraction(request.overhead_ms, target_ms),
                       source=f"given: {request.overhead_ms} ms per step over a {target_ms:.2f} ms target step")
    if request.measure_overhead:
        if runs.speculative is None or runs.draft_only is None:
            raise UserError("--measure-overhead needs the speculative run and both step-time runs",
                            hint="add --from-bench SPEC.json --step-times DRAFT_ONLY.json TARGET_ONLY.json")
        return Sourced(value=overhead_from_results(runs.speculative, runs.draft_only, runs.target_only,
                                                   request.concurrency),
                       source=f"measured: the step time of {request.from_bench} beyond one target step plus "
                              f"K draft steps")
    if known is not None:
        target_ms = _target_step_ms(request, runs, "--host-costs")
        return Sourced(value=overhead_fraction(known.gpu_overhead_ms_per_step, target_ms),
                       source=f"known: {known.gpu_overhead_ms_per_step} ms per step ({known.name}) over a "
                              f"{target_ms:.2f} ms target step")
    return Sourced(value=0.0, source="none modelled")


def _host(request: TuneRequest, runs: BenchRuns, known: KnownHostCost | None) -> HostCost | None:
    if known is not None:
        return known.host_cost(_target_step_ms(request, runs, "--host-costs"))
    if request.host_ms is None:
        return None
    if len(request.host_ms) != 2:
        raise UserError(f"--host-ms takes two numbers, PER_STEP,PER_DRAFT_TOKEN (ms), got {len(request.host_ms)}",
                        hint="e.g. --host-ms 5.3,10.4")
    per_step, per_token = request.host_ms
    target_ms = _target_step_ms(request, runs, "--host-ms")
    return host_cost_from_ms(per_step, per_token, target_ms,
                             source=f"given: {per_step} ms per step + {per_token} ms per drafted "
                                    f"token over a {target_ms:.2f} ms target step")


def _target_step_ms(request: TuneRequest, runs: BenchRuns, needed_by: str) -> float:
    if request.target_step_ms is not None:
        if not (request.target_step_ms > 0 and math.isfinite(request.target_step_ms)):
            raise UserError(f"--target-step-ms must be a finite number of ms > 0, got {request.target_step_ms}",
                            hint="the target's decode step, e.g. --target-step-ms 24.7")
        return request.target_step_ms
    if runs.target_only is not None:
        return step_ms(runs.target_only, request.concurrency, "target-only")
    raise UserError(f"{needed_by} needs the target's step time to compare against",
                    hint="add --target-step-ms MS, --target-bench TARGET_ONLY.json, "
                         "or --step-times DRAFT_ONLY.json TARGET_ONLY.json")
