"""The method checks of one plan: the speculator against its verifier, the method's needs from the serving release
(``knowledge.methods``), its options, and ``--method auto``'s choice."""

from __future__ import annotations

from typing import TYPE_CHECKING

from specdraft.findings import Finding
from specdraft.planning.knowledge.methods import (check_async_for_method, check_draft_lm_head_quantization,
                                                  check_drafter_class, check_hidden_state_target,
                                                  check_lossy_rejection, check_method_options, check_method_package,
                                                  check_speculators_type)
from specdraft.planning.knowledge.release_support import release_support
from specdraft.planning.decisions.speculative_method import given_method_options
from specdraft.planning.knowledge.speculators import check_verifier, speculator_of

if TYPE_CHECKING:
    from specdraft.planning.decisions.decide import Decisions
    from specdraft.planning.facts.launch_facts import LaunchFacts


def _no_speculation_finding(facts: LaunchFacts, decided: Decisions) -> Finding:
    """Why the plan serves the target alone: asked for (info), or no candidate of ``--method auto`` pays
    (warning, naming the best candidate; and the published drafter predicted to pay, where one is)."""
    if facts.ranking is None:
        return Finding(level="info", check="speculation", message=decided.no_speculation)
    download = facts.ranking.better_download
    if download is not None:
        return Finding(level="warning", check="method-auto", message=decided.no_speculation,
                       hint=f"add --draft {download.draft}: the published {download.method} drafter is predicted "
                            f"{download.predicted_speedup:.2f}x at K = {download.k} (vLLM downloads it)")
    return Finding(level="warning", check="method-auto", message=decided.no_speculation,
                   hint="to speculate anyway, name the method (--method METHOD) and bench that server with "
                        "--compare against this plan's")


def _ranking_finding(facts: LaunchFacts) -> Finding | None:
    ranking = facts.ranking
    if ranking is None:
        return None
    if not ranking.ranked:
        return Finding(level="error", check="method-auto",
                       message="--method auto: no method can serve this target on this vLLM ("
                               + "; ".join(f"{t.method}: {t.reason}" for t in ranking.turned_away) + ")",
                       hint="see the turned-away reasons; pass --draft with a drafter the release serves")
    best, download = ranking.ranked[0], ranking.better_download
    message = (f"--method auto chose {best.method} at K = {best.k} ({best.predicted_speedup:.2f}x "
               f"predicted{'' if best.measured_costs else ', costs not measured'}) of "
               f"{len(ranking.ranked)} candidates; {len(ranking.turned_away)} turned away")
    if download is not None:
        return Finding(level="info", check="method-auto",
                       message=f"{message}; the published {download.method} drafter {download.draft} is predicted "
                               f"{download.predicted_speedup:.2f}x at K = {download.k} (--draft {download.draft})",
                       hint=f"add --draft {download.draft} (vLLM downloads it)")
    return Finding(level="ok" if best.measured_costs else "info", check="method-auto", message=message)


def _speculator_findings(facts: LaunchFacts, method: str, version: str | None) -> list[Finding]:
    draft = facts.draft
    if draft is None:
        return []
    speculator = speculator_of(draft)
    if speculator is None:
        return []
    findings = [check_verifier(facts.target.ref, facts.target.config if facts.target.is_known else {}, draft.ref,
                               speculator)]
    support = release_support(version)
    if support is not None and speculator.speculators_format:
        findings.append(check_speculators_type(speculator.speculators_type, support, version))
    if support is not None:
        findings.append(check_drafter_class(method, speculator.architecture, support, version))
    return [finding for finding in findings if finding is not None]


def method_verdicts(facts: LaunchFacts, decided: Decisions) -> list[Finding]:
    """The checks above for the plan's method, in report order; without speculation, why there is none."""
    lossy = check_lossy_rejection(facts.request.extra_args, facts.vllm.version, release_support(facts.vllm.version))
    if decided.speculative is None:
        return [_no_speculation_finding(facts, decided), *([lossy] if lossy else [])]
    method, version = decided.speculative.resolved_method, facts.vllm.version
    support = release_support(version)
    findings = [_ranking_finding(facts), *_speculator_findings(facts, method, version)]
    if support is not None:
        findings.append(check_hidden_state_target(method, facts.target.architectures, support, version))
        findings.append(check_method_options(method, given_method_options(facts.request), support, version))
    findings.append(check_method_package(method, facts.vllm.method_packages, facts.vllm.root))
    findings.append(check_async_for_method(method, facts.request.extra_args))
    findings.append(lossy)
    findings.append(check_draft_lm_head_quantization(facts.request.extra_args, version, method))
    return [finding for finding in findings if finding is not None]
