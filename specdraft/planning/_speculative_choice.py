"""Deciding the speculative config: the method where vLLM would detect the wrong one, and K.

The default K per GPU profile is the fastest measured there; where the figures come from is in
docs/ARCHITECTURE.md ("Default K").
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from specdraft.families import rules_for
from specdraft.checkpoints import Checkpoint
from specdraft.planning._k_schedule import KScheduleDecision
from specdraft.planning._request import LaunchRequest
from specdraft.planning._method_ranking import MethodRanking
from specdraft.planning._methods import DRAFTLESS_METHODS, NO_SPECULATION
from specdraft.planning._moe import is_moe_target
from specdraft.planning._release_support import METHOD_OPTION_PREFIXES
from specdraft.planning._speculative import AUTODETECT_MARKERS, SpeculativeConfig
from specdraft.planning._speculators import speculator_of


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
_OPTION_FIELDS = ("prompt_lookup_min", "prompt_lookup_max", "suffix_decoding_max_tree_depth")


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


class SpeculativeChoice(BaseModel):
    """The speculative config the plan passes, with the reasons behind what it set."""

    model_config = ConfigDict(frozen=True)

    config: SpeculativeConfig
    method_reason: str
    """Why ``method`` was set; empty when it is left to vLLM's detection or was given."""
    k_reason: str
    """Where K came from: ``given`` or the profile's default and its basis."""

    @property
    def resolved_method(self) -> str:
        """The method vLLM runs: the configured one, else what it detects (``draft_model``)."""
        return self.config.method or "draft_model"

    def with_k_schedule(self, decision: KScheduleDecision) -> "SpeculativeChoice":
        """The choice with the K (and schedule) a load test decided; unchanged where it decided none."""
        if decision.k is None:
            return self
        config = SpeculativeConfig(**{**self.config.as_dict(), "num_speculative_tokens": decision.k,
                                      "num_speculative_tokens_per_batch_size": decision.schedule})
        what = "the largest K of the schedule" if decision.schedule else "chosen"
        # a load test's levels name its file; the shipped step costs say so in their own basis
        measured = any(level.measured_k is not None for level in decision.levels)
        source = "--from-bench" if measured else "the step costs measured per batch size"
        return self.model_copy(update={"config": config, "k_reason": f"{what} from {source}"})


def no_speculation_reason(request: LaunchRequest, ranking: MethodRanking | None) -> str | None:
    """Why the plan serves the target alone (None: it speculates): ``--method none``, or a ranking (``--method
    auto``) in which no candidate's best K is predicted to beat the target alone (tune's ``recommend``, K = 0).
    The K schedule can still overrule a ranking that pays for one sequence (``_decisions``)."""
    if request.method == NO_SPECULATION:
        return ("--method none: the target alone, the same plan without --speculative-config (the baseline "
                "specdraft bench --compare measures a speculative server against)")
    if not request.ranks_methods or ranking is None or not ranking.ranked or ranking.chosen is not None:
        return None
    best = ranking.ranked[0]
    drafter = f" with {best.draft}" if best.draft else ""
    return (f"--method auto: no K of the {len(ranking.ranked)} candidate(s) is predicted to beat the target alone; "
            f"the best, {best.method}{drafter} at K = {best.losing_k}, is predicted {best.losing_speedup:.2f}x"
            f"{'' if best.measured_costs else ' (costs not measured)'}, so the plan serves the target alone")


def _draft_method(request: LaunchRequest, draft: Checkpoint) -> tuple[str | None, str]:
    """The method a named draft runs as, where vLLM's detection would go wrong (None: leave it to vLLM)."""
    speculator = speculator_of(draft)
    if speculator is not None:
        return speculator.method, f"the draft is a speculators-format {speculator.speculators_type} checkpoint"
    if draft.is_assistant:
        return "mtp", f"the draft is a {rules_for(draft.config).display_name} MTP assistant"
    if any(marker in (request.draft or "").lower() for marker in AUTODETECT_MARKERS):
        return "draft_model", "the draft path would make vLLM guess an EAGLE/DFlash/DSpark head"
    return None, ""


def choose_method(request: LaunchRequest, draft: Checkpoint | None,
                  ranking: MethodRanking | None = None) -> tuple[str | None, str]:
    """The method to set and why: the given one, the ranking's fastest, else the draft's (None: leave it to vLLM,
    which detects ``draft_model``)."""
    if request.method not in (None, "auto"):
        return request.method, ""
    if ranking is not None and ranking.ranked:
        best = ranking.ranked[0]
        return best.method, (f"--method auto: the fastest of {len(ranking.ranked)} candidates, "
                             f"{best.predicted_speedup:.2f}x predicted at K = {best.k}")
    if draft is None:
        return "ngram_gpu", "no draft and no method the ranking could place; the GPU n-gram proposer needs nothing"
    return _draft_method(request, draft)


def _default_k(request: LaunchRequest, method: str, draft: Checkpoint | None,
               ranking: MethodRanking | None, moe_target: bool = False) -> tuple[int, str]:
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


def choose_speculative(request: LaunchRequest, draft: Checkpoint | None, draft_tensor_parallel_size: int,
                       ranking: MethodRanking | None = None, target: Checkpoint | None = None) -> SpeculativeChoice:
    """Method, K, draft TP (the parallel plan's), quantization, revision and the draft-less methods' options for
    ``--speculative-config``."""
    method, why = choose_method(request, draft, ranking)
    resolved = method or "draft_model"
    if request.num_speculative_tokens:
        k, k_reason = request.num_speculative_tokens, "given"
    else:
        moe_target = is_moe_target(target)
        k, k_reason = _default_k(request, resolved, draft, ranking, moe_target)
    uses_draft = resolved not in DRAFTLESS_METHODS and draft is not None
    config = SpeculativeConfig(
        method=method,
        model=request.draft if uses_draft else None,
        num_speculative_tokens=k,
        draft_tensor_parallel_size=draft_tensor_parallel_size if uses_draft else None,
        quantization=(request.draft_quantization or draft.quantization.method) if uses_draft else None,
        revision=request.draft_revision if uses_draft else None,
        **method_options(request, resolved),
    )
    return SpeculativeChoice(config=config, method_reason=why, k_reason=k_reason)


def given_method_options(request: LaunchRequest) -> dict[str, int]:
    """The draft-less methods' options the request sets, whichever method they belong to."""
    return {name: getattr(request, name) for name in _OPTION_FIELDS if getattr(request, name) is not None}


def method_options(request: LaunchRequest, method: str) -> dict[str, int]:
    """The given options that belong to ``method`` (the checks refuse the others)."""
    prefix = METHOD_OPTION_PREFIXES.get(method)
    return {name: value for name, value in given_method_options(request).items()
            if prefix is not None and name.startswith(prefix)}
