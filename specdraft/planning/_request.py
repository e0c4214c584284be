"""What a launch asks for: ``LaunchRequest``, the one definition ``specdraft launch``'s options come from.

Each field's docstring is its ``--help`` text, its default and ``Literal`` choices are the option's;
``CliOption`` metadata adds only what argparse needs beyond that (a metavar, a group, a switch
spelled differently from the field).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from specdraft.planning._async_scheduling import AsyncSchedulingChoice
from specdraft.planning._memory import ProfileName
from specdraft.planning._references import reference_problem
from specdraft.planning._speculative import METHODS_WITH_DRAFT_MODEL, SpeculativeMethod

HotfixMode = Literal["apply", "check", "skip"]
DEFAULT_MAX_MODEL_LEN = 131072
"""The validated DGX Spark context; lowered automatically when it does not fit and was not asked for."""


@dataclass(frozen=True)
class CliOption:
    """How a request field appears on ``specdraft launch``'s command line."""

    group: Literal["the pair", "running"] = "the pair"
    metavar: str | None = None
    switch: str | None = None
    """A switch spelled apart from the field (``--no-async-scheduling`` sets ``async_scheduling`` to ``const``)."""
    const: str | None = None
    choices: tuple[str, ...] | None = None
    """The values the command line offers, where it offers fewer than the library accepts."""
    exclusive_with: str | None = None
    """Another field the command line refuses together with this one."""


_RUNNING = CliOption(group="running")


class LaunchRequest(BaseModel):
    """What the user asks for; a field left unset is decided by the plan, which says why."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    target: str
    """Target checkpoint: local directory or Hugging Face repo id."""
    draft: str
    """Draft checkpoint: local directory or Hugging Face repo id."""
    profile: ProfileName = "dgx-spark"
    """GPU profile for the memory plan."""
    num_speculative_tokens: Annotated[int | None, CliOption(metavar="K")] = Field(default=None, gt=0)
    """Draft tokens per target step; unset: 4 on dgx-spark, 3 on h100/h200 (measured), 8 for an MTP assistant
    there (measured)."""
    method: Annotated[SpeculativeMethod | None, CliOption(choices=("draft_model", "mtp"))] = None
    """Speculative method; unset: detected (mtp for a Gemma 4 assistant, draft_model where vLLM would guess
    another head from the draft's path)."""
    max_model_len: Annotated[int | None, CliOption(metavar="N")] = Field(default=None, ge=1)
    """Context length; unset: 131072, lowered to what fits the profile."""
    gpu_memory_utilization: Annotated[float | None, CliOption(metavar="F")] = Field(default=None, gt=0, le=1)
    """Fraction of GPU memory for vLLM; unset: the profile's."""
    kv_cache_dtype: str = "fp8"
    """KV cache dtype (fp8 halves KV memory)."""
    max_num_seqs: Annotated[int, CliOption(metavar="N")] = Field(default=1, ge=1)
    """Concurrent sequences."""
    tensor_parallel_size: Annotated[int, CliOption(metavar="N")] = Field(default=1, ge=1)
    """Target tensor-parallel size; --tensor-parallel-size is passed only when above 1."""
    draft_tensor_parallel_size: Annotated[int | None, CliOption(metavar="N")] = Field(default=None, ge=1)
    """Draft tensor-parallel size; unset: the target's (what draft_model needs)."""
    quantization: str | None = None
    """Target --quantization; unset: what the checkpoint declares."""
    draft_quantization: str | None = None
    """Draft quantization; unset: what the checkpoint declares."""
    revision: str | None = None
    """Hub revision of the target (branch, tag or commit)."""
    draft_revision: str | None = None
    """Hub revision of the draft."""
    chat_template: Annotated[Path | None, CliOption(metavar="PATH")] = None
    """A chat template to pass instead of specdraft's own."""
    allow_leaky_template: bool = False
    """Launch even if the template check finds a thought-channel leak."""
    enable_thinking: bool = False
    """Server default enable_thinking=true for the chat template."""
    from_bench: Annotated[Path | None, CliOption(metavar="RESULT.json")] = None
    """A bench result of the speculative server at several --concurrency levels with a --compare baseline:
    K per batch size from it (num_speculative_tokens_per_batch_size where the release takes one, else the one
    K best over the measured batch sizes)."""
    async_scheduling: Annotated[AsyncSchedulingChoice, CliOption(switch="--no-async-scheduling", const="off")] = "auto"
    """auto passes --async-scheduling for draft_model where the release accepts it but would leave it off;
    off passes vLLM's --no-async-scheduling."""
    hotfixes: Annotated[HotfixMode, _RUNNING] = "apply"
    """Apply pending hotfixes before serving, only check them, or skip them."""
    python: Annotated[str | None, CliOption(group="running", metavar="EXE", exclusive_with="vllm_root")] = None
    """Interpreter whose vLLM serves; unset: the one behind `vllm` on PATH."""
    vllm_root: Annotated[Path | None, CliOption(group="running", metavar="DIR", exclusive_with="python")] = None
    """Plan against the vLLM package in DIR (site-packages, unpacked wheel) instead of an interpreter's."""
    extra_args: list[str] = Field(default_factory=list)
    """Arguments passed to vllm serve verbatim."""

    @field_validator("target", "draft")
    @classmethod
    def _is_a_checkpoint_reference(cls, ref: str) -> str:
        problem = reference_problem(ref)
        if problem is not None:
            raise ValueError(problem)
        return ref

    @field_validator("method")
    @classmethod
    def _method_uses_the_draft(cls, method: str | None) -> str | None:
        if method is not None and method not in METHODS_WITH_DRAFT_MODEL:
            raise ValueError(f"launch pairs a target with a draft checkpoint; method {method!r} uses none "
                             f"(choose one of {', '.join(sorted(METHODS_WITH_DRAFT_MODEL))})")
        return method
