"""Whether a mixture-of-experts target stores each expert's weights apart (``Trait.MOE_PER_EXPERT_WEIGHTS``).

On disk the checkpoint's tensor names decide (read from the safetensors headers, no weights):
``...experts.{id}.gate_proj...`` means per expert, ``...experts.gate_up_proj`` fused. Not on disk, a
published repository's layout comes from ``data/moe_expert_layouts.json`` (with its public source);
any other MoE checkpoint is assumed to store its experts apart, since that cannot be ruled out and
the hotfixes it brings in change nothing for a fused checkpoint.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache

from specdraft.checkpoints import Checkpoint
from specdraft.families import rules_for
from specdraft.planning.knowledge.release_tables import data_text
from specdraft.safetensors_index import read_tensor_index, safetensors_files

_PER_EXPERT = re.compile(r"\.experts\.\d+\.")


def is_moe_target(target: Checkpoint | None) -> bool:
    """A known checkpoint whose layers route tokens to experts (its family's ``is_moe``: Gemma 4 26B-A4B)."""
    return target is not None and target.is_known and rules_for(target.config).is_moe(target.config)


def stores_experts_apart(target: Checkpoint) -> bool:
    """True for a MoE target whose experts are (or may be) stored one tensor per expert."""
    if not is_moe_target(target):
        return False
    if target.path is not None and safetensors_files(target.path):
        return any(_PER_EXPERT.search(name) for name in read_tensor_index(target.path))
    known = _published_layouts().get(target.ref)
    return known is None or known["layout"] == "per-expert"


@lru_cache(maxsize=1)
def _published_layouts() -> dict[str, dict]:
    return {repo: facts for repo, facts in json.loads(data_text("moe_expert_layouts.json")).items() if not repo.startswith("_")}
