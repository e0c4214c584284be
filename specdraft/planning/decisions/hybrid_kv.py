"""Whether the hybrid KV cache manager goes off (``--disable-hybrid-kv-cache-manager``), and why.

vLLM's hybrid manager puts every drafting layer in one KV cache group; a draft that shares KV across layers, or
whose sliding window differs from the target's, breaks that ("All drafting layers should belong to the same kv
cache group"), so the pair needs the manager off. The decision is made here once (``Decisions.hybrid_kv_reason``);
the flag rule renders it and the pair check (``check_kv_cache_manager``) judges the command against it.
"""

from __future__ import annotations

from specdraft.checkpoints import Checkpoint
from specdraft.planning.knowledge.speculators import speculator_of

HYBRID_FLAG = "--disable-hybrid-kv-cache-manager"


def needs_hybrid_manager_disabled(target: Checkpoint, draft: Checkpoint | None) -> str | None:
    """Why this pair needs ``--disable-hybrid-kv-cache-manager`` (None: it does not)."""
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


def hybrid_kv_reason(target: Checkpoint, draft: Checkpoint | None) -> str | None:
    """Why the pair needs the hybrid KV cache manager off (None: it does not)."""
    # a speculator (EAGLE-3, DFlash, DSpark) keeps its own KV cache: nothing of the target's is shared
    if draft is None or speculator_of(draft) is not None:
        return None
    if not draft.is_known:
        return "the draft is unknown, so KV sharing cannot be ruled out"
    return needs_hybrid_manager_disabled(target, draft)
