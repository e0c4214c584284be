"""A K per batch size: vLLM's ``num_speculative_tokens_per_batch_size`` from a load test, or the one K best over
the batch sizes a server will see where the release takes a single K.

The load test is a ``specdraft bench`` result of the speculative server at several ``--concurrency`` levels with
a ``--compare`` baseline (the same plan without speculation, ``launch --method none``, same workload). At each level it gives the acceptance per
draft position and the measured speedup at the server's K; tune's model ``S(K) = E(K) / (1 + K*c)`` then takes
the whole measured step time beyond the target's as growing with K (``c = (E(K_s) / S_measured - 1) / K_s``),
so it reproduces the measured speedup at the server's own K and predicts the others from the acceptance. Without
a load test the levels come from the shipped step costs per batch size (``decisions.k_costs``: a line through the K
measured at each batch size, and the method's default acceptance). K = 0 at a batch size means no K beats the
target alone there. Which releases take a schedule, and what K = 0 still
costs in one, is the shipped table ``data/k_per_batch_size.json`` (read from the published wheels).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from specdraft.bench import load_result
from specdraft.errors import UserError
from specdraft.planning.decisions.k_costs import ModelledCosts
from specdraft.planning.decisions.model_runner import ModelRunnerChoice
from specdraft.planning.knowledge.release_tables import KPerBatchSizeRule, k_per_batch_size_table
from specdraft.speed import best_k_per_batch_size, known_batch_step_cost, recommend, schedule_ranges

ScheduleOutcome = Literal["schedule", "single-k", "same-k", "loses", "unmeasured", "one-sequence", "no-speculation"]
MAX_K = 8
"""The longest draft the schedule considers (tune's default ``--max-k``); a given K lowers it."""
PIECEWISE_SPEED = 0.73
"""What is left of a FULL-graph engine's aggregate speed at the same K once a schedule makes the V1 model runner
capture PIECEWISE CUDA graphs only: the 31B-shaped target's MTP assistant at K = 8 on an H200, vLLM 0.26.0, the
schedule engine's fixed K = 8 over a plain K = 8 engine, geometric mean over 1-32 sequences at acceptance 0.85 and
0.70 (0.55-1.05 per level; docs/gpu/README.md section 7.1, ``docs/gpu/load_31b.schedule.json``). Measured for that
path and release only; taken for every release whose V1 runner does the same, since no other was measured."""
V2_BELOW_LARGEST_K_SPEED = 0.86
"""On Model Runner V2 a schedule keeps FULL CUDA graphs, but in 0.25.0-0.31.x its speculator drafts the largest K
every step, so a K below the schedule's largest runs slower than a plain engine of that K. What is left of the
plain engine's aggregate speed: the same 31B-shaped MTP pair, H200, vLLM 0.26.0 with the v2-schedule-drafter-graphs
hotfix, K = 3 and 5 through a K = 8 schedule engine over plain K = 3 and 5 engines, geometric mean over 1-32
sequences at acceptance 0.85 and 0.70, 16 and 32 sequences pooled over two runs (0.49-1.02 per level; K = 8
itself: 0.98; docs/gpu/README.md section 7.3, ``docs/gpu/load_31b.v2.schedule.json``)."""

V2_RESOLVED_GAIN = 1.05
"""Where Model Runner V2 drafts only the scheduled K (0.32.0 on), no schedule was measured: one is planned only if
predicted at least 5% faster than one K, since the measured V2 schedules (0.26.0) landed within -6% / +2% of the
best single K over 1-32 sequences (docs/gpu/README.md section 7.3): a smaller predicted gain is inside what
those runs could not tell apart."""


class MeasuredLevel(BaseModel):
    """One concurrency level of a load test."""

    model_config = ConfigDict(frozen=True)

    batch_size: int
    per_position_acceptance: tuple[float, ...]
    """vLLM's unconditional acceptance per draft position at this level (counter deltas of the level)."""
    server_k: int
    """The benched server's ``num_speculative_tokens``."""
    speedup: float
    """Per-sequence decode tok/s over the baseline's at the same concurrency."""


class LoadTest(BaseModel):
    """What a load test measured, per level (the fact the schedule is decided from)."""

    model_config = ConfigDict(frozen=True)

    source: str
    levels: tuple[MeasuredLevel, ...]


class LevelChoice(BaseModel):
    """The K for one measured batch size, and the figures behind it."""

    model_config = ConfigDict(frozen=True)

    batch_size: int
    measured_k: int | None
    """The benched server's K (None: planned from the shipped step costs, no server benched)."""
    measured_speedup: float | None
    cost_ratio: float
    """c at this batch size: the measured step time beyond the target's, per drafted token, in target steps."""
    overhead: float = 0.0
    """o at this batch size (shipped step costs: the fitted step's intercept beyond one target step)."""
    best_k: int
    """0: no K beats the target alone at this batch size."""
    predicted: tuple[float, ...]
    """Predicted speedup for K = 1, 2, ... (index K - 1)."""

    def speedup_at(self, k: int) -> float:
        return 1.0 if k == 0 else self.predicted[k - 1]


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


def read_load_test(path: Path, max_num_seqs: int) -> LoadTest:
    """The per-level measurements of a bench result; ``UserError`` for a result that cannot give a schedule."""
    result = load_result(path)
    again = (f"python -m specdraft bench --base-url SPEC_URL --model NAME --concurrency 1,2,4,...,{max_num_seqs} "
             f"--duration 60 --compare BASELINE_URL --out {path}  (BASELINE_URL: the same launch with --method none)")
    if not result.speculative:
        raise UserError(f"--from-bench {path} is a run without speculative decoding: it has no acceptance",
                        hint=f"bench the speculative server: {again}")
    if result.baseline is None:
        raise UserError(f"--from-bench {path} has no baseline: a K per batch size needs the speedup at each level",
                        hint=f"bench with the same plan without speculation as --compare: {again}")
    levels = [_measured_level(path, lv, result.baseline.level(lv.concurrency), again)
              for lv in result.levels if lv.concurrency <= max_num_seqs]
    if not levels:
        measured = ", ".join(str(lv.concurrency) for lv in result.levels)
        raise UserError(f"--from-bench {path} measured concurrency {measured}, none at or below --max-num-seqs "
                        f"{max_num_seqs}", hint=f"bench the batch sizes this server will run: {again}")
    return LoadTest(source=str(path), levels=tuple(levels))


def _measured_level(path: Path, level, base, again: str) -> MeasuredLevel:
    where = f"--from-bench {path} at concurrency {level.concurrency}"
    rates = level.spec_decode.per_position_acceptance if level.spec_decode is not None else None
    if not rates:
        raise UserError(f"{where} has no acceptance counters (no drafts were counted for that level)",
                        hint=f"bench again with this specdraft, which reads /metrics around every level: {again}")
    if base is None or not (level.decode_tok_s or 0) > 0 or not (base.decode_tok_s or 0) > 0:
        raise UserError(f"{where} has no decode speed for both runs, so no speedup",
                        hint=f"bench both servers at the same levels: {again}")
    speedup = level.decode_tok_s / base.decode_tok_s
    expected = 1.0 + sum(rates)
    if speedup > expected:
        raise UserError(f"{where}: the measured speedup {speedup:.2f}x exceeds the mean acceptance length "
                        f"{expected:.2f}, which no speculative step can; the two runs are not the same workload",
                        hint=f"bench both servers with the same prompts and --max-tokens: {again}")
    return MeasuredLevel(batch_size=level.concurrency, per_position_acceptance=tuple(rates),
                         server_k=level.spec_decode.num_speculative_tokens, speedup=speedup)


def choose_level(level: MeasuredLevel, max_k: int) -> LevelChoice:
    """The best K at one measured batch size by tune's model with this level's c."""
    k = level.server_k
    cost_ratio = (1.0 + sum(level.per_position_acceptance[:k])) / level.speedup - 1.0
    cost_ratio = max(cost_ratio, 0.0) / k
    rec = recommend(level.per_position_acceptance, cost_ratio, max_k=max_k)
    return LevelChoice(batch_size=level.batch_size, measured_k=k, measured_speedup=level.speedup,
                       cost_ratio=cost_ratio, best_k=rec.recommended_k,
                       predicted=tuple(row.predicted_speedup for row in rec.table))


def single_k(levels: list[LevelChoice], max_k: int) -> tuple[int, list[tuple[int, float]]]:
    """The K >= 1 with the highest geometric-mean predicted speedup over the measured batch sizes, and what
    it gives up at each against that batch size's own best K."""
    def mean_log(k: int) -> float:
        return sum(math.log(level.speedup_at(k)) for level in levels) / len(levels)

    k = max(range(1, max_k + 1), key=lambda candidate: (round(mean_log(candidate), 9), -candidate))
    lost = [(level.batch_size, 1.0 - level.speedup_at(k) / level.speedup_at(level.best_k)) for level in levels]
    return k, lost


def schedule_unavailable(rule: KPerBatchSizeRule | None, version: str | None, method: str,
                         data_parallel_size: int) -> str | None:
    """Why this launch cannot pass a schedule on ``version`` (whose table rule is ``rule``); None: it can."""
    if rule is None:
        where = f"vLLM {version} is not in" if version else "the vLLM version is unknown to"
        return f"{where} specdraft's K-per-batch-size table (0.19.0-0.33.0)"
    if not rule.supported:
        return f"vLLM {version} takes one K for every batch size (num_speculative_tokens_per_batch_size came in 0.24.0)"
    if rule.v1_methods is not None and method not in rule.v1_methods:
        return f"vLLM {version} drops the schedule for method {method} on its V1 model runner"
    if rule.drops_with_data_parallel and data_parallel_size > 1:
        return (f"vLLM {version} drops the schedule with data parallelism ({data_parallel_size} ranks could pick "
                f"different K and deadlock)")
    return None


def data_parallel_size_of(extra_args: list[str]) -> int:
    """``--data-parallel-size`` / ``-dp`` among the flags passed through after ``--`` (1 when absent)."""
    for i, arg in enumerate(extra_args):
        name, _, value = arg.partition("=")
        if name in ("--data-parallel-size", "-dp"):
            value = value or (extra_args[i + 1] if i + 1 < len(extra_args) else "1")
            return int(value) if value.isdigit() else 1
    return 1


def modelled_levels(modelled: ModelledCosts, max_k: int, max_num_seqs: int) -> list[LevelChoice]:
    """tune's best K at each batch size of the shipped step costs up to ``max_num_seqs``."""
    choices = best_k_per_batch_size(known_batch_step_cost(modelled.costs_name), modelled.acceptance, max_k=max_k,
                                    up_to=max_num_seqs)
    return [LevelChoice(batch_size=c.batch_size, measured_k=None, measured_speedup=None, cost_ratio=c.cost_ratio,
                        overhead=c.overhead, best_k=c.best_k, predicted=c.predicted) for c in choices]


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
    why_not = schedule_unavailable(rule, version, method, data_parallel_size)
    if why_not is None and on_v2:
        why_not = (_below_largest_k_costs_more(levels, max_k) if rule.v2_drafts_largest_k
                   else _gain_unresolved(levels, version, max_k))
    elif why_not is None:
        why_not = _graphs_cost_more(levels, rule, version, max_k)
    if why_not is None:
        common["schedule"] = ranges
        graphs = f"with a schedule, {rule.full_cudagraphs}"
        if on_v2 and rule.v2_drafts_largest_k:
            graphs = ("the server runs Model Runner V2, which keeps FULL CUDA graphs with a schedule; its K below the "
                      f"largest run at {V2_BELOW_LARGEST_K_SPEED:.0%} of a plain engine's speed, which the gain covers")
        elif on_v2:
            graphs = (f"the server runs Model Runner V2, which keeps FULL CUDA graphs with a schedule, and vLLM {version} "
                      "drafts only the scheduled K (a schedule on this release was not measured on a GPU)")
        return KScheduleDecision(outcome="schedule", k=max(k for _, _, k in ranges), **common,
                                 reason=f"K per batch size from {basis}: {_describe(ranges, levels, max_num_seqs)}"
                                        f"; {graphs}")
    k, lost = single_k(levels, max_k)
    gave_up = ", ".join(f"{share:.0%} at batch size {size}" for size, share in lost if share >= 0.005) or "nothing"
    return KScheduleDecision(outcome="single-k", k=k, lost=lost, **common, reason=(
        f"{why_not}: K = {k} is the best single K over {basis}; against a K per batch size "
        f"({', '.join(f'{level.best_k} at {level.batch_size}' for level in levels)}) it gives up {gave_up}"))


def _predicted_gain(levels: list[LevelChoice], max_k: int, below_largest: float = 1.0) -> float:
    """The schedule's predicted speed over the best single K, geometric mean over the batch sizes; each batch size
    whose K is below the schedule's largest keeps ``below_largest`` of its predicted speed."""
    k, _ = single_k(levels, max_k)
    largest = max(level.best_k for level in levels)

    def scheduled(level: LevelChoice) -> float:
        speed = level.speedup_at(level.best_k)
        return speed if level.best_k == largest else speed * below_largest

    return math.exp(sum(math.log(scheduled(level) / level.speedup_at(k)) for level in levels) / len(levels))


def _graphs_cost_more(levels: list[LevelChoice], rule: KPerBatchSizeRule, version: str | None,
                      max_k: int) -> str | None:
    """Why a schedule would run slower than one K on a FULL-graph engine (None: its predicted gain covers its
    PIECEWISE graphs): on the GPU a schedule on vLLM 0.26.0's V1 runner lost to a plain fixed-K engine at every
    batch size, because its predicted gain over one K is smaller than what PIECEWISE graphs cost."""
    if "PIECEWISE" not in rule.full_cudagraphs:
        return None
    gain = _predicted_gain(levels, max_k)
    if gain * PIECEWISE_SPEED > 1.0:
        return None
    return (f"a schedule makes vLLM {version}'s V1 model runner capture PIECEWISE CUDA graphs only, which left "
            f"{PIECEWISE_SPEED:.0%} of a FULL-graph engine's speed at the same K (measured: 31B MTP assistant, "
            f"vLLM 0.26.0, H200); the schedule's predicted gain over one K ({gain - 1:+.0%}, geometric mean over the "
            f"batch sizes) does not cover that")


def _below_largest_k_costs_more(levels: list[LevelChoice], max_k: int) -> str | None:
    """Why a schedule on a Model Runner V2 that drafts the largest K every step (0.25.0-0.31.x: its speculator's
    loop runs num_speculative_tokens steps, the schedule trims what is verified) would run slower than one K (None:
    it pays): each batch size whose K is below the schedule's largest keeps ``V2_BELOW_LARGEST_K_SPEED`` of its
    predicted speed (measured on vLLM 0.26.0: the schedules there ran within -6% / +2% of the best single K over 1-32
    sequences, and 11-19% below a plain engine of their own K at 32 sequences)."""
    gain = _predicted_gain(levels, max_k, below_largest=V2_BELOW_LARGEST_K_SPEED)
    if gain > 1.0:
        return None
    return (f"on Model Runner V2 a schedule's K below its largest ran at {V2_BELOW_LARGEST_K_SPEED:.0%} of a plain "
            f"engine of that K (measured: 31B MTP assistant, vLLM 0.26.0, H200); with that, the schedule's predicted "
            f"speed is {gain - 1:+.0%} against one K (geometric mean over the batch sizes)")


def _gain_unresolved(levels: list[LevelChoice], version: str | None, max_k: int) -> str | None:
    """Why a schedule on a Model Runner V2 that drafts the scheduled K is not planned (None: it is): a predicted
    gain over one K below ``V2_RESOLVED_GAIN``."""
    gain = _predicted_gain(levels, max_k)
    if gain >= V2_RESOLVED_GAIN:
        return None
    return (f"the schedule's predicted gain over one K ({gain - 1:+.0%}, geometric mean over the batch sizes) is below "
            f"the {V2_RESOLVED_GAIN - 1:.0%} that the measured Model Runner V2 schedules could resolve (vLLM {version} "
            "drafts only the scheduled K; no schedule on it was measured)")


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
