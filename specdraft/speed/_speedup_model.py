"""The ``num_speculative_tokens`` tuner: predicted speedup per K from measured acceptance.

Model (Leviathan et al. 2023, with vLLM's per-position counters):

- ``a_i`` is the *unconditional* acceptance at draft position i, as vLLM reports it:
  ``vllm:spec_decode_num_accepted_tokens_per_pos_total{position=i-1} / vllm:spec_decode_num_drafts_total``.
  A token at position i is only accepted if every earlier one was, so ``a_1 >= a_2 >= ...``.
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
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal, Sequence

from specdraft.errors import UserError

ExtrapolationMethod = Literal["geometric", "none"]

# Acceptance counters are integers divided by integers; allow this much float noise in monotonicity checks.
_MONOTONE_TOLERANCE = 1e-9
# Speedups this close are a tie, and a tie goes to the smaller K (same speed, less draft work).
_TIE_TOLERANCE = 1e-9
# The largest K tune tabulates. Unconditional acceptance decays geometrically, so positions this far out add
# nothing measurable, and a table of millions of rows would only make the command run for minutes.
MAX_K = 64


@dataclass(frozen=True)
class Extrapolation:
    """How acceptance past the measured positions was obtained.

    ``method == "geometric"``: each further position is accepted with a constant conditional probability
    ``alpha``, fitted by least squares to ``ln a_i = i * ln alpha`` over the measured positions, and the
    tail is anchored at the last measured value: ``a_(m+j) = a_m * alpha**j``.
    ``method == "none"``: K stops at the last measured position.
    """

    method: ExtrapolationMethod
    measured_positions: int
    alpha: float | None
    """The fitted conditional acceptance used past the measured positions (None when not extrapolating)."""

    def explain(self) -> str:
        if self.method == "none" or self.alpha is None:
            return f"K is limited to the {self.measured_positions} measured positions (no extrapolation)."
        return (
            f"positions past {self.measured_positions} are extrapolated: each is accepted with the conditional "
            f"probability alpha = {self.alpha:.3f}, a geometric fit (ln a_i = i ln alpha, least squares) to the "
            f"{self.measured_positions} measured positions, anchored at a_{self.measured_positions}"
        )


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


def validate_acceptance(per_position: Sequence[float]) -> tuple[float, ...]:
    """Check that ``per_position`` is vLLM-style unconditional acceptance; return it as a tuple.

    Raises ``UserError`` for an empty list, a value outside [0, 1], or a rise from one position to the
    next (impossible for unconditional rates: conditional rates were probably given instead).
    """
    rates = tuple(float(a) for a in per_position)
    if not rates:
        raise UserError("per-position acceptance is empty", hint="give at least one rate, e.g. 0.8,0.6,0.45")
    for i, a in enumerate(rates, start=1):
        if not (0.0 <= a <= 1.0) or math.isnan(a):
            raise UserError(f"acceptance at position {i} is {a}, outside [0, 1]")
    for i in range(1, len(rates)):
        if rates[i] > rates[i - 1] + _MONOTONE_TOLERANCE:
            raise UserError(
                f"acceptance rises from position {i} ({rates[i - 1]}) to {i + 1} ({rates[i]}): vLLM's per-position "
                "acceptance is unconditional (accepted at position i / drafts) and cannot rise",
                hint="convert conditional rates with a_i = alpha_1 * ... * alpha_i",
            )
    return rates


def conditional_acceptance(per_position: Sequence[float]) -> list[float | None]:
    """Conditional acceptance ``alpha_i = a_i / a_(i-1)`` (``a_0 = 1``); None where ``a_(i-1) == 0``."""
    previous = 1.0
    out: list[float | None] = []
    for a in per_position:
        out.append(a / previous if previous > 0 else None)
        previous = a
    return out


def fit_geometric_alpha(per_position: Sequence[float]) -> float:
    """Least-squares fit of ``ln a_i = i * ln alpha`` (a line through the origin) over positive rates."""
    points = [(i, math.log(a)) for i, a in enumerate(per_position, start=1) if a > 0]
    if len(points) < len(per_position) or not points:
        return 0.0  # some position was never accepted: nothing past it will be either
    slope = sum(i * y for i, y in points) / sum(i * i for i, _ in points)
    return math.exp(slope)


def extend_acceptance(
    per_position: Sequence[float], max_k: int, method: ExtrapolationMethod = "geometric"
) -> tuple[list[float], Extrapolation]:
    """The unconditional acceptance for positions 1..max_k, extrapolated past the measured ones by ``method``."""
    rates = list(validate_acceptance(per_position))
    measured = len(rates)
    if max_k <= measured:
        return rates[:max_k], Extrapolation("none", measured, None)
    if method == "none":
        return rates, Extrapolation("none", measured, None)
    alpha = fit_geometric_alpha(rates)
    tail = [rates[-1] * alpha**j for j in range(1, max_k - measured + 1)]
    return rates + tail, Extrapolation("geometric", measured, alpha)


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
