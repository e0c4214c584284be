"""One shell command per node for a plan spread over several GPUs or hosts, each starting with that node's
hotfix check so that a node whose vLLM lacks the hotfixes refuses to start or join.

Two ways to join nodes, both in every vLLM release 0.19.0-0.33.0 (flags read from ``vllm/engine/arg_utils.py``
and the server's ``cli_args.py``):

- ``native``: every node runs ``vllm serve`` with ``--nnodes N --node-rank R --master-addr A --master-port P``;
  node 0 serves the API, the others run ``--headless`` workers (``vllm/entrypoints/cli/serve.py``).
  vLLM's multiprocessing executor is the only one it allows with ``--nnodes`` > 1 (``ParallelConfig``).
- ``ray``: every node joins one Ray cluster (``ray start``); node 0 then runs ``vllm serve
  --distributed-executor-backend ray`` and Ray places the ranks.

The chat template travels inside node 0's command (``ShippedTemplate``): ``--chat-template`` names a file on
the machine that planned, which the nodes need not have. The headless workers and Ray workers serve no API and
get no ``--chat-template`` (vLLM's ``validate_parsed_serve_args`` refuses a path that does not exist there
even on a headless node).

Pure: the serve argv, the parallel plan, the addresses and the template's text in, commands out.
"""

from __future__ import annotations

import base64
import hashlib
import shlex
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from specdraft.planning.decisions.parallelism import ParallelPlan
from specdraft.planning.knowledge.serve_command import VLLM_CLI_MODULE
from specdraft.planning.request import MASTER_PORT, HotfixMode

Backend = Literal["native", "ray"]
RAY_PORT = 6379
MULTI_NODE_FLAGS = ("--nnodes", "--node-rank", "--master-addr", "--master-port", "--headless")
CHAT_TEMPLATE_FLAG = "--chat-template"
_WRITE_TEMPLATE = ("sh", "-c", 'printf %s "$2" | base64 -d > "$1"', "sh")
"""The node's template step, before the file and the base64 text (``sh -c`` sets $1 and $2 from them)."""


class ShippedTemplate(BaseModel):
    """The chat template a plan over several nodes passes: written by node 0's command to a file of its own,
    named by the text's hash (the same text, the same file, whoever planned it), which ``--chat-template``
    then names."""

    model_config = ConfigDict(frozen=True)

    planned_path: str
    """The ``--chat-template`` value in the serve argv: a file on the machine that planned."""
    text: str

    @property
    def node_path(self) -> str:
        return f"/tmp/specdraft-chat-template-{hashlib.sha256(self.text.encode()).hexdigest()[:16]}.jinja"

    def write_step(self) -> list[str]:
        """Write the text on the node. Base64 keeps the node's command one line (the template has newlines and
        quotes) and ``base64 -d`` is coreutils, on every Linux node and in vLLM's images."""
        encoded = base64.b64encode(self.text.encode()).decode()
        return [*_WRITE_TEMPLATE, self.node_path, encoded]

    def point(self, argv: Sequence[str]) -> list[str]:
        """``argv`` with the planned template path replaced by the node's."""
        out = list(argv)
        for index, word in enumerate(out):
            if word == f"{CHAT_TEMPLATE_FLAG}={self.planned_path}":
                out[index] = f"{CHAT_TEMPLATE_FLAG}={self.node_path}"
            elif word == self.planned_path and index and out[index - 1] == CHAT_TEMPLATE_FLAG:
                out[index] = self.node_path
        return out


class NodeCommand(BaseModel):
    """What one node runs: the steps, joined by ``&&`` so a failed hotfix check stops the node."""

    model_config = ConfigDict(frozen=True)

    host: str
    rank: int
    role: str
    """``api server``, ``headless worker``, ``ray head`` or ``ray worker``."""
    steps: list[list[str]]

    @property
    def script(self) -> str:
        """The steps as one POSIX shell line; the last one is exec'd so signals reach vLLM."""
        quoted = [shlex.join(step) for step in self.steps]
        quoted[-1] = "exec " + quoted[-1]
        return " && ".join(quoted)

    @property
    def preview(self) -> str:
        """``script`` for a report people read: the shipped template's base64 (which needs no quoting, so it
        stands in the script as it is) shown as its length."""
        script = self.script
        for step in self.steps:
            if tuple(step[:4]) == _WRITE_TEMPLATE:
                script = script.replace(step[-1], f"<{len(step[-1])} characters of base64>")
        return script


