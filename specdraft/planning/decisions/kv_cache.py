"""The KV cache dtype and the attention backend: one decision (``KVCacheChoice``), which the flag rules and the
checks only read.

**The dtype.** bf16 (vLLM's ``auto``, the model's dtype) unless the user gave one, a shipped measurement found fp8
faster for the profile and method (``data/attention_backend.json``'s ``kv_dtype_measurements``), public reports
decide for a profile specdraft has not measured (``reported_defaults``: the DGX Spark's validated configuration
runs fp8), or the wanted context does not fit the profile at bf16 while fp8 fits more of it (the memory decision
answers, through ``memory_at``). Served on 2 x H200 (vLLM 0.26.0), an fp8 KV cache cost the speculative path ~19% (MTP:
1.23x vs 1.45x beside the 26B-A4B, 2.26x vs 2.72x beside the 31B at TP 2) while the target alone lost 3-4%, and one
user needed ~1.4 GiB of KV: memory is rarely the limit there, speed is.

**The backend.** vLLM picks it; the plan predicts its pick from the release's source (``data/attention_backend.json``
per release: how ``Gemma4Config`` sets Gemma 4's backend, where FLASH_ATTN takes an fp8 KV cache, the selector's
order, whether the MTP assistant inherits the target's backend) for the profile's GPU, or takes what a real install
showed (``gpu_evidence``). Where that pick is a backend users report failing for Gemma 4 on that GPU
(``reported_failures``: the text-only MTP assistant on FlashInfer with fp8 KV on SM90, vLLM issues 48848 and 48495),
the plan passes ``--attention-backend TRITON_ATTN``, and the checks name the issue. The MTP assistant takes the
target's backend (Gemma4Proposer); every other drafter picks its own unless ``--speculative-config`` names one
(``attention_backend``, vLLM 0.21.0 on: SpecDecodeBaseProposer "never inherit[s] the attention backend"), so for
those the plan names it there too. Served on one H200 (vLLM 0.26.0), the 31B with the E2B ``draft_model`` and an fp8
cache ran the target on TRITON_ATTN as passed while the draft picked FlashInfer and refused to start
(benchmarks/gpu/raw/real-stack-h200-m3).
"""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel, ConfigDict

from specdraft.findings import Finding
from specdraft.planning.knowledge.gpu_memory import FP8_KV_DTYPES, PROFILES
from specdraft.planning.decisions.memory import MemoryChoice
from specdraft.planning.knowledge.release_tables import (
    AttentionBackendRule, GpuEvidence, KVDtypeMeasurement, ReportedDefault, ReportedFailure, attention_backend_table)

AUTO = "auto"
FP8 = "fp8"
TRITON = "TRITON_ATTN"
ATTENTION_BACKEND_FLAG = "--attention-backend"
# Compute capability majors FA4 runs on (vllm/vllm_flash_attn/flash_attn_interface.py, _is_fa4_supported, every
# release 0.19.0-0.33.0): the DGX Spark's 12.1 is not among them, so Gemma 4 serves on TRITON_ATTN there.
FA4_CAPABILITY_MAJORS = (9, 10, 11)
OWN_BACKEND_DRAFTERS = frozenset({"draft_model", "eagle3", "dflash"})
"""Methods whose proposer replaces the attention backend with ``--speculative-config``'s ``attention_backend``
(vllm/v1/spec_decode/llm_base_proposer.py, ``_create_draft_vllm_config``, 0.21.0 on); Gemma 4's MTP proposer
carries the target's (vllm/v1/spec_decode/gemma4.py)."""


class Backends(BaseModel):
    """The attention backend each model of the plan will run on, and how that is known."""

    model_config = ConfigDict(frozen=True)

    target: str
    drafter: str | None
    """The backend of the MTP assistant or of a Gemma 4 draft model; None for other drafters (not modelled)."""
    basis: str
    started: bool | None = None
    """What a real install showed: whether the server started; None where only predicted."""


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


def is_fp8(dtype: str) -> bool:
    return dtype in FP8_KV_DTYPES or dtype.startswith("fp8")


def _named(dtype: str) -> str:
    """``auto`` as what it is for Gemma 4's bf16 checkpoints."""
    return "bf16 (auto)" if dtype == AUTO else dtype


# --- the backends vLLM picks, from the release's source rules ---


