"""The facts a plan is built from: both checkpoints, the vLLM that will serve, and a load test if given.

This is the planning step that reads files (checkpoint metadata, the vLLM install's source and
hotfix status, the ``--from-bench`` result); the decisions and checks after it are pure functions of ``LaunchFacts``.
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from specdraft.checkpoints import Checkpoint, inspect_checkpoint, published_drafters
from specdraft.planning._hybrid_kv import HYBRID_FLAG, hybrid_kv_reason
from specdraft.planning._k_schedule import LoadTest, read_load_test
from specdraft.planning._method_ranking import MethodRanking, rank_methods
from specdraft.planning._methods import NO_SPECULATION
from specdraft.planning._moe import stores_experts_apart
from specdraft.planning._pairing_traits import hotfixes_needed, pairing_traits
from specdraft.planning._request import LaunchRequest
from specdraft.planning._speculators import speculator_from_name, speculator_of
from specdraft.planning._speculative_choice import choose_method
from specdraft.planning._vllm_install import VllmFacts, gather_vllm_facts

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
    from specdraft.bench import acceptance_from_result, load_result

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
    """Read the checkpoints, then the serving vLLM (its hotfix status only where the pairing needs a hotfix, where
    ``--method auto`` has yet to choose, or where a K schedule, decided later, may need one), then rank the methods
    when asked to."""
    target = inspect_checkpoint(request.target, revision=request.revision)
    draft = _inspect_draft(request)
    load_test = read_load_test(request.from_bench, request.max_num_seqs) if request.from_bench else None
    if not request.ranks_methods:
        traits = pairing_traits(hybrid_kv_cache_manager_off=hybrid_kv_reason(target, draft) is not None
                                or HYBRID_FLAG in request.extra_args,
                                # "none" for --method none: a trait-free pairing, no hotfix a drafter needs
                                method=choose_method(request, draft)[0] or "draft_model",
                                moe_per_expert_weights=stores_experts_apart(target),
                                k_schedule_on_v2=request.max_num_seqs > 1 and request.method != NO_SPECULATION)
        vllm = gather_vllm_facts(request.python, request.vllm_root, want_hotfixes=bool(hotfixes_needed(traits)))
        return LaunchFacts(request=request, target=target, draft=draft, vllm=vllm, load_test=load_test,
                           api_key_in_environment=_api_key_in_environment())
    vllm = gather_vllm_facts(request.python, request.vllm_root, want_hotfixes=True)
    published = [inspect_checkpoint(repo) for repo in published_drafters(target)
                 if draft is None or repo.lower() != draft.ref.lower()]
    ranking = rank_methods(target, [draft] if draft else [], version=vllm.version, profile=request.profile,
                           thinking=request.enable_thinking, measured=measured_acceptance(request),
                           vllm_root=vllm.root, published=published)
    # the draft stays only where the ranking runs it: no drafter is loaded for a draft-less method, nor where no
    # candidate pays and the plan serves the target alone
    if ranking.ranked and (ranking.chosen is None or ranking.chosen.draft is None):
        draft = None
    return LaunchFacts(request=request, target=target, draft=draft, vllm=vllm, ranking=ranking, load_test=load_test,
                       api_key_in_environment=_api_key_in_environment())


def _api_key_in_environment() -> bool:
    return bool(os.environ.get(API_KEY_VARIABLE, "").strip())
