"""The facts a plan is built from: both checkpoints, the vLLM that will serve, and a load test if given.

This is the planning step that reads files (checkpoint metadata, the vLLM install's source and
hotfix status, the ``--from-bench`` result); the decisions and checks after it are pure functions of ``LaunchFacts``.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from specdraft.planning._checkpoint import Checkpoint, inspect_checkpoint
from specdraft.planning._checks import HYBRID_FLAG, needs_hybrid_manager_disabled
from specdraft.planning._k_schedule import LoadTest, read_load_test
from specdraft.planning._moe import stores_experts_apart
from specdraft.planning._pairing_traits import hotfixes_needed, pairing_traits
from specdraft.planning._request import LaunchRequest
from specdraft.planning._speculative_choice import choose_method
from specdraft.planning._vllm_install import VllmFacts, gather_vllm_facts


class LaunchFacts(BaseModel):
    """What was asked for and what is on the machine."""

    model_config = ConfigDict(frozen=True)

    request: LaunchRequest
    target: Checkpoint
    draft: Checkpoint
    vllm: VllmFacts
    load_test: LoadTest | None = None
    """``--from-bench``: what a load test measured per concurrency level."""


def hybrid_kv_reason(target: Checkpoint, draft: Checkpoint) -> str | None:
    """Why the pair needs the hybrid KV cache manager off (None: it does not)."""
    if not draft.is_known:
        return "the draft is unknown, so KV sharing cannot be ruled out"
    return needs_hybrid_manager_disabled(target, draft)


def gather_facts(request: LaunchRequest) -> LaunchFacts:
    """Read both checkpoints, then the serving vLLM (its hotfix status only where the pairing needs a hotfix)."""
    target = inspect_checkpoint(request.target, revision=request.revision)
    draft = inspect_checkpoint(request.draft, revision=request.draft_revision)
    traits = pairing_traits(hybrid_kv_cache_manager_off=hybrid_kv_reason(target, draft) is not None
                            or HYBRID_FLAG in request.extra_args,
                            method=choose_method(request, draft)[0] or "draft_model",
                            moe_per_expert_weights=stores_experts_apart(target))
    vllm = gather_vllm_facts(request.python, request.vllm_root, want_hotfixes=bool(hotfixes_needed(traits)))
    load_test = read_load_test(request.from_bench, request.max_num_seqs) if request.from_bench else None
    return LaunchFacts(request=request, target=target, draft=draft, vllm=vllm, load_test=load_test)
