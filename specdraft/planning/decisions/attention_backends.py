"""The attention backends vLLM will pick for a Gemma 4 plan, and the failures users report for them.

vLLM picks the backend; the plan predicts its pick from the release's source (``data/attention_backend.json`` per
release: how ``Gemma4Config`` sets Gemma 4's backend, where FLASH_ATTN takes an fp8 KV cache, the selector's order,
whether the MTP assistant inherits the target's backend) for the profile's GPU (``predict_backends``), or takes what
a real install showed (``gpu_evidence``, ``observed_backends``). Where that pick is a backend users report failing
for Gemma 4 on that GPU (``reported_failures``: the text-only MTP assistant on FlashInfer with fp8 KV on SM90, vLLM
issues 48848 and 48495), ``decisions.kv_cache`` passes ``--attention-backend TRITON_ATTN``.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from specdraft.planning.decisions.kv_dtype import AUTO, FP8, is_fp8
from specdraft.planning.knowledge.attention_backend_table import (AttentionBackendRule, GpuEvidence,
                                                                  ReportedFailure)

TRITON = "TRITON_ATTN"
# Compute capability majors FA4 runs on (vllm/vllm_flash_attn/flash_attn_interface.py, _is_fa4_supported, every
# release 0.19.0-0.33.0): the DGX Spark's 12.1 is not among them, so Gemma 4 serves on TRITON_ATTN there.
FA4_CAPABILITY_MAJORS = (9, 10, 11)


class Backends(BaseModel):
    """The attention backend each model of the plan will run on, and how that is known."""

    model_config = ConfigDict(frozen=True)

    target: str
    drafter: str | None
    """The backend of the MTP assistant or of a Gemma 4 draft model; None for other drafters (not modelled)."""
    basis: str
    started: bool | None = None
    """What a real install showed: whether the server started; None where only predicted."""


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


def observed_backends(evidence: list[GpuEvidence], *, profile: str, version: str | None, method: str, kv_cache_dtype: str,
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
