"""Preflight: apply pending hotfixes when asked, and render the report people read before serving."""

from __future__ import annotations

import shlex
from typing import Callable

from specdraft.errors import RefusedError
from specdraft.patching.reports import Status
from specdraft.planning import LaunchPlan, build_launch_plan

Progress = Callable[[str], None]
_SETTLED = (Status.APPLIED, Status.FIXED_UPSTREAM, Status.NOT_APPLICABLE)
_MARK = {"ok": "ok", "info": "info", "warning": "WARN", "error": "ERROR"}


def apply_hotfixes(plan: LaunchPlan, progress: Progress = print) -> LaunchPlan:
    """Apply the pending hotfixes to the serving vLLM, then re-plan so the findings show the new state.

    Does nothing unless the plan's hotfix mode is ``apply`` and some hotfix is pending.
    """
    pending = [report.id for report in plan.vllm.hotfixes_with(Status.PENDING)]
    if plan.request.hotfixes != "apply" or not pending:
        return plan
    from specdraft.patching import apply, locate

    python, version = plan.vllm.python, plan.vllm.version
    progress(f"applying {', '.join(pending)} to vLLM {version} ({python or plan.vllm.root})")
    install = locate(python=python, vllm_root=None if python else plan.request.vllm_root)
    reports = apply(install, only=pending)
    failed = [r for r in reports if r.status not in _SETTLED]
    if failed:
        raise RefusedError(f"hotfix {failed[0].id} not applied to vLLM {version}: "
                           f"{failed[0].detail}; vLLM not started",
                           hint=f"python -m specdraft patch status --python {shlex.quote(python or 'PYTHON')}")
    return build_launch_plan(plan.request)


def render_report(plan: LaunchPlan) -> str:
    """The preflight report: checks, memory, then every flag with its reason and the command."""
    request = plan.request
    speculative = plan.speculative
    if speculative is None:
        # the speculation (or method-auto) check below says why
        lines = [f"specdraft launch: {request.target} alone, without speculation, on {request.profile}", ""]
    else:
        method = speculative.method or "draft_model"
        proposer = f"draft {speculative.model}" if speculative.model else f"method {method}"
        lines = [f"specdraft launch: {request.target} + {proposer} on {request.profile}", ""]
    if plan.method_ranking is not None:
        lines += ["Methods (--method auto, fastest first)", *("  " + line for line in plan.method_ranking.lines()), ""]
    lines.append("Checks")
    width = max(len(f.check) for f in plan.findings)
    for finding in plan.findings:
        lines.append(f"  {_MARK[finding.level]:<5}  {finding.check:<{width}}  {finding.message}")
        if finding.hint and finding.level in ("warning", "error"):
            lines.append(f"  {'':<5}  {'':<{width}}  next: {finding.hint}")
    if plan.memory is not None:
        lines += ["", "Memory"]
        lines += [f"  {name:<16} {value}" for name, value in plan.memory.table()]
        lines += [f"  {'advice':<16} {a}" for a in plan.memory.advice]
    lines += ["", "Flags"]
    lines += [f"  {flag.name:<34} {flag.reason}" for flag in plan.serve.flags]
    if plan.serve.extra_args:
        lines.append(f"  {'(after --)':<34} {' '.join(plan.serve.extra_args)}: passed through")
    lines += _parallel_section(plan)
    if len(plan.nodes) > 1:
        lines += ["", "Commands (one per node; each checks its own vLLM's hotfixes before it starts or joins)"]
        lines += [f"  # {node.host} (node {node.rank}, {node.role})\n  {node.preview}" for node in plan.nodes]
    else:
        lines += ["", "Command", "  " + plan.serve.shell_command()]
    return "\n".join(lines)


def _parallel_section(plan: LaunchPlan) -> list[str]:
    """Sizes and KV heads per rank, when the plan spans more than one GPU."""
    parallel = plan.parallel
    topology = parallel.topology
    if topology.gpus == 1:
        return []
    heads = "; ".join(f"{role} {', '.join(f'{n} {kind}' for kind, n in per_rank.items())}"
                      for role, per_rank in (("target", parallel.target_kv_heads_per_rank),
                                             ("draft", parallel.draft_kv_heads_per_rank)) if per_rank)
    return ["", "GPUs and nodes",
            f"  {'topology':<16} {topology.name}: {topology.nodes} node(s) x {topology.gpus_per_node} GPU(s)"
            + (f", {topology.interconnect}" if topology.interconnect else ""),
            f"  {'sizes':<16} TP {parallel.tensor_parallel_size} x PP {parallel.pipeline_parallel_size} x DP "
            f"{parallel.data_parallel_size}"
            + (f"; draft TP {parallel.draft_tensor_parallel_size}" if plan.draft is not None else ""),
            f"  {'KV heads/rank':<16} {heads or 'unknown'}",
            f"  {'memory':<16} per GPU, above"]
