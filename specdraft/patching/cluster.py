"""Every node patched, or nothing starts: ask each node of a cluster for its hotfix status and name the
node that would die at start-up (or hang the others) because its vLLM lacks the hotfixes.

Each node answers ``specdraft cluster report --json`` (``node_report``) through a command prefix that
reaches it: ``ssh host specdraft``, ``docker exec c python3 -m specdraft``, or a local
``/venv/bin/python -m specdraft``. ``judge_nodes`` then gives every node one verdict with the reason:
hotfixes pending, a read-only vLLM that cannot be patched where it runs (an image's file system),
source that drifted from what the hotfixes expect, a vLLM release other than the first node's, or no
answer at all.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field

from specdraft.patching.locate import VllmInstall
from specdraft.patching.reports import HotfixReport, Status
from specdraft.process_groups import run_bounded

REPORT_TIMEOUT_S = 120
"""Seconds a node may take to answer (``cluster status --timeout``): ssh, a container start and a cold
interpreter that reads a vLLM tree fit in it."""
MAX_REPORT_TIMEOUT_S = 3600
REPORT_MAX_BYTES = 4 * 2**20
"""A report is a few kB; a node command that writes more (a wrong command, ``cat /dev/zero``) is cut off
there rather than read into memory until the timeout."""


def node_report(install: VllmInstall, reports: Sequence[HotfixReport]) -> dict:
    """What one node says about itself: its vLLM, whether that can be written, and each hotfix's status."""
    package = install.package_dir
    files = [r.file for r in reports if r.file]
    writable = os.access(package, os.W_OK) and all(os.access(f, os.W_OK) for f in files)
    return {"install": install.describe(), "root": str(install.root), "distribution": install.distribution,
            "version": install.version, "writable": writable, "hotfixes": [r.to_json() for r in reports]}


@dataclass(frozen=True)
class NodeSpec:
    """A node's name and the command words that run specdraft there."""

    name: str
    command: tuple[str, ...]
    options: tuple[str, ...] = ()
    """Options for that node's ``cluster report`` (``--vllm-root DIR``, ``--python EXE``, ``--only ...``)."""

    @property
    def argv(self) -> list[str]:
        return [*self.command, "cluster", "report", "--json", *self.options]


@dataclass(frozen=True)
class NodeVerdict:
    """One node: patched (``ok``) or not, and why in one line."""

    name: str
    ok: bool
    reason: str
    version: str | None = None
    install: str | None = None
    pending: list[str] = field(default_factory=list)
    drifted: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"node": self.name, "ok": self.ok, "reason": self.reason, "version": self.version,
                "install": self.install, "pending": self.pending, "drifted": self.drifted}


def parse_node_spec(text: str) -> NodeSpec:
    """``NAME=COMMAND``: COMMAND is split as a POSIX shell would and must run specdraft on that node."""
    name, sep, command = text.partition("=")
    try:
        words = shlex.split(command) if sep else []
    except ValueError as err:  # an unclosed quote
        raise ValueError(f"{text!r}: {str(err).lower()} in COMMAND") from None
    if not name.strip() or not words:
        raise ValueError(f"{text!r} is not NAME=COMMAND (e.g. spark2='ssh spark2 specdraft')")
    return NodeSpec(name=name.strip(), command=tuple(words))


def ask_node(node: NodeSpec, timeout_s: float = REPORT_TIMEOUT_S, max_bytes: int = REPORT_MAX_BYTES) -> dict | str:
    """The node's report, or one line saying why it gave none."""
    try:
        done = run_bounded(node.argv, timeout_s=timeout_s, max_bytes=max_bytes)
    except OSError:
        return f"cannot run {node.command[0]!r} here"
    if done.over:
        return f"no report from {shlex.join(node.argv)}: it wrote more than {max_bytes // 2**20} MiB"
    if done.returncode is None:
        return f"no answer within {timeout_s:.0f} s from {shlex.join(node.argv)}"
    stdout, stderr = done.stdout.decode(errors="replace"), done.stderr.decode(errors="replace")
    try:
        report = json.loads(stdout)
    except json.JSONDecodeError:
        report = None
    if not isinstance(report, dict) or not isinstance(report.get("hotfixes"), list):
        last = (stderr.strip().splitlines() or stdout.strip().splitlines() or ["no output"])[-1]
        return f"no report from {shlex.join(node.argv)} (exit {done.returncode}): {last[-300:]}"
    return report


def judge_node(name: str, report: dict | str, reference: dict | None, reference_name: str) -> NodeVerdict:
    """The verdict on one node; ``reference`` is the first node's report (every node must run its release)."""
    if isinstance(report, str):
        return NodeVerdict(name=name, ok=False, reason=report)
    version, install = report.get("version"), report.get("install")
    statuses = [(h.get("id"), h.get("status")) for h in report["hotfixes"] if isinstance(h, dict)]
    pending = [i for i, s in statuses if s == Status.PENDING.value]
    drifted = [i for i, s in statuses if s == Status.DRIFTED.value]
    facts = {"version": version, "install": install, "pending": pending, "drifted": drifted}
    if reference is not None and reference.get("version") != version:
        return NodeVerdict(name=name, ok=False, **facts,
                           reason=f"different vLLM version: {version} here, {reference.get('version')} on "
                                  f"{reference_name}; every node must run one release")
    if drifted:
        return NodeVerdict(name=name, ok=False, **facts,
                           reason=f"drifted source: vLLM's code around {', '.join(drifted)} is not what the hotfix "
                                  f"expects, so it is never edited ({install})")
    if pending and not report.get("writable", True):
        return NodeVerdict(name=name, ok=False, **facts,
                           reason=f"read-only vLLM at {report.get('root')}: {', '.join(pending)} pending and the "
                                  "files cannot be written there; patch the image (specdraft launch --docker "
                                  "patches at container start) or a writable copy")
    if pending:
        return NodeVerdict(name=name, ok=False, **facts,
                           reason=f"not patched: {', '.join(pending)} pending; run specdraft patch apply on {name}")
    return NodeVerdict(name=name, ok=True, **facts, reason=f"patched ({install})")


def judge_nodes(answers: Sequence[tuple[str, dict | str]]) -> list[NodeVerdict]:
    """Verdicts for every node, the first answering node's release being the one all must run."""
    reference = next(((name, report) for name, report in answers if isinstance(report, dict)), (None, None))
    return [judge_node(name, report, reference[1] if name != reference[0] else None, reference[0] or "")
            for name, report in answers]
