"""K: the one place the number of speculative tokens is decided, with its schedule per batch size.

The plan's own K is the given one, else the default for the method on the GPU profile (the fastest measured there;
where the figures come from is in docs/ARCHITECTURE.md, "Default K"). For a launch of several sequences the K
schedule (``decisions.k_schedule``: a load test, or the shipped step costs per batch size) may then replace it by the
K it finds best, with a K per batch size where the release runs one well.
"""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel, ConfigDict

from specdraft.checkpoints import Checkpoint
from specdraft.families import DEFAULT_FAMILY, DefaultK, ModelFamily, rules_for
from specdraft.planning.decisions.k_schedule import KScheduleDecision
from specdraft.planning.facts.method_ranking import MethodRanking, measured_size, stand_in_note
from specdraft.planning.knowledge.methods import DRAFTLESS_METHODS
from specdraft.planning.request import LaunchRequest
from specdraft.planning.knowledge.speculators import speculator_of
from specdraft.speed import step_model


def default_num_speculative_tokens(profile: str, assistant: bool = False, kind: str | None = None,
                                   family: ModelFamily = DEFAULT_FAMILY, *, draftless: bool = False) -> DefaultK:
    """The K a launch uses when none is given, and why: the family's table (``ModelFamily.costs.default_k``, with
    the figures it cites) per GPU profile, for a draft model, an MTP assistant or a draft-less method, beside a
    target of checkpoint ``kind`` (None: the row for any kind)."""
    costs = family.costs if family.costs is not None else DEFAULT_FAMILY.costs
    drafter = "draftless" if draftless else "assistant" if assistant else "draft_model"
    return costs.default_k_for(drafter, kind, profile)


class KChoice(BaseModel):
    """K, the schedule per batch size where there is one, and why."""

    model_config = ConfigDict(frozen=True)

    k: int
    """``num_speculative_tokens``: the largest K of the schedule where there is one."""
    reason: str
    """Where K came from: ``given``, the profile's default and its basis, or the schedule's source."""
    schedule: KScheduleDecision


def _default_k(request: LaunchRequest, method: str, draft: Checkpoint | None,
               ranking: MethodRanking | None, target: Checkpoint | None = None) -> tuple[int, str]:
    """The plan's own K where none is given, and why."""
    if ranking is not None and ranking.ranked and ranking.ranked[0].method == method and ranking.ranked[0].k:
        return ranking.ranked[0].k, "--method auto: tune's pick for this method in the ranking"
    known = target is not None and target.is_known
    family = rules_for(target.config) if known else DEFAULT_FAMILY
    if method in DRAFTLESS_METHODS:
        default = default_num_speculative_tokens(request.profile, family=family, draftless=True)
        return default.k, default.reason
    speculator = speculator_of(draft) if draft is not None else None
    if speculator is not None and speculator.speculative_tokens:
        return speculator.speculative_tokens, "the speculator's own speculative_tokens (speculators_config)"
    # the rows per target kind were measured with a draft model and an MTP assistant only
    kind = family.kind(target.config) if known and method in ("draft_model", "mtp") else None
    default = default_num_speculative_tokens(request.profile, method != "draft_model", kind, family)
    # the default K was measured beside the family's measured sizes; another size takes it unmeasured
    priced_by, size = measured_size(target) if known else (family, "")
    unmeasured = f"; {stand_in_note(target.ref, priced_by)}" if size is None else ""
    if size and kind != "moe" and size != priced_by.costs.stand_in_size and method in ("draft_model", "mtp"):
        # a dense size measured apart from the stand-in: its own step costs, though the default K came from the stand-in
        unmeasured = f"; step costs {step_model(method, size, request.profile, priced_by).basis}"
    if method in ("eagle3", "dflash", "dspark"):
        return default.k, (f"the MTP assistant's default K on {request.profile} (EAGLE-3, DFlash and DSpark drafters "
                           "read the target's hidden states like it; not measured for them)" + unmeasured)
    return default.k, default.reason + unmeasured


def decide_k(request: LaunchRequest, method: str, draft: Checkpoint | None, ranking: MethodRanking | None, *,
             target: Checkpoint | None, schedule: Callable[[int], KScheduleDecision]) -> KChoice:
    """K for a plan running ``method`` (the one vLLM resolves): the plan's own, then what ``schedule(plan_k)`` (the
    K schedule's decision for that K) finds at the batch sizes this server will run."""
    if request.num_speculative_tokens:
        plan_k, reason = request.num_speculative_tokens, "given"
    else:
        plan_k, reason = _default_k(request, method, draft, ranking, target)
    decision = schedule(plan_k)
    if decision.k is None:
        return KChoice(k=plan_k, reason=reason, schedule=decision)
    what = "the largest K of the schedule" if decision.schedule else "chosen"
    # a load test's levels name its file; the shipped step costs say so in their own basis
    measured = any(level.measured_k is not None for level in decision.levels)
    source = "--from-bench" if measured else "the step costs measured per batch size"
    return KChoice(k=decision.k, reason=f"{what} from {source}", schedule=decision)
