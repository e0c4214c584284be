"""What ``specdraft tune`` is asked: one field per option, saying which measurements or given values to use."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from specdraft.speed._acceptance import ExtrapolationMethod


class TuneRequest(BaseModel):
    """Where tune's inputs come from. Acceptance: ``from_bench`` or ``per_position_acceptance``. c: at most
    one of ``cost_ratio``, ``step_times``, ``fit_steps``, ``shapes`` (else a ``host_costs`` entry). o: at most
    one of ``overhead_fraction``, ``overhead_ms``, ``measure_overhead`` (else fitted, the entry's, or 0)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # str | Path: a path kept as the user typed it (``./x`` keeps its ``./``), which the messages name
    from_bench: str | Path | None = None
    """A bench result of the speculative server: its measured acceptance."""
    per_position_acceptance: tuple[float, ...] | None = None
    """vLLM's unconditional acceptance per draft position."""
    cost_ratio: float | None = None
    step_times: tuple[str | Path, str | Path] | None = None
    """Bench results of the draft and of the target, each served alone (same workload)."""
    fit_steps: tuple[str | Path, ...] | None = None
    """Bench results of speculative runs at two or more K: c and o fitted to their step times."""
    shapes: tuple[str, str] | None = None
    """(target, draft) checkpoints: c estimated from bytes read per token."""
    target_dtype: str = "auto"
    draft_dtype: str = "auto"
    context: int = Field(default=2048, ge=1)
    """With ``shapes``: the context length whose KV cache each token reads."""
    overhead_fraction: float | None = None
    overhead_ms: float | None = None
    measure_overhead: bool = False
    host_ms: tuple[float, ...] | None = None
    """(per step, per drafted token) host time in ms."""
    host_costs: str | None = None
    """A ``known_host_costs()`` entry: the host line, and c and o where nothing else gives them."""
    batch_costs: str | None = None
    """A ``known_batch_step_costs()`` entry: c and o fitted at one batch size (``concurrency``, else the smallest),
    and with ``schedule`` the best K at each of its batch sizes."""
    target_step_ms: float | None = None
    target_bench: str | Path | None = None
    """A bench result of the target served alone: its step time."""
    concurrency: int | None = Field(default=None, ge=1)
    """Use the bench results at this level (default: acceptance pooled, step times at the lowest level)."""
    max_k: int = Field(default=8, ge=1)
    extrapolation: ExtrapolationMethod = "geometric"
    schedule: bool = False
    """Also work out vLLM's ``num_speculative_tokens_per_batch_size`` from every measured level."""