def _flash_attn_takes(rule: AttentionBackendRule, major: int, *, fp8: bool, multimodal: bool) -> bool:
    """FLASH_ATTN for Gemma 4's layers (FA4 available): any bf16 cache; fp8 where the release's rules allow it."""
    if not fp8:
        return True
    if major == 9:
        if multimodal and rule.mm_prefix_fp8_sm90_needs_triton:
            return False
        if rule.gemma4 == "fa4-per-layer-fp8-sm90":
            # FA3 for the 256-wide sliding layers, FA4 for the 512-wide global ones
            return {"fa3-sm90", "fa4-hd512-sm90"} <= set(rule.flash_attn_fp8_kv)
        return False  # FA4 set for every layer, and FA4 takes no fp8 cache on SM90 there
    return major == 10 and "fa4-sm100" in rule.flash_attn_fp8_kv


def _select(rule: AttentionBackendRule, major: int, *, fp8: bool, multimodal: bool) -> str:
    """The selector's first backend that takes the layer: FlashInfer lacks mm_prefix, so never a multimodal one."""
    if multimodal and major == 9 and rule.mm_prefix_first_sm90 and not fp8:
        return rule.mm_prefix_first_sm90
    for backend in rule.priorities["sm100" if major == 10 else "other"]:
        if backend == "FLASH_ATTN" and _flash_attn_takes(rule, major, fp8=fp8, multimodal=multimodal):
            return backend
        if backend == "FLASHINFER" and not multimodal:
            return backend
        if backend == TRITON:
            return backend
    return TRITON


def predict_backends(rule: AttentionBackendRule, capability: tuple[int, int], *, kv_cache_dtype: str,
                     has_fa4: bool, multimodal_target: bool, method: str, backend: str | None = None) -> Backends:
    """The backends a release whose source says ``rule`` gives a Gemma 4 target (and its MTP assistant or Gemma 4
    draft model, for ``method`` mtp or draft_model) on a GPU of ``capability``, with ``backend`` given or not (the
    plan carries a given one to a draft model through ``--speculative-config``)."""
    major, fp8 = capability[0], is_fp8(kv_cache_dtype)
    modelled = (method == "mtp" and rule.mtp_drafter is not None) or method == "draft_model"
    if backend is not None:
        # Gemma4Config leaves a given backend alone; Gemma4Proposer carries it to the assistant
        return Backends(target=backend, drafter=backend if modelled else None, basis="given")
    own_choice = method == "draft_model" and rule.draft_attention_backend
    if rule.gemma4 == "triton":
        return Backends(target=TRITON, drafter=TRITON if modelled else None,
                        basis="Gemma4Config forces TRITON_ATTN for every layer")
    if not (has_fa4 and major in FA4_CAPABILITY_MAJORS):
        why = "no FA4 beside this vLLM" if not has_fa4 else f"FA4 does not run on compute capability {major}.x"
        return Backends(target=TRITON, drafter=TRITON if modelled else None,
                        basis=f"{why}, so Gemma4Config forces TRITON_ATTN for every layer")
    target = _select(rule, major, fp8=fp8, multimodal=multimodal_target)
    # with no backend set, the text-only assistant is selected on its own, and so is a draft model that does not
    # inherit the target's configuration; one that does (before 0.21.0) gets the target's
    if not modelled:
        drafter = None
    elif method == "mtp" or own_choice:
        drafter = _select(rule, major, fp8=fp8, multimodal=False)
    else:
        drafter = target
    return Backends(target=target, drafter=drafter,
                    basis=f"Gemma4Config sets FA4, then vLLM's selector on compute capability {major}.x "
                          f"with a {'fp8' if fp8 else 'bf16'} KV cache")


def _observed(evidence: list[GpuEvidence], *, profile: str, version: str | None, method: str, kv_cache_dtype: str,
              backend: str | None, drafter_backend: str | None) -> Backends | None:
    """What a real install showed for this profile, release, method, KV dtype and given backends."""
    family = FP8 if is_fp8(kv_cache_dtype) else AUTO
    for row in evidence:
        if (row.profile, row.vllm, row.method, row.kv_cache_dtype, row.attention_backend,
                row.drafter_attention_backend) == (profile, version, method, family, backend, drafter_backend):
            return Backends(target=row.target, drafter=row.drafter, started=row.started,
                            basis=f"observed on {row.profile} with vLLM {row.vllm} ({row.source})")
    return None


