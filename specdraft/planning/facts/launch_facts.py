"""The facts a plan is built from: both checkpoints, the vLLM that will serve, and a load test if given.

This is the planning step that reads files and the environment (checkpoint metadata, the vLLM install's source and
hotfix status, the chat template, the ``--from-bench`` result, the model runner's variable); the decisions and
checks after it are pure functions of ``LaunchFacts``.
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from specdraft.bench import load_result
from specdraft.checkpoints import Checkpoint, inspect_checkpoint, published_drafters
from specdraft.families import rules_for
from specdraft.planning.decisions.k_schedule import LoadTest, read_load_test
from specdraft.planning.facts.method_ranking import MethodRanking, rank_methods
from specdraft.planning.facts.moe_layout import stores_experts_apart
from specdraft.planning.knowledge.release_tables import model_runner_table
from specdraft.planning.request import LaunchRequest
from specdraft.planning.knowledge.speculators import speculator_from_name
from specdraft.planning.facts.chat_template import TemplateChoice, choose_template
from specdraft.planning.facts.vllm_install import VllmFacts, gather_vllm_facts
from specdraft.planning.facts.vllm_install import with_hotfix_reports as with_vllm_hotfix_reports
from specdraft.speed import acceptance_from_result

API_KEY_VARIABLE = "VLLM_API_KEY"
"""The environment variable vLLM takes its API key from when ``--api-key`` is not given."""


class LaunchFacts(BaseModel):
    """What was asked for and what is on the machine."""

    model_config = ConfigDict(frozen=True)

    request: LaunchRequest
    target: Checkpoint
    draft: Checkpoint | None
    """None for a method without a draft checkpoint (asked for, or the one ``--method auto`` chose) and for a plan
    without speculation (``--method none``, or ``--method auto`` where nothing pays)."""
    vllm: VllmFacts
    ranking: MethodRanking | None = None
    """``--method auto``'s ranking of the candidate methods."""
    load_test: LoadTest | None = None
    """``--from-bench``: what a load test measured per concurrency level."""
    target_stores_experts_apart: bool = False
    """Whether the target is a mixture of experts storing each expert's weights apart (``facts.moe_layout``)."""
    template: TemplateChoice
    """The chat template the plan passes (the given one or specdraft's own), read and checked."""
    environment: dict[str, str] = {}
    """The variables of launch's environment the decisions read (the server inherits them)."""
    api_key_in_environment: bool = False
    """Whether ``VLLM_API_KEY`` is set here: vLLM then asks every request for that key (its value is never read)."""

    @property
    def known_draft_config(self) -> dict | None:
        """The draft's config.json when a draft was read (None: no draft, or one not on the machine)."""
        return self.draft.config if self.draft is not None and self.draft.is_known else None


def measured_acceptance(request: LaunchRequest) -> dict[str, tuple[float, ...]]:
    """``--acceptance-from METHOD=RESULT.json``: that method's per-position acceptance, measured by bench."""
    if request.acceptance_from is None:
        return {}
    method, path = request.acceptance_from.split("=", 1)
    return {method: acceptance_from_result(load_result(Path(path)))}


def _inspect_draft(request: LaunchRequest) -> Checkpoint | None:
    """The draft's facts; a speculator not on this machine and without shipped facts of its own stays unknown
    (the Gemma 4 size in its name is its verifier's, not its own shape)."""
    if request.draft is None:
        return None
    draft = inspect_checkpoint(request.draft, revision=request.draft_revision)
    if (draft.source == "shape-facts" and speculator_from_name(draft.ref) is not None
            and "speculators_model_type" not in draft.config):
        return Checkpoint(ref=draft.ref, source="unknown", path=None, config={},
                          notes=(f"{draft.ref} is a speculators checkpoint that is not on this machine, and "
                                 "specdraft ships shape facts only for RedHatAI's 31B EAGLE-3 and DFlash speculators",))
    return draft


def gather_facts(request: LaunchRequest) -> LaunchFacts:
    """Read the checkpoints, the serving vLLM (without its hotfix reports: ``with_hotfix_reports`` reads them once
    the decisions say which the pairing needs), the chat template and the environment, then rank the methods when
    asked to."""
    target = inspect_checkpoint(request.target, revision=request.revision)
    draft = _inspect_draft(request)
    load_test = read_load_test(request.from_bench, request.max_num_seqs) if request.from_bench else None
    common = dict(request=request, target=target, target_stores_experts_apart=stores_experts_apart(target),
                  load_test=load_test, environment=_environment(),
                  api_key_in_environment=_api_key_in_environment(),
                  template=choose_template(request.chat_template, target.template_variant, checkpoint=target.path,
                                           family=rules_for(target.config)))
    vllm = gather_vllm_facts(request.python, request.vllm_root, want_hotfixes=False)
    if not request.ranks_methods:
        return LaunchFacts(**common, draft=draft, vllm=vllm)
    published = [inspect_checkpoint(repo) for repo in published_drafters(target)
                 if draft is None or repo.lower() != draft.ref.lower()]
    ranking = rank_methods(target, [draft] if draft else [], version=vllm.version, profile=request.profile,
                           thinking=request.enable_thinking, measured=measured_acceptance(request),
                           vllm_root=vllm.root, published=published, context=request.expected_context)
    # the draft stays only where the ranking runs it: no drafter is loaded for a draft-less method, nor where no
    # candidate pays and the plan serves the target alone
    if ranking.ranked and (ranking.chosen is None or ranking.chosen.draft is None):
        draft = None
    return LaunchFacts(**common, draft=draft, vllm=vllm, ranking=ranking)


def with_hotfix_reports(facts: LaunchFacts, needed: bool) -> LaunchFacts:
    """``facts`` with the serving vLLM's hotfix reports, read where the decided pairing needs a hotfix or where
    ``--method auto`` ranked the methods (its report lists every hotfix of the install it judged)."""
    if not (needed or facts.request.ranks_methods):
        return facts
    vllm = with_vllm_hotfix_reports(facts.vllm, facts.request.python, facts.request.vllm_root)
    return facts.model_copy(update={"vllm": vllm})


def _environment() -> dict[str, str]:
    """The variables of launch's environment that decide something: the model runner's switch."""
    name = model_runner_table().env
    return {name: os.environ[name]} if name in os.environ else {}


def _api_key_in_environment() -> bool:
    return bool(os.environ.get(API_KEY_VARIABLE, "").strip())
