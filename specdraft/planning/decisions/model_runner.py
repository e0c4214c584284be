"""Which model runner vLLM will serve a plan with: V1, or Model Runner V2, which keeps FULL CUDA graphs where a
K per batch size makes V1 capture PIECEWISE ones (``decisions.k_schedule``).

The release decides when ``VLLM_USE_V2_MODEL_RUNNER`` is unset (``data/model_runner.json``, read from the
published wheels); the variable, set in the environment ``launch`` executes the server from, overrides it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from specdraft.planning.knowledge.release_tables import model_runner_table

Runner = Literal["v1", "v2"]


class ModelRunnerChoice(BaseModel):
    """The runner the server will start with, and why."""

    model_config = ConfigDict(frozen=True)

    runner: Runner | None
    """None: the release is not in the table."""
    reason: str


def model_runner(version: str | None, *, method: str, target_is_moe: bool, serve_args: Sequence[str],
                 env: Mapping[str, str], has_triton: bool | None = None) -> ModelRunnerChoice:
    """The model runner vLLM ``version`` picks for a plan serving ``method`` with ``serve_args``, started from
    ``env``; ``has_triton``: whether Triton is installed beside that vLLM (None: not known)."""
    table = model_runner_table()
    set_to = env.get(table.env)
    if set_to is not None and set_to.strip() in ("0", "1"):
        runner: Runner = "v2" if set_to.strip() == "1" else "v1"
        return ModelRunnerChoice(runner=runner, reason=f"{table.env}={set_to.strip()} in launch's environment")
    rule = table.rule_for(version)
    if rule is None:
        return ModelRunnerChoice(runner=None, reason=f"vLLM {version or '(version unknown)'} is not in specdraft's "
                                                     "model runner table")
    release = f"vLLM {version}"
    if rule.default == "v1":
        return ModelRunnerChoice(runner="v1", reason=f"{release} serves V1 unless {table.env}=1")
    if rule.default == "listed":
        return ModelRunnerChoice(runner="v1", reason=f"{release} serves V2 by default only for a few listed "
                                                     "architectures, Gemma 4 not among them")
    if rule.default == "dense" and target_is_moe:
        return ModelRunnerChoice(runner="v1", reason=f"{release} serves V2 by default only for a target that is not "
                                                     "a mixture of experts")
    if has_triton is False:
        return ModelRunnerChoice(runner="v1",
                                 reason=f"{release} serves V2 only with a Triton it can use, none beside it")
    if not rule.runs_on_v2(method):
        return ModelRunnerChoice(runner="v1", reason=f"{release}'s Model Runner V2 does not run method {method}")
    flag = next((flag for flag in rule.v1_flags if flag in serve_args), None)
    if flag is not None:
        return ModelRunnerChoice(runner="v1", reason=f"{release} falls back to V1 with {flag}: {rule.v1_flags[flag]}")
    return ModelRunnerChoice(runner="v2", reason=f"{release} serves V2 by default for this target and method {method}")
