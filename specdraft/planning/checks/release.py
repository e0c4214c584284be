"""Checks of values and pairings vLLM would reject at start-up, or serve wrongly, before any GPU work.

Each check is a pure function of explicit facts (config.json dicts, the release's ``ReleaseSupport``
from the shipped table, the requested values) and returns one ``Finding``; the check names are stable.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from specdraft.findings import Finding
from specdraft.families import FAMILIES, rules_for
from specdraft.checkpoints import Checkpoint, language_model_parameters
from specdraft.planning.knowledge.release_support import ReleaseSupport, every_release, first_release, release_support
from specdraft.planning.knowledge.speculators import speculator_of

if TYPE_CHECKING:
    from specdraft.planning.decisions.decide import Decisions
    from specdraft.planning.facts.launch_facts import LaunchFacts

ASSISTANT_SHARED_KEYS = ("vocab_size", "num_key_value_heads", "head_dim", "global_head_dim",
                         "num_global_key_value_heads", "attention_k_eq_v")
"""Text-config keys an MTP assistant shares with its target: it reads the target's KV cache and tokens."""


def _text(config: Mapping) -> Mapping:
    return config.get("text_config") or config


def check_family(role: str, ref: str, config: Mapping, family: str | None, known: Iterable[str]) -> Finding:
    """A checkpoint whose family specdraft does not know gets no plan: its flags would be another family's."""
    if family is not None:
        return Finding.ok(f"{role}-family", f"{role} {ref} is {family}")
    model_type = config.get("model_type") or _text(config).get("model_type") or "without a model_type"
    architectures = ", ".join(config.get("architectures") or ()) or "no architectures"
    return Finding(level="error", check=f"{role}-family",
                   message=f"{role} {ref} is {model_type} ({architectures}); specdraft plans "
                           f"{', '.join(known)} only (its chat template, tool and reasoning parsers and KV rules)",
                   hint=f"pick a {' or '.join(known)} {role}, or run vllm serve yourself")


def check_assistant_target(target_ref: str, target: Mapping, assistant_ref: str, assistant: Mapping) -> Finding:
    """An MTP assistant runs on its target's hidden states and KV cache: widths and KV shapes must be the target's."""
    width = _text(target).get("hidden_size")
    backbone = rules_for(assistant).draft_backbone_width(assistant)
    differences = [] if backbone == width else [f"backbone_hidden_size {backbone} != target hidden_size {width}"]
    for key in ASSISTANT_SHARED_KEYS:
        ours, theirs = _text(assistant).get(key), _text(target).get(key)
        if ours is not None and theirs is not None and ours != theirs:
            differences.append(f"{key} {ours} != target's {theirs}")
    if differences:
        return Finding(level="error", check="assistant-target",
                       message=f"MTP assistant {assistant_ref} was built for another target than {target_ref}: "
                               + "; ".join(differences),
                       hint="use the assistant published beside the target (same size), e.g. "
                            "google/gemma-4-31B-it-assistant for google/gemma-4-31B-it")
    return Finding.ok("assistant-target", f"{assistant_ref} fits {target_ref} (backbone width {width}, same KV shapes)")


def check_release_method(method: str, draft_model_type: str | None, target_architectures: Iterable[str],
                         support: ReleaseSupport | None, version: str | None) -> Finding:
    """The speculative method and the models' architectures exist in the serving release."""
    if support is None:
        return Finding(level="warning", check="release-support",
                       message=f"vLLM {version or '(version unknown)'} is not in specdraft's release table "
                               f"(0.19.0-0.33.0): whether it has method {method} and these models is unchecked",
                       hint="pass --python or --vllm-root with the vLLM that will serve")
    if method not in support.speculative_methods:
        return Finding(level="error", check="release-support",
                       message=f"vLLM {version} has no speculative method {method!r} "
                               f"(it has {', '.join(support.speculative_methods)})",
                       hint="use another vLLM release, or another --method")
    if method == "mtp" and draft_model_type not in support.gemma4_assistant_model_types:
        first = first_release(lambda release: draft_model_type in release.gemma4_assistant_model_types)
        return Finding(level="error", check="release-support",
                       message=f"vLLM {version} cannot drive a {draft_model_type} draft with method mtp "
                               "(its SpeculativeConfig does not map that model type to gemma4_mtp)",
                       hint=(f"pip install 'vllm>={first}'" if first else "use another release")
                       + ", or a draft_model draft")
    return check_release_architectures(target_architectures, support, version) or \
        Finding.ok("release-support", f"vLLM {version} has method {method} and the target's architecture")


