"""Launch planning for speculative decoding of Gemma 4 on vLLM: facts, decisions, flags, checks.

``build_launch_plan`` is the entry point. It runs four steps, each a module with a typed result:
facts (``gather_facts`` -> ``LaunchFacts``: both checkpoints and the serving vLLM with its hotfix
reports), decisions (``decide`` -> ``Decisions``: speculative config and K, hybrid KV manager,
memory flags, chat template, async scheduling), serve flags (``SERVE_FLAG_RULES``: one rule per
flag, each with its reason) and checks (``check_pair`` and the command's own checks ->
``Finding``). Nothing here imports vllm or torch; the pieces are public so scripts can build or
check a plan step by step.
"""

from specdraft.findings import Finding, worst_level
from specdraft.planning._async_scheduling import AsyncSchedulingDecision, decide_async_scheduling
from specdraft.checkpoints import Checkpoint, Quantization, inspect_checkpoint
from specdraft.families import LayerKV
from specdraft.planning._checks import PairFacts, check_pair
from specdraft.planning._hybrid_kv import needs_hybrid_manager_disabled
from specdraft.planning._decisions import Decisions, decide
from specdraft.planning._facts import API_KEY_VARIABLE, LaunchFacts, gather_facts
from specdraft.planning._flag_rules import SERVE_FLAG_RULES, FlagRule, serve_flags
from specdraft.planning._memory import PROFILES, GpuProfile, KVShape, MemoryPlan, kv_shape, plan_memory
from specdraft.planning._method_costs import SHAPE_NAMES, StepModel, acceptance_for, step_model
from specdraft.planning._method_ranking import measured_shape
from specdraft.planning._methods import METHODS
from specdraft.planning._multimodal import MultimodalVerdict, multimodal_verdict
from specdraft.planning._nodes import VLLM_CLI_MODULE, NodeCommand, node_commands
from specdraft.planning._plan import LaunchPlan, build_launch_plan
from specdraft.planning._request import CliOption, LaunchRequest
from specdraft.planning._serve_plan import ServeFlag, ServePlan, describe_validation_error
from specdraft.planning._speculative import SpeculativeConfig
from specdraft.planning._template_choice import TemplateChoice
from specdraft.planning._vllm_flags import VllmArguments, read_vllm_arguments
from specdraft.planning._vllm_install import VllmFacts, gather_vllm_facts

__all__ = [
    "API_KEY_VARIABLE", "AsyncSchedulingDecision", "Checkpoint", "NodeCommand", "VLLM_CLI_MODULE", "node_commands", "CliOption", "Decisions", "Finding", "FlagRule", "GpuProfile", "KVShape",
    "LaunchFacts", "LaunchPlan", "LaunchRequest", "LayerKV", "MemoryPlan", "MultimodalVerdict", "PROFILES",
    "PairFacts", "Quantization", "SERVE_FLAG_RULES", "ServeFlag", "ServePlan", "SpeculativeConfig", "TemplateChoice",
    "VllmArguments", "VllmFacts", "build_launch_plan", "check_pair", "decide", "decide_async_scheduling",
    "describe_validation_error", "gather_facts", "gather_vllm_facts", "inspect_checkpoint", "kv_shape",
    "multimodal_verdict", "needs_hybrid_manager_disabled", "plan_memory", "read_vllm_arguments", "serve_flags",
    "worst_level", "METHODS", "SHAPE_NAMES", "StepModel", "acceptance_for", "measured_shape", "step_model",
]
