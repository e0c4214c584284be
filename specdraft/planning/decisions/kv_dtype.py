"""The KV cache dtype (``choose_kv_dtype``): bf16 (vLLM's ``auto``, the model's dtype) unless the user gave one, a
shipped measurement found fp8 faster for the profile and method (``data/attention_backend.json``'s
``kv_dtype_measurements``), public reports decide for a profile specdraft has not measured (``reported_defaults``:
the DGX Spark's validated configuration runs fp8), or the wanted context does not fit the profile at bf16 while fp8
fits more of it (the memory decision answers, through ``memory_at``). Served on 2 x H200 (vLLM 0.26.0), an fp8 KV
cache cost the speculative path ~19% (MTP: 1.23x vs 1.45x beside the 26B-A4B, 2.26x vs 2.72x beside the 31B at TP 2)
while the target alone lost 3-4%, and one user needed ~1.4 GiB of KV: memory is rarely the limit there, speed is.
``decisions.kv_cache`` makes it part of ``KVCacheChoice``.
"""

from __future__ import annotations

from collections.abc import Callable

from specdraft.planning.decisions.memory import MemoryChoice
from specdraft.planning.knowledge.attention_backend_table import KVDtypeMeasurement, ReportedDefault
from specdraft.planning.knowledge.gpu_memory import FP8_KV_DTYPES

AUTO = "auto"
FP8 = "fp8"


def is_fp8(dtype: str) -> bool:
    return dtype in FP8_KV_DTYPES or dtype.startswith("fp8")


def named_dtype(dtype: str) -> str:
    """``auto`` as what it is for Gemma 4's bf16 checkpoints."""
    return "bf16 (auto)" if dtype == AUTO else dtype


def _measured_text(measurements: list[KVDtypeMeasurement], profile: str, method: str, shape: str | None) -> str:
    """The shipped fp8-vs-bf16 figures that decide for ``profile``, as the reason quotes them: the planned pair's own
    (same method beside the same target shape) where it was served both ways, else the first measurement's."""
    for measured in measurements:
        own = [row for row in measured.rows if shape is not None and (row.method, row.target) == (method, shape)
               and row.speedup]
        if profile in measured.applies_to and own:
            rows = "; ".join(f"{row.plan} {row.speedup['auto']:.2f}x vs {row.speedup['fp8']:.2f}x" for row in own)
            return f"this pair served faster with bf16 KV than with fp8 on {measured.gpu}, vLLM {measured.vllm}: {rows}"
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


def choose_kv_dtype(given: str | None, profile: str, method: str, memory_at: Callable[[str], MemoryChoice],
                    measurements: list[KVDtypeMeasurement], reported: list[ReportedDefault],
                    shape: str | None = None) -> tuple[str, str]:
    """The dtype and its reason; ``memory_at(dtype)`` is the memory decision at that KV dtype; ``shape`` the
    measured target shape (``31b``, ``26b``) the plan serves, None for another."""
    if given is not None:
        return given, "given"
    faster = measured_fp8_faster(measurements, profile, method)
    if faster:
        return FP8, faster
    default = next((row for row in reported if row.profile == profile), None)
    if default is not None:
        return default.kv_cache_dtype, f"{profile}, from public reports (not measured by specdraft): {default.why}"
    measured = _measured_text(measurements, profile, method, shape)
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
