"""The pair checks of the two checkpoints: each found, the same vocabulary and special tokens, the context within
both, and each served with the quantization it declares."""

from __future__ import annotations

import shlex

from specdraft.checkpoints import Checkpoint
from specdraft.families import rules_for
from specdraft.findings import Finding
from specdraft.quantization import check_quantization as check_checkpoint_quantization


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
    return Finding.ok(name, f"{role} {checkpoint.ref}: read from {checkpoint.source} {checkpoint.path}")


def check_vocab_size(target: Checkpoint, draft: Checkpoint) -> Finding:
    if target.vocab_size != draft.vocab_size:
        return Finding(level="error", check="vocab-size",
                       message=f"draft vocab_size {draft.vocab_size} != target vocab_size {target.vocab_size}; "
                               "vLLM's draft_model needs equal vocabularies (the draft reuses the target's tokenizer)",
                       hint=f"pick a draft from the target's family ({rules_for(target.config).display_name}: "
                            f"vocab_size {target.vocab_size})")
    return Finding.ok("vocab-size", f"both {target.vocab_size}")


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
    return Finding.ok("special-tokens", "same ids for " + ", ".join(compared))


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
    return Finding.ok("max-model-len", f"{max_model_len} within " + ", ".join(f"{r} {l}" for r, l in limits))


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
        findings.insert(0, Finding.ok("quantization", ", ".join(parts)))
    return findings
