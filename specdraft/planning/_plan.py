"""From a launch request to a complete plan: speculative config, serve argv, findings, memory.

``build_launch_plan`` is the one function that gathers facts (checkpoint metadata, the installed
vLLM's version, arguments and hotfix status, the chat template); everything it calls after that
is pure. It never imports vllm, torch or transformers and never touches the network.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

from specdraft.planning._async_scheduling import (
    AsyncSchedulingChoice, AsyncSchedulingDecision, decide_async_scheduling,
)
from specdraft.planning._checkpoint import Checkpoint, inspect_checkpoint
from specdraft.planning._checks import (
    HYBRID_FLAG, HotfixMode, HotfixState, PairFacts, VllmFacts, check_pair, needs_hybrid_manager_disabled,
    resolved_method,
)
from specdraft.findings import Finding, worst_level
from specdraft.planning._memory import PROFILES, MemoryPlan, ProfileName, plan_memory
from specdraft.planning._multimodal import multimodal_verdict
from specdraft.planning._references import reference_problem
from specdraft.planning._serve_plan import ServeFlag, ServePlan
from specdraft.planning._speculative import METHODS_WITH_DRAFT_MODEL, SpeculativeConfig, SpeculativeMethod
from specdraft.planning._template_choice import choose_template
from specdraft.planning._verdicts import release_verdicts
from specdraft.planning._vllm_flags import read_vllm_arguments

DEFAULT_MAX_MODEL_LEN = 131072
"""The validated DGX Spark context; lowered automatically when it does not fit and was not asked for."""


class LaunchRequest(BaseModel):
    """What the user asks for; every field has the validated default of the seed setup."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    target: str
    """Target checkpoint: local directory or Hugging Face repo id."""
    draft: str
    """Draft checkpoint: local directory or Hugging Face repo id."""
    profile: ProfileName = "dgx-spark"
    """GPU profile for the memory plan: ``dgx-spark``, ``h100`` or ``h200``."""
    num_speculative_tokens: int | None = Field(default=None, gt=0)
    """Draft tokens per target step; unset means ``default_num_speculative_tokens`` for the profile."""
    method: SpeculativeMethod | None = None
    """Speculative method; unset lets vLLM detect ``draft_model`` (set automatically where detection would fail)."""
    draft_tensor_parallel_size: int | None = Field(default=None, ge=1)
    """Draft tensor-parallel size; unset means the target's (what ``draft_model`` needs; the seed's 1)."""
    tensor_parallel_size: int = Field(default=1, ge=1)
    """Target tensor-parallel size; ``--tensor-parallel-size`` is emitted only when above 1."""
    max_model_len: int | None = Field(default=None, ge=1)
    """Context length; unset means 131072, lowered to what fits the profile."""
    gpu_memory_utilization: float | None = Field(default=None, gt=0, le=1)
    """Fraction of GPU memory for vLLM; unset means the profile's default."""
    kv_cache_dtype: str = "fp8"
    """KV cache dtype (fp8 halves KV memory)."""
    max_num_seqs: int = Field(default=1, ge=1)
    """Concurrent sequences (the seed's single-user 1)."""
    quantization: str | None = None
    """Target ``--quantization``; unset means what the checkpoint declares."""
    draft_quantization: str | None = None
    """Draft ``quantization``; unset means what the checkpoint declares."""
    revision: str | None = None
    """Hub revision of the target (branch, tag or commit)."""
    draft_revision: str | None = None
    """Hub revision of the draft."""
    chat_template: Path | None = None
    """A chat template to pass instead of specdraft's own."""
    allow_leaky_template: bool = False
    """Launch even if the template check finds a thought-channel leak."""
    enable_thinking: bool = False
    """Server default for the template's ``enable_thinking``."""
    async_scheduling: AsyncSchedulingChoice = "auto"
    """``auto`` passes ``--async-scheduling`` for ``draft_model`` where vLLM accepts it but would leave it off;
    ``off`` passes vLLM's ``--no-async-scheduling``."""
    hotfixes: HotfixMode = "apply"
    """``apply`` pending hotfixes before serving, only ``check`` them, or ``skip`` them."""
    python: str | None = None
    """Interpreter whose vLLM will serve; unset means the one behind ``vllm`` on PATH."""
    vllm_root: Path | None = None
    """A directory containing the ``vllm`` package (site-packages, unpacked wheel) to read instead of ``python``'s."""
    extra_args: list[str] = Field(default_factory=list)
    """Arguments passed through to ``vllm serve`` verbatim."""

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


