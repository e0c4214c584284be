"""``--method auto``: rank every method the target, its drafters and the serving release allow by predicted
speedup, and turn away the rest with the reason. Drafters published for the target that the user did not give
(its MTP assistant, its speculators) are ranked apart, as candidates to download: the choice stays among what
was asked for.

Each candidate's K is tune's pick (``specdraft.speed.recommend``) for its step model and acceptance
(``knowledge.method_costs``); the ranking is pure: the checkpoints, the release and the measured acceptance are given.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from specdraft.findings import Finding
from specdraft.checkpoints import Checkpoint
from specdraft.families import DEFAULT_FAMILY, ContextReading, ModelFamily, rules_for
from specdraft.planning.knowledge.method_costs import acceptance_for
from specdraft.planning.knowledge.methods import (DRAFTLESS_METHODS, check_drafter_class, check_hidden_state_target,
                                                  check_method_package, check_speculators_type)
from specdraft.planning.knowledge.release_support import ReleaseSupport, release_support
from specdraft.planning.knowledge.speculators import Speculator, check_verifier, speculator_of
from specdraft.planning.facts.vllm_install import method_packages_beside
from specdraft.speed import host_step_ms, recommend, size_name, step_model

BLOCK_DRAFTERS = frozenset({"dflash", "dspark"})
"""Methods whose drafter proposes its whole block in one forward, as wide as it was trained."""


class Candidate(BaseModel):
    """A method with the drafter it would run (None for a method without one)."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    method: str
    draft: Checkpoint | None = None
    speculator: Speculator | None = None

    @property
    def label(self) -> str:
        return f"{self.method} ({self.draft.ref})" if self.draft else self.method


class RankedMethod(BaseModel):
    model_config = ConfigDict(frozen=True)

    method: str
    draft: str | None
    k: int
    """tune's pick; 0: no K is predicted to beat the target alone (``predicted_speedup`` is then 1.0, serving
    the target alone)."""
    predicted_speedup: float
    measured_costs: bool
    cost_basis: str
    acceptance_basis: str
    losing_k: int | None = None
    """With ``k`` 0: the K tune's model places best, though it does not pay."""
    losing_speedup: float | None = None
    """With ``k`` 0: that K's predicted speedup (at most 1.0)."""
    context_basis: str | None = None
    """With an expected context: how the served speedups at that context scaled the prediction."""


class TurnedAway(BaseModel):
    model_config = ConfigDict(frozen=True)

    method: str
    draft: str | None
    reason: str


class MethodRanking(BaseModel):
    """Fastest first; ``turned_away`` says why the other candidates cannot serve."""

    model_config = ConfigDict(frozen=True)

    ranked: list[RankedMethod]
    turned_away: list[TurnedAway]
    notes: list[str]
    to_download: list[RankedMethod] = []
    """Published drafters for the target that were not given, fastest first: ``--draft REPO`` to run one."""

    @property
    def better_download(self) -> RankedMethod | None:
        """The fastest drafter to download, where it beats what was chosen."""
        best = self.to_download[0] if self.to_download else None
        chosen = self.chosen.predicted_speedup if self.chosen else 1.0
        return best if best is not None and best.predicted_speedup > chosen else None

    @property
    def chosen(self) -> RankedMethod | None:
        return self.ranked[0] if self.ranked and self.ranked[0].k > 0 else None

    def lines(self) -> list[str]:
        """The ranking as text, one candidate a line, then what was turned away and the notes."""
        out = []
        for place, row in enumerate(self.ranked, start=1):
            out += _row_lines(f"{place}. ", row)
        if self.to_download:
            out.append("published drafters not given (vLLM downloads one passed as --draft REPO):")
            for row in self.to_download:
                out += _row_lines("   ", row)
        out += [f"turned away: {t.method}{f' with {t.draft}' if t.draft else ''}: {t.reason}" for t in self.turned_away]
        return out + [f"note: {note}" for note in self.notes]


