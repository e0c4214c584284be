"""The ``num_speculative_tokens`` tuner: predicted speedup per K from measured acceptance.

Model (Leviathan et al. 2023, with vLLM's per-position counters):

- ``a_i`` is the *unconditional* acceptance at draft position i, as vLLM reports it (``_acceptance`` checks it
  and extends it past the measured positions).
- ``E(K) = 1 + a_1 + ... + a_K`` tokens come out of one speculative step (the 1 is the target's bonus token);
  ``E(K)`` is vLLM's "mean acceptance length" for a run with ``num_speculative_tokens = K``.
- One speculative step costs one target step plus K draft steps plus a fixed overhead, in units of a
  target step: ``1 + K*c + o``. ``c`` = draft step time / target step time, ``o`` = per-step overhead
  (scheduling, rejection sampling, syncs) / target step time; ``o = 0`` is the textbook model, and a
  fitted o may come out slightly negative.
- The host (CPU) can be the slower side: the drafter's K forwards are launched one after another from Python,
  and on a fast GPU launching them can take longer than running them (measured: vLLM 0.26's ``draft_model``
  path spends ~10 ms of host time per drafted token on an E2B-shaped drafter against ~3.3 ms of GPU work).
  Optional ``HostCost``: a step then lasts ``max(1 + K*c + o, h_0 + K*h)`` (``h_0`` = host time per step
  outside drafting, ``h`` = host time per drafted token, both in target steps). Without it the GPU line alone.
- Predicted speedup over no speculation: ``S(K) = E(K) / step_cost(K)``.

Positions past the last measured one are extrapolated, and every such row says so (see ``Extrapolation``).
``_batch_size_schedule`` turns the recommendation at several batch sizes into vLLM's per-batch-size ranges.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

from specdraft.errors import UserError
from specdraft.speed._acceptance import Extrapolation, ExtrapolationMethod, extend_acceptance

# Speedups this close are a tie, and a tie goes to the smaller K (same speed, less draft work).
_TIE_TOLERANCE = 1e-9
# The largest K tune tabulates. Unconditional acceptance decays geometrically, so positions this far out add
# nothing measurable, and a table of millions of rows would only make the command run for minutes.
MAX_K = 64


@dataclass(frozen=True)
class KPrediction:
    """One row of the per-K table."""

    k: int
    acceptance: float
    """Unconditional acceptance ``a_K`` of the K-th draft position."""
    expected_tokens_per_step: float
    """``E(K) = 1 + a_1 + ... + a_K``, vLLM's mean acceptance length."""
    step_cost: float
    """A speculative step in units of a target step (see ``step_cost``)."""
    predicted_speedup: float
    extrapolated: bool
    """True when ``a_K`` was not measured but extrapolated."""
    host_bound: bool = False
    """True when the host line (launching the drafter) sets the step time, not the GPU work."""


@dataclass(frozen=True)
class HostCost:
    """The host side of a speculative step, in units of a target step.

    ``per_step``: host time of one step outside drafting (scheduling, input preparation, launching the
    target, sampling, bookkeeping); ``per_draft_token``: host time to launch one draft forward. The host
    line ``per_step + K * per_draft_token`` overlaps the GPU's work, so a step takes the longer of the two.
    """

    per_step: float
    per_draft_token: float
    source: str = "given"

    def line(self, k: int) -> float:
        return self.per_step + k * self.per_draft_token

    def to_json(self) -> dict:
        return {"per_step": round(self.per_step, 6), "per_draft_token": round(self.per_draft_token, 6),
                "source": self.source}


def host_cost_from_ms(per_step_ms: float, per_draft_token_ms: float, target_step_ms: float,
                      source: str = "given") -> HostCost:
    """A host line given in milliseconds, in units of the target's step time."""
    if not target_step_ms > 0:
        raise UserError(f"target step time must be > 0 ms, got {target_step_ms}")
    for name, value in (("host time per step", per_step_ms), ("host time per drafted token", per_draft_token_ms)):
        if not value >= 0 or math.isinf(value):
            raise UserError(f"{name} must be a finite number >= 0 ms, got {value}")
    return HostCost(per_step_ms / target_step_ms, per_draft_token_ms / target_step_ms, source)


@dataclass(frozen=True)
class Recommendation:
    """What ``tune`` recommends: ``recommended_k == 0`` means "do not speculate" (nothing beats 1.0)."""

    recommended_k: int
    predicted_speedup: float
    cost_ratio: float
    overhead: float
    """Per-step overhead in units of a target step (0 = none modelled)."""
    per_position_acceptance: tuple[float, ...]
    """The measured unconditional acceptance a_1..a_m the prediction rests on."""
    extrapolation: Extrapolation
    table: tuple[KPrediction, ...]
    notes: tuple[str, ...] = field(default=())
    host: HostCost | None = None
    """The host line, when one was given (None: the GPU line alone)."""

    @property
    def speculate(self) -> bool:
        return self.recommended_k > 0

    def to_json(self) -> dict:
        return {
            "recommended_k": self.recommended_k,
            "speculate": self.speculate,
            "predicted_speedup": round(self.predicted_speedup, 4),
            "cost_ratio": self.cost_ratio,
            "overhead": self.overhead,
            "host_cost": None if self.host is None else self.host.to_json(),
            "per_position_acceptance": [round(a, 6) for a in self.per_position_acceptance],
            "extrapolation": {
                "method": self.extrapolation.method,
                "measured_positions": self.extrapolation.measured_positions,
                "alpha": None if self.extrapolation.alpha is None else round(self.extrapolation.alpha, 6),
                "explanation": self.extrapolation.explain(),
            },
            "table": [
                {
                    "k": row.k,
                    "acceptance": round(row.acceptance, 6),
                    "expected_tokens_per_step": round(row.expected_tokens_per_step, 4),
                    "step_cost": round(row.step_cost, 4),
                    "predicted_speedup": round(row.predicted_speedup, 4),
                    "extrapolated": row.extrapolated,
                    "host_bound": row.host_bound,
                }
                for row in self.table
            ],
            "notes": list(self.notes),
        }