def check_release_architectures(target_architectures: Iterable[str], support: ReleaseSupport,
                                version: str | None) -> Finding | None:
    """The target's Gemma 4 architectures are in the release's model registry (None: they are)."""
    missing = [a for a in target_architectures if a.startswith("Gemma4") and a not in support.gemma4_architectures]
    if not missing:
        return None
    first = first_release(lambda release: all(a in release.gemma4_architectures for a in missing))
    return Finding(level="error", check="release-support",
                   message=f"vLLM {version} has no {', '.join(missing)} model (not in its "
                           "model_executor/models/registry.py), so it cannot serve this target",
                   hint=f"pip install 'vllm>={first}'" if first else "serve another target")


def check_num_speculative_tokens(k: int, support: ReleaseSupport | None, version: str | None) -> Finding:
    """A decode step of K + 1 tokens must fit vLLM's default CUDA-graph ceiling (it refuses at start-up);
    for a release outside the table, the highest ceiling of any release in it."""
    ceilings = [support.cudagraph_capture_ceiling] if support else \
        [s.cudagraph_capture_ceiling for _, s in every_release()]
    ceiling = max((c for c in ceilings if c), default=None)
    where = f"vLLM {version}" if support else "every vLLM release 0.19.0-0.33.0"
    if ceiling is not None and k + 1 > ceiling:
        return Finding(level="error", check="num-speculative-tokens",
                       message=f"K = {k}: {where} captures CUDA graphs of at most {ceiling} tokens and refuses "
                               f"a decode step of K + 1 = {k + 1} ('No valid cudagraph sizes after rounding')",
                       hint=f"pass --num-speculative-tokens {min(k, ceiling - 1, 16)} (python -m specdraft tune "
                            "picks K for your pair)")
    return Finding.ok("num-speculative-tokens", f"K = {k}")


def check_context_room(max_model_len: int, k: int) -> Finding | None:
    """A context shorter than one verification step (K + 1 tokens) plus a prompt serves nothing (None: room enough;
    ``max-model-len``'s own verdict covers the upper bound)."""
    if max_model_len <= k + 1:
        return Finding(level="error", check="max-model-len",
                       message=f"max_model_len {max_model_len} leaves no room for a prompt beside one verification "
                               f"step of K + 1 = {k + 1} tokens; every request would be refused as too long",
                       hint="drop --max-model-len (specdraft picks the longest that fits)")
    return None


def check_kv_cache_dtype(dtype: str, support: ReleaseSupport | None, version: str | None) -> Finding:
    """``--kv-cache-dtype`` must be one of the release's ``CacheDType`` choices (argparse refuses others); for a
    release outside the table, one of any release's."""
    choices = support.kv_cache_dtypes if support else tuple(dict.fromkeys(
        dtype for _, release in every_release() for dtype in release.kv_cache_dtypes))
    if dtype in choices:
        return Finding.ok("kv-cache-dtype", f"{dtype} is a choice of vLLM {version}" if support else dtype)
    where = f"vLLM {version}" if support else "any vLLM release 0.19.0-0.33.0"
    return Finding(level="error", check="kv-cache-dtype",
                   message=f"--kv-cache-dtype {dtype!r} is not a choice of {where} ({', '.join(choices)})",
                   hint="pass --kv-cache-dtype fp8 (or auto for the model's dtype)")


def check_tensor_parallel(tensor_parallel_size: int, draft_tensor_parallel_size: int, target: Mapping,
                          draft: Mapping | None, gpus: int, profile: str) -> Finding:
    """vLLM splits attention heads across the TP ranks; the ranks must exist on the profile's machine."""
    problems = []
    if tensor_parallel_size > gpus:
        problems.append(f"tensor_parallel_size {tensor_parallel_size} needs {tensor_parallel_size} GPUs; "
                        f"profile {profile} has {gpus}")
    heads = {role: _text(config).get("num_attention_heads") for role, config in (("target", target), ("draft", draft))
             if config and _text(config).get("num_attention_heads")}
    for role, size in (("target", tensor_parallel_size), ("draft", draft_tensor_parallel_size)):
        if role in heads and heads[role] % size:
            problems.append(f"the {role}'s {heads[role]} attention heads do not divide by its tensor-parallel size "
                            f"{size} (vLLM: 'Total number of attention heads must be divisible by tensor parallel "
                            "size')")
    if not problems:
        return Finding.ok("tensor-parallel",
                          f"target {tensor_parallel_size}, draft {draft_tensor_parallel_size} on {gpus} GPU(s)")
    fitting = [d for d in range(1, gpus + 1) if all(h % d == 0 for h in heads.values())]
    return Finding(level="error", check="tensor-parallel", message="; ".join(problems),
                   hint=f"pass --tensor-parallel-size {fitting[0]}" if len(fitting) == 1
                   else f"use a size among {', '.join(map(str, fitting))}")


