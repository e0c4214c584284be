"""What one speculative step of each method costs, and how much of a draft each method gets accepted: the two
inputs ``--method auto`` ranks methods by (``facts.method_ranking``).

Costs are in target steps, tune's model (``specdraft.speed``): a step takes ``max(1 + K*c + o, h_0 + K*h)``.
They come from the host-cost entries (``speed/data/host_costs.json``, vLLM 0.26.0) of the plain engines launch
plans, beside the target shape they were measured with: the 31B (H100: ``mtp``, ``ngram_gpu``'s step time; H200:
``eagle3`` at K = 3, 5, 7 and ``dflash`` at K = 1-8, docs/gpu/README.md section 9.7, and ``draft_model``
recalibrated to launch's plan served over HTTP) and the
26B-A4B (H200: ``draft_model`` and ``mtp`` recalibrated to launch's plans served over HTTP, ``eagle3`` with a
drafter of assumed shape). c and o are GPU time over the target's step on the entry's own machine; so is the host
line where that machine is the GPU planned for, else host time over the planned GPU's measured target step. Every other method, or a method beside a shape it was not measured
with (``dflash`` beside the 26B-A4B: no 26B DFlash drafter is published), is modelled from those and says "not
measured".

Acceptance defaults are conditional per-position rates ``alpha`` (unconditional ``a_i = alpha**i``), each with
its source; a ``bench`` result of the user's own server replaces them.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Literal

from pydantic import BaseModel, ConfigDict

from specdraft.speed import HostCost, KnownHostCost, known_host_costs, predict_speedup

Shape = Literal["31b", "26b"]
"""The target shapes step costs were measured beside: the 31B dense and the 26B-A4B MoE."""
SHAPE_NAMES = {"31b": "the 31B", "26b": "the 26B-A4B"}
TARGET_STEPS_MS: dict[tuple[str, Shape], tuple[float, str]] = {
    ("h100", "31b"): (24.72, "docs/gpu/README.md 5.3, k0 of raw/issue7_mtp_h100"),
    ("h200", "31b"): (17.731, "docs/gpu/README.md 9, k0r of raw/h200x4_call3"),
    ("h200", "26b"): (4.031, "docs/gpu/README.md 6, m0 of raw/issue17_h200"),
}
"""The target alone's decode step per (GPU profile, shape): the unit the host times of an entry measured on another
GPU are converted with (an entry measured on the GPU planned for keeps its own target step)."""
_NGRAM_GPU_STEP_MS = 28.3
"""ngram_gpu's measured step at K = 3 (docs/gpu/README.md 5.2, first lease) ..."""
_NGRAM_GPU_LEASE_TARGET_MS = 1000 / 41.47
"""... over that lease's target step (41.47 tok/s alone, data/async_scheduling.json's measurement)."""
_ENTRIES: dict[Shape, dict[str, str]] = {
    "31b": {"draft_model": "vllm0.26-draft_model-e2b-async-served", "mtp": "vllm0.26-mtp-31b-assistant",
            "dflash": "vllm0.26-dflash-31b-speculator-flat", "eagle3": "vllm0.26-eagle3-31b-speculator-plain"},
    "26b": {"draft_model": "vllm0.26-draft_model-e2b-async-26b-served", "mtp": "vllm0.26-mtp-26b-assistant-served",
            "eagle3": "vllm0.26-eagle3-26b-speculator"},
}
"""The measured entry of each method beside each shape: plain engines, as launch plans them. Where launch's own plan
was served over HTTP and the engine entry predicted it more than 10% off, the entry recalibrated to the served row
(``-served``) is used: tests/benchmarks/test_served_rows.py holds every served row to within 10%."""
_ASSUMED_DRAFTERS = {"vllm0.26-eagle3-26b-speculator": "the 26B's EAGLE-3 drafter in an assumed shape: its config "
                                                       "is not published"}
"""Entries measured with a drafter whose shape is a guess: their basis says so."""
_SYNC_ENTRY, _ASYNC_ENTRY = "vllm0.26-draft_model-e2b-sync", "vllm0.26-draft_model-e2b-async"
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
        if self.host_per_step is None:
            return None
        return HostCost(self.host_per_step, self.host_per_draft_token or 0.0, self.basis)


def host_step_ms(profile: str, shape: Shape) -> tuple[float, bool]:
    """The target step host times are converted with on ``profile``, and whether it was measured there (else
    the measured step of that shape on another GPU)."""
    if (profile, shape) in TARGET_STEPS_MS:
        return TARGET_STEPS_MS[profile, shape][0], True
    return next(ms for (_, s), (ms, _) in TARGET_STEPS_MS.items() if s == shape), False


def _entry(name: str) -> KnownHostCost:
    return known_host_costs()[name]