def reported_failure(backends: Backends, capability: tuple[int, int], kv_cache_dtype: str,
                     failures: list[ReportedFailure]) -> ReportedFailure | None:
    """The reported failure a model of the plan runs into on that GPU with that KV dtype, if any."""
    family = FP8 if is_fp8(kv_cache_dtype) else AUTO
    for failure in failures:
        if (failure.capability_major == capability[0] and family in failure.kv_cache_dtypes
                and failure.backend in (backends.target, backends.drafter)):
            return failure
    if backends.started is False:
        return ReportedFailure(backend=backends.drafter or backends.target, capability_major=capability[0],
                               kv_cache_dtypes=[family], issues=[], what="the server did not start",
                               source=backends.basis)
    return None


# --- the dtype ---


def _measured_text(measurements: list[KVDtypeMeasurement], profile: str) -> str:
    """The shipped fp8-vs-bf16 figures that decide for ``profile``, as the reason quotes them."""
    for measured in measurements:
        if profile in measured.applies_to:
            rows = "; ".join(f"{row.plan} {row.speedup['auto']:.2f}x vs {row.speedup['fp8']:.2f}x"
                             for row in measured.rows if row.speedup)
            return f"bf16 KV measured faster than fp8 on {measured.gpu}, vLLM {measured.vllm}: {rows}"
    return f"fp8 vs bf16 KV not measured on {profile}"


def measured_fp8_faster(measurements: list[KVDtypeMeasurement], profile: str, method: str) -> str | None:
    """A shipped measurement in which fp8 KV beat bf16 for this profile and method, worded; None if none did."""
    for measured in measurements:
        for row in measured.rows:
            if (profile in measured.applies_to and row.method == method and row.speedup
                    and row.speedup["fp8"] > row.speedup["auto"]):
                return (f"fp8 KV measured faster on {measured.gpu}, vLLM {measured.vllm}: {row.plan} "
                        f"{row.speedup['fp8']:.2f}x vs {row.speedup['auto']:.2f}x at bf16")
    return None


def _choose_dtype(given: str | None, profile: str, method: str, memory_at: Callable[[str], MemoryChoice],
                  measurements: list[KVDtypeMeasurement], reported: list[ReportedDefault]) -> tuple[str, str]:
    if given is not None:
        return given, "given"
    faster = measured_fp8_faster(measurements, profile, method)
    if faster:
        return FP8, faster
    default = next((row for row in reported if row.profile == profile), None)
    if default is not None:
        return default.kv_cache_dtype, f"{profile}, from public reports (not measured by specdraft): {default.why}"
    measured = _measured_text(measurements, profile)
    at_bf16 = memory_at(AUTO)
    if at_bf16.plan.fits and at_bf16.lowered_from is None:
        return AUTO, f"bf16 (the model's dtype): {measured}; {at_bf16.max_model_len} tokens fit at bf16"
    at_fp8 = memory_at(FP8)
    wanted = at_bf16.lowered_from or at_bf16.max_model_len
    if at_fp8.plan.max_context_that_fits > at_bf16.plan.max_context_that_fits:
        keep = at_bf16.plan.max_context_that_fits
        return FP8, (f"the {wanted}-token context does not fit {profile} at bf16 (longest {keep}); fp8 halves KV "
                     f"memory ({measured}: --max-model-len {keep} keeps bf16)")
    return AUTO, f"bf16 (the model's dtype): {measured}; fp8 would not fit a longer context here"


# --- the decision ---


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
                    memory_at: Callable[[str], MemoryChoice]) -> KVCacheChoice:
    """The KV dtype and attention backend for a Gemma 4 target served by vLLM ``version`` on ``profile`` with
    ``method``; ``memory_at(dtype)`` is the memory decision at that KV dtype; ``has_fa4`` None: not known (taken
    as a published wheel, which ships FA4)."""
    table = attention_backend_table()
    dtype, dtype_reason = _choose_dtype(given_dtype, profile, method, memory_at, table.kv_dtype_measurements,
                                        table.reported_defaults)
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
        return (_observed(table.gpu_evidence, profile=profile, version=version, method=method, kv_cache_dtype=dtype,
                          backend=backend, drafter_backend=backend if carries else None)
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
    reason = (f"vLLM {version} would give {who} {failure.backend} with a {_named(dtype)} KV cache on {_gpu(profile)} "
              f"({own.basis}), which users report failing ({failure.issue_refs}); {fix.value} serves both "
              f"models{where}" + spark)
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
                        message=f"{picked} with a {_named(choice.dtype)} KV cache ({backends.basis}){choice.label}")]
    source = f"your --kv-cache-dtype {choice.dtype}" if choice.dtype_given else f"a {_named(choice.dtype)} KV cache"
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
