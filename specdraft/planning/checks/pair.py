"""Compatibility checks of a draft/target pair, run before any GPU work.

Every check is a pure function of facts gathered beforehand (checkpoints, the installed vLLM,
hotfix reports) and returns one ``Finding``. Their names are stable: tests and ``--json`` users
key on them.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from specdraft.checkpoints import Checkpoint, published_assistant, published_assistant_facts
from specdraft.families import DEFAULT_FAMILY, ModelFamily, rules_for
from specdraft.findings import Finding
from specdraft.patching import Status, Trait
from specdraft.planning.decisions.hybrid_kv import HYBRID_FLAG, needs_hybrid_manager_disabled
from specdraft.planning.facts.moe_layout import is_moe_target
from specdraft.planning.decisions.pairing_traits import hotfixes_needed
from specdraft.planning.knowledge.release_support import first_release, release_support
from specdraft.planning.request import HotfixMode
from specdraft.planning.knowledge.speculative_config import AUTODETECT_MARKERS, SpeculativeConfig
from specdraft.planning.decisions.speculative_method import resolved_method
from specdraft.planning.facts.chat_template import CheckpointComparison
from specdraft.planning.facts.vllm_install import VllmFacts
from specdraft.quantization import check_quantization as check_checkpoint_quantization


class PairFacts(BaseModel):
    """What the checks judge: the pair, the config and flags the plan chose, the serving vLLM."""

    model_config = ConfigDict(frozen=True)

    target: Checkpoint
    draft: Checkpoint | None
    speculative: SpeculativeConfig | None
    """The config the command passes; None: the target alone (no drafter, so no pairing checks)."""
    tensor_parallel_size: int
    max_model_len: int
    target_quantization: str | None
    """The value of ``--quantization`` the plan passes (None: not passed)."""
    hybrid_kv_cache_manager_disabled: bool
    hotfix_mode: HotfixMode
    vllm: VllmFacts
    template_path: Path | None = None
    template_variant: str | None = None
    template_findings: tuple[Finding, ...] = ()
    template_note: str = ""
    checkpoint_template: CheckpointComparison | None = None
    language_model_only: bool = False
    compute_capability: tuple[int, int] | None = None
    """The GPU's, from the profile; quantization kernels depend on it."""
    profile: str | None = None
    """The GPU profile the plan is for (what was measured depends on it)."""
    traits: frozenset[Trait] = frozenset()
    """The pairing's traits as the hotfixes declare them (``Decisions.traits``): what the hotfix check judges."""


def _ok(check: str, message: str) -> Finding:
    return Finding(level="ok", check=check, message=message)


def check_checkpoint(role: str, checkpoint: Checkpoint) -> Finding:
    name = f"{role}-checkpoint"
    if checkpoint.source == "unknown" and checkpoint.path is not None:  # a local path: nothing to download
        return Finding(level="error", check=name, message=f"{role} {checkpoint.ref}: " + "; ".join(checkpoint.notes),
                       hint=f"check the path, or pass a Hugging Face repo id with --{role}")
    if checkpoint.source == "unknown":
        return Finding(level="error", check=name, message=f"{role} {checkpoint.ref}: " + "; ".join(checkpoint.notes),
                       hint=f"download it first: hf download {shlex.quote(checkpoint.ref)}")
    if checkpoint.source == "shape-facts":
        return Finding(level="warning", check=name, message="; ".join(checkpoint.notes),
                       hint=f"for exact facts: hf download {shlex.quote(checkpoint.ref)}")
    return _ok(name, f"{role} {checkpoint.ref}: read from {checkpoint.source} {checkpoint.path}")


def check_vocab_size(target: Checkpoint, draft: Checkpoint) -> Finding:
    if target.vocab_size != draft.vocab_size:
        return Finding(level="error", check="vocab-size",
                       message=f"draft vocab_size {draft.vocab_size} != target vocab_size {target.vocab_size}; "
                               "vLLM's draft_model needs equal vocabularies (the draft reuses the target's tokenizer)",
                       hint=f"pick a draft from the target's family ({rules_for(target.config).display_name}: "
                            f"vocab_size {target.vocab_size})")
    return _ok("vocab-size", f"both {target.vocab_size}")


