"""Known host costs of a speculative step, per path and vLLM release (``data/host_costs.json``).

Each entry was measured with the torch profiler (see the file's ``_about``); ``tune --host-costs NAME``
turns one into a ``HostCost`` for a given target step time.
"""

from __future__ import annotations

from functools import lru_cache

from pydantic import BaseModel, ConfigDict, Field

from specdraft.speed._named_tables import named_entry, read_named_entries
from specdraft.speed._speedup_model import HostCost, host_cost_from_ms


class KnownHostCost(BaseModel):
    """One measured path: its host line (``per_step_ms``, ``per_draft_token_ms``), the GPU-side c and o of
    tune's GPU line, and where it was measured."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    method: str
    vllm: str
    async_scheduling: bool
    drafter: str
    target: str
    gpu: str
    host: str
    measured_at_k: int = Field(ge=1)
    target_step_ms: float = Field(gt=0)
    """The target alone's decode step on the same machine: the GPU-side figures over it are c and o."""
    per_step_ms: float = Field(ge=0)
    """Host time of one step outside drafting."""
    per_draft_token_ms: float = Field(ge=0)
    """Host time to launch one draft forward (0 for a block drafter whose one forward drafts every K alike)."""
    gpu_draft_ms_per_token: float = Field(ge=0)
    """Drafter GPU time per drafted token: c times the target's step (0 for such a block drafter: its forward is
    in ``gpu_overhead_ms_per_step``)."""
    gpu_idle_ms_per_step: float = Field(ge=0)
    gpu_overhead_ms_per_step: float = Field(ge=0)
    """o times the target's step (see the file's ``_about``)."""
    trace: str
    """The profile it was read from, relative to the repository root."""
    source: str

    def describe(self) -> str:
        return (f"{self.name}: {self.per_step_ms} ms per step + {self.per_draft_token_ms} ms per drafted token, "
                f"measured for {self.method} on vLLM {self.vllm} (async scheduling "
                f"{'on' if self.async_scheduling else 'off'}, {self.drafter}) on {self.gpu} at K = {self.measured_at_k}")

    def host_cost(self, target_step_ms: float) -> HostCost:
        """This entry's host line in units of ``target_step_ms``."""
        return host_cost_from_ms(self.per_step_ms, self.per_draft_token_ms, target_step_ms,
                                 source=f"known: {self.describe()}")


@lru_cache(maxsize=1)
def known_host_costs() -> dict[str, KnownHostCost]:
    """Name -> measured entry (keys starting with ``_`` document the file and are skipped)."""
    return read_named_entries("host_costs.json", KnownHostCost)


def known_host_cost(name: str) -> KnownHostCost:
    """The entry named ``name``; ``UserError`` naming the known ones otherwise."""
    return named_entry(known_host_costs(), name, "host costs")


def host_cost_named(name: str, target_step_ms: float) -> HostCost:
    """The named entry as a host line in units of ``target_step_ms``."""
    return known_host_cost(name).host_cost(target_step_ms)
