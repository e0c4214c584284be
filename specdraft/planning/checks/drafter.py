"""The pair checks of the drafter beside its target: the method that drives it, its tensor parallel size, the KV
cache groups it shares, a multimodal target, pairings measured to lose, and the published MTP assistant tip."""

from __future__ import annotations

import shlex

from specdraft.checkpoints import Checkpoint, published_assistant, published_assistant_facts
from specdraft.families import rules_for
from specdraft.findings import Finding
from specdraft.patching import Trait
from specdraft.planning.decisions.hybrid_kv import HYBRID_FLAG, ONE_GROUP
from specdraft.planning.decisions.pairing_traits import hotfixes_needed
from specdraft.planning.facts.moe_layout import is_moe_target
from specdraft.planning.facts.vllm_install import VllmFacts
from specdraft.planning.knowledge.release_support import first_release, release_support
from specdraft.planning.knowledge.speculative_config import AUTODETECT_MARKERS, SpeculativeConfig


def check_method(speculative: SpeculativeConfig, draft: Checkpoint | None) -> Finding:
    method, model = speculative.method, speculative.model or ""
    if method is None and any(m in model.lower() for m in AUTODETECT_MARKERS):
        return Finding(level="error", check="speculative-method",
                       message=f"draft path {model!r} contains one of {', '.join(AUTODETECT_MARKERS)}: without "
                               "'method' "
                               "vLLM would treat it as an EAGLE/DFlash/DSpark head",
                       hint="pass --method draft_model")
    family = rules_for(draft.config).display_name if draft is not None else ""
    if draft is not None and draft.is_assistant and method not in (None, "mtp"):
        return Finding(level="error", check="speculative-method",
                       message=f"{model} is a {family} MTP assistant; method={method!r} cannot drive it",
                       hint="pass --method mtp")
    if draft is not None and not draft.is_assistant and method == "mtp":
        return Finding(level="error", check="speculative-method",
                       message=f"method='mtp' needs a {family} assistant checkpoint; {model} is a full model",
                       hint="pass --method draft_model")
    shown = method or "draft_model (vLLM detects it from the draft checkpoint)"
    return Finding.ok("speculative-method", f"method {shown}")


def check_draft_tensor_parallel(speculative: SpeculativeConfig, tensor_parallel_size: int) -> Finding:
    draft_tp, method = speculative.draft_tensor_parallel_size, speculative.method or "draft_model"
    if method in ("ngram", "suffix"):
        if draft_tp is not None:
            return Finding(level="error", check="draft-tensor-parallel",
                           message=f"draft_tensor_parallel_size={draft_tp} given, but method={method!r} has no "
                                   "draft model",
                           hint="drop --draft-tensor-parallel-size")
        return Finding.ok("draft-tensor-parallel", f"method {method} has no draft model")
    if draft_tp is None:
        return Finding.ok("draft-tensor-parallel",
                          f"vLLM uses the target's tensor_parallel_size {tensor_parallel_size}")
    if method == "draft_model" and draft_tp != tensor_parallel_size:
        return Finding(level="error", check="draft-tensor-parallel",
                       message=f"draft_tensor_parallel_size={draft_tp} but "
                               f"tensor_parallel_size={tensor_parallel_size}: "
                               "vLLM's draft_model proposer needs them equal",
                       hint=f"pass --draft-tensor-parallel-size {tensor_parallel_size}")
    if draft_tp not in (1, tensor_parallel_size):
        return Finding(level="error", check="draft-tensor-parallel",
                       message=f"draft_tensor_parallel_size={draft_tp} must be 1 or tensor_parallel_size "
                               f"({tensor_parallel_size}) for method {method}",
                       hint="pass --draft-tensor-parallel-size 1")
    return Finding.ok("draft-tensor-parallel", f"draft {draft_tp}, target {tensor_parallel_size}")


def check_kv_cache_manager(why: str | None, disabled: bool, kept_on: str | None = None) -> Finding:
    """The command against the hybrid KV decision: ``why`` is ``Decisions.hybrid_kv_reason`` (None: the pair can
    keep the hybrid manager), ``disabled`` whether the command turns the manager off, ``kept_on``
    ``Decisions.hybrid_kv_kept_on`` (why a draft whose layers span several groups may keep it: Model Runner V2)."""
    if why and not disabled:
        return Finding(level="error", check="hybrid-kv-cache",
                       message=f"{why}: with the hybrid KV cache manager on, vLLM refuses the pair on the V1 model "
                               "runner ('All drafting layers should belong to the same kv cache group')",
                       hint=f"keep {HYBRID_FLAG} in the plan")
    if why:
        return Finding.ok("hybrid-kv-cache", f"{why}: {HYBRID_FLAG} is set")
    return Finding.ok("hybrid-kv-cache", kept_on or ONE_GROUP)


def _serves_assistant(support, model_type: str | None) -> bool:
    return "mtp" in support.speculative_methods and (model_type is None
                                                     or model_type in support.gemma4_assistant_model_types)


