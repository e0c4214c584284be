"""How much of a draft each method gets accepted, by default: with the step cost of each method
(``specdraft.speed.step_model``, from the target family's measured rows), the two inputs ``--method auto`` ranks
methods by (``facts.method_ranking``).

Acceptance defaults are conditional per-position rates ``alpha`` (unconditional ``a_i = alpha**i``), each with
its source; a ``bench`` result of the user's own server replaces them.
"""

from __future__ import annotations

from functools import lru_cache

from pydantic import BaseModel, ConfigDict

from specdraft.speed import predict_speedup, step_model

THINKING_FACTOR = 0.85
"""Users report that thinking lowers the MTP assistant's acceptance; the size of the drop is not measured: alpha
is assumed 15% lower, for every method."""
_JARVISLABS = "https://jarvislabs.ai/blog/gemma-4-mtp-vs-dflash-benchmark (H100, SPEED-Bench, temperature 0)"
_EAGLE3_CARD = ("RedHat's acceptance lengths for RedHatAI/gemma-4-31B-it-speculator.eagle3, quoted on "
                "https://huggingface.co/AEON-7/gemma-4-31B-it-speculator.eagle3-NVFP4")


class AcceptanceDefault(BaseModel):
    model_config = ConfigDict(frozen=True)

    alpha: float
    basis: str


def _alpha_reproducing(method: str, speedup: float, k: int) -> float:
    """The geometric alpha under which ``step_model(method)`` predicts ``speedup`` at ``k`` (bisection)."""
    model = step_model(method)
    low, high = 0.0, 0.999
    for _ in range(50):
        alpha = (low + high) / 2
        rates = [alpha ** i for i in range(1, k + 1)]
        if predict_speedup(rates, k, model.cost_ratio, model.overhead, model.host) < speedup:
            low = alpha
        else:
            high = alpha
    return round(low, 3)


def _alpha_for_length(length: float, k: int) -> float:
    """The geometric alpha whose expected tokens per step ``1 + alpha + ... + alpha**k`` is ``length``."""
    low, high = 0.0, 0.999
    for _ in range(50):
        alpha = (low + high) / 2
        low, high = (alpha, high) if 1 + sum(alpha ** i for i in range(1, k + 1)) < length else (low, alpha)
    return round(low, 3)


@lru_cache(maxsize=None)
def default_acceptance(method: str) -> AcceptanceDefault:
    """The acceptance assumed for ``method`` without thinking, when no bench result gives the user's own."""
    if method == "mtp":
        alpha = _alpha_reproducing("mtp", 3.11, 8)
        return AcceptanceDefault(alpha=alpha, basis=f"alpha {alpha}: reproduces the published 3.11x of the 31B + MTP "
                                                    f"assistant at K = 8 ({_JARVISLABS}) under the measured MTP step")
    if method == "eagle3":
        alpha = _alpha_for_length(2.83, 5)
        return AcceptanceDefault(alpha=alpha, basis=f"alpha {alpha}: a mean acceptance length of 2.83 at K = 5 on "
                                                    f"MT-bench ({_EAGLE3_CARD})")
    if method == "dflash":
        alpha = _alpha_reproducing("dflash", 3.03, 15)
        return AcceptanceDefault(alpha=alpha, basis=f"alpha {alpha}: reproduces the published 3.03x of the 31B + "
                                                    f"DFlash drafter at K = 15 ({_JARVISLABS}) under its step model")
    if method == "dspark":
        dflash = default_acceptance("dflash")
        return AcceptanceDefault(alpha=dflash.alpha, basis=f"alpha {dflash.alpha}, assumed: DFlash's default (the same "
                                                           "backbone; DSpark's Markov head is meant to raise acceptance "
                                                           "late in the block), no published vLLM figure for a Gemma 4 "
                                                           "DSpark drafter; bench your workload")
    if method == "draft_model":
        return AcceptanceDefault(alpha=0.71, basis="alpha 0.71: what the DGX Spark E2B + 31B setup's 2.0x at K = 4 "
                                                   "implies with c = 0.10 (Leviathan et al. 2023's model)")
    return AcceptanceDefault(alpha=0.30, basis="alpha 0.30, assumed: an n-gram or suffix proposer is accepted only "
                                               "where the output repeats the context (chat; no published Gemma 4 "
                                               "figure); bench your workload")


def acceptance_for(method: str, thinking: bool, positions: int) -> tuple[tuple[float, ...], str]:
    """Unconditional per-position acceptance for ``positions`` draft tokens, and its source."""
    default = default_acceptance(method)
    alpha = default.alpha * (THINKING_FACTOR if thinking else 1.0)
    basis = default.basis + (f"; thinking on: x{THINKING_FACTOR} (assumed)" if thinking else "")
    return tuple(alpha ** i for i in range(1, positions + 1)), basis
