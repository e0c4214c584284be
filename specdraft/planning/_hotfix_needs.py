"""Which hotfixes matter for a pairing, and how vLLM fails to start without them.

A pairing is described by the situations it puts vLLM in (``PairingNeed``); a hotfix matters when
it is needed for one of them.
"""

from __future__ import annotations

from typing import Literal

PairingNeed = Literal["hybrid-kv-manager-off", "mtp-assistant"]
"""``hybrid-kv-manager-off``: the pair runs with ``--disable-hybrid-kv-cache-manager`` (a KV-sharing draft, or
sliding windows that differ); ``mtp-assistant``: a Gemma 4 MTP assistant drafts."""

MTP_HOTFIX = "gemma4-mtp-shares-backbone-embeddings"
_KV_FAILURE = "ValueError on window size, then KeyError on shared layers"
_NEEDS = {
    MTP_HOTFIX: ("mtp-assistant", "the MTP assistant's pre_projection gets its own narrow embedding: a shape error"),
    "kv-sharing-uniform-specs": ("hybrid-kv-manager-off", _KV_FAILURE),
    "kv-uniform-catches-valueerror": ("hybrid-kv-manager-off", _KV_FAILURE),
}


def pairing_needs(*, hybrid_kv_manager_off: bool, method: str) -> frozenset[PairingNeed]:
    """The situations a pairing puts vLLM in; ``method`` is the one vLLM runs."""
    needs: set[PairingNeed] = set()
    if hybrid_kv_manager_off:
        needs.add("hybrid-kv-manager-off")
    if method == "mtp":
        needs.add("mtp-assistant")
    return frozenset(needs)


def is_needed(hotfix_id: str, needs: frozenset[PairingNeed]) -> bool:
    """Whether the hotfix matters for a pairing with ``needs`` (an unknown hotfix matters with the manager off)."""
    return _NEEDS.get(hotfix_id, ("hybrid-kv-manager-off", ""))[0] in needs


def prevented_failure(hotfix_id: str) -> str:
    """How engine start-up fails on a pairing that needs the hotfix, while it is pending."""
    return _NEEDS.get(hotfix_id, ("", _KV_FAILURE))[1]
