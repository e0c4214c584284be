"""What ``launch --max-num-seqs N`` plans K per batch size from without ``--from-bench``: the step costs measured
per batch size for this method beside this target shape (``specdraft.speed``'s ``data/batch_step_costs.json``),
and the method's default acceptance (``knowledge.method_costs.acceptance_for``). Each rule that finds none says why.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from specdraft.checkpoints import Checkpoint
from specdraft.planning.knowledge.method_costs import acceptance_for
from specdraft.planning.facts.moe_layout import is_moe_target
from specdraft.speed import known_batch_step_costs

MEASURED_PROFILES = ("h100", "h200")
"""Hopper GPUs: the costs were measured on an H200; an H100 takes them (not measured there), as it takes the
H200's default K."""


class ModelledCosts(BaseModel):
    """The measured per-batch-size step costs a launch plans from, and the acceptance it assumes."""

    model_config = ConfigDict(frozen=True)

    costs_name: str
    acceptance: tuple[float, ...]
    basis: str
    """Where the costs and the acceptance come from, in words (quoted in the plan's reason)."""
    piecewise_only: bool = False
    """Measured on an engine that captured PIECEWISE CUDA graphs only (one with a K schedule): they can say
    whether a schedule pays, not which single K a FULL-graph server should run."""


def modelled_costs(method: str, target: Checkpoint | None, *, profile: str, parallel: tuple[int, int],
                   thinking: bool, positions: int) -> ModelledCosts | str:
    """The costs for this launch (``parallel``: its engine's TP and PP sizes), or why there are none (a sentence for
    the plan's reason)."""
    if profile not in MEASURED_PROFILES:
        return f"no step costs per batch size were measured on a {profile} (only on an H200)"
    if target is None or not target.is_known:
        return "the target's config is unknown, so no measured step costs per batch size match it"
    if is_moe_target(target):
        return "no step costs per batch size were measured beside a mixture-of-experts target"
    text = target.text_config
    entries = [entry for entry in known_batch_step_costs().values() if entry.method == method
               and all(text.get(field) == value for field, value in entry.target_shape.items())]
    if not entries:
        return f"no step costs per batch size were measured for {method} beside a target of this shape"
    # A plain one-K engine's costs (FULL CUDA graphs) describe the server launch plans, and a schedule once
    # discounted for what it costs on either runner; a schedule engine's (PIECEWISE on V1) only the latter.
    entry = min(entries, key=lambda entry: entry.cudagraph_mode == ["PIECEWISE"])
    acceptance, acceptance_basis = acceptance_for(method, thinking, positions)
    caveats = [] if profile in entry.gpu.lower() else [f"taken for the {profile.upper()}"]
    tp, pp = parallel
    if tp * pp > 1:
        caveats.append(f"measured on one GPU, not on an engine of {tp * pp} GPUs (TP {tp} x PP {pp})")
    tail = f" ({'; '.join(caveats)})" if caveats else ""
    return ModelledCosts(costs_name=entry.name, acceptance=acceptance, piecewise_only=entry.cudagraph_mode == ["PIECEWISE"],
                         basis=f"tune's model with the step costs measured per batch size ({entry.describe()}){tail} "
                               f"and the acceptance {acceptance_basis}")
