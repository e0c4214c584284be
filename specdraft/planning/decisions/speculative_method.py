"""Deciding the speculative method (where vLLM would detect the wrong one, or ``--method auto``'s pick) and
assembling ``--speculative-config`` from it and the K decision (``decisions.k_choice``).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from specdraft.families import rules_for
from specdraft.checkpoints import Checkpoint
from specdraft.planning.decisions.k_choice import KChoice
from specdraft.planning.request import LaunchRequest
from specdraft.planning.facts.method_ranking import MethodRanking
from specdraft.planning.knowledge.methods import DRAFTLESS_METHODS, NO_SPECULATION
from specdraft.planning.knowledge.release_support import METHOD_OPTION_PREFIXES
from specdraft.planning.knowledge.speculative_config import AUTODETECT_MARKERS, SpeculativeConfig
from specdraft.planning.knowledge.speculators import speculator_of


_OPTION_FIELDS = ("prompt_lookup_min", "prompt_lookup_max", "suffix_decoding_max_tree_depth")


class SpeculativeChoice(BaseModel):
    """The speculative config the plan passes, with the reasons behind what it set."""

    model_config = ConfigDict(frozen=True)

    config: SpeculativeConfig
    method_reason: str
    """Why ``method`` was set; empty when it is left to vLLM's detection or was given."""
    resolved_method: str
    """The method vLLM runs (``resolve_method``)."""
    k_reason: str
    """Where K came from (``KChoice.reason``)."""


def no_speculation_reason(request: LaunchRequest, ranking: MethodRanking | None) -> str | None:
    """Why the plan serves the target alone (None: it speculates): ``--method none``, or a ranking (``--method
    auto``) in which no candidate's best K is predicted to beat the target alone (tune's ``recommend``, K = 0).
    The K schedule can still overrule a ranking that pays for one sequence (``decisions.decide``)."""
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


def resolve_method(method: str | None, draft: Checkpoint | None) -> str:
    """The method vLLM runs for ``method`` (None: left to its detection): the configured one, else ``mtp`` for an
    MTP assistant, else ``draft_model``."""
    return method or ("mtp" if draft is not None and draft.is_assistant else "draft_model")


def choose_speculative(request: LaunchRequest, draft: Checkpoint | None, draft_tensor_parallel_size: int,
                       method: tuple[str | None, str], k: KChoice) -> SpeculativeChoice:
    """``--speculative-config`` for ``method`` (``choose_method``'s value and reason) and K (``decide_k``): draft TP
    (the parallel plan's), quantization, revision and the draft-less methods' options."""
    configured, why = method
    resolved = resolve_method(configured, draft)
    uses_draft = resolved not in DRAFTLESS_METHODS and draft is not None
    config = SpeculativeConfig(
        method=configured,
        model=request.draft if uses_draft else None,
        num_speculative_tokens=k.k,
        num_speculative_tokens_per_batch_size=k.schedule.schedule,
        draft_tensor_parallel_size=draft_tensor_parallel_size if uses_draft else None,
        quantization=(request.draft_quantization or draft.quantization.method) if uses_draft else None,
        revision=request.draft_revision if uses_draft else None,
        **method_options(request, resolved),
    )
    return SpeculativeChoice(config=config, method_reason=why, resolved_method=resolved, k_reason=k.reason)


def given_method_options(request: LaunchRequest) -> dict[str, int]:
    """The draft-less methods' options the request sets, whichever method they belong to."""
    return {name: getattr(request, name) for name in _OPTION_FIELDS if getattr(request, name) is not None}


def method_options(request: LaunchRequest, method: str) -> dict[str, int]:
    """The given options that belong to ``method`` (the checks refuse the others)."""
    prefix = METHOD_OPTION_PREFIXES.get(method)
    return {name: value for name, value in given_method_options(request).items()
            if prefix is not None and name.startswith(prefix)}