def check_special_tokens(target: Checkpoint, draft: Checkpoint) -> Finding:
    mismatched = [f"{name}: target {target.special_token_ids[name]}, draft {draft.special_token_ids[name]}"
                  for name in sorted(set(target.special_token_ids) & set(draft.special_token_ids))
                  if target.special_token_ids[name] != draft.special_token_ids[name]]
    if target.eos_token_ids and draft.eos_token_ids and not set(target.eos_token_ids) <= set(draft.eos_token_ids) \
            and not set(draft.eos_token_ids) <= set(target.eos_token_ids):
        mismatched.append(f"eos: target {list(target.eos_token_ids)}, draft {list(draft.eos_token_ids)}")
    if mismatched:
        return Finding(level="error", check="special-tokens",
                       message="special-token ids differ (" + "; ".join(mismatched) + "); the draft would propose "
                               "other tokens than the target's tokenizer means",
                       hint="use a draft built on the same tokenizer as the target")
    compared = sorted(set(target.special_token_ids) & set(draft.special_token_ids)) + ["eos"]
    return _ok("special-tokens", "same ids for " + ", ".join(compared))


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
    return _ok("speculative-method", f"method {shown}")


def check_draft_tensor_parallel(speculative: SpeculativeConfig, tensor_parallel_size: int) -> Finding:
    draft_tp, method = speculative.draft_tensor_parallel_size, speculative.method or "draft_model"
    if method in ("ngram", "suffix"):
        if draft_tp is not None:
            return Finding(level="error", check="draft-tensor-parallel",
                           message=f"draft_tensor_parallel_size={draft_tp} given, but method={method!r} has no "
                                   "draft model",
                           hint="drop --draft-tensor-parallel-size")
        return _ok("draft-tensor-parallel", f"method {method} has no draft model")
    if draft_tp is None:
        return _ok("draft-tensor-parallel", f"vLLM uses the target's tensor_parallel_size {tensor_parallel_size}")
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
    return _ok("draft-tensor-parallel", f"draft {draft_tp}, target {tensor_parallel_size}")


def check_max_model_len(max_model_len: int, target: Checkpoint, draft: Checkpoint | None) -> Finding:
    limits = [(role, c.max_position_embeddings) for role, c in (("target", target), ("draft", draft))
              if c is not None and c.max_position_embeddings]
    too_long = [f"{role} {limit}" for role, limit in limits if max_model_len > limit]
    if too_long:
        longest = min(limit for _, limit in limits)
        return Finding(level="error", check="max-model-len",
                       message=f"max_model_len {max_model_len} exceeds max_position_embeddings of the "
                               + " and ".join(too_long),
                       hint=f"pass --max-model-len {longest}")
    return _ok("max-model-len", f"{max_model_len} within " + ", ".join(f"{r} {l}" for r, l in limits))


def check_kv_cache_manager(target: Checkpoint, draft: Checkpoint | None, disabled: bool) -> Finding:
    why = needs_hybrid_manager_disabled(target, draft)
    if why and not disabled:
        return Finding(level="error", check="hybrid-kv-cache",
                       message=f"{why}: with the hybrid KV cache manager on, vLLM refuses the pair "
                               "('All drafting layers should belong to the same kv cache group')",
                       hint=f"keep {HYBRID_FLAG} in the plan")
    if why:
        return _ok("hybrid-kv-cache", f"{why}: {HYBRID_FLAG} is set")
    return _ok("hybrid-kv-cache", "no KV sharing and equal windows: the hybrid manager can stay on")


