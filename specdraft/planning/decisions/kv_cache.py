"""The KV cache dtype and the attention backend: one decision (``KVCacheChoice``), which the flag rules and the
checks only read. The dtype is ``decisions.kv_dtype``'s, the backends vLLM would pick are
``decisions.attention_backends``'; this module decides the ``--attention-backend`` the plan passes.

Where vLLM's pick is a backend users report failing for Gemma 4 on that GPU, the plan passes ``--attention-backend
TRITON_ATTN``, and the checks name the issue. The MTP assistant takes the target's backend (Gemma4Proposer); every
other drafter picks its own unless ``--speculative-config`` names one (``attention_backend``, vLLM 0.21.0 on:
SpecDecodeBaseProposer "never inherit[s] the attention backend"), so for those the plan names it there too. Served
on one H200 (vLLM 0.26.0), the 31B with the E2B ``draft_model`` and an fp8 cache ran the target on TRITON_ATTN as
passed while the draft picked FlashInfer and refused to start (benchmarks/gpu/raw/real-stack-h200-m3).
"""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel, ConfigDict

from specdraft.findings import Finding
from specdraft.planning.decisions.attention_backends import (FA4_CAPABILITY_MAJORS, TRITON, Backends,
                                                             observed_backends, predict_backends, reported_failure)
from specdraft.planning.decisions.kv_dtype import (AUTO, FP8, choose_kv_dtype, is_fp8, measured_fp8_faster,
                                                   named_dtype)
from specdraft.planning.decisions.memory import MemoryChoice
from specdraft.planning.knowledge.attention_backend_table import ReportedFailure, attention_backend_table
from specdraft.planning.knowledge.gpu_memory import PROFILES

__all__ = [  # the decision's public names, the dtype's and the backends' included
    "ATTENTION_BACKEND_FLAG", "AUTO", "FA4_CAPABILITY_MAJORS", "FP8", "OWN_BACKEND_DRAFTERS", "TRITON", "Backends",
    "KVCacheChoice", "decide_kv_cache", "drafter_label", "is_fp8", "kv_cache_findings", "measured_fp8_faster",
    "predict_backends", "reported_failure",
]

ATTENTION_BACKEND_FLAG = "--attention-backend"
OWN_BACKEND_DRAFTERS = frozenset({"draft_model", "eagle3", "dflash"})
"""Methods whose proposer replaces the attention backend with ``--speculative-config``'s ``attention_backend``
(vllm/v1/spec_decode/llm_base_proposer.py, ``_create_draft_vllm_config``, 0.21.0 on); Gemma 4's MTP proposer
carries the target's (vllm/v1/spec_decode/gemma4.py)."""


class KVCacheChoice(BaseModel):
    """``--kv-cache-dtype`` and ``--attention-backend`` with their reasons (see the module docstring)."""

    model_config = ConfigDict(frozen=True)

    dtype: str
    dtype_reason: str
    dtype_given: bool
    attention_backend: str | None
    """The backend the plan passes; None leaves the choice to vLLM."""
    attention_reason: str
    user_backend: str | None = None
    """The ``--attention-backend`` the user gave after ``--``."""
    drafter_attention_backend: str | None = None
    """The ``attention_backend`` the plan puts in ``--speculative-config``: the plan's or the user's backend, for a
    drafter that would otherwise pick its own (``OWN_BACKEND_DRAFTERS``) on a release that takes the field."""
    method: str = ""
    backends: Backends | None
    """What the server will select with the plan's flags; None where the release is not in the table."""
    failure: ReportedFailure | None = None
    """The reported failure vLLM's own pick (or the user's backend) runs into, fixed by ``attention_backend`` or not."""
    failing_model: str | None = None
    """Which model ``failure`` hits: the MTP assistant or the target."""
    profile: str
    version: str | None
    label: str = ""
    """How the backends are known where specdraft has not run them (the DGX Spark)."""


def _user_backend(extra_args: list[str]) -> str | None:
    """The value of an ``--attention-backend`` given after ``--``."""
    for i, arg in enumerate(extra_args):
        if arg == ATTENTION_BACKEND_FLAG and i + 1 < len(extra_args):
            return extra_args[i + 1].upper()
        if arg.startswith(ATTENTION_BACKEND_FLAG + "="):
            return arg.split("=", 1)[1].upper()
    return None


def _gpu(profile: str) -> str:
    major, minor = PROFILES[profile].compute_capability
    return f"{profile} (SM {major}.{minor})"