class LaunchPlan(BaseModel):
    """The complete, checked plan: what ``--dry-run --json`` prints and what launch executes."""

    model_config = ConfigDict(frozen=True)

    request: LaunchRequest
    """What was asked for."""
    serve: ServePlan
    """The ``vllm serve`` command, every flag with its reason."""
    speculative: SpeculativeConfig
    """The object passed as ``--speculative-config``."""
    findings: list[Finding]
    """Every check's verdict, in report order; an ``error`` blocks the launch."""
    memory: MemoryPlan | None
    """Weights and KV cache against the profile's GPU."""
    target: dict
    """Digest of the target checkpoint (``Checkpoint.summary``)."""
    draft: dict
    """Digest of the draft checkpoint."""
    vllm: dict
    """The serving vLLM: python, version, distribution, package root, hotfix statuses."""
    template: dict
    """The chat template passed: path, its variant, the variant the target needs."""
    async_scheduling: AsyncSchedulingDecision
    """Whether the plan passes ``--async-scheduling`` (or ``--no-async-scheduling``), and why."""

    @property
    def argv(self) -> list[str]:
        return self.serve.argv()

    @property
    def has_errors(self) -> bool:
        return worst_level(self.findings) == "error"

    def to_json_dict(self) -> dict:
        """The object ``launch --dry-run --json`` prints."""
        return {
            "argv": self.argv,
            "command": self.serve.shell_command(),
            "speculative_config": self.speculative.as_dict(),
            "flags": [flag.model_dump() for flag in self.serve.flags],
            "findings": [finding.model_dump() for finding in self.findings],
            "memory": self.memory.model_dump() if self.memory else None,
            "target": self.target,
            "draft": self.draft,
            "vllm": self.vllm,
            "template": self.template,
            "async_scheduling": self.async_scheduling.model_dump(),
            "ok": not self.has_errors,
        }


def _python_behind_vllm() -> str | None:
    """The interpreter of the ``vllm`` script on PATH: its shebang, else the ``python`` beside it."""
    script = shutil.which("vllm")
    if script is None:
        return None
    try:
        first = Path(script).read_bytes()[:512].split(b"\n", 1)[0].decode()
    except (OSError, UnicodeDecodeError):
        first = ""
    named = first[2:].strip().split()[0] if first.startswith("#!") and first[2:].strip() else ""
    if Path(named).name.startswith("python"):
        return named
    beside = Path(script).parent / "python"
    return str(beside) if beside.exists() else None


def gather_vllm_facts(python: str | None, vllm_root: Path | None, *, want_hotfixes: bool) -> VllmFacts:
    """Version, arguments, hotfix status and multimodal verdict of the vLLM that will serve.

    Which vLLM: ``vllm_root`` if given, else ``python``'s, else the one behind ``vllm`` on PATH,
    else the current interpreter's.
    """
    from specdraft.errors import UserError
    from specdraft.patching import locate, status

    python = python or (None if vllm_root else _python_behind_vllm())
    version = root = distribution = None
    note = hotfix_note = ""
    hotfixes = None
    try:
        install = locate(python=python, vllm_root=vllm_root)
        version, root, distribution = install.version, Path(install.package_dir), install.distribution
        if python is None and vllm_root is None and install.python is not None:
            python = str(install.python)
        if want_hotfixes:
            hotfixes = tuple(HotfixState(id=r.id, status=str(getattr(r.status, "value", r.status)),
                                         detail=r.detail or "") for r in status(install))
    except UserError as err:
        script = shutil.which("vllm")
        where = "" if python or vllm_root else (
            f"; the `vllm` on PATH ({script}) is not a Python console script, so which vLLM it runs is unknown"
            if script else "; no `vllm` on PATH and no --python given")
        note = hotfix_note = err.message + where
    arguments = read_vllm_arguments(root) if root else None
    verdict = multimodal_verdict(version, root, distribution)
    return VllmFacts(
        python=python, version=version, root=root, note=note, hotfixes=hotfixes, hotfix_note=hotfix_note,
        accepts_multimodal_target=verdict.accepts, multimodal_basis=verdict.basis,
        multimodal_workaround=verdict.workaround, distribution=distribution,
        serve_flags=arguments.serve_flags if arguments else None,
        speculative_fields=arguments.speculative_fields if arguments else None,
    )