def check_hotfixes(traits: frozenset[Trait], vllm: VllmFacts, mode: HotfixMode) -> Finding:
    """The hotfixes a pairing with ``traits`` needs (their own declarations say which) against ``vllm``."""
    python = shlex.quote(vllm.python) if vllm.python else "PYTHON"
    needed = hotfixes_needed(traits)
    if not needed:
        return _ok("hotfixes", f"not needed: the pair runs without {HYBRID_FLAG} and is not an MTP pairing"
                   if not traits else f"no hotfix is needed for {', '.join(sorted(traits))}")
    if vllm.hotfixes is None:
        # --hotfixes check promises a verified install: an unknown status is not one
        return Finding(level="error" if mode == "check" else "warning", check="hotfixes",
                       message=f"hotfix status unknown: {vllm.hotfix_note}",
                       hint=f"python -m specdraft patch status --python {python}")
    drifted = [h for h in vllm.hotfixes_with(Status.DRIFTED) if h.id in needed]
    pending = [h for h in vllm.hotfixes_with(Status.PENDING) if h.id in needed]
    if drifted:
        return Finding(level="error", check="hotfixes",
                       message=f"vLLM {vllm.version}: {', '.join(h.id for h in drifted)} drifted (the code around the "
                               f"anchor changed; specdraft will not patch it): {drifted[0].detail}",
                       hint=f"python -m specdraft patch diff --python {python}")
    if pending and mode == "check":
        return Finding(level="error", check="hotfixes",
                       message=f"vLLM {vllm.version}: {', '.join(h.id for h in pending)} pending; without them "
                               + "; ".join(needed[h.id].failure for h in pending),
                       hint=f"python -m specdraft patch apply --python {python}  (or launch --hotfixes apply)")
    if pending and mode == "skip":
        return Finding(level="warning", check="hotfixes",
                       message=f"vLLM {vllm.version}: {', '.join(h.id for h in pending)} pending and --hotfixes skip "
                               "given; vLLM is expected to fail at start-up",
                       hint="launch --hotfixes apply")
    summary = ", ".join(f"{h.id} {h.status}" for h in vllm.hotfixes)
    if pending:
        return Finding(level="info", check="hotfixes", message=f"{summary}; pending ones are applied before serving")
    return _ok("hotfixes", summary)


def _serves_assistant(support, model_type: str | None) -> bool:
    return "mtp" in support.speculative_methods and (model_type is None
                                                     or model_type in support.gemma4_assistant_model_types)


def suggest_mtp_assistant(target: Checkpoint, speculative: SpeculativeConfig,
                          draft: Checkpoint | None, version: str | None = None) -> Finding | None:
    """A tip, not a verdict (None when it does not apply): a draft model beside a target that has a published
    MTP assistant, which measured ~2x faster (docs/gpu/README.md: H100, vLLM 0.26.0, the 31B, forced acceptance).
    Where the serving release (``version``) is known and refuses that assistant (method mtp or its model type), the
    tip names the first release that serves it, or is not given when none does."""
    if draft is None or not draft.is_known or draft.is_assistant:
        return None
    if resolved_method(speculative.method, draft) != "draft_model":
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


def check_measured_loss(target: Checkpoint, speculative: SpeculativeConfig, draft: Checkpoint | None,
                        profile: str | None, tensor_parallel_size: int = 1) -> Finding | None:
    """A warning where the pairing was measured slower than its target alone (None: not measured to lose).

    Two measurements on Hopper GPUs with vLLM 0.26.0 (docs/gpu/README.md): an E2B-shaped draft beside the
    26B-A4B-shaped MoE target lost at every K from 1 to 8 on an H200 (section 6; the MTP assistant won, 1.67x at
    K = 4), and beside the 31B-shaped target at tensor parallel size 2 on two H100s it lost at K = 3 (section 8;
    the MTP assistant won, 3.45x at K = 8).
    """
    if profile not in ("h100", "h200") or resolved_method(speculative.method, draft) != "draft_model":
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


def check_multimodal_target(target: Checkpoint, speculative: SpeculativeConfig, draft: Checkpoint | None,
                            vllm: VllmFacts, language_model_only: bool = False) -> Finding:
    is_draft_model = resolved_method(speculative.method, draft) == "draft_model"
    if not is_draft_model or not target.is_known or not target.is_multimodal:
        reason = "target is text-only" if target.is_known and not target.is_multimodal else "not a draft_model pairing"
        return _ok("multimodal-target", reason if target.is_known else "target unknown")
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
    return _ok("multimodal-target", f"multimodal target accepted by vLLM {vllm.version} ({vllm.multimodal_basis})")


