"""A K per batch size: vLLM's ``num_speculative_tokens_per_batch_size`` from a load test, or the one K best over
the batch sizes a server will see where the release takes a single K.

The K each batch size wants comes from ``decisions.k_levels`` (a ``--from-bench`` load test, else the shipped step
costs per batch size); where they differ, ``decisions.single_k`` says whether the launch takes one K instead, and
which. K = 0 at a batch size means no K beats the target alone there. Which releases take a schedule, and what
K = 0 still costs in one, is the shipped table ``data/k_per_batch_size.json`` (read from the published wheels).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from specdraft.planning.decisions.k_costs import ModelledCosts
from specdraft.planning.decisions.k_levels import (LevelChoice, LoadTest, MeasuredLevel, choose_level,
                                                   modelled_levels, read_load_test)
from specdraft.planning.decisions.model_runner import ModelRunnerChoice
from specdraft.planning.decisions.single_k import (PIECEWISE_SPEED, V2_BELOW_LARGEST_K_SPEED, V2_SCHEDULED_K_SPEED,
                                                   data_parallel_size_of, schedule_unavailable, single_k,
                                                   why_single_k)
from specdraft.planning.knowledge.release_tables import k_per_batch_size_table
from specdraft.speed import schedule_ranges

__all__ = [  # the K schedule's public names, the levels' and the single K's included
    "MAX_K", "PIECEWISE_SPEED", "V2_BELOW_LARGEST_K_SPEED", "V2_SCHEDULED_K_SPEED", "KScheduleDecision", "LevelChoice",
    "LoadTest", "MeasuredLevel", "ScheduleOutcome", "choose_level", "data_parallel_size_of", "decide_k_schedule",
    "modelled_levels", "no_k_schedule", "read_load_test", "schedule_unavailable", "single_k",
]

ScheduleOutcome = Literal["schedule", "single-k", "same-k", "loses", "unmeasured", "one-sequence", "no-speculation"]
MAX_K = 8
"""The longest draft the schedule considers (tune's default ``--max-k``); a given K lowers it."""


class KScheduleDecision(BaseModel):
    """What the plan does about K per batch size, and why; ``--json`` prints it as ``k_schedule``."""

    model_config = ConfigDict(frozen=True)

    outcome: ScheduleOutcome
    """``schedule``: the config carries ``num_speculative_tokens_per_batch_size``; ``single-k``: the release (or
    setup) takes one K, chosen over the measured batch sizes; ``same-k``: every batch size wants the same K;
    ``loses``: no K beats the target alone at any measured batch size; ``unmeasured``: no load test, the plan's
    K holds for every batch size; ``one-sequence``: ``--max-num-seqs 1``, nothing to schedule;
    ``no-speculation``: the plan serves the target alone, so there is no K."""
    k: int | None
    """The ``num_speculative_tokens`` the config carries (the schedule's largest K); None: the plan's own K."""
    schedule: list[tuple[int, int, int]] | None
    """``[(first, last, K), ...]`` inclusive batch-size ranges covering 1..max_num_seqs."""
    reason: str
    levels: list[LevelChoice] = []
    lost: list[tuple[int, float]] = []
    """With one K: per measured batch size, the share of its best predicted speed that K gives up."""
    levels_from: str | None = None
    """Where the per-batch-size figures come from: a ``--from-bench`` result, or the shipped step costs with the
    acceptance assumed."""
    model_runner: ModelRunnerChoice | None = None
    """The runner the server will start with: V1 captures PIECEWISE CUDA graphs only with a schedule, V2 keeps
    FULL ones."""

    @property
    def schedule_on_v2(self) -> bool:
        """Whether the server passes a schedule to Model Runner V2 (whose graph capture needs a hotfix in
        0.25.0-0.31.x)."""
        return self.schedule is not None and self.model_runner is not None and self.model_runner.runner == "v2"


def no_k_schedule(reason: str) -> KScheduleDecision:
    """The decision of a plan that serves the target alone (``reason``: why it does)."""
    return KScheduleDecision(outcome="no-speculation", k=None, schedule=None, reason=f"no K: {reason}")



def decide_k_schedule(load: LoadTest | None, *, max_num_seqs: int, version: str | None, method: str, plan_k: int,
                      k_given: bool, data_parallel_size: int = 1,
                      modelled: ModelledCosts | str | None = None,
                      runner: ModelRunnerChoice | None = None) -> KScheduleDecision:
    """K per batch size for a launch: from ``load`` where one was measured, else from ``modelled`` (the shipped
    step costs per batch size; a string says why none fit), else the plan's K with the reason. ``runner``: the
    model runner the server will start with (unknown: taken as V1)."""
    decision = _decide(load, max_num_seqs=max_num_seqs, version=version, method=method, plan_k=plan_k,
                       k_given=k_given, data_parallel_size=data_parallel_size, modelled=modelled, runner=runner)
    return decision.model_copy(update={"model_runner": runner})


def _decide(load: LoadTest | None, *, max_num_seqs: int, version: str | None, method: str, plan_k: int,
            k_given: bool, data_parallel_size: int, modelled: ModelledCosts | str | None,
            runner: ModelRunnerChoice | None) -> KScheduleDecision:
    on_v2 = runner is not None and runner.runner == "v2"
    if load is None and max_num_seqs == 1:
        return KScheduleDecision(outcome="one-sequence", k=None, schedule=None,
                                 reason="one sequence at a time (--max-num-seqs 1): one K")
    max_k = plan_k if k_given else MAX_K
    if load is not None:
        levels = [choose_level(level, max_k) for level in sorted(load.levels, key=lambda level: level.batch_size)]
        basis = f"{load.source} (measured at batch size {', '.join(str(level.batch_size) for level in levels)})"
    elif isinstance(modelled, ModelledCosts) and (levels := modelled_levels(modelled, max_k, max_num_seqs)):
        basis = f"{modelled.basis} (at batch size {', '.join(str(level.batch_size) for level in levels)})"
    else:
        why = (modelled if isinstance(modelled, str)
               else "the shipped step costs give no line through two K at any batch size")
        return KScheduleDecision(
            outcome="unmeasured", k=None, schedule=None,
            reason=f"K = {plan_k} at every batch size 1-{max_num_seqs}: {why}; to plan a K per batch size, bench the "
                   f"server at --concurrency 1,2,4,...,{max_num_seqs} with --compare against the same launch "
                   f"with --method none, and pass the result as --from-bench")
    decision = _decide_from_levels(levels, basis, max_num_seqs=max_num_seqs, version=version, method=method,
                                   max_k=max_k, data_parallel_size=data_parallel_size, on_v2=on_v2)
    if load is None and modelled.piecewise_only and (decision.outcome != "schedule" or on_v2):
        return _keep_plan_k(decision, plan_k, on_v2)
    return decision


def _keep_plan_k(decision: KScheduleDecision, plan_k: int, on_v2: bool) -> KScheduleDecision:
    """One K for a FULL-graph server, where the only per-batch-size costs came from a PIECEWISE-graph engine:
    those rank K for a schedule's engine; beside a FULL-graph one they mislead (the E2B draft at K = 3 ran
    1.66-1.81x the target alone at 1-32 sequences with FULL graphs, where its PIECEWISE costs predict at most
    1.16x at any K; docs/gpu/README.md section 7), so the plan's own K stays. On Model Runner V2 a schedule keeps
    FULL graphs too, so the same costs cannot tell whether one pays there: only a load test of the server can."""
    v2 = (" On Model Runner V2 (FULL graphs with a schedule) the measured schedules ran within -6% / +2% of the "
          "best single K over 1-32 sequences (31B MTP assistant, vLLM 0.26.0, H200): whether one pays for this "
          "server, only its own load test can tell: bench it at several --concurrency levels and pass --from-bench."
          if on_v2 else "")
    return decision.model_copy(update={"k": None, "schedule": None, "lost": [], "outcome": (
        "single-k" if decision.outcome == "schedule" else decision.outcome), "reason": (
        f"K = {plan_k}, the plan's own, at every batch size: the step costs per batch size were measured on an "
        f"engine with a K schedule (PIECEWISE CUDA graphs only), which misjudges a FULL-graph server; "
        f"what they say: {decision.reason}.{v2}")})


def _decide_from_levels(levels: list[LevelChoice], basis: str, *, max_num_seqs: int, version: str | None,
                        method: str, max_k: int, data_parallel_size: int, on_v2: bool) -> KScheduleDecision:
    ranges = schedule_ranges([(level.batch_size, level.best_k) for level in levels], last=max_num_seqs)
    common = dict(levels=levels, schedule=None, levels_from=basis)
    if all(level.best_k == 0 for level in levels):
        best = max(levels, key=lambda level: max(level.predicted))
        return KScheduleDecision(outcome="loses", k=None, **common, reason=(
            f"no K beats the target alone at any batch size in {basis}: at best {max(best.predicted):.2f}x "
            f"(batch size {best.batch_size}); serving the target without a draft is faster"))
    if len(ranges) == 1:
        return KScheduleDecision(outcome="same-k", k=ranges[0][2], **common,
                                 reason=f"K = {ranges[0][2]} is the best K at every batch size in {basis}"
                                        + _unmeasured_tail(levels, max_num_seqs))
    rule = k_per_batch_size_table().rule_for(version)
    why_not = why_single_k(levels, rule, version=version, method=method, max_k=max_k,
                           data_parallel_size=data_parallel_size, on_v2=on_v2)
    if why_not is None:
        common["schedule"] = ranges
        graphs = f"with a schedule, {rule.full_cudagraphs}"
        if on_v2 and rule.v2_drafts_largest_k:
            graphs = ("the server runs Model Runner V2, which keeps FULL CUDA graphs with a schedule; its K below the "
                      f"largest run at {V2_BELOW_LARGEST_K_SPEED:.0%} of a plain engine's speed, which the gain covers")
        elif on_v2:
            graphs = (f"the server runs Model Runner V2, which keeps FULL CUDA graphs with a schedule, and vLLM {version} "
                      f"drafts only the scheduled K, with FULL graphs for each K it names: a scheduled K ran at "
                      f"{V2_SCHEDULED_K_SPEED:.0%} of a plain engine of that K (measured: 31B MTP assistant, vLLM 0.33.0, "
                      "H200)")
        return KScheduleDecision(outcome="schedule", k=max(k for _, _, k in ranges), **common,
                                 reason=f"K per batch size from {basis}: {_describe(ranges, levels, max_num_seqs)}"
                                        f"; {graphs}")
    k, lost = single_k(levels, max_k)
    gave_up = ", ".join(f"{share:.0%} at batch size {size}" for size, share in lost if share >= 0.005) or "nothing"
    return KScheduleDecision(outcome="single-k", k=k, lost=lost, **common, reason=(
        f"{why_not}: K = {k} is the best single K over {basis}; against a K per batch size "
        f"({', '.join(f'{level.best_k} at {level.batch_size}' for level in levels)}) it gives up {gave_up}"))


def _describe(ranges: list[tuple[int, int, int]], levels: list[LevelChoice], max_num_seqs: int) -> str:
    text = ", ".join(f"K = {k} at {first}-{last}" if first != last else f"K = {k} at {first}"
                     for first, last, k in ranges)
    if any(k == 0 for _, _, k in ranges):
        text += (f" (K = 0: no K beats the target alone there; {k_per_batch_size_table().k_zero})")
    return text + _unmeasured_tail(levels, max_num_seqs)


def _unmeasured_tail(levels: list[LevelChoice], max_num_seqs: int) -> str:
    last = levels[-1].batch_size
    if last >= max_num_seqs:
        return ""
    return f"; batch sizes {last + 1}-{max_num_seqs} were not measured and keep the K of {last}"