# Measured (docs/gpu/README.md): with an E2B-shaped draft beside a 31B-shaped target, K = 3 was the fastest K on
# an H100 (1.96x at alpha 0.85, against 1.82x at K = 4) and on an H200 (1.62x vs 1.54x): there the drafter's
# launches cost ~10 ms of host time per drafted token, so longer drafts slow down. On a DGX Spark the target
# step (~110 ms) hides that, and the user's K = 4 gave 2x.
_HOPPER_K = (3, "the fastest K measured on an H100 and an H200 for an E2B draft beside the 31B: "
                "longer drafts are host-bound there (docs/gpu/README.md)")
_DEFAULT_K = {"dgx-spark": (4, "the validated DGX Spark setting (9 -> 18 tok/s with an E2B draft)"),
              "h100": _HOPPER_K, "h200": _HOPPER_K}

# Measured (docs/gpu/README.md): the 31B's MTP assistant on an H100, vLLM 0.26.0, is GPU-bound (~0.5 ms per
# drafted token, no host line), so longer drafts keep paying: K = 3, 5, 7, 9 gave 2.22x, 2.51x, 2.66x, 2.69x at
# alpha 0.70 and 2.69x, 3.38x, 3.59x, 3.84x at 0.85. tune fitted to those rows picks K = 8 at 0.70 (2.80x); at 0.85
# it picks K = 13, past the measured range. The H200 was not measured and takes the H100's K.
_HOPPER_ASSISTANT_K = (8, "tune's pick at alpha 0.70 from the acceptance and step costs measured on an H100 with "
                          "the 31B's MTP assistant (vLLM 0.26.0); K = 9, the longest measured, was the fastest "
                          "at alpha 0.70 and 0.85 (docs/gpu/README.md)")
_ASSISTANT_K = {"dgx-spark": (4, "the published recipes' N for Gemma 4 MTP assistants (2 for E2B, 4 for E4B/26B, "
                                 "4-8 for 31B); not measured by specdraft"),
                "h100": _HOPPER_ASSISTANT_K, "h200": _HOPPER_ASSISTANT_K}


def default_num_speculative_tokens(profile: str, assistant: bool = False) -> tuple[int, str]:
    """The K a launch uses when none is given, and why: per GPU profile, for a draft model or an MTP assistant."""
    table = _ASSISTANT_K if assistant else _DEFAULT_K
    return table.get(profile, table["dgx-spark"])


def _speculative(request: LaunchRequest, draft: Checkpoint) -> tuple[SpeculativeConfig, str, str]:
    """The speculative config, why the method was set ("" if left to vLLM), and where K came from."""
    method, why = request.method, ""
    if method is None and draft.is_assistant:
        method, why = "mtp", "the draft is a Gemma 4 MTP assistant"
    elif method is None and any(m in request.draft.lower() for m in ("eagle-", "eagle3", "dflash", "dspark")):
        method, why = "draft_model", "the draft path would make vLLM guess an EAGLE/DFlash/DSpark head"
    k, k_reason = ((request.num_speculative_tokens, "given") if request.num_speculative_tokens
                   else default_num_speculative_tokens(request.profile, draft.is_assistant))
    config = SpeculativeConfig(
        method=method,
        model=request.draft,
        num_speculative_tokens=k,
        draft_tensor_parallel_size=request.draft_tensor_parallel_size or request.tensor_parallel_size,
        quantization=request.draft_quantization or draft.quantization.method,
        revision=request.draft_revision,
    )
    return config, why, k_reason


