"""Replacing this process with ``vllm serve``: signals (Ctrl-C, SIGTERM) then reach vLLM directly."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from specdraft.config import LaunchPlan
from specdraft.errors import UserError


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


def exec_serve(plan: LaunchPlan) -> None:
    """Exec ``vllm serve`` with the plan's argv; returns only if the exec fails."""
    executable = vllm_executable(plan.vllm.get("python"))
    argv = plan.argv
    try:
        os.execv(executable, argv)
    except OSError as err:
        raise UserError(f"cannot start {executable}: {err.strerror}", hint="check the vLLM install") from err
