"""What a pairing is, as far as hotfixes care: the ``Trait`` set the patch engine's hotfixes are declared
for (``Hotfix.needed_for``). Which hotfixes a pairing needs, and how vLLM fails without each, is then
the catalog's answer (``specdraft.patching.needed_hotfixes``), not planning's.
"""

from __future__ import annotations

from specdraft.patching import CatalogEntry, Trait, needed_hotfixes


def pairing_traits(*, hybrid_kv_cache_manager_off: bool, method: str,
                   moe_per_expert_weights: bool = False, k_schedule_on_v2: bool = False) -> frozenset[Trait]:
    """The traits of a pairing that runs ``method`` (the one vLLM resolves), with or without the hybrid manager,
    whose target may be a mixture-of-experts checkpoint storing its experts apart, and whose server may pass a K
    schedule on Model Runner V2 (``k_schedule_on_v2``)."""
    traits = set()
    if k_schedule_on_v2:
        traits.add(Trait.K_SCHEDULE_ON_MODEL_RUNNER_V2)
    if moe_per_expert_weights:
        traits.add(Trait.MOE_PER_EXPERT_WEIGHTS)
    if hybrid_kv_cache_manager_off:
        traits.add(Trait.HYBRID_KV_CACHE_MANAGER_OFF)
    if method == "mtp":
        traits.add(Trait.GEMMA4_MTP_ASSISTANT)
    return frozenset(traits)


def hotfixes_needed(traits: frozenset[Trait]) -> dict[str, CatalogEntry]:
    """The hotfixes a pairing with ``traits`` needs, by id, in catalog order."""
    return {entry.id: entry for entry in needed_hotfixes(traits)}
