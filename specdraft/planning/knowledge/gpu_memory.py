"""Memory plan: weights of both models plus the KV cache, against one GPU's budget.

KV bytes per token and layer are ``2 (K and V) x kv_heads x head_dim x dtype bytes``; KV-shared
layers own nothing. Sliding layers hold only their window when vLLM's hybrid KV cache manager is on;
with ``--disable-hybrid-kv-cache-manager`` vLLM promotes them to full-attention specs and keeps the
whole sequence ("we do not enable any optimizations for saving KV cache memory (e.g., dropping the
KV cache outside the sliding window)", vllm/v1/core/kv_cache_utils.py), so they cost a full layer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from pydantic import BaseModel, ConfigDict

from specdraft.checkpoints import Checkpoint


def kv_heads_per_rank(kv_heads: int, tensor_parallel_size: int) -> int:
    """KV heads one rank keeps: a share of them, or one replicated head when TP exceeds them."""
    return max(1, kv_heads // tensor_parallel_size)


ProfileName = Literal["dgx-spark", "h100", "h200"]
GIB = 2**30
CONTEXT_STEP = 1024
"""Suggested context lengths are rounded down to this many tokens."""
FP8_KV_DTYPES = frozenset({"fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc", "fp8_ds_mla"})
DRAFT_MODEL_RESERVE_BYTES = 3 * GIB
"""Added to the profile's reserve when the draft is a whole Gemma 4 model (``draft_model``). Measured on one H200
with vLLM 0.26.0 and its real kernels (benchmarks/gpu/raw/real-stack-h200-m3: the budget minus the weights minus
the "Available KV cache memory" the engine logged): 6.1 GiB beside the 31B and 6.5 GiB beside the 26B-A4B with the
E2B draft, against 1.4-4.0 GiB for the target alone, its MTP assistant, EAGLE-3 and DFlash. The draft's own profiling
pass and CUDA graphs take the difference; with the profile's 4 GiB alone the plan gave the 31B + E2B pair a context
needing 55.3 GiB of KV where vLLM had 53.9 GiB, and the server refused to start."""


class GpuProfile(BaseModel):
    """One GPU kind: what ``--gpu-memory-utilization`` is a fraction of, and a sane default for it."""

    model_config = ConfigDict(frozen=True)

    name: ProfileName
    device: str
    total_bytes: int
    """Device memory as CUDA reports it (torch's "total capacity"; H200: 139.8 GiB measured in docs/gpu/raw)."""
    gpu_memory_utilization: float
    """Default fraction of ``total_bytes`` vLLM may take."""
    utilization_reason: str
    runtime_reserve_bytes: int
    """Estimated non-weight, non-KV memory: CUDA context, CUDA graphs, activations, sampler. vLLM 0.26
    measured 2.95 GiB for the 31B target at 2048 batched tokens on an H200 (docs/gpu/raw/run1_h200);
    4 GiB leaves room for larger prefill chunks and the draft."""
    compute_capability: tuple[int, int]
    """CUDA compute capability; which NVFP4/FP8 kernels exist depends on it."""


PROFILES: dict[str, GpuProfile] = {
    "dgx-spark": GpuProfile(
        name="dgx-spark", device="NVIDIA GB10 (DGX Spark), 128 GB unified memory", total_bytes=int(119.7 * GIB),
        gpu_memory_utilization=0.80,
        utilization_reason="unified memory is shared with the OS and the CPU side; 0.80 is the validated DGX Spark "
                           "value",
        runtime_reserve_bytes=4 * GIB, compute_capability=(12, 1),
    ),
    "h100": GpuProfile(
        name="h100", device="NVIDIA H100 80 GB", total_bytes=int(79.19 * GIB), gpu_memory_utilization=0.90,
        utilization_reason="vLLM's default for a dedicated GPU", runtime_reserve_bytes=4 * GIB,
        compute_capability=(9, 0),
    ),
    "h200": GpuProfile(
        name="h200", device="NVIDIA H200 141 GB", total_bytes=int(139.8 * GIB), gpu_memory_utilization=0.90,
        utilization_reason="vLLM's default for a dedicated GPU", runtime_reserve_bytes=4 * GIB,
        compute_capability=(9, 0),
    ),
}


class KVShape(BaseModel):
    """KV bytes per token of one model: layers that hold every token, and layers that hold a window."""

    model_config = ConfigDict(frozen=True)

    per_token_bytes: int
    """Bytes per token of the layers that keep the whole sequence."""
    windowed_bytes: int
    """Bytes per token of the sliding layers that keep only ``window`` tokens."""
    window: int

    def bytes_at(self, tokens: int) -> int:
        return self.per_token_bytes * tokens + self.windowed_bytes * min(tokens, self.window)


def kv_shape(checkpoint: Checkpoint, *, kv_dtype_bytes: int, hybrid_kv_cache_manager: bool,
             tensor_parallel_size: int = 1) -> KVShape:
    """The KV cost of ``checkpoint`` on one rank under the given cache dtype, manager and TP size (a rank keeps
    its share of each layer's KV heads, or one replicated head when TP exceeds them)."""
    full = windowed = 0
    for layer in checkpoint.kv_layers():
        if layer.shared:
            continue
        size = 2 * kv_heads_per_rank(layer.kv_heads, tensor_parallel_size) * layer.head_dim * kv_dtype_bytes
        if layer.kind == "sliding" and hybrid_kv_cache_manager:
            windowed += size
        else:
            full += size
    return KVShape(per_token_bytes=full, windowed_bytes=windowed, window=int(checkpoint.sliding_window or 0))


class MemoryPlan(BaseModel):
    """Whether the requested context fits, and the longest one that does."""

    model_config = ConfigDict(frozen=True)

    profile: str
    device: str
    total_bytes: int
    gpu_memory_utilization: float
    budget_bytes: int
    """``gpu_memory_utilization`` x ``total_bytes``: what vLLM may use."""
    target_weight_bytes: int
    """Per GPU (divided by the tensor- and pipeline-parallel sizes); 0 when unknown."""
    draft_weight_bytes: int
    runtime_reserve_bytes: int
    """The profile's reserve, plus ``DRAFT_MODEL_RESERVE_BYTES`` beside a whole draft model."""
    kv_cache_dtype: str
    hybrid_kv_cache_manager: bool
    """False when ``--disable-hybrid-kv-cache-manager`` is set: sliding layers then hold every token."""
    max_num_seqs: int
    kv_budget_bytes: int
    """What is left for the KV cache of both models."""
    kv_bytes_per_token: int
    """Both models, at a context longer than every sliding window."""
    max_model_len: int
    kv_bytes_needed: int
    """KV bytes for ``max_num_seqs`` sequences of ``max_model_len`` tokens."""
    fits: bool
    max_context_that_fits: int
    """Longest context (rounded down to 1024 tokens) that fits; 0 if not even the weights fit."""
    advice: list[str]

    def table(self) -> list[tuple[str, str]]:
        """Rows for the preflight report."""
        return [
            ("device", f"{self.device} (profile {self.profile})"),
            ("budget", f"{_gib(self.budget_bytes)} = {self.gpu_memory_utilization:.2f} x {_gib(self.total_bytes)}"),
            ("weights", f"target {_gib(self.target_weight_bytes)} + draft {_gib(self.draft_weight_bytes)}"),
            ("reserve", f"{_gib(self.runtime_reserve_bytes)} (CUDA graphs, activations; estimate)"),
            ("KV cache", f"{_gib(self.kv_bytes_needed)} needed for {self.max_num_seqs} x {self.max_model_len} tokens "
                         f"({self.kv_cache_dtype}), {_gib(self.kv_budget_bytes)} available"),
            ("longest context", f"{self.max_context_that_fits} tokens"),
        ]


def _per_stage(shape: KVShape, pipeline_parallel_size: int) -> KVShape:
    """One pipeline stage's share: vLLM gives each stage an even run of layers (``get_pp_indices``)."""
    return shape.model_copy(update={"per_token_bytes": shape.per_token_bytes // pipeline_parallel_size,
                                    "windowed_bytes": shape.windowed_bytes // pipeline_parallel_size})


def _gib(value: int) -> str:
    return f"{value / GIB:.1f} GiB"


def _longest_context(shapes: list[KVShape], available: int, seqs: int) -> int:
    """Largest L with seqs x sum(kv(L)) <= available; KV is piecewise linear in L."""
    if available <= 0:
        return 0
    per_seq = available // max(seqs, 1)
    breakpoints = sorted({0, *(s.window for s in shapes)})
    best = 0
    for low, high in zip(breakpoints, breakpoints[1:] + [None]):
        fixed = sum(s.windowed_bytes * s.window for s in shapes if s.window <= low)
        slope = sum(s.per_token_bytes + (s.windowed_bytes if s.window > low else 0) for s in shapes)
        if slope == 0:
            return 10**9
        tokens = (per_seq - fixed) // slope
        if tokens < low:
            break
        best = tokens if high is None else min(tokens, high)
    return best


def is_whole_draft_model(draft: Checkpoint | None) -> bool:
    """A draft that vLLM runs as a second model of its family (``draft_model``), not an MTP assistant or a
    speculator head."""
    return draft is not None and draft.family is not None and not draft.is_assistant


def _stage_shapes(models: list[Checkpoint], splits: list[tuple[int, int]], *, kv_dtype_bytes: int,
                  hybrid_kv_cache_manager: bool) -> list[KVShape]:
    """Each model's KV shape on one GPU: its ``(tensor, pipeline)`` parallel sizes from ``splits``."""
    return [_per_stage(kv_shape(model, kv_dtype_bytes=kv_dtype_bytes, hybrid_kv_cache_manager=hybrid_kv_cache_manager,
                                tensor_parallel_size=tp), pp)
            for model, (tp, pp) in zip(models, splits)]


def plan_memory(target: Checkpoint, draft: Checkpoint | None, profile: GpuProfile, *, max_model_len: int,
                gpu_memory_utilization: float | None = None, kv_cache_dtype: str = "fp8", max_num_seqs: int = 1,
                hybrid_kv_cache_manager: bool = False, tensor_parallel_size: int = 1,
                draft_tensor_parallel_size: int = 1, pipeline_parallel_size: int = 1) -> MemoryPlan:
    """Fit the weights and ``max_num_seqs`` x ``max_model_len`` tokens of KV into one GPU of ``profile``.

    With tensor parallelism each GPU holds 1/TP of a model's weights and its share of the KV heads; with
    pipeline parallelism 1/PP of the target's layers (the draft is counted whole on every stage).
    """
    utilization = gpu_memory_utilization if gpu_memory_utilization is not None else profile.gpu_memory_utilization
    dtype_bytes = 1 if kv_cache_dtype in FP8_KV_DTYPES else target.dtype_bytes
    models = [target] + ([draft] if draft is not None else [])
    splits = [(tensor_parallel_size, pipeline_parallel_size), (draft_tensor_parallel_size, 1)][:len(models)]
    shapes = _stage_shapes(models, splits, kv_dtype_bytes=dtype_bytes, hybrid_kv_cache_manager=hybrid_kv_cache_manager)
    budget = int(profile.total_bytes * utilization)
    target_weights = (target.weight_bytes or 0) // (tensor_parallel_size * pipeline_parallel_size)
    draft_weights = (draft.weight_bytes or 0) // draft_tensor_parallel_size if draft is not None else 0
    reserve = profile.runtime_reserve_bytes + (DRAFT_MODEL_RESERVE_BYTES if is_whole_draft_model(draft) else 0)
    kv_budget = budget - target_weights - draft_weights - reserve
    needed = max_num_seqs * sum(s.bytes_at(max_model_len) for s in shapes)
    longest = _longest_context(shapes, kv_budget, max_num_seqs)
    model_max = min((m.max_position_embeddings for m in models if m.max_position_embeddings), default=longest)
    longest = min(longest, model_max) // CONTEXT_STEP * CONTEXT_STEP
    fits = 0 < needed <= kv_budget or (needed == 0 and kv_budget >= 0)
    plan = MemoryPlan(
        profile=profile.name, device=profile.device, total_bytes=profile.total_bytes,
        gpu_memory_utilization=utilization, budget_bytes=budget,
        target_weight_bytes=target_weights, draft_weight_bytes=draft_weights,
        runtime_reserve_bytes=reserve, kv_cache_dtype=kv_cache_dtype,
        hybrid_kv_cache_manager=hybrid_kv_cache_manager, max_num_seqs=max_num_seqs,
        kv_budget_bytes=kv_budget, kv_bytes_per_token=sum(s.per_token_bytes + s.windowed_bytes for s in shapes),
        max_model_len=max_model_len, kv_bytes_needed=needed, fits=fits, max_context_that_fits=longest, advice=[],
    )
    if fits:
        return plan

    def fp8_context() -> int:
        return plan_memory(target, draft, profile, max_model_len=max_model_len, gpu_memory_utilization=utilization,
                           kv_cache_dtype="fp8", max_num_seqs=max_num_seqs,
                           hybrid_kv_cache_manager=hybrid_kv_cache_manager, tensor_parallel_size=tensor_parallel_size,
                           draft_tensor_parallel_size=draft_tensor_parallel_size,
                           pipeline_parallel_size=pipeline_parallel_size).max_context_that_fits

    return plan.model_copy(update={"advice": _advice(plan, shapes, fp8_context if dtype_bytes > 1 else None)})


def _advice(plan: MemoryPlan, shapes: list[KVShape], fp8_context: Callable[[], int] | None) -> list[str]:
    """What would make a plan that does not fit fit; ``fp8_context`` is given when the KV cache is not FP8."""
    longest, utilization = plan.max_context_that_fits, plan.gpu_memory_utilization
    advice = [f"--max-model-len {longest} fits at --gpu-memory-utilization {utilization:.2f}"
              if longest else "not even the weights fit; use a larger GPU or smaller checkpoints"]
    other = plan.target_weight_bytes + plan.draft_weight_bytes + plan.runtime_reserve_bytes + plan.kv_bytes_needed
    needed_utilization = other / plan.total_bytes
    if needed_utilization <= 0.95:
        advice.append(f"--gpu-memory-utilization {needed_utilization + 0.005:.2f} fits {plan.max_model_len} tokens")
    if fp8_context is not None:
        advice.append(f"--kv-cache-dtype fp8 halves the KV cache and fits {fp8_context()} tokens")
    if not plan.hybrid_kv_cache_manager and any(s.per_token_bytes for s in shapes):
        advice.append("sliding-window layers are counted in full: --disable-hybrid-kv-cache-manager keeps "
                      "their whole sequence")
    return advice