def _reader_findings(role: str, checkpoint: Checkpoint, given: str | None,
                     compute_capability: tuple[int, int] | None) -> list[Finding] | None:
    """specdraft.quantization's own checks of a checkpoint it has read.

    None when it has not read one (shape facts stand in, or the metadata was unreadable).
    """
    info = checkpoint.quantization.info
    if info is None:
        return None
    # The launch plan reports them all under its one `quantization` check, each naming the model it is about.
    return [f.model_copy(update={"check": "quantization", "message": f"{role}: {f.message}"})
            for f in check_checkpoint_quantization(info, declared=given, compute_capability=compute_capability)]


def check_quantization(target: Checkpoint, draft: Checkpoint | None, target_flag: str | None,
                       draft_field: str | None, compute_capability: tuple[int, int] | None = None) -> list[Finding]:
    """The quantization each model is served with against what its checkpoint declares."""
    findings: list[Finding] = []
    for role, checkpoint, given in (("target", target, target_flag), ("draft", draft, draft_field)):
        if checkpoint is None or not checkpoint.is_known:
            continue
        found = checkpoint.quantization.method
        where = "--quantization" if role == "target" else "speculative_config.quantization"
        if found and not given:
            findings.append(Finding(level="error", check="quantization",
                                    message=f"{role} checkpoint is {found} but {where} is not set",
                                    hint=f"drop the override so specdraft sets {where} {found}"))
            continue
        delegated = _reader_findings(role, checkpoint, given, compute_capability)
        if delegated is not None:
            findings += [f for f in delegated if f.level != "ok"]
        elif found and given and given != found:
            findings.append(Finding(level="error", check="quantization",
                                    message=f"{role} checkpoint is {found} ({checkpoint.quantization.basis}) but "
                                            f"{where} is {given}",
                                    hint=f"drop the override so specdraft sets {where} {found}"))
        elif given and not found and checkpoint.source != "shape-facts":
            findings.append(Finding(level="error", check="quantization",
                                    message=f"{where} is {given} but the {role} checkpoint has no quantization "
                                            "metadata", hint="drop the quantization override"))
    if not any(f.level in ("warning", "error") for f in findings):
        roles = (("target", target_flag),) + ((("draft", draft_field),) if draft is not None else ())
        parts = [f"{r} {q or 'unquantized'}" for r, q in roles]
        findings.insert(0, _ok("quantization", ", ".join(parts)))
    return findings


def check_chat_template(facts: PairFacts) -> Finding:
    variant = facts.target.template_variant
    if facts.template_path is None:
        return Finding(level="warning", check="chat-template",
                       message=f"no chat template passed ({facts.template_note}); vLLM falls back to the "
                               "checkpoint's, whose thought-channel handling is unchecked",
                       hint="pass --chat-template PATH")
    if facts.template_variant and facts.template_variant != variant:
        return Finding(level="error", check="chat-template",
                       message=f"{facts.template_path} is the {facts.template_variant!r} variant but target "
                               f"{facts.target.ref} needs {variant!r} (the thinking-off generation prompt differs)",
                       hint=f"drop --chat-template to use specdraft's {variant!r} template")
    leaks = [f for f in facts.template_findings if f.level == "error"]
    if leaks:
        return Finding(level="error", check="chat-template",
                       message=f"{facts.template_path} leaks the thought channel: {leaks[0].message}"
                               + (f" (+{len(leaks) - 1} more)" if len(leaks) > 1 else ""),
                       hint=f"python -m specdraft template check {shlex.quote(str(facts.template_path))} "
                            f"--variant {variant}; or launch --allow-leaky-template")
    unchecked = [f for f in facts.template_findings if f.level == "warning"]
    if unchecked:
        return unchecked[0]
    return _ok("chat-template", f"{facts.template_path} ({variant} variant)")


