"""What one speculative step of each method costs beside a target size of a family, in target steps.

Tune's model (``_speedup_model``): a step takes ``max(1 + K*c + o, h_0 + K*h)``. Which measurement stands for
which method beside which size is the family's table (``ModelFamily.costs``: ``specdraft/families/_costs.py``
says why it lives there); the measurements are the host-cost entries (``data/host_costs.json``) of the plain
engines launch plans. c and o are GPU time over the target's step on the entry's own machine; so is the host line
where that machine is the GPU planned for, else host time over the planned GPU's measured target step. Every other
method, or a method beside a size it was not measured with, is modelled from those and says "not measured".
"""

from __future__ import annotations

from functools import lru_cache

from pydantic import BaseModel, ConfigDict

from specdraft.families import DEFAULT_FAMILY, FamilyCosts, ModelFamily
from specdraft.speed._known_host_costs import KnownHostCost, known_host_costs
from specdraft.speed._speedup_model import HostCost


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


def _costs(family: ModelFamily) -> FamilyCosts:
    if family.costs is None:
        raise KeyError(f"{family.display_name} has no step costs (costs_file)")
    return family.costs


def size_name(size: str | None = None, family: ModelFamily = DEFAULT_FAMILY) -> str:
    """``size`` in words (``the 31B``); None: the family's stand-in size."""
    costs = _costs(family)
    return costs.sizes[size or costs.stand_in_size].name


def host_step_ms(profile: str, size: str | None = None, family: ModelFamily = DEFAULT_FAMILY) -> tuple[float, bool]:
    """The target step host times are converted with on ``profile``, and whether it was measured there (else the
    measured step of that size on another GPU)."""
    steps = _costs(family).sizes[size or _costs(family).stand_in_size].target_steps_ms
    if profile in steps:
        return steps[profile].ms, True
    return next(iter(steps.values())).ms, False


def _host_unit_ms(entry: KnownHostCost, profile: str, steps: dict) -> float:
    """The target step an entry's host line is counted in: the one measured beside it where it was measured on the
    GPU planned for (or where that GPU's step was not measured), else the planned GPU's (host time does not scale
    with the GPU)."""
    if profile in entry.gpu.lower() or profile not in steps:
        return entry.target_step_ms
    return steps[profile].ms


def step_from_entry(name: str, profile: str, size: str | None = None, measured: bool = True, basis: str = "",
                    family: ModelFamily = DEFAULT_FAMILY) -> StepModel:
    """The step model of host-cost entry ``name`` beside ``size`` on ``profile``."""
    costs = _costs(family)
    entry = known_host_costs()[name]
    row = costs.sizes[size or costs.stand_in_size]
    host = entry.host_cost(_host_unit_ms(entry, profile, row.target_steps_ms))
    # a '-served' entry passes through launch's plan served over HTTP at one K (host_costs.json's _about)
    served = "served over HTTP at " if name.endswith("-served") else ""
    flat = entry.gpu_draft_ms_per_token == 0 and entry.per_draft_token_ms == 0
    measured_at = "a step flat in K: one forward drafts the block" if flat else f"{served}K = {entry.measured_at_k}"
    beside = f" beside {row.name}" if row.entries.get(entry.method) == name else ""
    assumed = costs.assumed_drafters.get(name)
    basis = basis or (f"measured: host-cost entry {name}{beside} ({entry.gpu}, vLLM {entry.vllm}, {measured_at})"
                      + (f"; {assumed}" if assumed else ""))
    return StepModel(cost_ratio=entry.gpu_draft_ms_per_token / entry.target_step_ms,
                     overhead=entry.gpu_overhead_ms_per_step / entry.target_step_ms, host_per_step=host.per_step,
                     host_per_draft_token=host.per_draft_token, measured=measured, basis=basis)


def _sync_penalty(costs: FamilyCosts) -> float:
    """GPU idle a step gains without async scheduling (one drafter's profiles, sync minus async), in target steps
    of the machine they were measured on."""
    if costs.sync_penalty_entries is None:
        return 0.0
    sync, async_ = (known_host_costs()[name] for name in costs.sync_penalty_entries)
    return (sync.gpu_idle_ms_per_step - async_.gpu_idle_ms_per_step) / sync.target_step_ms


