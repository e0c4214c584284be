"""What one speculative step of each method costs, and how much of a draft each method gets accepted: the two
inputs ``--method auto`` ranks methods by (``_method_ranking``).

Costs are in target steps, tune's model (``specdraft.bench``): a step takes ``max(1 + K*c + o, h_0 + K*h)``.
Measured on an H100 beside a 31B-shaped target, vLLM 0.26.0 (docs/gpu/README.md sections 5.2 and 5.3):
``draft_model`` and ``mtp`` from the profiled host-cost entries (``bench/data/host_costs.json``), ``ngram_gpu``
from its measured step time. The other methods are modelled from those and say "not measured".

Acceptance defaults are conditional per-position rates ``alpha`` (unconditional ``a_i = alpha**i``), each with
its source; a ``bench`` result of the user's own server replaces them.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from specdraft.bench import HostCost

# specdraft.bench is imported where it is used: importing it loads the bench client (httpx, rich), which a plan
# that ranks nothing must not pay for (launch --dry-run's 2 s budget).

TARGET_STEP_MS = 24.72
"""The 31B-shaped target's decode step on the H100 the costs were measured on (docs/gpu/README.md 5.3)."""
_NGRAM_GPU_STEP_MS = 28.3
"""ngram_gpu's measured step at K = 3 (docs/gpu/README.md 5.2, first lease) ..."""
_NGRAM_GPU_LEASE_TARGET_MS = 1000 / 41.47
"""... over that lease's target step (41.47 tok/s alone, data/async_scheduling.json's measurement)."""
_DRAFT_MODEL_ENTRY, _MTP_ENTRY = "vllm0.26-draft_model-e2b-async", "vllm0.26-mtp-31b-assistant"
_SYNC_ENTRY = "vllm0.26-draft_model-e2b-sync"
THINKING_FACTOR = 0.85
"""Users report that thinking lowers the MTP assistant's acceptance; the size of the drop is not measured: alpha
is assumed 15% lower, for every method."""
_JARVISLABS = "https://jarvislabs.ai/blog/gemma-4-mtp-vs-dflash-benchmark (H100, SPEED-Bench, temperature 0)"
_EAGLE3_CARD = ("RedHat's acceptance lengths for RedHatAI/gemma-4-31B-it-speculator.eagle3, quoted on "
                "https://huggingface.co/AEON-7/gemma-4-31B-it-speculator.eagle3-NVFP4")
_DFLASH_LAYERS, _MTP_LAYERS = 5, 4
"""z-lab/gemma-4-31B-it-DFlash has 5 decoder layers 5376 wide (its GGUF card,
https://huggingface.co/Lucebox/gemma-4-31B-it-DFlash-GGUF); the 31B's MTP assistant has 4."""


class StepModel(BaseModel):
    """One method's step cost in target steps, and where it comes from."""

    model_config = ConfigDict(frozen=True)

    cost_ratio: float
    """c: drafter GPU time per drafted token."""
    overhead: float
    """o: per-step GPU time beyond the target's step and the drafting."""
    host_per_step: float | None = None
    host_per_draft_token: float | None = None
    measured: bool
    basis: str

    @property
    def host(self) -> HostCost | None:
        from specdraft.bench import HostCost

        if self.host_per_step is None:
            return None
        return HostCost(self.host_per_step, self.host_per_draft_token or 0.0, self.basis)


def _from_entry(name: str, measured: bool, basis: str = "") -> StepModel:
    from specdraft.bench import known_host_costs

    entry = known_host_costs()[name]
    host = entry.host_cost(TARGET_STEP_MS)
    return StepModel(cost_ratio=entry.gpu_draft_ms_per_token / TARGET_STEP_MS,
                     overhead=entry.gpu_overhead_ms_per_step / TARGET_STEP_MS, host_per_step=host.per_step,
                     host_per_draft_token=host.per_draft_token, measured=measured,
                     basis=basis or f"measured: host-cost entry {name} ({entry.gpu}, vLLM {entry.vllm})")


def _sync_penalty() -> float:
    """GPU idle a step gains without async scheduling (the draft_model profiles, sync minus async)."""
    from specdraft.bench import known_host_costs

    costs = known_host_costs()
    return (costs[_SYNC_ENTRY].gpu_idle_ms_per_step - costs[_DRAFT_MODEL_ENTRY].gpu_idle_ms_per_step) / TARGET_STEP_MS


@lru_cache(maxsize=None)
def step_model(method: str) -> StepModel:
    """The step cost of ``method`` beside a 31B-shaped target on an H100."""
    ngram_gpu_overhead = _NGRAM_GPU_STEP_MS / _NGRAM_GPU_LEASE_TARGET_MS - 1
    if method == "draft_model":
        return _from_entry(_DRAFT_MODEL_ENTRY, True)
    if method == "mtp":
        return _from_entry(_MTP_ENTRY, True)
    if method == "ngram_gpu":
        return StepModel(cost_ratio=0.0, overhead=ngram_gpu_overhead, measured=True,
                         basis="measured: ngram_gpu's step at K = 3 on an H100, vLLM 0.26.0 (docs/gpu/README.md 5.2)")
    if method in ("ngram", "suffix"):
        return StepModel(cost_ratio=0.0, overhead=ngram_gpu_overhead + _sync_penalty(), measured=False,
                         basis="not measured: modelled as ngram_gpu's step plus the GPU idle of a step without async "
                               "scheduling (vLLM schedules ngram and suffix synchronously; draft_model profiles)")
    if method == "eagle3":
        return _from_entry(_MTP_ENTRY, False, "not measured: modelled as the MTP assistant's measured step (both "
                                              "are small heads on the target's hidden states, run by vLLM's EAGLE "
                                              "proposer)")
    if method == "dflash":
        mtp = _from_entry(_MTP_ENTRY, False)
        return StepModel(cost_ratio=0.0, overhead=mtp.overhead + mtp.cost_ratio * _DFLASH_LAYERS / _MTP_LAYERS,
                         host_per_step=mtp.host_per_step, host_per_draft_token=0.0, measured=False,
                         basis="not measured: one drafter forward proposes the whole block, modelled as one MTP "
                               f"assistant step scaled to DFlash's {_DFLASH_LAYERS} layers per target step")
    raise KeyError(method)


class AcceptanceDefault(BaseModel):
    model_config = ConfigDict(frozen=True)

    alpha: float
    basis: str


def _alpha_reproducing(method: str, speedup: float, k: int) -> float:
    """The geometric alpha under which ``step_model(method)`` predicts ``speedup`` at ``k`` (bisection)."""
    from specdraft.bench import predict_speedup

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
                                                    f"DFlash drafter at K = 15 ({_JARVISLABS}) under the modelled step")
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