def _row_lines(lead: str, row: RankedMethod) -> list[str]:
    drafter = f" with {row.draft}" if row.draft else ""
    pick = (f"no K pays (at best K = {row.losing_k}, {row.losing_speedup:.2f}x predicted)"
            if row.k == 0 and row.losing_k is not None else f"K = {row.k}, {row.predicted_speedup:.2f}x predicted")
    return [f"{lead}{row.method}{drafter}: {pick}"
            + ("" if row.measured_costs else " (costs not measured)"),
            f"     costs: {row.cost_basis}",
            f"     acceptance: {row.acceptance_basis}"] + ([f"     context: {row.context_basis}"]
                                                         if row.context_basis else [])


def method_of(draft: Checkpoint) -> tuple[str, Speculator | None]:
    """The method a drafter checkpoint runs as, and its speculators config: read where the checkpoint is on this
    machine, else told by its name (a published speculator's names its method and its verifier's size)."""
    speculator = speculator_of(draft)
    if speculator is not None:
        return speculator.method, speculator
    return ("mtp" if draft.is_assistant else "draft_model"), None


def candidates_for(drafts: Sequence[Checkpoint]) -> list[Candidate]:
    """One candidate per drafter, then every draft-less method."""
    found = []
    for draft in drafts:
        method, speculator = method_of(draft)
        found.append(Candidate(method=method, draft=draft, speculator=speculator))
    draftless = sorted(DRAFTLESS_METHODS)
    return found + [Candidate(method=m) for m in draftless]


def _refusals(candidate: Candidate, target: Checkpoint, support: ReleaseSupport | None, version: str | None,
              vllm_root: Path | None) -> list[Finding]:
    method, draft, speculator = candidate.method, candidate.draft, candidate.speculator
    findings: list[Finding | None] = []
    if support is not None and method not in support.speculative_methods:
        return [Finding(level="error", check="release-support", message=f"vLLM {version} has no method {method}")]
    if support is not None and method == "mtp" and draft.is_known \
            and draft.model_type not in support.gemma4_assistant_model_types:
        findings.append(Finding(level="error", check="release-support",
                                message=f"vLLM {version} cannot drive a {draft.model_type} assistant with mtp"))
    if support is not None and speculator is not None and speculator.speculators_format:
        findings.append(check_speculators_type(speculator.speculators_type, support, version))
    if support is not None:
        findings.append(check_hidden_state_target(method, target.architectures, support, version))
    if support is not None and speculator is not None:
        findings.append(check_drafter_class(method, speculator.architecture, support, version))
    if speculator is not None:
        findings.append(check_verifier(target.ref, target.config, draft.ref, speculator))
    if vllm_root is not None:
        findings.append(check_method_package(method, method_packages_beside(vllm_root), vllm_root))
    return [f for f in findings if f is not None and f.level == "error"]


def measured_size(target: Checkpoint | None) -> tuple[ModelFamily, str | None]:
    """The family whose step costs price a plan beside ``target`` and the measured size of it ``target`` has
    (``ModelFamily.size_key``; None: another shape, priced with the family's stand-in size). A target without a
    family, or of a family without measurements, takes the default family's stand-in."""
    family = rules_for(target.config) if target is not None and target.is_known else DEFAULT_FAMILY
    if family.costs is None:
        return DEFAULT_FAMILY, None
    return family, family.size_key(target.config) if target is not None and target.is_known else None


def _rank(candidate: Candidate, shape: str | None, profile: str, thinking: bool,
          measured: Mapping[str, Sequence[float]], max_k: int, family: ModelFamily,
          context: int | None = None) -> RankedMethod:
    model = step_model(candidate.method, shape, profile, family)
    trained = candidate.speculator.speculative_tokens if candidate.speculator is not None else None
    if candidate.method in BLOCK_DRAFTERS and trained:
        # a block drafter was trained to fill its block; positions past it are extrapolation
        max_k = min(max_k, trained)
    if candidate.method in measured:
        rates, basis = tuple(measured[candidate.method]), "measured by bench (given)"
    else:
        rates, basis = acceptance_for(candidate.method, thinking, max_k)
    rec = recommend(rates, model.cost_ratio, max_k=max_k, overhead=model.overhead, host=model.host)
    best = max(rec.table, key=lambda row: row.predicted_speedup)
    reading = family.contexts.reading(shape, candidate.method, context) if context and family.contexts else None
    factor = reading.factor if reading is not None else 1.0
    # the served rows at long contexts scale the short-context prediction: a method that keeps its speedup stays,
    # one whose steps grow dearer with the context falls, below the target alone where it served slower than it
    speedup = (rec.predicted_speedup if rec.recommended_k else best.predicted_speedup) * factor
    pays = rec.recommended_k > 0 and speedup > 1
    return RankedMethod(method=candidate.method, draft=candidate.draft.ref if candidate.draft else None,
                        k=rec.recommended_k if pays else 0, predicted_speedup=round(speedup, 3) if pays else 1.0,
                        measured_costs=model.measured, cost_basis=model.basis, acceptance_basis=basis,
                        losing_k=None if pays else best.k, losing_speedup=None if pays else round(speedup, 3),
                        context_basis=_context_basis(reading, context))