def _flags(request: LaunchRequest, target: Checkpoint, speculative: SpeculativeConfig, method_reason: str,
           k_reason: str, max_model_len: int, max_len_reason: str, utilization: float, utilization_reason: str,
           hybrid_reason: str | None, template: Path | None, language_model_only: str | None,
           async_scheduling: AsyncSchedulingDecision) -> list[ServeFlag]:
    quantization = request.quantization or target.quantization.method
    draft_quant = speculative.quantization
    spec_reason = (f"{speculative.num_speculative_tokens} draft tokens per step ({k_reason}) from {request.draft}"
                   + (f", quantization {draft_quant}" if draft_quant else "")
                   + (f"; method set because {method_reason}" if method_reason else ""))
    flags = []

    def add(name: str, value: str | None, reason: str) -> None:
        flags.append(ServeFlag(name=name, value=value, reason=reason))

    if quantization:
        add("--quantization", quantization,
            "given" if request.quantization else f"the target checkpoint is {quantization} "
                                                 f"(read from {target.source})")
    if request.revision:
        add("--revision", request.revision, "target revision given")
    if request.tensor_parallel_size > 1:
        add("--tensor-parallel-size", str(request.tensor_parallel_size), "given")
    add("--speculative-config", speculative.to_vllm(), spec_reason)
    add("--max-model-len", str(max_model_len), max_len_reason)
    add("--max-num-seqs", str(request.max_num_seqs), "concurrent sequences; 1 is the validated single-user setup")
    add("--gpu-memory-utilization", f"{utilization:.2f}", utilization_reason)
    add("--kv-cache-dtype", request.kv_cache_dtype,
        "fp8 halves KV memory" if request.kv_cache_dtype == "fp8" else "given")
    add("--enable-prefix-caching", None, "reuses the KV of repeated prompt prefixes (agent loops, chat history)")
    if hybrid_reason:
        add(HYBRID_FLAG, None, f"{hybrid_reason}; the hybrid manager refuses such a pair")
    if language_model_only:
        add("--language-model-only", None, language_model_only)
    if async_scheduling.flag:
        add(async_scheduling.flag, None, async_scheduling.reason)
    add("--trust-remote-code", None, "validated seed flag; Gemma 4 checkpoints may ship custom processor code")
    add("--enable-auto-tool-choice", None, "lets the model call tools when a request offers them")
    add("--tool-call-parser", "gemma4", "parses <|tool_call>call:NAME{...}<tool_call|> into tool_calls")
    add("--reasoning-parser", "gemma4", "moves <|channel>thought ...<channel|> into `reasoning`, never `content`")
    add("--chat-template-content-format", "openai",
        "renders content as OpenAI parts, the shape the template handles in history")
    add("--default-chat-template-kwargs", json.dumps({"enable_thinking": request.enable_thinking}),
        "thinking " + ("on" if request.enable_thinking else "off") + " by default (a boolean, never a string)")
    if template is not None:
        add("--chat-template", str(template),
            "given" if request.chat_template else f"specdraft's {target.template_variant!r} Gemma 4 template "
                                                  "(checked for thought-channel leaks)")
    return flags


def _let_extra_args_override(flags: list[ServeFlag], extra: list[str]) -> tuple[list[ServeFlag], list[Finding]]:
    """A flag the user repeats after ``--`` wins: the plan's own is left out, and the report says so."""
    given = {arg.split("=", 1)[0] for arg in extra if arg.startswith("--")}
    overridden = [f.name for f in flags if f.name in given]
    if not overridden:
        return flags, []
    return [f for f in flags if f.name not in given], [Finding(
        level="warning", check="serve-flags",
        message=f"{', '.join(overridden)} given after -- replace the plan's; the checks above used the plan's values")]


def _restrict_to_version(flags: list[ServeFlag], vllm: VllmFacts, extra: list[str],
                         speculative: SpeculativeConfig) -> tuple[list[ServeFlag], list[Finding]]:
    """Drop flags the installed vLLM does not define; flag unknown extra args and speculative fields."""
    if vllm.serve_flags is None:
        return flags, []
    known = vllm.serve_flags

    def is_known(name: str) -> bool:
        # argparse's BooleanOptionalAction adds a --no-X for every boolean --X.
        return name in known or (name.startswith("--no-") and "--" + name[5:] in known)

    kept = [f for f in flags if is_known(f.name)]
    dropped = [f.name for f in flags if not is_known(f.name)]
    findings = []
    if dropped:
        findings.append(Finding(level="warning", check="serve-flags",
                                message=f"vLLM {vllm.version} does not define {', '.join(dropped)}; left out",
                                hint="upgrade vLLM to get them"))
    unknown_extra = [a.split("=", 1)[0] for a in extra if a.startswith("--") and not is_known(a.split("=", 1)[0])]
    if unknown_extra:
        findings.append(Finding(level="warning", check="serve-flags",
                                message=f"vLLM {vllm.version} does not define {', '.join(unknown_extra)} "
                                        "(passed through after --)"))
    if vllm.speculative_fields is not None:
        unknown_fields = [f for f in speculative.set_fields() if f not in vllm.speculative_fields]
        if unknown_fields:
            findings.append(Finding(level="error", check="speculative-fields",
                                    message=f"vLLM {vllm.version}'s SpeculativeConfig has no "
                                            f"{', '.join(unknown_fields)}",
                                    hint="upgrade vLLM or drop those fields"))
    if not findings:
        findings.append(Finding(level="ok", check="serve-flags",
                                message=f"every flag is defined by vLLM {vllm.version}"))
    return kept, findings


