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
from specdraft.planning.decisions.k_schedule import KScheduleDecision
from specdraft.planning.facts.method_ranking import MethodRanking
from specdraft.planning.knowledge.methods import DRAFTLESS_METHODS
from specdraft.planning.request import LaunchRequest
from specdraft.planning.knowledge.speculators import speculator_of


class DefaultK(BaseModel):
    model_config = ConfigDict(frozen=True)

    k: int
    reason: str


# A draft model's launches cost ~10 ms of host time per drafted token on Hopper, so longer drafts
# slow down there; on a DGX Spark the slow target step hides that cost.
_HOPPER_K = DefaultK(k=3, reason="the fastest K measured on an H100 and an H200 for an E2B draft beside the 31B: "
                                 "longer drafts are host-bound there (docs/gpu/README.md)")
_SPARK_K = DefaultK(k=4, reason="the validated DGX Spark setting (9 -> 18 tok/s with an E2B draft)")
_DRAFT_MODEL_K = {"dgx-spark": _SPARK_K, "h100": _HOPPER_K, "h200": _HOPPER_K}
# An MTP assistant is GPU-bound (no host line), so longer drafts keep paying; the H200 takes the H100's K.
_HOPPER_ASSISTANT_K = DefaultK(k=8, reason="tune's pick at alpha 0.70 from the acceptance and step costs measured on "
                                           "an H100 with the 31B's MTP assistant (vLLM 0.26.0); K = 9, the longest "
                                           "measured, was the fastest at alpha 0.70 and 0.85 (docs/gpu/README.md)")
_ASSISTANT_K = {"dgx-spark": DefaultK(k=4, reason="the published recipes' N for Gemma 4 MTP assistants (2 for E2B, 4 "
                                                  "for E4B/26B, 4-8 for 31B); not measured by specdraft"),
                "h100": _HOPPER_ASSISTANT_K, "h200": _HOPPER_ASSISTANT_K}


# ngram_gpu was measured at K = 3 on the H100 (docs/gpu/README.md 5.2); ngram and suffix take the same.
_DRAFTLESS_K = DefaultK(k=3, reason="the K measured for ngram_gpu on an H100 (docs/gpu/README.md 5.2)")


# Beside a MoE target (26B-A4B: ~4 ms per token on an H200) a drafted token's host time is no longer hidden:
# measured on H200s with vLLM 0.26.0 at K = 1-8 (docs/gpu/README.md section 6), the MTP assistant was fastest at
# K = 4 (1.67x at alpha 0.85, 1.34x at 0.70; K = 7 1.22x / 1.09x, K = 8 near break-even) and the E2B draft lost at
# every K (best K = 1).
_HOPPER_MOE_K = {
    True: DefaultK(k=4, reason="the fastest K measured on an H200 for the 26B-A4B's MTP assistant at alpha 0.70 and "
                               "0.85 (vLLM 0.26.0, docs/gpu/README.md section 6)"),
    False: DefaultK(k=1, reason="the least bad K measured on an H200 for an E2B draft beside the 26B-A4B: every K lost "
                                "to the target alone (0.62x at K = 1; docs/gpu/README.md section 6)"),
}


# On a DGX Spark the step is bandwidth-bound, and the 26B-A4B reads only its active parameters (8 of 128 experts)
# per token: an E2B draft costs ~0.55-0.58 of its step where it costs ~0.07 of the 31B's, so short drafts pay.
SPARK_MOE_DRAFT_K = DefaultK(k=2, reason="tune's pick at alpha 0.85 from the bytes an E2B draft and the 26B-A4B "
                                         "read per token (the target's active parameters: 8 of 128 experts; both "
                                         "BF16 or both NVFP4); users report K = 2 beating K = 4 there; not measured "
                                         "by specdraft")


def default_num_speculative_tokens(profile: str, assistant: bool = False, moe_target: bool = False) -> DefaultK:
    """The K a launch uses when none is given, and why: per GPU profile, for a draft model or an MTP assistant,
    beside a dense or a mixture-of-experts target (measured for the latter on Hopper only)."""
    if moe_target and profile in ("h100", "h200"):
        return _HOPPER_MOE_K[assistant]
    if moe_target and not assistant and profile == "dgx-spark":
        return SPARK_MOE_DRAFT_K
    table = _ASSISTANT_K if assistant else _DRAFT_MODEL_K
    return table.get(profile, table["dgx-spark"])


class KChoice(BaseModel):
    """K, the schedule per batch size where there is one, and why."""

    model_config = ConfigDict(frozen=True)

    k: int
    """``num_speculative_tokens``: the largest K of the schedule where there is one."""
    reason: str
    """Where K came from: ``given``, the profile's default and its basis, or the schedule's source."""
    schedule: KScheduleDecision


def _default_k(request: LaunchRequest, method: str, draft: Checkpoint | None,
               ranking: MethodRanking | None, moe_target: bool = False) -> tuple[int, str]:
    """The plan's own K where none is given, and why."""
    if ranking is not None and ranking.ranked and ranking.ranked[0].method == method and ranking.ranked[0].k:
        return ranking.ranked[0].k, "--method auto: tune's pick for this method in the ranking"
    if method in DRAFTLESS_METHODS:
        return _DRAFTLESS_K.k, _DRAFTLESS_K.reason
    speculator = speculator_of(draft) if draft is not None else None
    if speculator is not None and speculator.speculative_tokens:
        return speculator.speculative_tokens, "the speculator's own speculative_tokens (speculators_config)"
    default = default_num_speculative_tokens(request.profile, method != "draft_model",
                                             moe_target and method in ("draft_model", "mtp"))
    if method in ("eagle3", "dflash", "dspark"):
        return default.k, (f"the MTP assistant's default K on {request.profile} (EAGLE-3, DFlash and DSpark drafters "
                           "read the target's hidden states like it; not measured for them)")
    return default.k, default.reason


def decide_k(request: LaunchRequest, method: str, draft: Checkpoint | None, ranking: MethodRanking | None, *,
             moe_target: bool, schedule: Callable[[int], KScheduleDecision]) -> KChoice:
    """K for a plan running ``method`` (the one vLLM resolves): the plan's own, then what ``schedule(plan_k)`` (the
    K schedule's decision for that K) finds at the batch sizes this server will run."""
    if request.num_speculative_tokens:
        plan_k, reason = request.num_speculative_tokens, "given"
    else:
        plan_k, reason = _default_k(request, method, draft, ranking, moe_target)
    decision = schedule(plan_k)
    if decision.k is None:
        return KChoice(k=plan_k, reason=reason, schedule=decision)
    what = "the largest K of the schedule" if decision.schedule else "chosen"
    # a load test's levels name its file; the shipped step costs say so in their own basis
    measured = any(level.measured_k is not None for level in decision.levels)
    source = "--from-bench" if measured else "the step costs measured per batch size"
    return KChoice(k=decision.k, reason=f"{what} from {source}", schedule=decision)
