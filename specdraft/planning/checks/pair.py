"""Compatibility checks of a draft/target pair, run before any GPU work.

Every check is a pure function of facts gathered beforehand (checkpoints, the installed vLLM,
hotfix reports) and returns one ``Finding``. Their names are stable: tests and ``--json`` users
key on them. Each group of checks has its module (``checks.checkpoints``, ``checks.drafter``,
``checks.vllm_install``, ``checks.chat_template``, over ``PairFacts`` from ``checks.pair_facts``);
``check_pair`` runs them in report order.
"""

from __future__ import annotations

from specdraft.families import rules_for
from specdraft.findings import Finding
from specdraft.planning.checks.chat_template import check_chat_template, check_checkpoint_template
from specdraft.planning.checks.checkpoints import (check_checkpoint, check_max_model_len, check_quantization,
                                                   check_special_tokens, check_vocab_size)
from specdraft.planning.checks.context import check_expected_context
from specdraft.planning.checks.drafter import (check_draft_tensor_parallel, check_kv_cache_manager,
                                               check_measured_loss, check_method, check_multimodal_target,
                                               suggest_mtp_assistant)
from specdraft.planning.checks.pair_facts import PairFacts
from specdraft.planning.checks.vllm_install import check_hotfixes, check_vllm

__all__ = [  # every pair check, wherever it is defined
    "PairFacts", "check_chat_template", "check_checkpoint", "check_checkpoint_template", "check_draft_tensor_parallel",
    "check_expected_context", "check_hotfixes", "check_kv_cache_manager", "check_max_model_len", "check_measured_loss",
    "check_method", "check_multimodal_target", "check_pair", "check_quantization", "check_special_tokens", "check_vllm",
    "check_vocab_size", "suggest_mtp_assistant",
]


def check_pair(facts: PairFacts) -> list[Finding]:
    """Every compatibility check, in report order."""
    findings = [check_vllm(facts.vllm, rules_for(facts.target.config)), check_checkpoint("target", facts.target)]
    draft = facts.draft
    if draft is not None:
        findings.append(check_checkpoint("draft", draft))
    speculative = facts.speculative
    # without speculation there is no proposer to check: the method, draft and pairing checks have nothing to judge
    if speculative is not None:
        findings.append(check_method(speculative, draft))
        tip = suggest_mtp_assistant(facts.target, facts.method, draft, facts.vllm.version)
        if tip is not None:
            findings.append(tip)
        loss = check_measured_loss(facts.target, facts.method, draft, facts.profile, facts.tensor_parallel_size)
        if loss is not None:
            findings.append(loss)
    if draft is not None and draft.is_known and facts.target.is_known:
        findings += [check_vocab_size(facts.target, draft), check_special_tokens(facts.target, draft)]
    if speculative is not None:
        findings.append(check_draft_tensor_parallel(speculative, facts.tensor_parallel_size))
    findings.append(check_max_model_len(facts.max_model_len, facts.target, draft if draft and draft.is_known else None))
    context = check_expected_context(facts.target, facts.method if speculative is not None else "none",
                                     facts.expected_context, facts.max_model_len, facts.profile)
    if context is not None:
        findings.append(context)
    findings.append(check_kv_cache_manager(facts.hybrid_kv_reason, facts.hybrid_kv_cache_manager_disabled,
                                           facts.hybrid_kv_kept_on))
    findings.append(check_hotfixes(facts.traits, facts.vllm, facts.hotfix_mode))
    if speculative is not None:
        findings.append(check_multimodal_target(facts.target, facts.method, facts.vllm, facts.language_model_only))
    findings += check_quantization(facts.target, draft, facts.target_quantization,
                                   speculative.quantization if speculative is not None else None,
                                   facts.compute_capability)
    findings.append(check_chat_template(facts))
    findings += check_checkpoint_template(facts)
    return findings
