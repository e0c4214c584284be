"""Acceptance per draft position: vLLM's measured rates checked, and extended past the measured positions.

``a_i`` is the *unconditional* acceptance at draft position i, as vLLM reports it:
``vllm:spec_decode_num_accepted_tokens_per_pos_total{position=i-1} / vllm:spec_decode_num_drafts_total``.
A token at position i is only accepted if every earlier one was, so ``a_1 >= a_2 >= ...``. Positions past the last
measured one are extrapolated, and ``Extrapolation`` says how.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, Sequence

from specdraft.errors import UserError

ExtrapolationMethod = Literal["geometric", "none"]

# Acceptance counters are integers divided by integers; allow this much float noise in monotonicity checks.
_MONOTONE_TOLERANCE = 1e-9


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