def _draftless_step(method: str, size: str, profile: str, family: ModelFamily) -> StepModel | None:
    """ngram_gpu's measured step, and ngram's and suffix's modelled from it; None where none was measured."""
    costs = _costs(family)
    ngram_size = next((key for key, r in costs.sizes.items() if r.ngram_gpu is not None), None)
    if method not in ("ngram_gpu", "ngram", "suffix") or ngram_size is None:
        return None
    ngram = costs.sizes[ngram_size].ngram_gpu
    # ngram_gpu's extra time a step, in ms, over the target's: verifying K more tokens and the proposer's kernels
    extra_ms = ngram.step_ms - ngram.target_step_ms
    own = size == ngram_size
    overhead = extra_ms / (ngram.target_step_ms if own else host_step_ms(profile, size, family)[0])
    beside = costs.sizes[ngram_size].name
    note = "" if own else f"; beside {costs.sizes[size].name}: the same {extra_ms:.1f} ms over its step"
    if method == "ngram_gpu" and own:
        return StepModel(cost_ratio=0.0, overhead=overhead, measured=True,
                         basis=f"measured: ngram_gpu's step at K = {ngram.k} on an {ngram.profile.upper()}, "
                               f"{ngram.source}")
    if method == "ngram_gpu":
        return StepModel(cost_ratio=0.0, overhead=overhead, measured=False,
                         basis=f"not measured: modelled as ngram_gpu's measured step beside {beside} on an "
                               f"{ngram.profile.upper()}" + note)
    return StepModel(cost_ratio=0.0, overhead=overhead + _sync_penalty(costs), measured=False,
                     basis="not measured: modelled as ngram_gpu's step plus the GPU idle of a step without async "
                           "scheduling (vLLM schedules ngram and suffix synchronously; draft_model profiles)" + note)


@lru_cache(maxsize=None)
def step_model(method: str, size: str | None = None, profile: str = "h100",
               family: ModelFamily = DEFAULT_FAMILY) -> StepModel:
    """The step cost of ``method`` beside a target of ``size`` (a key of the family's ``costs.sizes``; None: its
    stand-in size) on GPU ``profile``."""
    costs = _costs(family)
    size = size or costs.stand_in_size
    row = costs.sizes[size]
    if method in row.entries:
        return step_from_entry(row.entries[method], profile, size, True, family=family)
    draftless = _draftless_step(method, size, profile, family)
    if draftless is not None:
        return draftless
    if method == "dflash" and costs.block_drafter is not None and "mtp" in row.entries:
        block = costs.block_drafter
        mtp = step_from_entry(row.entries["mtp"], profile, size, False, family=family)
        return StepModel(cost_ratio=0.0, overhead=mtp.overhead + mtp.cost_ratio * block.layers / block.mtp_layers,
                         host_per_step=mtp.host_per_step, host_per_draft_token=0.0, measured=False,
                         basis=f"not measured beside {row.name}: one drafter forward proposes the whole block, "
                               f"modelled as one MTP assistant step scaled to DFlash's {block.layers} layers per "
                               "target step")
    if method == "dspark" and costs.block_drafter is not None:
        dflash = step_model("dflash", size, profile, family)
        dflash_basis = dflash.basis.replace("measured: ", "measured as ", 1) if dflash.measured else dflash.basis
        return dflash.model_copy(update={
            "measured": False,
            "basis": f"not measured: modelled as DFlash's step beside {row.name} ({dflash_basis}): "
                     + costs.block_drafter.dspark})
    if size != costs.stand_in_size:
        # a method measured beside the stand-in size only (EAGLE-3 beside the 12B) takes its costs, as a target
        # of a shape that was not measured does
        stand_in = step_model(method, costs.stand_in_size, profile, family)
        return stand_in.model_copy(update={
            "measured": False,
            "basis": f"not measured beside {row.name}: {size_name(None, family)}'s stand in ({stand_in.basis})"})
    raise KeyError(method)