def _context_basis(reading: ContextReading | None, context: int | None) -> str | None:
    if context is None:
        return None
    if reading is None:
        return f"not served at long contexts: {context} tokens left out of the prediction"
    return (f"x {reading.factor:.2f}, the share of its short-context speedup it served at {context} tokens "
            f"({reading.measured_text()}, K = {reading.k})")


def stand_in_note(target_ref: str, family: ModelFamily) -> str:
    """What prices a target of a size the family's step costs were not measured beside, in words."""
    sizes = [size.name for size in family.costs.sizes.values()]
    return (f"step costs were measured beside {' and '.join(sizes)}; beside {target_ref} {size_name(None, family)}'s "
            "are used, not measured (a cheaper target step makes every drafter relatively dearer)")


def _notes(target: Checkpoint, shape: str | None, profile: str, version: str | None,
           support: ReleaseSupport | None, family: ModelFamily) -> list[str]:
    notes = []
    _, here = host_step_ms(profile, shape, family)
    if not here:
        notes.append(f"the target step beside {size_name(shape, family)} was not measured on {profile}: host times "
                     "are taken over the target step each cost was measured beside, on another GPU")
    if shape is None:
        notes.append(stand_in_note(target.ref, family))
    if support is None:
        notes.append(f"vLLM {version or '(version unknown)'} is not in specdraft's release table: methods were not "
                     "checked against it")
    return notes


def rank_methods(target: Checkpoint, drafts: Sequence[Checkpoint], *, version: str | None, profile: str,
                 thinking: bool = False, measured: Mapping[str, Sequence[float]] | None = None,
                 vllm_root: Path | None = None, max_k: int = 8,
                 published: Sequence[Checkpoint] = (), context: int | None = None) -> MethodRanking:
    """Every candidate method for ``target`` with ``drafts`` on vLLM ``version``, fastest first.

    ``measured`` maps a method to the user's per-position acceptance (from a bench result of that method);
    ``published`` are drafters not given, ranked apart (``to_download``) and never chosen; ``context``, the tokens of
    context a request carries, scales each prediction by what the method served at that context."""
    support = release_support(version)
    family, shape = measured_size(target)
    ranked, turned_away, to_download = [], [], []
    given = [(candidate, ranked) for candidate in candidates_for(drafts)]
    offered = [(Candidate(method=method, draft=draft, speculator=speculator), to_download)
               for draft in published for method, speculator in [method_of(draft)]]
    for candidate, into in given + offered:
        refusals = _refusals(candidate, target, support, version, vllm_root)
        if refusals:
            turned_away.append(TurnedAway(method=candidate.method,
                                          draft=candidate.draft.ref if candidate.draft else None,
                                          reason="; ".join(f.message for f in refusals)))
            continue
        try:
            into.append(_rank(candidate, shape, profile, thinking, measured or {}, max_k, family, context))
        except KeyError:  # the family's tables neither measure nor model this method
            turned_away.append(TurnedAway(method=candidate.method,
                                          draft=candidate.draft.ref if candidate.draft else None,
                                          reason=f"no step cost of {candidate.method} beside "
                                                 f"{size_name(shape, family)} in {family.display_name}'s tables"))
    for rows in (ranked, to_download):
        # among candidates that do not pay, the least bad first: the one a "no speculation" finding names
        rows.sort(key=lambda row: (-row.predicted_speedup, -(row.losing_speedup or 0.0), not row.measured_costs))
    return MethodRanking(ranked=ranked, turned_away=turned_away, to_download=to_download,
                         notes=_notes(target, shape, profile, version, support, family))