def check_draft_size(target_ref: str, target_params: int | None, draft_ref: str, draft_params: int | None) -> Finding:
    """A draft as large as its target cannot make decoding faster: every drafted token costs a target step. One larger
    than its target is refused: the two were most likely given the wrong way round."""
    if not target_params or not draft_params or draft_params < target_params:
        ratio = f" ({draft_params / target_params:.0%} of the target)" if target_params and draft_params else ""
        return Finding.ok("draft-size", "draft smaller than target" + ratio)
    if draft_params > target_params:
        return Finding(level="error", check="draft-size",
                       message=f"draft {draft_ref} ({draft_params / 1e9:.2f}B parameters) is larger than target "
                               f"{target_ref} ({target_params / 1e9:.2f}B): target and draft swapped?",
                       hint=f"specdraft launch --target {shlex.quote(draft_ref)} --draft {shlex.quote(target_ref)} ...")
    return Finding(level="warning", check="draft-size",
                   message=f"draft {draft_ref} has {draft_params / 1e9:.2f}B parameters, target {target_ref} "
                           f"{target_params / 1e9:.2f}B: a draft this large cannot speed decoding up",
                   hint="pick a smaller draft (E2B or E4B beside the 31B) or the target's MTP assistant")


def parameter_count(checkpoint: Checkpoint) -> int | None:
    """The language model's parameters: as shipped or computed when the checkpoint was read, else the formula."""
    return checkpoint.language_model_params or language_model_parameters(checkpoint.config)


def release_verdicts(target: Checkpoint, draft: Checkpoint | None, *, method: str | None, k: int | None,
                     max_model_len: int,
                     kv_cache_dtype: str, tensor_parallel_size: int, draft_tensor_parallel_size: int,
                     version: str | None, profile: str, gpus: int) -> list[Finding]:
    """The checks above for one plan, in report order: the pairing, the release, then the values (``method`` and
    ``k`` None: a plan without speculation, whose method and K are not checked)."""
    support = release_support(version)
    known = [family.display_name for family in FAMILIES]
    # a speculator's family is its verifier's (checked by the speculator checks), not its own config's
    draft = draft if draft is not None and draft.is_known and speculator_of(draft) is None else None
    findings = [check_family(role, checkpoint.ref, checkpoint.config,
                             checkpoint.family.display_name if checkpoint.family else None, known)
                for role, checkpoint in (("target", target), ("draft", draft)) if checkpoint and checkpoint.is_known]
    if target.is_known and draft is not None and not draft.is_assistant:
        findings.append(check_draft_size(target.ref, parameter_count(target), draft.ref, parameter_count(draft)))
    if draft is not None and draft.is_assistant and target.is_known:
        findings.append(check_assistant_target(target.ref, target.config, draft.ref, draft.config))
    if version is not None and method is not None:
        findings.append(check_release_method(method, draft.model_type if draft is not None else None,
                                             target.architectures, support, version))
    elif support is not None:  # no speculation: the target alone must still be a model of the release
        findings += [f for f in [check_release_architectures(target.architectures, support, version)] if f]
    if k is not None:
        findings.append(check_num_speculative_tokens(k, support, version))
        room = check_context_room(max_model_len, k)
        if room is not None:
            findings.append(room)
    findings.append(check_kv_cache_dtype(kv_cache_dtype, support, version))
    findings.append(check_tensor_parallel(tensor_parallel_size, draft_tensor_parallel_size,
                                          target.config, draft.config if draft is not None else None, gpus, profile))
    return findings


def plan_verdicts(facts: LaunchFacts, decided: Decisions) -> list[Finding]:
    """``release_verdicts`` for a plan: the request's values as decided, against the serving vLLM."""
    choice, moe_backend = decided.speculative, decided.moe_backend
    return release_verdicts(
        facts.target, facts.draft,
        method=choice.resolved_method if choice is not None else None,
        k=choice.config.num_speculative_tokens if choice is not None else None,
        max_model_len=decided.memory.max_model_len, kv_cache_dtype=decided.kv_cache.dtype,
        tensor_parallel_size=decided.parallel.tensor_parallel_size,
        draft_tensor_parallel_size=decided.parallel.draft_tensor_parallel_size,
        version=facts.vllm.version, profile=decided.parallel.topology.name, gpus=decided.parallel.topology.gpus,
    ) + ([moe_backend.finding] if moe_backend is not None else [])