def suggest_mtp_assistant(target: Checkpoint, method: str, draft: Checkpoint | None,
                          version: str | None = None) -> Finding | None:
    """A tip, not a verdict (None when it does not apply): a draft model (``method``, the decided one that vLLM
    runs) beside a target that has a published MTP assistant, which measured ~2x faster (docs/gpu/README.md: H100,
    vLLM 0.26.0, the 31B, forced acceptance).
    Where the serving release (``version``) is known and refuses that assistant (method mtp or its model type), the
    tip names the first release that serves it, or is not given when none does."""
    if draft is None or not draft.is_known or draft.is_assistant:
        return None
    if method != "draft_model":
        return None
    assistant = published_assistant_facts(target)
    if assistant is None:
        return None
    model_type = assistant.config.get("model_type")
    support = release_support(version)
    upgrade, first = "", None
    if support is not None and not _serves_assistant(support, model_type):
        first = first_release(lambda release: _serves_assistant(release, model_type))
        if first is None:
            return None
        upgrade = f" (vLLM {version} refuses it: it needs vLLM {first} or later)"
    hotfixes = ", ".join(hotfixes_needed(frozenset({Trait.GEMMA4_MTP_ASSISTANT})))
    return Finding(level="info", check="mtp-assistant",
                   message=f"tip: --draft {assistant.repo_id}, the target's MTP assistant (method mtp), decoded ~2x as "
                           "fast as an E2B draft_model pairing on an H100 (31B: 155 vs 79 tok/s at forced acceptance "
                           f"0.85, vLLM 0.26.0){upgrade}" + (f"; specdraft applies {hotfixes} where the serving vLLM "
                                                             "needs it" if hotfixes else ""),
                   hint=f"launch --draft {assistant.repo_id}" + (f" with vLLM >= {first}" if first else ""))


_MOE_LOSS = ("a draft model beside a mixture-of-experts target decoded slower than the target alone at every K "
             "measured (0.15-0.62x on an H200, vLLM 0.26.0, forced acceptance 0.85 and 0.70, docs/gpu/README.md "
             "section 6): the 4 ms target step cannot hide the draft's launch cost", "1.67x at K = 4")
_TENSOR_PARALLEL_LOSS = ("a draft model beside a tensor-parallel target decoded no faster than the target alone "
                         "(31B-shaped target + E2B-shaped draft at TP 2 on two H100s, K = 3: 0.94x at forced "
                         "acceptance 0.85, 0.96x at 0.70, means of 4 requests that ranged 0.77-1.20x, vLLM 0.26.0, "
                         "docs/gpu/README.md section 8): the target's step halves "
                         "(14.2 ms) while the draft, split over both GPUs, still launches every layer from the host",
                         "3.45x at K = 8 on the same machine")


def check_measured_loss(target: Checkpoint, method: str, draft: Checkpoint | None, profile: str | None,
                        tensor_parallel_size: int = 1) -> Finding | None:
    """A warning where the pairing (``method``, the decided one that vLLM runs) was measured slower than its target
    alone (None: not measured to lose).

    Two measurements on Hopper GPUs with vLLM 0.26.0 (docs/gpu/README.md): an E2B-shaped draft beside the
    26B-A4B-shaped MoE target lost at every K from 1 to 8 on an H200 (section 6; the MTP assistant won, 1.67x at
    K = 4), and beside the 31B-shaped target at tensor parallel size 2 on two H100s it lost at K = 3 (section 8;
    the MTP assistant won, 3.45x at K = 8).
    """
    if profile not in ("h100", "h200") or method != "draft_model":
        return None
    if draft is None or draft.is_assistant:
        return None
    if is_moe_target(target):
        message, assistant_speedup = _MOE_LOSS
    elif tensor_parallel_size >= 2:
        message, assistant_speedup = _TENSOR_PARALLEL_LOSS
    else:
        return None
    assistant = published_assistant(target)
    return Finding(level="warning", check="measured-loss",
                   message=message + (f"; its MTP assistant {assistant} measured {assistant_speedup}" if assistant
                                      else ""),
                   hint=(f"launch --draft {assistant}" if assistant
                         else f"serve the target without speculation: specdraft launch --target {shlex.quote(target.ref)} "
                              "--method none"))


def check_multimodal_target(target: Checkpoint, method: str, vllm: VllmFacts,
                            language_model_only: bool = False) -> Finding:
    """Whether the serving vLLM's draft_model proposer takes a multimodal target (``method``: the decided one)."""
    if method != "draft_model" or not target.is_known or not target.is_multimodal:
        reason = "target is text-only" if target.is_known and not target.is_multimodal else "not a draft_model pairing"
        return Finding.ok("multimodal-target", reason if target.is_known else "target unknown")
    architecture = ", ".join(target.architectures) or "vision/audio config present"
    if vllm.accepts_multimodal_target is False and language_model_only and vllm.multimodal_workaround:
        return Finding(level="warning", check="multimodal-target",
                       message=f"target {target.ref} is multimodal ({architecture}) and vLLM {vllm.version}'s "
                               "draft_model refuses multimodal targets; --language-model-only makes it serve text "
                               f"only ({vllm.multimodal_basis})",
                       hint="for image/audio prompts use a vLLM release from 0.21.0 on")
    if vllm.accepts_multimodal_target is False:
        return Finding(level="error", check="multimodal-target",
                       message=f"target {target.ref} is multimodal ({architecture}) and vLLM {vllm.version}'s "
                               "draft_model refuses multimodal targets ('does not support multimodal models yet'; "
                               f"{vllm.multimodal_basis})",
                       hint=("add --language-model-only (text only), " if vllm.multimodal_workaround else "")
                       + f"use a text-only target ({rules_for(target.config).text_only_architecture}) or another "
                         "vLLM release")
    if vllm.accepts_multimodal_target is None:
        return Finding(level="warning", check="multimodal-target",
                       message=f"target {target.ref} is multimodal ({architecture}); whether this vLLM's draft_model "
                               f"accepts it is unknown ({vllm.multimodal_basis or vllm.note})",
                       hint="pass --python with the interpreter that will serve, so its source can be checked")
    return Finding.ok("multimodal-target",
                      f"multimodal target accepted by vLLM {vllm.version} ({vllm.multimodal_basis})")
