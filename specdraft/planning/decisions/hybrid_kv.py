"""Whether the hybrid KV cache manager goes off (``--disable-hybrid-kv-cache-manager``), and why.

vLLM's hybrid manager gives each kind of layer its own KV cache group; a draft that shares KV across layers, or whose
sliding window differs from the target's, then has its layers in several groups. The V1 model runner's drafter
refuses that ("All drafting layers should belong to the same kv cache group": ``validate_same_kv_cache_group``,
called by ``SpecDecodeBaseProposer.initialize_attn_backend`` in every release 0.19.0-0.33.0), so on V1 the pair needs
the manager off. Model Runner V2's drafter builds attention for each KV cache group it has layers in
(``DraftModelSpeculator.set_attn`` -> ``init_attn_backend`` in ``vllm/v1/worker/gpu``, every release whose V2 runs
``draft_model``: 0.31.0-0.33.0), so there the manager stays on, and the KV-sharing hotfixes, which mend the
manager-off path only, are not needed. The decision is made here once (``Decisions.hybrid_kv_reason``, and ``hybrid_kv_kept_on`` where the manager stays
on); the flag rule renders it and the pair check (``check_kv_cache_manager``) judges the command against it.
"""

from __future__ import annotations

from specdraft.checkpoints import Checkpoint
from specdraft.planning.knowledge.speculators import speculator_of

HYBRID_FLAG = "--disable-hybrid-kv-cache-manager"
V2_TAKES_SEVERAL_GROUPS = ("Model Runner V2's drafter builds attention for each KV cache group of the draft, so the "
                           "hybrid manager stays on (read from vLLM's source; served on an H200 with vLLM 0.33.0, "
                           "unpatched, the output equal to the target alone's token for token; "
                           "VLLM_USE_V2_MODEL_RUNNER=0 gives the V1 plan)")
ONE_GROUP = "no KV sharing and equal windows: the hybrid manager can stay on"


def kv_cache_groups_apart(target: Checkpoint, draft: Checkpoint | None) -> str | None:
    """Why the hybrid manager puts this pair's drafting layers in more than one KV cache group (None: one group)."""
    # a speculator (EAGLE-3, DFlash, DSpark) keeps its own KV cache of its own layers: nothing of the target's is
    # shared, and its identical layers form one group whatever their window
    if draft is None or draft.is_assistant or speculator_of(draft) is not None:
        return None
    reasons = []
    if draft.num_kv_shared_layers:
        reasons.append(f"the draft shares KV across {draft.num_kv_shared_layers} layers")
    if draft.sliding_window and target.sliding_window and draft.sliding_window != target.sliding_window:
        reasons.append(f"sliding windows differ (target {target.sliding_window}, draft {draft.sliding_window})")
    return " and ".join(reasons) or None


def needs_hybrid_manager_disabled(target: Checkpoint, draft: Checkpoint | None, runner: str | None = None) -> str | None:
    """Why this pair needs ``--disable-hybrid-kv-cache-manager`` on ``runner`` (``v1``, ``v2``, or None: not known,
    taken as V1); None: it does not."""
    return None if runner == "v2" else kv_cache_groups_apart(target, draft)


def hybrid_kv_kept_on(target: Checkpoint, draft: Checkpoint | None) -> str:
    """Why the hybrid KV cache manager may stay on for this pair, where ``hybrid_kv_reason`` does not turn it off."""
    if draft is not None and not draft.is_known:
        return f"the draft is unknown, so KV sharing cannot be ruled out: {V2_TAKES_SEVERAL_GROUPS}"
    apart = kv_cache_groups_apart(target, draft)
    if apart:
        return f"{apart}: {V2_TAKES_SEVERAL_GROUPS}"
    return ONE_GROUP


def hybrid_kv_reason(target: Checkpoint, draft: Checkpoint | None, runner: str | None = None) -> str | None:
    """Why the pair needs the hybrid KV cache manager off on ``runner`` (None: it does not)."""
    # a speculator (EAGLE-3, DFlash, DSpark) keeps its own KV cache: nothing of the target's is shared
    if draft is None or speculator_of(draft) is not None or runner == "v2":
        return None
    if not draft.is_known:
        return "the draft is unknown, so KV sharing cannot be ruled out"
    return needs_hybrid_manager_disabled(target, draft, runner)