def check_checkpoint_template(facts: PairFacts) -> list[Finding]:
    """The template passed against the target checkpoint's own: drift is a warning, that template's leaks info."""
    compared = facts.checkpoint_template
    if compared is None:
        return []
    where = Path(compared.reference_file).name
    if compared.error:
        return [Finding(level="info", check="checkpoint-template",
                        message=f"not compared with the checkpoint's own template ({where}): {compared.error}")]
    findings = []
    if compared.drift:
        more = len(compared.drift) - 6
        shown = ", ".join(compared.drift[:6]) + (f" (+{more} more)" if more > 0 else "")
        findings.append(Finding(
            level="warning", check="template-drift",
            message=f"{facts.template_path} renders other prompts than the checkpoint's own template ({where}) "
                    f"outside the leak fixes, so the model sees prompts it was not trained on: {shown}",
            hint=f"python -m specdraft template check {shlex.quote(str(facts.template_path))} --reference "
                 f"{shlex.quote(str(Path(compared.reference_file).parent))} shows the diffs"))
    if compared.reference_rules:
        rules = ", ".join(f"{rule} ({count})" for rule, count in sorted(compared.reference_rules.items()))
        findings.append(Finding(
            level="info", check="checkpoint-template",
            message=f"the checkpoint's own template ({where}) breaks rules in the scenario matrix: {rules}; "
                    f"that is why {facts.template_path.name if facts.template_path else 'another template'} "
                    "is passed"))
    return findings


def check_vllm(vllm: VllmFacts, family: ModelFamily = DEFAULT_FAMILY) -> Finding:
    """Whether a vLLM is there to serve, and whether it is recent enough for the target's ``family``."""
    if vllm.version is None and vllm.python:
        return Finding(level="error", check="vllm", message=f"no vLLM to serve with: {vllm.note}",
                       hint=f"{shlex.quote(vllm.python)} -m pip install vllm, or pass --python with another "
                            "interpreter")
    if vllm.version is None:
        return Finding(level="warning", check="vllm", message=f"no vLLM found: {vllm.note}; the plan assumes "
                       "every flag exists (true for 0.19-0.33)", hint="pass --python /path/to/venv/bin/python")
    from packaging.version import InvalidVersion, Version

    try:
        too_old = Version(vllm.version) < Version(family.first_vllm)
    except InvalidVersion:
        too_old = False
    if too_old:
        return Finding(level="error", check="vllm",
                       message=f"vLLM {vllm.version} has no {family.display_name} model (it arrived in "
                               f"{family.first_vllm})",
                       hint=f"pip install 'vllm>={family.first_vllm}'")
    return _ok("vllm", f"vLLM {vllm.version} at {vllm.root}")


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
        tip = suggest_mtp_assistant(facts.target, speculative, draft, facts.vllm.version)
        if tip is not None:
            findings.append(tip)
        loss = check_measured_loss(facts.target, speculative, draft, facts.profile, facts.tensor_parallel_size)
        if loss is not None:
            findings.append(loss)
    if draft is not None and draft.is_known and facts.target.is_known:
        findings += [check_vocab_size(facts.target, draft), check_special_tokens(facts.target, draft)]
    if speculative is not None:
        findings.append(check_draft_tensor_parallel(speculative, facts.tensor_parallel_size))
    findings.append(check_max_model_len(facts.max_model_len, facts.target, draft if draft and draft.is_known else None))
    findings.append(check_kv_cache_manager(facts.target, draft, facts.hybrid_kv_cache_manager_disabled))
    findings.append(check_hotfixes(facts.traits, facts.vllm, facts.hotfix_mode))
    if speculative is not None:
        findings.append(check_multimodal_target(facts.target, speculative, draft, facts.vllm,
                                                facts.language_model_only))
    findings += check_quantization(facts.target, draft, facts.target_quantization,
                                   speculative.quantization if speculative is not None else None,
                                   facts.compute_capability)
    findings.append(check_chat_template(facts))
    findings += check_checkpoint_template(facts)
    return findings
