"""What a launch asks for: ``LaunchRequest``, the one definition ``specdraft launch``'s options come from.

Each field's docstring is its ``--help`` text, its default and ``Literal`` choices are the option's;
``CliOption`` metadata adds only what argparse needs beyond that (a metavar, a group, a switch
spelled differently from the field).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from specdraft.planning.knowledge.gpu_memory import ProfileName
from specdraft.checkpoints import reference_problem
from specdraft.planning.knowledge.methods import DRAFTLESS_METHODS, METHODS, NO_SPECULATION
from specdraft.patching.locate import DEFAULT_INTERPRETER
from specdraft.planning.knowledge.speculative_config import METHODS_WITH_DRAFT_MODEL, SpeculativeMethod

HotfixMode = Literal["apply", "check", "skip"]
AsyncSchedulingChoice = Literal["auto", "off"]
MASTER_PORT = 29501
"""vLLM's default ``--master-port`` (``ParallelConfig.master_port``)."""
DEFAULT_MAX_MODEL_LEN = 131072
"""The validated DGX Spark context; lowered automatically when it does not fit and was not asked for."""


@dataclass(frozen=True)
class CliOption:
    """How a request field appears on ``specdraft launch``'s command line."""

    group: Literal["the pair", "GPUs and nodes", "running"] = "the pair"
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
    draft: str | None = None
    """Draft checkpoint (a smaller Gemma 4, an MTP assistant, or an EAGLE-3 / DFlash / DSpark speculator): local
    directory or Hugging Face repo id; unset for ngram, ngram_gpu, suffix and none."""
    profile: ProfileName = "dgx-spark"
    """GPU profile for the memory plan."""
    num_speculative_tokens: Annotated[int | None, CliOption(metavar="K")] = Field(default=None, gt=0)
    """Draft tokens per target step; unset: 4 on dgx-spark (2 beside a MoE target), 3 on h100/h200 (measured),
    8 for an MTP assistant there (measured); beside a MoE target there 1 and 4 (measured)."""
    method: Annotated[SpeculativeMethod | Literal["auto", "none"] | None,
                      CliOption(choices=(*METHODS, "auto", NO_SPECULATION))] = None
    """Speculative method; auto ranks every method the target, the draft and the release allow by predicted
    speedup and takes the fastest (none where no K is predicted to pay); none serves the target alone, the same
    plan without --speculative-config (the baseline for bench --compare); unset: the draft's (mtp for an
    assistant, eagle3/dflash/dspark for a speculator, draft_model otherwise), auto without a draft."""
    prompt_lookup_min: Annotated[int | None, CliOption(metavar="N")] = Field(default=None, ge=1)
    """ngram / ngram_gpu: the shortest n-gram matched against the context; unset: vLLM's."""
    prompt_lookup_max: Annotated[int | None, CliOption(metavar="N")] = Field(default=None, ge=1)
    """ngram / ngram_gpu: the longest n-gram matched; unset: vLLM's."""
    suffix_decoding_max_tree_depth: Annotated[int | None, CliOption(metavar="N")] = Field(default=None, ge=1)
    """suffix: the deepest suffix-tree match; unset: vLLM's."""
    acceptance_from: Annotated[str | None, CliOption(metavar="METHOD=RESULT.json")] = None
    """With --method auto: a bench result of your own server of METHOD; its per-position acceptance replaces
    that method's default."""
    max_model_len: Annotated[int | None, CliOption(metavar="N")] = Field(default=None, ge=1)
    """Context length; unset: 131072, lowered to what fits the profile."""
    expected_context: Annotated[int | None, CliOption(metavar="TOKENS")] = Field(default=None, ge=1)
    """Tokens of context a request typically carries (prompt and history): the plan reads what each method served
    at 1K, 16K and 64K tokens, warns where the planned one loses there, and --method auto ranks by it; unset:
    short prompts."""
    gpu_memory_utilization: Annotated[float | None, CliOption(metavar="F")] = Field(default=None, gt=0, le=1)
    """Fraction of GPU memory for vLLM; unset: the profile's."""
    kv_cache_dtype: str | None = None
    """KV cache dtype; unset: auto (bf16, measured faster than fp8 on H200) on h100/h200, fp8 where the context
    does not fit otherwise and on dgx-spark (its validated configuration)."""
    max_num_seqs: Annotated[int, CliOption(metavar="N")] = Field(default=1, ge=1)
    """Concurrent sequences."""
    gpus_per_node: Annotated[int, CliOption(group="GPUs and nodes", metavar="N")] = Field(default=1, ge=1, le=64)
    """GPUs of --profile on each node (2, 4 or 8 on an H100/H200 host)."""
    nodes: Annotated[int, CliOption(group="GPUs and nodes", metavar="N")] = Field(default=1, ge=1, le=64)
    """Hosts one engine spans (2 for two DGX Sparks joined by their cable); one command per node is planned."""
    tensor_parallel_size: Annotated[int | None, CliOption(group="GPUs and nodes", metavar="N")] = Field(
        default=None, ge=1)
    """Target tensor-parallel size; unset: every GPU of the nodes (per pipeline stage and data-parallel copy) the
    heads divide by; passed only when above 1."""
    draft_tensor_parallel_size: Annotated[int | None, CliOption(group="GPUs and nodes", metavar="N")] = Field(
        default=None, ge=1)
    """Draft tensor-parallel size; unset: the target's (what draft_model needs)."""
    pipeline_parallel_size: Annotated[int, CliOption(group="GPUs and nodes", metavar="N")] = Field(default=1, ge=1)
    """Pipeline stages of the target."""
    data_parallel_size: Annotated[int, CliOption(group="GPUs and nodes", metavar="N")] = Field(default=1, ge=1)
    """Copies of the engine on one host (many users: TP 2 x DP 4 on 8 GPUs)."""
    multi_node: Annotated[Literal["native", "ray"], CliOption(group="GPUs and nodes")] = "native"
    """How nodes join: vLLM's own --nnodes/--headless, or a Ray cluster (--distributed-executor-backend ray)."""
    hosts: Annotated[str | None, CliOption(group="GPUs and nodes", metavar="H0,H1")] = None
    """The nodes' names, node 0 (the API server) first; unset: node0, node1, ..."""
    master_addr: Annotated[str | None, CliOption(group="GPUs and nodes", metavar="ADDR")] = None
    """Node 0's address as the other nodes reach it; unset: its name from --hosts."""
    master_port: Annotated[int, CliOption(group="GPUs and nodes", metavar="PORT")] = Field(
        default=MASTER_PORT, ge=1, le=65535)
    """Node 0's port for the nodes' torch.distributed rendezvous (vLLM's --master-port); pick a free one when
    another cluster or an earlier run still holds the default."""
    quantization: str | None = None
    """Target --quantization; unset: what the checkpoint declares."""
    draft_quantization: str | None = None
    """Draft quantization; unset: what the checkpoint declares."""
    revision: str | None = None
    """Hub revision of the target (branch, tag or commit)."""
    draft_revision: str | None = None
    """Hub revision of the draft."""
    # the paths are str | Path: a str stays as the user typed it (``./x`` keeps its ``./``) for the messages
    chat_template: Annotated[str | Path | None, CliOption(metavar="PATH")] = None
    """A chat template to pass instead of specdraft's own."""
    allow_leaky_template: bool = False
    """Launch even if the template check finds a thought-channel leak."""
    enable_thinking: bool = False
    """Server default enable_thinking=true for the chat template."""
    from_bench: Annotated[str | Path | None, CliOption(metavar="RESULT.json")] = None
    """A bench result of the speculative server at several --concurrency levels with a --compare baseline:
    K per batch size from it (num_speculative_tokens_per_batch_size where the release takes one, else the one
    K best over the measured batch sizes)."""
    async_scheduling: Annotated[AsyncSchedulingChoice, CliOption(switch="--no-async-scheduling", const="off")] = "auto"
    """auto passes --async-scheduling for draft_model where the release accepts it but would leave it off;
    off passes vLLM's --no-async-scheduling."""
    hotfixes: Annotated[HotfixMode, _RUNNING] = "apply"
    """Apply pending hotfixes before serving, only check them, or skip them."""
    python: Annotated[str | None, CliOption(group="running", metavar="EXE", exclusive_with="vllm_root")] = Field(
        default=None, description=f"Interpreter whose vLLM serves; {DEFAULT_INTERPRETER}.")
    vllm_root: Annotated[str | Path | None, CliOption(group="running", metavar="DIR", exclusive_with="python")] = None
    """Plan against the vLLM package in DIR (site-packages, unpacked wheel) instead of an interpreter's."""
    extra_args: list[str] = Field(default_factory=list)
    """Arguments passed to vllm serve verbatim."""

    @property
    def host_names(self) -> list[str]:
        """``hosts`` as a list (empty when unset)."""
        return _split_hosts(self.hosts or "")

    @model_validator(mode="after")
    def _one_host_per_node(self) -> "LaunchRequest":
        if self.hosts is not None and len(self.host_names) != self.nodes:
            raise ValueError(f"hosts: {len(self.host_names)} name(s) in {self.hosts!r} for {self.nodes} node(s) "
                             "(--nodes)")
        return self

    @field_validator("hosts", "master_addr")
    @classmethod
    def _names_a_host(cls, value: str | None, info) -> str | None:
        """Each name lands in a node's vLLM or Ray argv as the value of an option: a name with a space, a
        control character or a leading '-' (which vLLM's parser reads as another option) is refused here."""
        if value is None:
            return value
        for name in [value] if info.field_name == "master_addr" else _split_hosts(value):
            if not name or name.startswith("-") or any(c.isspace() or not c.isprintable() for c in name):
                raise ValueError(f"{name!r} is not a host name or address (no spaces or control "
                                 "characters, no leading '-')")
        return value

    @field_validator("target", "draft")
    @classmethod
    def _is_a_checkpoint_reference(cls, ref: str | None) -> str | None:
        problem = reference_problem(ref) if ref is not None else None
        if problem is not None:
            raise ValueError(problem)
        return ref

    @field_validator("method")
    @classmethod
    def _method_is_planned(cls, method: str | None) -> str | None:
        if method is not None and method not in ("auto", NO_SPECULATION) and method not in METHODS:
            raise ValueError(f"specdraft does not plan method {method!r} for Gemma 4 (choose one of "
                             f"{', '.join(METHODS)}, auto or {NO_SPECULATION})")
        return method

    @model_validator(mode="after")
    def _nothing_to_speculate_with(self) -> "LaunchRequest":
        """``--method none`` plans no speculation: an option that only shapes speculation contradicts it."""
        if self.method != NO_SPECULATION:
            return self
        for name in _SPECULATION_OPTIONS:
            if getattr(self, name) is not None:
                raise ValueError(f"{name}: --method none serves the target alone, without speculation; drop "
                                 f"--{name.replace('_', '-')}, or choose a method")
        return self

    @model_validator(mode="after")
    def _draft_fits_the_method(self) -> "LaunchRequest":
        if self.method in DRAFTLESS_METHODS and self.draft is not None:
            raise ValueError(f"draft: method {self.method} uses no draft checkpoint; drop --draft")
        if self.method in METHODS_WITH_DRAFT_MODEL and self.draft is None:
            raise ValueError(f"draft: method {self.method} needs a draft checkpoint (--draft)")
        if (self.prompt_lookup_min is not None and self.prompt_lookup_max is not None
                and self.prompt_lookup_min > self.prompt_lookup_max):
            raise ValueError(f"prompt_lookup_min: {self.prompt_lookup_min} is above prompt_lookup_max "
                             f"{self.prompt_lookup_max} (the shortest n-gram matched cannot be longer than the longest)")
        method, separator, _ = (self.acceptance_from or "").partition("=")
        if self.acceptance_from is not None and (not separator or method not in METHODS):
            raise ValueError(f"acceptance_from: give METHOD=RESULT.json with METHOD one of {', '.join(METHODS)}, "
                             f"got {self.acceptance_from!r}")
        return self

    @model_validator(mode="after")
    def _context_fits(self) -> "LaunchRequest":
        if (self.expected_context is not None and self.max_model_len is not None
                and self.expected_context > self.max_model_len):
            raise ValueError(f"expected_context: {self.expected_context} tokens do not fit --max-model-len "
                             f"{self.max_model_len}; raise --max-model-len or lower --expected-context")
        return self

    @property
    def ranks_methods(self) -> bool:
        """Whether the plan ranks the methods: asked for, or the default with no draft to pick one."""
        return self.method == "auto" or (self.method is None and self.draft is None)


_SPECULATION_OPTIONS = ("draft", "num_speculative_tokens", "prompt_lookup_min", "prompt_lookup_max",
                        "suffix_decoding_max_tree_depth", "acceptance_from", "draft_quantization", "draft_revision",
                        "draft_tensor_parallel_size", "from_bench")
"""The request fields that shape only the speculative config (or, for ``from_bench``, its K schedule)."""


def _split_hosts(text: str) -> list[str]:
    """``--hosts H0,H1``'s names, blanks around and between commas dropped."""
    return [name.strip() for name in text.split(",") if name.strip()]
