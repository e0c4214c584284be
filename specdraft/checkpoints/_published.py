"""The drafters published for a target that specdraft ships facts for: what ``--method auto`` and the checks
can name as candidates to download when the user gave no draft (or a slower one)."""

from __future__ import annotations

from specdraft.checkpoints._checkpoint import Checkpoint
from specdraft.checkpoints._shape_facts import ShapeFacts, find_shape_facts, shipped_assistants, shipped_speculators


def _shape(config: dict) -> tuple[int | None, int | None]:
    text = config.get("text_config", config)
    return text.get("hidden_size"), text.get("num_hidden_layers")


def published_assistant_facts(target: Checkpoint) -> ShapeFacts | None:
    """The published MTP assistant of a target: the shipped one built for its width (``draft_backbone_width``)."""
    if not target.is_known or target.is_assistant or target.family is None:
        return None
    width = target.text_config.get("hidden_size")
    return next((facts for facts in shipped_assistants()
                 if width and target.family.draft_backbone_width(facts.config) == width), None)


def published_assistant(target: Checkpoint) -> str | None:
    """The repo id of ``published_assistant_facts``."""
    facts = published_assistant_facts(target)
    return facts.repo_id if facts is not None else None


def published_speculators(target: Checkpoint) -> list[str]:
    """The shipped speculators whose verifier has the target's width and depth (a repackaging of that verifier,
    NVFP4 for one, drives them too)."""
    if not target.is_known or target.is_assistant or target.family is None:
        return []
    found = []
    for facts in shipped_speculators():
        verifier = ((facts.config.get("speculators_config") or {}).get("verifier") or {}).get("name_or_path")
        verifier_facts = find_shape_facts(verifier) if verifier else None
        if verifier_facts is not None and _shape(verifier_facts.config) == _shape(target.config):
            found.append(facts.repo_id)
    return found


def published_drafters(target: Checkpoint) -> list[str]:
    """Repo ids of every published drafter for ``target``: its MTP assistant first, then its speculators."""
    assistant = published_assistant(target)
    return ([assistant] if assistant else []) + published_speculators(target)
