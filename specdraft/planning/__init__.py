"""Speculative-decoding configuration for Gemma 4 on vLLM: models, checkpoint facts, checks, memory, argv.

Nothing here imports vllm or torch. ``build_launch_plan`` is the entry point; the pieces it uses
are public so launch scripts can build or check a plan step by step.
"""

from specdraft.planning._async_scheduling import AsyncSchedulingDecision, decide_async_scheduling
from specdraft.planning._checkpoint import Checkpoint, LayerKV, Quantization, inspect_checkpoint
from specdraft.planning._checks import HotfixState, PairFacts, VllmFacts, check_pair, needs_hybrid_manager_disabled
from specdraft.findings import Finding, worst_level
from specdraft.planning._memory import PROFILES, GpuProfile, KVShape, MemoryPlan, kv_shape, plan_memory
from specdraft.planning._multimodal import MultimodalVerdict, multimodal_verdict
from specdraft.planning._plan import LaunchPlan, LaunchRequest, build_launch_plan, gather_vllm_facts
from specdraft.planning._serve_plan import ServeFlag, ServePlan, describe_validation_error
from specdraft.planning._speculative import SpeculativeConfig
from specdraft.planning._vllm_flags import VllmArguments, read_vllm_arguments

__all__ = [
    "AsyncSchedulingDecision", "Checkpoint", "Finding", "GpuProfile", "HotfixState", "KVShape", "LaunchPlan",
    "LaunchRequest", "LayerKV", "MemoryPlan", "MultimodalVerdict", "PROFILES", "PairFacts", "Quantization",
    "ServeFlag", "ServePlan", "SpeculativeConfig", "VllmArguments", "VllmFacts", "build_launch_plan", "check_pair", "decide_async_scheduling",
    "describe_validation_error", "gather_vllm_facts", "inspect_checkpoint", "kv_shape", "multimodal_verdict",
    "needs_hybrid_manager_disabled", "plan_memory", "read_vllm_arguments", "worst_level",
]
