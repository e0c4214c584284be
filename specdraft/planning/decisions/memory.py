"""Deciding the memory flags: GPU memory utilization and the context length, against the memory plan.

An unset context starts at 128K (or the models' longest, if shorter) and is lowered to the longest
that fits the profile; a given one is kept, and the memory check then reports whether it fits.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from specdraft.checkpoints import Checkpoint
from specdraft.planning.knowledge.gpu_memory import PROFILES, MemoryPlan, plan_memory
from specdraft.planning.decisions.parallelism import ParallelPlan
from specdraft.planning.request import DEFAULT_MAX_MODEL_LEN, LaunchRequest


class MemoryChoice(BaseModel):
    """``--gpu-memory-utilization`` and ``--max-model-len`` with their reasons, and the plan they give."""

    model_config = ConfigDict(frozen=True)

    utilization: float
    utilization_reason: str
    max_model_len: int
    max_model_len_reason: str
    plan: MemoryPlan
    lowered_from: int | None = None
    """The context wanted, when it did not fit and was lowered."""


def _utilization(request: LaunchRequest) -> tuple[float, str]:
    profile = PROFILES[request.profile]
    if request.gpu_memory_utilization:
        return request.gpu_memory_utilization, "given"
    return profile.gpu_memory_utilization, f"{request.profile}: {profile.utilization_reason}"


def choose_memory(request: LaunchRequest, target: Checkpoint, draft: Checkpoint | None, *, hybrid_kv_cache_manager: bool,
                  parallel: ParallelPlan, kv_cache_dtype: str) -> MemoryChoice:
    """The context length and utilization for the pair on one GPU of ``request.profile`` under ``parallel``, with a
    ``kv_cache_dtype`` KV cache."""
    utilization, utilization_reason = _utilization(request)

    def memory_at(tokens: int) -> MemoryPlan:
        return plan_memory(target, draft if draft is not None and draft.is_known else None, PROFILES[request.profile], max_model_len=tokens,
                           gpu_memory_utilization=utilization, kv_cache_dtype=kv_cache_dtype,
                           max_num_seqs=request.max_num_seqs, hybrid_kv_cache_manager=hybrid_kv_cache_manager,
                           tensor_parallel_size=parallel.tensor_parallel_size,
                           draft_tensor_parallel_size=parallel.draft_tensor_parallel_size,
                           pipeline_parallel_size=parallel.pipeline_parallel_size)

    chosen = dict(utilization=utilization, utilization_reason=utilization_reason)
    if request.max_model_len is not None:
        return MemoryChoice(**chosen, max_model_len=request.max_model_len, max_model_len_reason="given",
                            plan=memory_at(request.max_model_len))
    limits = [c.max_position_embeddings for c in (target, draft) if c is not None and c.max_position_embeddings]
    # a longer expected context than the validated one is asked for whole, so it is fitted or refused, not cut
    wanted = min([max(DEFAULT_MAX_MODEL_LEN, request.expected_context or 0), *limits])
    memory = memory_at(wanted)
    if memory.fits or memory.max_context_that_fits <= 0:
        reason = ("the validated 128K context" if wanted == DEFAULT_MAX_MODEL_LEN
                  else "the expected context (--expected-context)" if wanted == request.expected_context
                  else "the models' longest context")
        return MemoryChoice(**chosen, max_model_len=wanted, plan=memory,
                            max_model_len_reason=reason + f"; fits the {request.profile} memory plan")
    lowered = memory.max_context_that_fits
    return MemoryChoice(**chosen, max_model_len=lowered, plan=memory_at(lowered), lowered_from=wanted,
                        max_model_len_reason=f"lowered from {wanted}: the longest context that fits {request.profile}")