def _max_model_len(request: LaunchRequest, target: Checkpoint, draft: Checkpoint,
                   memory_at) -> tuple[int, str, MemoryPlan, int | None]:
    """The context length, its reason, its memory plan and, when lowered to fit, the length wanted."""
    if request.max_model_len is not None:
        return request.max_model_len, "given", memory_at(request.max_model_len), None
    limits = [c.max_position_embeddings for c in (target, draft) if c.max_position_embeddings]
    wanted = min([DEFAULT_MAX_MODEL_LEN, *limits])
    memory = memory_at(wanted)
    if memory.fits or memory.max_context_that_fits <= 0:
        reason = "the validated 128K context" if wanted == DEFAULT_MAX_MODEL_LEN else "the models' longest context"
        return wanted, reason + f"; fits the {request.profile} memory plan", memory, None
    lowered = memory.max_context_that_fits
    return lowered, f"lowered from {wanted}: the longest context that fits {request.profile}", \
        memory_at(lowered), wanted


def _memory_finding(memory: MemoryPlan, request: LaunchRequest, lowered_from: int | None) -> Finding:
    if not memory.fits:
        return Finding(level="error", check="memory",
                       message=f"{memory.max_num_seqs} x {memory.max_model_len} tokens need "
                               f"{memory.kv_bytes_needed / 2**30:.1f} GiB of KV cache but {request.profile} leaves "
                               f"{memory.kv_budget_bytes / 2**30:.1f} GiB",
                       hint="; or ".join(memory.advice[:3]) or None)
    if lowered_from:
        return Finding(level="warning", check="memory",
                       message=f"{lowered_from} tokens do not fit {memory.device}; --max-model-len lowered to "
                               f"{memory.max_model_len}",
                       hint="; or ".join(a for a in memory.advice if "utilization" in a or "fp8" in a) or None)
    return Finding(level="ok", check="memory",
                   message=f"{memory.max_model_len} tokens fit ({memory.kv_bytes_needed / 2**30:.1f} of "
                           f"{memory.kv_budget_bytes / 2**30:.1f} GiB KV); up to {memory.max_context_that_fits}")


