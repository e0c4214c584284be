"""The ``vllm serve`` flags, one rule per flag: each returns the flag with its reason, or None.

A rule is a function of the facts and the decisions; ``SERVE_FLAG_RULES`` lists them in the order
the flags are emitted. The flags vLLM does not define, and those the user repeats after ``--``,
are removed afterwards (``checks.command``), with a finding.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from specdraft.families import ModelFamily, rules_for
from specdraft.planning.decisions.hybrid_kv import HYBRID_FLAG
from specdraft.planning.decisions.decide import Decisions
from specdraft.planning.facts.launch_facts import LaunchFacts
from specdraft.planning.decisions.kv_cache import ATTENTION_BACKEND_FLAG
from specdraft.planning.knowledge.serve_command import ServeFlag

FlagRule = Callable[[LaunchFacts, Decisions], "ServeFlag | None"]
LANGUAGE_MODEL_ONLY = "--language-model-only"


# the models


def quantization(facts: LaunchFacts, decided: Decisions) -> ServeFlag | None:
    given = facts.request.quantization
    method = given or facts.target.quantization.method
    if not method:
        return None
    reason = "given" if given else f"the target checkpoint is {method} (read from {facts.target.source})"
    return ServeFlag(name="--quantization", value=method, reason=reason)


def moe_backend(facts: LaunchFacts, decided: Decisions) -> ServeFlag | None:
    choice = decided.moe_backend
    if choice is None or choice.value is None:
        return None
    return ServeFlag(name="--moe-backend", value=choice.value, reason=choice.reason)


def revision(facts: LaunchFacts, decided: Decisions) -> ServeFlag | None:
    if not facts.request.revision:
        return None
    return ServeFlag(name="--revision", value=facts.request.revision, reason="target revision given")


def _parallel_size(name: str, size: int, given: int | None, unset_reason: str) -> ServeFlag | None:
    if size <= 1:
        return None
    return ServeFlag(name=name, value=str(size), reason="given" if given else unset_reason)


def tensor_parallel(facts: LaunchFacts, decided: Decisions) -> ServeFlag | None:
    parallel = decided.parallel
    return _parallel_size("--tensor-parallel-size", parallel.tensor_parallel_size, facts.request.tensor_parallel_size,
                          f"the target spread over {parallel.topology.name}'s GPUs (its heads divide by it)")


def pipeline_parallel(facts: LaunchFacts, decided: Decisions) -> ServeFlag | None:
    return _parallel_size("--pipeline-parallel-size", decided.parallel.pipeline_parallel_size, 1, "")


def data_parallel(facts: LaunchFacts, decided: Decisions) -> ServeFlag | None:
    return _parallel_size("--data-parallel-size", decided.parallel.data_parallel_size, 1, "")


def speculative_config(facts: LaunchFacts, decided: Decisions) -> ServeFlag | None:
    choice = decided.speculative
    if choice is None:  # the target alone: decided.no_speculation says why, the checks report it
        return None
    config = choice.config
    if decided.kv_cache.drafter_attention_backend is not None:
        config = config.model_copy(update={"attention_backend": decided.kv_cache.drafter_attention_backend})
    source = config.model or f"the {choice.resolved_method} proposer (no draft checkpoint)"
    reason = (f"{config.num_speculative_tokens} draft tokens per step ({choice.k_reason}) from {source}"
              + (f", quantization {config.quantization}" if config.quantization else "")
              + (f"; method set because {choice.method_reason}" if choice.method_reason else "")
              + (f"; {decided.k_schedule.reason}" if decided.k_schedule.k is not None else ""))
    return ServeFlag(name="--speculative-config", value=config.to_vllm(), reason=reason)


# memory


def max_model_len(facts: LaunchFacts, decided: Decisions) -> ServeFlag:
    memory = decided.memory
    return ServeFlag(name="--max-model-len", value=str(memory.max_model_len), reason=memory.max_model_len_reason)


def max_num_seqs(facts: LaunchFacts, decided: Decisions) -> ServeFlag:
    return ServeFlag(name="--max-num-seqs", value=str(facts.request.max_num_seqs),
                     reason="concurrent sequences; 1 is the validated single-user setup")


def gpu_memory_utilization(facts: LaunchFacts, decided: Decisions) -> ServeFlag:
    memory = decided.memory
    return ServeFlag(name="--gpu-memory-utilization", value=f"{memory.utilization:.2f}",
                     reason=memory.utilization_reason)


def kv_cache_dtype(facts: LaunchFacts, decided: Decisions) -> ServeFlag:
    choice = decided.kv_cache
    return ServeFlag(name="--kv-cache-dtype", value=choice.dtype, reason=choice.dtype_reason)


def attention_backend(facts: LaunchFacts, decided: Decisions) -> ServeFlag | None:
    choice = decided.kv_cache
    if choice.attention_backend is None:
        return None
    return ServeFlag(name=ATTENTION_BACKEND_FLAG, value=choice.attention_backend, reason=choice.attention_reason)


def prefix_caching(facts: LaunchFacts, decided: Decisions) -> ServeFlag:
    return ServeFlag(name="--enable-prefix-caching",
                     reason="reuses the KV of repeated prompt prefixes (agent loops, chat history)")


# what the engine must be told about the pair


def hybrid_kv_cache_manager(facts: LaunchFacts, decided: Decisions) -> ServeFlag | None:
    if not decided.hybrid_kv_reason:
        return None
    return ServeFlag(name=HYBRID_FLAG, reason=f"{decided.hybrid_kv_reason}; with the hybrid manager on, the V1 model "
                                              "runner's drafter refuses such a pair")


def language_model_only(facts: LaunchFacts, decided: Decisions) -> ServeFlag | None:
    """A multimodal target on a release whose draft_model refuses one serves text only."""
    target, vllm = facts.target, facts.vllm
    refused = (target.is_known and target.is_multimodal and vllm.accepts_multimodal_target is False
               and decided.method == "draft_model"
               and LANGUAGE_MODEL_ONLY in vllm.multimodal_workaround)
    if not refused or LANGUAGE_MODEL_ONLY in facts.request.extra_args:
        return None
    return ServeFlag(name=LANGUAGE_MODEL_ONLY,
                     reason=f"vLLM {vllm.version}'s draft_model refuses multimodal targets; the target serves text "
                            "only")


def async_scheduling(facts: LaunchFacts, decided: Decisions) -> ServeFlag | None:
    decision = decided.async_scheduling
    return ServeFlag(name=decision.flag, reason=decision.reason) if decision.flag else None


# the chat surface: the target's family names its parsers and template


def _family(facts: LaunchFacts) -> ModelFamily:
    return rules_for(facts.target.config)


def auto_tool_choice(facts: LaunchFacts, decided: Decisions) -> ServeFlag | None:
    """vLLM refuses --enable-auto-tool-choice without a tool-call parser."""
    if _family(facts).tool_call_parser is None:
        return None
    return ServeFlag(name="--enable-auto-tool-choice", reason="lets the model call tools when a request offers them")


def _parser(option: str, parser: str | None, reason: str) -> ServeFlag | None:
    return ServeFlag(name=option, value=parser, reason=reason) if parser else None


def tool_call_parser(facts: LaunchFacts, decided: Decisions) -> ServeFlag | None:
    family = _family(facts)
    return _parser("--tool-call-parser", family.tool_call_parser,
                   f"parses {family.display_name}'s tool-call markers into tool_calls")


def reasoning_parser(facts: LaunchFacts, decided: Decisions) -> ServeFlag | None:
    family = _family(facts)
    return _parser("--reasoning-parser", family.reasoning_parser,
                   f"moves {family.display_name}'s thought channel into `reasoning`, never `content`")


def content_format(facts: LaunchFacts, decided: Decisions) -> ServeFlag:
    return ServeFlag(name="--chat-template-content-format", value="openai",
                     reason="renders content as OpenAI parts, the shape the template handles in history")


def thinking_default(facts: LaunchFacts, decided: Decisions) -> ServeFlag:
    thinking = facts.request.enable_thinking
    return ServeFlag(name="--default-chat-template-kwargs", value=json.dumps({"enable_thinking": thinking}),
                     reason="thinking " + ("on" if thinking else "off") + " by default (a boolean, never a string)")


def chat_template(facts: LaunchFacts, decided: Decisions) -> ServeFlag | None:
    path = decided.template.path
    if path is None:
        return None
    reason = "given" if facts.request.chat_template else (
        f"specdraft's {facts.target.template_variant!r} {_family(facts).display_name} template (checked for "
        "thought-channel leaks)")
    return ServeFlag(name="--chat-template", value=str(path), reason=reason)


SERVE_FLAG_RULES: tuple[FlagRule, ...] = (
    quantization, moe_backend, revision, tensor_parallel, pipeline_parallel, data_parallel, speculative_config,
    max_model_len, max_num_seqs, gpu_memory_utilization, kv_cache_dtype, attention_backend, prefix_caching,
    hybrid_kv_cache_manager, language_model_only, async_scheduling,
    auto_tool_choice, tool_call_parser, reasoning_parser, content_format, thinking_default, chat_template,
)


def serve_flags(facts: LaunchFacts, decided: Decisions) -> list[ServeFlag]:
    """Every rule's flag, in ``SERVE_FLAG_RULES`` order."""
    return [flag for rule in SERVE_FLAG_RULES if (flag := rule(facts, decided)) is not None]