def _host_unit_ms(entry: KnownHostCost, profile: str, shape: Shape) -> float:
    """The target step an entry's host line is counted in: the one measured beside it where it was measured on the
    GPU planned for (or where that GPU's step was not measured), else the planned GPU's (host time does not scale
    with the GPU)."""
    if profile in entry.gpu.lower() or (profile, shape) not in TARGET_STEPS_MS:
        return entry.target_step_ms
    return TARGET_STEPS_MS[profile, shape][0]


def _from_entry(name: str, profile: str, shape: Shape, measured: bool, basis: str = "") -> StepModel:
    entry = _entry(name)
    host = entry.host_cost(_host_unit_ms(entry, profile, shape))
    flat = entry.gpu_draft_ms_per_token == 0 and entry.per_draft_token_ms == 0
    measured_at = "a step flat in K: one forward drafts the block" if flat else f"K = {entry.measured_at_k}"
    basis = basis or (f"measured: host-cost entry {name} ({entry.gpu}, vLLM {entry.vllm}, {measured_at})"
                      + (f"; {_ASSUMED_DRAFTERS[name]}" if name in _ASSUMED_DRAFTERS else ""))
    return StepModel(cost_ratio=entry.gpu_draft_ms_per_token / entry.target_step_ms,
                     overhead=entry.gpu_overhead_ms_per_step / entry.target_step_ms, host_per_step=host.per_step,
                     host_per_draft_token=host.per_draft_token, measured=measured, basis=basis)


def _sync_penalty() -> float:
    """GPU idle a step gains without async scheduling (the draft_model profiles, sync minus async), in target
    steps of the machine they were measured on."""
    sync, async_ = _entry(_SYNC_ENTRY), _entry(_ASYNC_ENTRY)
    return (sync.gpu_idle_ms_per_step - async_.gpu_idle_ms_per_step) / sync.target_step_ms


@lru_cache(maxsize=None)
def step_model(method: str, shape: Shape = "31b", profile: str = "h100") -> StepModel:
    """The step cost of ``method`` beside a target of ``shape`` on GPU ``profile``."""
    host_ms, _ = host_step_ms(profile, shape)
    entries = _ENTRIES[shape]
    beside = SHAPE_NAMES[shape]
    if method in entries:
        return _from_entry(entries[method], profile, shape, True)
    # ngram_gpu's extra time a step, in ms, over the target's: verifying K more tokens and the proposer's kernels
    ngram_gpu_ms = _NGRAM_GPU_STEP_MS - _NGRAM_GPU_LEASE_TARGET_MS
    if method == "ngram_gpu" and shape == "31b":
        return StepModel(cost_ratio=0.0, overhead=ngram_gpu_ms / _NGRAM_GPU_LEASE_TARGET_MS, measured=True,
                         basis="measured: ngram_gpu's step at K = 3 on an H100, vLLM 0.26.0 (docs/gpu/README.md 5.2)")
    ngram_gpu_overhead = ngram_gpu_ms / (_NGRAM_GPU_LEASE_TARGET_MS if shape == "31b" else host_ms)
    shape_note = "" if shape == "31b" else f"; beside {beside}: the same {ngram_gpu_ms:.1f} ms over its step"
    if method == "ngram_gpu":
        return StepModel(cost_ratio=0.0, overhead=ngram_gpu_overhead, measured=False,
                         basis="not measured: modelled as ngram_gpu's measured step beside the 31B on an H100"
                               + shape_note)
    if method in ("ngram", "suffix"):
        return StepModel(cost_ratio=0.0, overhead=ngram_gpu_overhead + _sync_penalty(), measured=False,
                         basis="not measured: modelled as ngram_gpu's step plus the GPU idle of a step without async "
                               "scheduling (vLLM schedules ngram and suffix synchronously; draft_model profiles)"
                               + shape_note)
    if method == "dflash":
        mtp = _from_entry(entries["mtp"], profile, shape, False)
        return StepModel(cost_ratio=0.0, overhead=mtp.overhead + mtp.cost_ratio * _DFLASH_LAYERS / _MTP_LAYERS,
                         host_per_step=mtp.host_per_step, host_per_draft_token=0.0, measured=False,
                         basis=f"not measured beside {beside}: one drafter forward proposes the whole block, modelled "
                               f"as one MTP assistant step scaled to DFlash's {_DFLASH_LAYERS} layers per target step")
    if method == "dspark":
        dflash = step_model("dflash", shape, profile)
        dflash_basis = dflash.basis.replace("measured: ", "measured as ", 1) if dflash.measured else dflash.basis
        return dflash.model_copy(update={
            "measured": False,
            "basis": f"not measured: modelled as DFlash's step beside {beside} ({dflash_basis}): the published DSpark "
                     "drafter has the DFlash drafter's backbone (5 layers as wide as the 31B, 32000-token draft "
                     "vocabulary) and drafts its block in one forward; its Markov head's sampling per drafted position "
                     "is not counted"})
    raise KeyError(method)


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
