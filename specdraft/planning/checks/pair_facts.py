"""What the pair checks judge (``PairFacts``): the pair, the config and flags the plan chose, the serving vLLM."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from specdraft.checkpoints import Checkpoint
from specdraft.findings import Finding
from specdraft.patching import Trait
from specdraft.planning.facts.chat_template import CheckpointComparison
from specdraft.planning.facts.vllm_install import VllmFacts
from specdraft.planning.knowledge.speculative_config import SpeculativeConfig
from specdraft.planning.request import HotfixMode


class PairFacts(BaseModel):
    """What the checks judge: the pair, the config and flags the plan chose, the serving vLLM."""

    model_config = ConfigDict(frozen=True)

    target: Checkpoint
    draft: Checkpoint | None
    speculative: SpeculativeConfig | None
    """The config the command passes; None: the target alone (no drafter, so no pairing checks)."""
    method: str
    """The method the server runs (``Decisions.method``): the config's as vLLM resolves it, ``none`` without one."""
    tensor_parallel_size: int
    max_model_len: int
    target_quantization: str | None
    """The value of ``--quantization`` the plan passes (None: not passed)."""
    hybrid_kv_reason: str | None
    """Why the pair needs the hybrid KV cache manager off (``Decisions.hybrid_kv_reason``; None: it does not)."""
    hybrid_kv_kept_on: str | None = None
    """Why the manager may stay on (``Decisions.hybrid_kv_kept_on``)."""
    hybrid_kv_cache_manager_disabled: bool
    """Whether the command turns the hybrid KV cache manager off."""
    hotfix_mode: HotfixMode
    vllm: VllmFacts
    template_path: Path | None = None
    template_variant: str | None = None
    template_findings: tuple[Finding, ...] = ()
    template_note: str = ""
    checkpoint_template: CheckpointComparison | None = None
    language_model_only: bool = False
    compute_capability: tuple[int, int] | None = None
    """The GPU's, from the profile; quantization kernels depend on it."""
    profile: str | None = None
    """The GPU profile the plan is for (what was measured depends on it)."""
    expected_context: int | None = None
    """Tokens of context a request typically carries (``--expected-context``; None: not given)."""
    traits: frozenset[Trait] = frozenset()
    """The pairing's traits as the hotfixes declare them (``Decisions.traits``): what the hotfix check judges."""