def hotfix_steps(mode: HotfixMode, specdraft: Sequence[str], python: str | None,
                 only: Sequence[str] = ()) -> list[list[str]]:
    """The node's own hotfix step: ``check`` refuses while anything is pending or drifted; ``apply``
    patches, then verifies (``patch verify`` fails when a fix is missing)."""
    target = ["--python", python] if python else []
    selection = ["--only", *only] if only else []
    if mode == "check":
        return [[*specdraft, "patch", "status", "--check", *target, *selection]]
    if mode == "apply":
        return [[*specdraft, "patch", "apply", *target, *selection],
                [*specdraft, "patch", "verify", *target, *selection]]
    return []


def _without(argv: Sequence[str], flags: Sequence[str]) -> list[str]:
    """``argv`` without the given flags and their values (a node sets its own)."""
    kept, skip = [], False
    for word in argv:
        if skip:
            skip = False
            continue
        name = word.split("=", 1)[0]
        if name in flags:
            skip = "=" not in word and name != "--headless"
            continue
        kept.append(word)
    return kept




def node_commands(serve_argv: Sequence[str], parallel: ParallelPlan, *, hosts: Sequence[str] = (),
                  backend: Backend = "native", master_addr: str | None = None, master_port: int = MASTER_PORT,
                  hotfixes: HotfixMode = "check", specdraft: Sequence[str] = ("specdraft",),
                  python: str | None = None, only: Sequence[str] = (),
                  template: ShippedTemplate | None = None) -> list[NodeCommand]:
    """One command per node of ``parallel.topology`` around ``serve_argv`` (the plan's, parallel sizes
    included); ``hosts`` name them (node 0 first) and default to
    ``node0``, ``node1``...; ``master_addr`` is node 0's address as the others reach it (default: its name).
    With ``python`` the hotfix step checks that interpreter's vLLM and the same interpreter serves it; with
    ``template`` (over several nodes) the API node writes the template before it serves."""
    nodes = parallel.topology.nodes
    hosts = list(hosts) or [f"node{rank}" for rank in range(nodes)]
    if len(hosts) != nodes:
        raise ValueError(f"{len(hosts)} hosts named for {nodes} nodes")
    check = hotfix_steps(hotfixes, specdraft, python, only)
    if python and serve_argv[:1] == ["vllm"]:
        serve_argv = [python, "-m", VLLM_CLI_MODULE, *serve_argv[1:]]
    if nodes == 1:
        return [NodeCommand(host=hosts[0], rank=0, role="api server", steps=[*check, list(serve_argv)])]
    # the plan's sizes are in the serve argv already; each node sets how it joins, whatever came after --
    argv = _without(serve_argv, [*MULTI_NODE_FLAGS, "--distributed-executor-backend"])
    address = master_addr or hosts[0]
    write, api_argv = ([template.write_step()], template.point(argv)) if template else ([], argv)
    if backend == "ray":
        head = [*check, ["ray", "start", "--head", f"--port={RAY_PORT}"], *write,
                [*api_argv, "--distributed-executor-backend", "ray"]]
        workers = [[*check, ["ray", "start", f"--address={address}:{RAY_PORT}", "--block"]]
                   for _ in hosts[1:]]
        return [NodeCommand(host=hosts[0], rank=0, role="ray head", steps=head)] + [
            NodeCommand(host=host, rank=rank, role="ray worker", steps=steps)
            for rank, (host, steps) in enumerate(zip(hosts[1:], workers), start=1)]
    joined = ["--nnodes", str(nodes), "--master-addr", address, "--master-port", str(master_port)]
    api = NodeCommand(host=hosts[0], rank=0, role="api server",
                      steps=[*check, *write, [*api_argv, *joined, "--node-rank", "0"]])
    headless = _without(argv, [CHAT_TEMPLATE_FLAG])
    return [api] + [NodeCommand(host=host, rank=rank, role="headless worker",
                                steps=[*check, [*headless, *joined, "--node-rank", str(rank), "--headless"]])
                    for rank, host in enumerate(hosts[1:], start=1)]
