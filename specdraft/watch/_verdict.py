"""Whether speculation pays at the acceptance a server observes: tune's model (``specdraft.speed``) over the step
costs of the served pair, the prediction the plan made, and the K tune would pick instead.

The step costs and the assumed acceptance are launch's own (``planning``'s ``step_model`` and ``acceptance_for``):
a plan given with ``--plan`` names the method, the target, the GPU profile and thinking; without one the served
target comes from ``/v1/models`` and the method and profile from the command line. Nothing here reads the network.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from specdraft.bench import SpecDecodeCounters
from specdraft.speed import HostCost, predict_speedup, recommend, step_cost
from specdraft.checkpoints import Checkpoint, inspect_checkpoint
from specdraft.errors import UserError
from specdraft.planning import acceptance_for, measured_size
from specdraft.speed import size_name, step_model

Verdict = Literal["pays", "marginal", "loses", "idle", "no-speculation"]
"""pays / marginal / loses: the modelled speedup at the observed acceptance; idle: no drafts in the window (nothing
to judge); no-speculation: the server exports no speculative-decoding counters."""

MARGIN = 0.05
"""Within 5% of the target alone the verdict is "marginal": the step costs were measured on another machine (and a
host line shifts with the CPU), so the model cannot tell a 3% gain from a 3% loss."""
MAX_K = 8
"""The largest K tune considers by default, and so watch."""


class PairCosts(BaseModel):
    """The served pair's step model in target steps, and the speedup the plan expected."""

    model_config = ConfigDict(frozen=True)

    method: str
    cost_ratio: float
    overhead: float
    host_per_step: float | None
    host_per_draft_token: float | None
    basis: str
    """Where the costs come from, in words (measured entry, or modelled, and any shape or GPU stand-in)."""
    thinking: bool = False
    planned_k: int | None = None
    """The plan's K (None without ``--plan``: the server's K is judged against launch's assumption at that K)."""
    planned_speedup: float | None = None
    """The plan's own prediction, where the plan carries one (``--method auto``'s ranking)."""

    @property
    def host(self) -> HostCost | None:
        if self.host_per_step is None:
            return None
        return HostCost(self.host_per_step, self.host_per_draft_token or 0.0, self.basis)

    def step(self, k: int) -> float:
        return step_cost(k, self.cost_ratio, self.overhead, self.host)

    def predicted(self, k: int) -> tuple[float, str]:
        """The speedup the plan predicts at ``k`` and why: its own figure at its K, else tune's model at launch's
        assumed acceptance for the method."""
        if self.planned_speedup is not None and k == self.planned_k:
            return self.planned_speedup, "the plan's method ranking"
        rates, basis = acceptance_for(self.method, self.thinking, k)
        speedup = predict_speedup(rates, k, self.cost_ratio, self.overhead, self.host)
        return speedup, f"launch's assumed acceptance ({basis})"


def costs_for(method: str, target: Checkpoint | None, *, profile: str, thinking: bool = False,
              how: str = "") -> PairCosts:
    """The step model of ``method`` beside ``target`` on ``profile`` (the 31B's where the target's shape was not
    measured, and the basis says so)."""
    family, shape = measured_size(target)
    model = step_model(method, shape, profile, family)
    basis = model.basis
    if shape is None:
        name = target.ref if target is not None else "the served target"
        basis += f"; {name} is not a measured shape, so the costs beside {size_name(None, family)} stand in"
    return PairCosts(method=method, cost_ratio=model.cost_ratio, overhead=model.overhead,
                     host_per_step=model.host_per_step, host_per_draft_token=model.host_per_draft_token,
                     basis=f"{method} on {profile}{how}: {basis}", thinking=thinking)


def costs_from_plan(path: str | Path) -> PairCosts:
    """The step model of the pair a ``launch --dry-run --json`` plan serves, with its K and prediction."""
    try:
        plan = json.loads(Path(path).read_text())
        spec = plan["speculative_config"]
        if spec is None:  # a plan without speculation (--method none, or auto where no K pays) says why
            raise UserError(f"--plan {path} serves the target alone, without speculative decoding: there is nothing "
                            f"to judge ({plan.get('no_speculation') or 'no speculative_config'})",
                            hint="plan a speculative server with --draft or --method, then watch it")
        target_ref = plan["target"]["ref"]
        profile = (plan.get("memory") or {}).get("profile") or "h100"
        argv = [str(a) for a in plan.get("argv") or []]
        method = spec.get("method") or "draft_model"  # vLLM's own reading of a config naming only a draft model
        planned_k = spec.get("num_speculative_tokens")
        ranked = ((plan.get("method_ranking") or {}).get("ranked") or [None])[0]
    except FileNotFoundError:
        raise UserError(f"--plan {path} does not exist",
                        hint="write one with: specdraft launch ... --dry-run --json > PLAN.json") from None
    except (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError) as err:
        raise UserError(f"--plan {path} is not a plan from `specdraft launch --dry-run --json` ({type(err).__name__}: "
                        f"{err})", hint="write one with: specdraft launch ... --dry-run --json > PLAN.json") from None
    if not isinstance(spec, dict) or not spec:
        raise UserError(f"--plan {path} serves without speculative decoding: there is nothing to judge",
                        hint="plan a pair with --draft or --method")
    if not isinstance(method, str) or not isinstance(profile, str) or not isinstance(target_ref, str) or not (
            planned_k is None or (isinstance(planned_k, int) and planned_k > 0)):
        raise UserError(f"--plan {path}: its speculative_config, target or memory profile is not what "
                        "`specdraft launch --dry-run --json` writes", hint="write it again with that command")
    try:
        target = inspect_checkpoint(target_ref)
    except (UserError, OSError):
        target = None
    thinking = any('"enable_thinking": true' in a for a in argv)
    try:
        costs = costs_for(method, target, profile=profile, thinking=thinking, how=f" (from --plan {path})")
    except KeyError:
        raise UserError(f"--plan {path} serves method {method!r}, whose step costs specdraft does not model",
                        hint="judge it with --method METHOD instead of --plan") from None
    planned = ranked.get("predicted_speedup") if isinstance(ranked, dict) and ranked.get("method") == method else None
    if not (isinstance(planned, (int, float)) and math.isfinite(planned) and planned > 0):
        planned = None
    return costs.model_copy(update={"planned_k": planned_k, "planned_speedup": planned})