def _gpu_line(k: int, cost_ratio: float, overhead: float) -> float:
    return 1.0 + k * cost_ratio + overhead


def step_cost(k: int, cost_ratio: float, overhead: float = 0.0, host: HostCost | None = None) -> float:
    """One speculative step in target steps: ``1 + K*c + o``, or the host line when that is longer."""
    gpu = _gpu_line(k, cost_ratio, overhead)
    return gpu if host is None else max(gpu, host.line(k))


def predict_speedup(per_position: Sequence[float], k: int, cost_ratio: float, overhead: float = 0.0,
                    host: HostCost | None = None) -> float:
    """``S(K) = (1 + a_1 + ... + a_K) / step_cost(K)`` for the first ``k`` rates; ``S(0) = 1``."""
    if k == 0:
        return 1.0
    expected = 1.0 + sum(per_position[:k])
    return expected / step_cost(k, cost_ratio, overhead, host)


def _check_costs(cost_ratio: float, overhead: float) -> None:
    if not (cost_ratio >= 0) or math.isinf(cost_ratio):
        raise UserError(f"cost ratio c = {cost_ratio} must be a finite number >= 0 (draft step / target step)")
    # A fitted o can be slightly negative (verifying K + 1 tokens cost less than the fit's intercept says);
    # a step must still cost something.
    if not (overhead > -1) or math.isinf(overhead):
        raise UserError(f"per-step overhead o = {overhead} must be a finite number > -1 (in target steps)")


def recommend(
    per_position: Sequence[float],
    cost_ratio: float,
    *,
    max_k: int = 8,
    overhead: float = 0.0,
    extrapolation: ExtrapolationMethod = "geometric",
    host: HostCost | None = None,
) -> Recommendation:
    """Recommend ``num_speculative_tokens``: the K in 1..max_k with the largest ``S(K)``, or 0 if none beats 1.0.

    ``per_position`` is vLLM's unconditional per-position acceptance, ``cost_ratio`` is c (draft step /
    target step), ``overhead`` is o (fixed per-step cost in target steps, see ``overhead_fraction``),
    ``host`` the optional host line (``HostCost``). Ties go to the smaller K (same speed, less draft work).
    """
    if not 1 <= max_k <= MAX_K:
        raise UserError(f"--max-k must be between 1 and {MAX_K}, got {max_k}")
    _check_costs(cost_ratio, overhead)
    rates, extra = extend_acceptance(per_position, max_k, extrapolation)
    measured = extra.measured_positions
    table = []
    expected = 1.0
    for k, a in enumerate(rates, start=1):
        expected += a
        cost = step_cost(k, cost_ratio, overhead, host)
        table.append(KPrediction(k, a, expected, cost, expected / cost, extrapolated=k > measured,
                                 host_bound=cost > _gpu_line(k, cost_ratio, overhead)))
    top = max(row.predicted_speedup for row in table)
    best = next(row for row in table if row.predicted_speedup >= top - _TIE_TOLERANCE)
    notes = []
    if len(table) < max_k:
        notes.append(f"--max-k {max_k} asked for, but only {len(table)} positions were measured and extrapolation is off")
    if best.extrapolated:
        notes.append(
            f"the recommended K = {best.k} lies past the measured positions: measure it "
            f"(num_speculative_tokens = {best.k}) before relying on it"
        )
    if best.predicted_speedup <= 1.0:
        return Recommendation(0, 1.0, cost_ratio, overhead, tuple(per_position), extra, tuple(table),
                              tuple(notes + ["no K beats running the target alone: do not speculate"]), host)
    return Recommendation(best.k, best.predicted_speedup, cost_ratio, overhead, tuple(per_position), extra,
                          tuple(table), tuple(notes), host)


def overhead_fraction(overhead_ms: float, target_step_ms: float) -> float:
    """A per-step overhead in milliseconds as a fraction of one target step (the unit ``recommend`` takes)."""
    if not target_step_ms > 0:
        raise UserError(f"target step time must be > 0 ms, got {target_step_ms}")
    if not overhead_ms >= 0:
        raise UserError(f"per-step overhead must be >= 0 ms, got {overhead_ms}")
    return overhead_ms / target_step_ms


def measured_overhead(
    mean_acceptance_length: float,
    num_speculative_tokens: int,
    speculative_step_per_token_ms: float,
    target_step_ms: float,
    draft_step_ms: float,
) -> float:
    """The per-step overhead (in target steps) that makes the model match one measured speculative run.

    A speculative step yields ``mean_acceptance_length`` tokens, so it lasts
    ``mean_acceptance_length * speculative_step_per_token_ms``; whatever exceeds one target step plus K
    draft steps is overhead. Clamped at 0 (a faster-than-modelled run means no measurable overhead).
    """
    step_ms = mean_acceptance_length * speculative_step_per_token_ms
    excess = step_ms - target_step_ms - num_speculative_tokens * draft_step_ms
    return max(0.0, excess / target_step_ms)
