"""Launch planning for speculative decoding of Gemma 4 on vLLM: facts, decisions, flags, checks.

``build_launch_plan`` is the entry point. It runs four steps, each a subpackage with a typed result:
``facts`` (``gather_facts`` -> ``LaunchFacts``: both checkpoints, the serving vLLM, the chat template; the only
step that reads), ``decisions`` (``decide`` -> ``Decisions``: one module per decision, each made once),
``flags`` (``SERVE_FLAG_RULES``: one rule per flag, each with its reason) and ``checks`` (``check_pair`` and the
command's own checks -> ``Finding``); ``plan`` assembles them. ``knowledge`` holds what every step may read.
Nothing here imports vllm or torch; the pieces are public so scripts can build or check a plan step by step.
"""

from specdraft.findings import Finding, worst_level
from specdraft.planning.decisions.async_scheduling import AsyncSchedulingDecision, decide_async_scheduling
from specdraft.checkpoints import Checkpoint, Quantization, inspect_checkpoint
from specdraft.families import LayerKV
from specdraft.planning.checks.pair import PairFacts, check_pair
from specdraft.planning.decisions.hybrid_kv import hybrid_kv_reason
from specdraft.planning.decisions.decide import Decisions, decide
from specdraft.planning.facts.launch_facts import API_KEY_VARIABLE, LaunchFacts, gather_facts
from specdraft.planning.flags.serve_flags import SERVE_FLAG_RULES, FlagRule, serve_flags
from specdraft.planning.knowledge.gpu_memory import PROFILES, GpuProfile, KVShape, MemoryPlan, kv_shape, plan_memory
from specdraft.planning.knowledge.method_costs import acceptance_for
from specdraft.planning.facts.method_ranking import measured_size
from specdraft.planning.knowledge.methods import METHODS
from specdraft.planning.facts.multimodal import MultimodalVerdict, multimodal_verdict
from specdraft.planning.knowledge.serve_command import VLLM_CLI_MODULE
from specdraft.planning.plan.node_commands import NodeCommand, node_commands
from specdraft.planning.plan.launch_plan import LaunchPlan, build_launch_plan
from specdraft.planning.request import CliOption, LaunchRequest
from specdraft.planning.knowledge.serve_command import ServeFlag, ServePlan, describe_validation_error
from specdraft.planning.knowledge.speculative_config import SpeculativeConfig
from specdraft.planning.facts.chat_template import TemplateChoice
from specdraft.planning.facts.vllm_arguments import VllmArguments, read_vllm_arguments
from specdraft.planning.facts.vllm_install import VllmFacts, gather_vllm_facts

__all__ = [
    "API_KEY_VARIABLE", "AsyncSchedulingDecision", "Checkpoint", "NodeCommand", "VLLM_CLI_MODULE", "node_commands", "CliOption", "Decisions", "Finding", "FlagRule", "GpuProfile", "KVShape",
    "LaunchFacts", "LaunchPlan", "LaunchRequest", "LayerKV", "MemoryPlan", "MultimodalVerdict", "PROFILES",
    "PairFacts", "Quantization", "SERVE_FLAG_RULES", "ServeFlag", "ServePlan", "SpeculativeConfig", "TemplateChoice",
    "VllmArguments", "VllmFacts", "build_launch_plan", "check_pair", "decide", "decide_async_scheduling",
    "describe_validation_error", "gather_facts", "gather_vllm_facts", "inspect_checkpoint", "kv_shape",
    "multimodal_verdict", "hybrid_kv_reason", "plan_memory", "read_vllm_arguments", "serve_flags",
    "worst_level", "METHODS", "acceptance_for", "measured_size",
]