def decide_kv_cache(*, profile: str, version: str | None, method: str, given_dtype: str | None,
                    extra_args: list[str], multimodal_target: bool, has_fa4: bool | None,
                    memory_at: Callable[[str], MemoryChoice], shape: str | None = None) -> KVCacheChoice:
    """The KV dtype and attention backend for a Gemma 4 target served by vLLM ``version`` on ``profile`` with
    ``method``; ``memory_at(dtype)`` is the memory decision at that KV dtype; ``has_fa4`` None: not known (taken
    as a published wheel, which ships FA4)."""
    table = attention_backend_table()
    dtype, dtype_reason = choose_kv_dtype(given_dtype, profile, method, memory_at, table.kv_dtype_measurements,
                                          table.reported_defaults, shape)
    user_backend = _user_backend(extra_args)
    capability = PROFILES[profile].compute_capability
    spark = " (from vLLM's source and public reports; not run by specdraft on a DGX Spark)" if capability[0] == 12 else ""
    chosen = dict(dtype=dtype, dtype_reason=dtype_reason, dtype_given=given_dtype is not None,
                  user_backend=user_backend, profile=profile, version=version, label=spark)
    rule = table.rule_for(version)
    if rule is None:
        return KVCacheChoice(**chosen, attention_backend=None, backends=None,
                             attention_reason=f"vLLM {version or '(version unknown)'} is not in specdraft's "
                                              "attention backend table: vLLM picks")
    fa4_known = has_fa4 if has_fa4 is not None else True
    carries = method in OWN_BACKEND_DRAFTERS and rule.draft_attention_backend

    def backends_with(backend: str | None) -> Backends:
        return (observed_backends(table.gpu_evidence, profile=profile, version=version, method=method,
                                  kv_cache_dtype=dtype, backend=backend, drafter_backend=backend if carries else None)
                or predict_backends(rule, capability, kv_cache_dtype=dtype, has_fa4=fa4_known,
                                    multimodal_target=multimodal_target, method=method, backend=backend))

    own = backends_with(user_backend)
    failure = reported_failure(own, capability, dtype, table.reported_failures)
    label = drafter_label(method)
    picked = f"target {own.target}" + (f", {label} {own.drafter}" if own.drafter else "")
    who = None if failure is None else f"the {label}" if failure.backend == own.drafter else "the target"
    if failure is None or user_backend is not None:
        reason = (f"{user_backend} given" if user_backend else f"vLLM {version} picks: {picked} ({own.basis})") + spark
        if user_backend and carries:
            reason += f"; also in --speculative-config, since the {label} picks its own backend otherwise"
        return KVCacheChoice(**chosen, attention_backend=None, backends=own, failure=failure, failing_model=who,
                             attention_reason=reason, method=method,
                             drafter_attention_backend=user_backend if carries else None)
    fix = table.fix
    fixed = backends_with(fix.value)
    where = (f" (also in --speculative-config: the {label} picks its own backend otherwise)" if carries else "")
    reason = (f"vLLM {version} would give {who} {failure.backend} with a {named_dtype(dtype)} KV cache on "
              f"{_gpu(profile)} ({own.basis}), which users report failing ({failure.issue_refs}); {fix.value} serves "
              f"both models{where}" + spark)
    return KVCacheChoice(**chosen, attention_backend=fix.value, backends=fixed, failure=failure, failing_model=who,
                         attention_reason=reason, method=method, drafter_attention_backend=fix.value if carries else None)


def drafter_label(method: str) -> str:
    """How the findings name the modelled drafter."""
    return "MTP assistant" if method == "mtp" else "draft model"


def kv_cache_findings(choice: KVCacheChoice) -> list[Finding]:
    """What the person reading the plan should hear about the KV dtype and the backends (read, not re-decided)."""
    failure, backends = choice.failure, choice.backends
    if failure is None:
        if backends is None:
            return [Finding(level="info", check="attention-backend", message=choice.attention_reason)]
        picked = f"target {backends.target}" + (f", {drafter_label(choice.method)} {backends.drafter}"
                                                if backends.drafter else "")
        return [Finding(level="ok", check="attention-backend",
                        message=f"{picked} with a {named_dtype(choice.dtype)} KV cache ({backends.basis}){choice.label}")]
    source = f"your --kv-cache-dtype {choice.dtype}" if choice.dtype_given else f"a {named_dtype(choice.dtype)} KV cache"
    crash = (f"{failure.backend} for {choice.failing_model} with {source} on {_gpu(choice.profile)}: {failure.what} "
             f"({failure.issue_refs})")
    if choice.attention_backend is not None:
        bf16 = ("--kv-cache-dtype auto (bf16) avoids it as well, and was measured faster" if choice.dtype_given else
                "bf16 avoids it as well: the --kv-cache-dtype reason names the --max-model-len that keeps it")
        return [Finding(level="warning", check="attention-backend",
                        message=f"vLLM {choice.version} would pick {crash}; the plan passes "
                                f"{ATTENTION_BACKEND_FLAG} {choice.attention_backend}", hint=bf16)]
    return [Finding(level="error", check="attention-backend",
                    message=f"--attention-backend {choice.user_backend} gives {crash}",
                    hint=f"drop it after -- (the plan then passes {ATTENTION_BACKEND_FLAG} {TRITON}), or serve "
                         "with --kv-cache-dtype auto")]