class Judgement(BaseModel):
    """The verdict on one window of counters."""

    model_config = ConfigDict(frozen=True)

    verdict: Verdict
    attention: bool
    """True: exit 1 (acceptance below the floor, or no speculative decoding)."""
    reason: str
    k: int | None = None
    mean_acceptance_length: float | None = None
    floor: float | None = None
    """The mean acceptance length below which the window is flagged."""
    floor_source: str | None = None
    speedup: float | None = None
    """Modelled speedup over the target alone at the observed acceptance and the server's K."""
    planned_speedup: float | None = None
    planned_source: str | None = None
    tuned_k: int | None = None
    """tune's K at the observed acceptance (0: serve the target alone)."""
    tuned_speedup: float | None = None
    launch_flag: str | None = None


def break_even_length(costs: PairCosts, k: int) -> float:
    """The mean acceptance length at which a K-token draft only pays for its own step: ``E(K) = step_cost(K)``."""
    return costs.step(k)


def judge(counters: SpecDecodeCounters | None, costs: PairCosts, *, min_acceptance: float | None = None,
          max_k: int = MAX_K) -> Judgement:
    """Judge one window: None counters = no speculative decoding; no drafts = idle; else the modelled speedup at
    the observed per-position acceptance, against the floor (``min_acceptance``, else break-even at the server's
    K), the plan's prediction and tune's K."""
    if counters is None:
        return Judgement(verdict="no-speculation", attention=True,
                         reason="the server exports no speculative-decoding counters: it runs without "
                                "--speculative-config")
    k = counters.num_speculative_tokens
    length, rates = counters.mean_acceptance_length, counters.per_position_acceptance
    if length is None or rates is None or k == 0:
        return Judgement(verdict="idle", attention=False, k=k or None,
                         reason="no drafts in this window: no traffic to judge")
    speedup = predict_speedup(rates, k, costs.cost_ratio, costs.overhead, costs.host)
    floor, floor_source = ((min_acceptance, "--min-acceptance") if min_acceptance is not None
                           else (break_even_length(costs, k), f"break-even at K = {k}: a step costs "
                                                              f"{costs.step(k):.2f} target steps"))
    planned, planned_source = costs.predicted(k)
    tuned = recommend(rates, costs.cost_ratio, max_k=max_k, overhead=costs.overhead, host=costs.host)
    flag = (f"--num-speculative-tokens {tuned.recommended_k}" if tuned.speculate
            else "serve the target alone (specdraft launch --method none)")
    verdict: Verdict = "pays" if speedup >= 1 + MARGIN else "loses" if speedup <= 1 - MARGIN else "marginal"
    below = length < floor
    reason = (f"mean acceptance length {length:.2f} at K = {k} gives {speedup:.2f}x "
              f"(plan {planned:.2f}x); " + (f"below the floor {floor:.2f} ({floor_source})" if below
                                             else f"floor {floor:.2f} ({floor_source})"))
    return Judgement(verdict=verdict, attention=below, reason=reason, k=k, mean_acceptance_length=length,
                     floor=floor, floor_source=floor_source, speedup=speedup, planned_speedup=planned,
                     planned_source=planned_source, tuned_k=tuned.recommended_k,
                     tuned_speedup=tuned.predicted_speedup, launch_flag=flag)


def check_min_acceptance(value: float | None) -> None:
    """``UserError`` unless ``value`` can be a mean acceptance length (tokens per step: 1 or more)."""
    if value is not None and not (math.isfinite(value) and value >= 1.0):
        raise UserError(f"--min-acceptance is a mean acceptance length (tokens per speculative step, 1 + accepted / "
                        f"drafts), at least 1; got {value}", hint="e.g. --min-acceptance 1.8")
