"""Step costs measured per batch size (``data/batch_step_costs.json``), and the best K at each from tune's model.

Each entry is one path (method, drafter, target shape, GPU, vLLM release): per batch size, the target's decode
step alone and the speculative engine's step at each measured K. At one batch size tune's model fits
``step(K) = fixed + K * per_token`` through that batch size's K (``fit_step_costs``), so ``c`` and ``o`` are the
batch size's own, and ``recommend`` picks the K for an acceptance. A batch size measured at a single K gives no
line and is left out: the host-bound draft step is not linear enough in K to borrow another size's slope.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Sequence

from pydantic import BaseModel, ConfigDict, Field

from specdraft.errors import UserError
from specdraft.speed._calibration import StepCostFit, fit_step_costs
from specdraft.speed._named_tables import named_entry, read_named_entries
from specdraft.speed._speedup_model import recommend


class BatchLevel(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    batch_size: int = Field(ge=1)
    target_step_ms: float = Field(gt=0)
    step_ms: dict[int, float]
    """Speculative engine step (all sequences of the batch) at each measured K."""


class BatchStepCosts(BaseModel):
    """One measured path's step costs per batch size."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    method: str
    vllm: str
    gpu: str
    target: str
    target_shape: dict[str, int]
    """The target config's text fields the rows were measured with (a launch's target must have the same)."""
    drafter: str
    cudagraph_mode: list[str]
    model_runner: list[str] = ["v1"]
    """The runners the engines ran on (``v1``, ``v2``): a one-K engine keeps FULL CUDA graphs on both."""
    source: str
    levels: tuple[BatchLevel, ...]

    def fit(self, level: BatchLevel) -> StepCostFit | None:
        """tune's step line at one batch size; None where fewer than two K were measured there, or where longer
        drafts ran faster per step (noise, not a cost)."""
        points = list(level.step_ms.items())
        if len(points) < 2:
            return None
        try:
            return fit_step_costs(points, level.target_step_ms)
        except UserError:
            return None

    def describe(self) -> str:
        return (f"{self.name}: {self.method} ({self.drafter}) beside a {self.target} target on an {self.gpu}, "
                f"vLLM {self.vllm}, from {self.source}")


class BatchKChoice(BaseModel):
    """tune's pick at one measured batch size."""

    model_config = ConfigDict(frozen=True)

    batch_size: int
    best_k: int
    """0: no K beats the target alone at this batch size."""
    cost_ratio: float
    overhead: float
    predicted: tuple[float, ...]
    """Predicted speedup for K = 1..max_k (index K - 1)."""


@lru_cache(maxsize=1)
def known_batch_step_costs() -> dict[str, BatchStepCosts]:
    """Name -> measured entry (keys starting with ``_`` document the file and are skipped)."""
    return read_named_entries("batch_step_costs.json", BatchStepCosts)


def known_batch_step_cost(name: str) -> BatchStepCosts:
    return named_entry(known_batch_step_costs(), name, "per-batch-size step costs")


def best_k_per_batch_size(costs: BatchStepCosts, per_position_acceptance: Sequence[float], *, max_k: int,
                          up_to: int | None = None) -> list[BatchKChoice]:
    """tune's best K at each batch size of ``costs`` (at most ``up_to``) measured at two or more K."""
    choices = []
    for level in costs.levels:
        fit = costs.fit(level)
        if fit is None or (up_to is not None and level.batch_size > up_to):
            continue
        rec = recommend(per_position_acceptance, fit.cost_ratio, max_k=max_k, overhead=fit.overhead)
        choices.append(BatchKChoice(batch_size=level.batch_size, best_k=rec.recommended_k, cost_ratio=fit.cost_ratio,
                                    overhead=fit.overhead, predicted=tuple(row.predicted_speedup for row in rec.table)))
    return choices
