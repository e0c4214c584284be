"""``data/attention_backend.json`` as a typed table: per release, what its source says about Gemma 4's attention
backends (``AttentionBackendRule``), the backends users report failing and the fix, the KV dtype measurements and
reported defaults, and what real installs showed (``GpuEvidence``). ``decisions.attention_backends`` and
``decisions.kv_dtype`` decide by it.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Literal

from pydantic import BaseModel, ConfigDict

from specdraft.planning.knowledge.release_rules import ReleaseRule, ReleaseTable, data_text


class AttentionBackendRule(ReleaseRule):
    """What one release's source says about Gemma 4's attention backends (``data/attention_backend.json``'s
    ``about`` names the files)."""

    read: list[str]
    """The releases whose source was read for this rule."""
    gemma4: Literal["triton", "fa4", "fa4-per-layer-fp8-sm90"]
    """How ``Gemma4Config.verify_and_update_config`` sets the backend for its 256/512 head sizes."""
    mtp_drafter: Literal["target-backend-when-set"] | None
    """How the MTP assistant's backend is chosen; None: the release has no Gemma 4 MTP proposer."""
    draft_attention_backend: bool
    """Whether ``--speculative-config`` takes ``attention_backend``."""
    flash_attn_fp8_kv: list[Literal["fa3-sm90", "fa4-hd512-sm90", "fa4-sm100"]]
    """Where FLASH_ATTN takes an fp8 KV cache."""
    mm_prefix_fp8_sm90_needs_triton: bool
    """FLASH_ATTN refuses a multimodal layer with an fp8 KV cache on SM90."""
    mm_prefix_first_sm90: str | None
    """The composite backend the selector tries first for a multimodal layer on SM90."""
    priorities: dict[str, list[str]]
    """The selector's order outside MLA: ``sm100`` on compute capability 10.x, ``other`` elsewhere."""


class ReportedFailure(BaseModel):
    """A backend that users report failing for Gemma 4 with speculative decoding, on one GPU family."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    backend: str
    capability_major: int
    kv_cache_dtypes: list[str]
    issues: list[int]
    what: str
    source: str

    @property
    def issue_refs(self) -> str:
        return ", ".join(f"vLLM #{n}" for n in self.issues)


class BackendFix(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    flag: str
    value: str
    why: str
    source: str


class KVDtypeRow(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    plan: str
    method: str | None
    target: str | None = None
    """The measured target shape (``31b``, ``26b``) where the row is one pair's: a plan of that pair quotes it."""
    speedup: dict[str, float] = {}
    """``fp8`` and ``auto`` (bf16): decode speed over the target without speculation (the measurement's ``how``
    says which baseline)."""


class KVDtypeMeasurement(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    gpu: str
    vllm: str
    attention: str
    source: str
    rows: list[KVDtypeRow]
    applies_to: list[str]
    """The GPU profiles this measurement decides for."""


class ReportedDefault(BaseModel):
    """A profile's KV dtype taken from public reports where specdraft measured no comparison there."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    profile: str
    kv_cache_dtype: str
    why: str
    source: str


class GpuEvidence(BaseModel):
    """What the engine log of a real install showed: the backends selected and whether the server started."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    profile: str
    vllm: str
    method: str
    kv_cache_dtype: str
    attention_backend: str | None = None
    """The ``--attention-backend`` the server was given; None: vLLM chose."""
    drafter_attention_backend: str | None = None
    """The ``attention_backend`` in its ``--speculative-config``; None: none named."""
    target: str
    drafter: str | None = None
    started: bool
    source: str


class AttentionBackendTable(ReleaseTable[AttentionBackendRule]):
    reported_failures: list[ReportedFailure]
    fix: BackendFix
    kv_dtype_measurements: list[KVDtypeMeasurement]
    reported_defaults: list[ReportedDefault]
    gpu_evidence: list[GpuEvidence]


@lru_cache(maxsize=None)
def attention_backend_table() -> AttentionBackendTable:
    """``data/attention_backend.json``."""
    return AttentionBackendTable.model_validate_json(data_text("attention_backend.json"))