def build_launch_plan(request: LaunchRequest) -> LaunchPlan:
    """Inspect, check and plan; never raises for an incompatible pair (that is what findings are for)."""
    target = inspect_checkpoint(request.target, revision=request.revision)
    draft = inspect_checkpoint(request.draft, revision=request.draft_revision)
    hybrid_reason = needs_hybrid_manager_disabled(target, draft) if draft.is_known else \
        "the draft is unknown, so KV sharing cannot be ruled out"
    speculative, method_reason, k_reason = _speculative(request, draft)
    # the KV-sharing hotfixes matter with the hybrid manager off, the MTP one for every MTP pairing
    vllm = gather_vllm_facts(request.python, request.vllm_root, want_hotfixes=hybrid_reason is not None
                             or resolved_method(speculative, draft) == "mtp")
    profile = PROFILES[request.profile]
    utilization = request.gpu_memory_utilization or profile.gpu_memory_utilization
    utilization_reason = "given" if request.gpu_memory_utilization else f"{request.profile}: {profile.utilization_reason}"

    def memory_at(tokens: int) -> MemoryPlan:
        return plan_memory(target, draft if draft.is_known else None, profile, max_model_len=tokens,
                           gpu_memory_utilization=utilization, kv_cache_dtype=request.kv_cache_dtype,
                           max_num_seqs=request.max_num_seqs, hybrid_kv_cache_manager=hybrid_reason is None,
                           tensor_parallel_size=request.tensor_parallel_size,
                           draft_tensor_parallel_size=speculative.draft_tensor_parallel_size or 1)

    max_model_len, max_len_reason, memory, lowered_from = _max_model_len(request, target, draft, memory_at)
    template = choose_template(request.chat_template, target.template_variant)
    template_path = template.path
    is_mm_refused = (target.is_known and target.is_multimodal and vllm.accepts_multimodal_target is False
                     and (speculative.method or "draft_model") == "draft_model"
                     and "--language-model-only" in vllm.multimodal_workaround)
    language_model_only = ("vLLM " + str(vllm.version) + "'s draft_model refuses multimodal targets; the target "
                           "serves text only") if is_mm_refused and "--language-model-only" not in request.extra_args \
        else None
    async_scheduling = decide_async_scheduling(vllm.version, speculative.method, choice=request.async_scheduling,
                                               distribution=vllm.distribution, extra_args=request.extra_args)
    flags = _flags(request, target, speculative, method_reason, k_reason, max_model_len, max_len_reason, utilization,
                   utilization_reason, hybrid_reason, template_path, language_model_only, async_scheduling)
    flags, override_findings = _let_extra_args_override(flags, request.extra_args)
    flags, version_findings = _restrict_to_version(flags, vllm, request.extra_args, speculative)
    version_findings = override_findings + version_findings
    serve = ServePlan(model=request.target, flags=flags, extra_args=request.extra_args)
    facts = PairFacts(
        target=target, draft=draft, speculative=speculative, tensor_parallel_size=request.tensor_parallel_size,
        max_model_len=max_model_len,
        target_quantization=serve.flag("--quantization").value if serve.flag("--quantization") else None,
        hybrid_kv_cache_manager_disabled=serve.flag(HYBRID_FLAG) is not None, hotfix_mode=request.hotfixes,
        vllm=vllm, template_path=template_path, template_variant=template.variant,
        template_findings=template.findings, template_note=template.note,
        language_model_only=serve.flag("--language-model-only") is not None
        or "--language-model-only" in request.extra_args,
        compute_capability=profile.compute_capability,
    )
    findings = check_pair(facts) + version_findings + release_verdicts(
        target, draft, method=resolved_method(speculative, draft), k=speculative.num_speculative_tokens,
        max_model_len=max_model_len, kv_cache_dtype=request.kv_cache_dtype,
        tensor_parallel_size=request.tensor_parallel_size,
        draft_tensor_parallel_size=speculative.draft_tensor_parallel_size or request.tensor_parallel_size,
        version=vllm.version, profile=request.profile, gpus=profile.gpus)
    if template.findings and request.allow_leaky_template:
        findings = [f.model_copy(update={"level": "warning", "message": f.message + " (allowed by --allow-leaky-template)"})
                    if f.check == "chat-template" and f.level == "error" else f for f in findings]
    if async_scheduling.outcome in ("refused", "absent", "unknown", "not-applicable"):
        findings.append(Finding(level="info", check="async-scheduling",
                                message=f"--async-scheduling not passed: {async_scheduling.reason}"))
    findings.append(_memory_finding(memory, request, lowered_from))
    unweighed = [c.ref for c in (target, draft) if c.is_known and c.weight_bytes is None]
    if unweighed:
        findings.append(Finding(level="warning", check="memory",
                                message=f"weight size unknown for {', '.join(unweighed)} (no safetensors files, no "
                                        "shipped figure): counted as 0, so the memory plan is optimistic",
                                hint="download the weights, then run the same command again"))
    return LaunchPlan(
        request=request, serve=serve, speculative=speculative, findings=findings, memory=memory,
        target=target.summary(), draft=draft.summary(),
        vllm={"python": vllm.python, "version": vllm.version, "distribution": vllm.distribution,
              "root": str(vllm.root) if vllm.root else None,
              "note": vllm.note, "hotfixes": [h.__dict__ for h in vllm.hotfixes] if vllm.hotfixes else None},
        template={"path": str(template_path) if template_path else None, "variant": template.variant,
                  "needed_variant": target.template_variant, "note": template.note},
        async_scheduling=async_scheduling,
    )
