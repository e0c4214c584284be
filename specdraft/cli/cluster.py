"""``specdraft cluster {report,status}``: is every node's vLLM patched before a multi-node start?

``report`` answers for this node (its vLLM, whether it can be written, each hotfix's status);
``status NAME=COMMAND ...`` runs ``COMMAND cluster report --json`` for each node and names every node
that is not patched, and why. Exit codes: 0 every node patched; 1 a node is not (or did not answer);
2 bad input.
"""

from __future__ import annotations

import argparse
import json
import math

from specdraft.errors import ExitCode, UserError
from specdraft.patching.cluster import MAX_REPORT_TIMEOUT_S, REPORT_TIMEOUT_S
from specdraft.patching.locate import DEFAULT_INTERPRETER


def register(subparsers, name: str, help_text: str) -> None:
    parser = subparsers.add_parser(name, help=help_text, description=help_text)
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)

    report = actions.add_parser("report", help="this node's vLLM and hotfix status (what `status` collects)",
                                description="This node's vLLM and where each hotfix stands there, as `cluster "
                                            "status` collects it from every node.")
    target = report.add_mutually_exclusive_group()
    target.add_argument("--python", metavar="EXE", help=f"the interpreter whose vLLM serves on this node ({DEFAULT_INTERPRETER})")
    target.add_argument("--vllm-root", metavar="DIR", help="a directory containing the vllm package")
    report.add_argument("--only", metavar="ID", nargs="+", action="extend", help="only these hotfixes")
    report.add_argument("--json", action="store_true", help="print the report as JSON")
    report.set_defaults(run=_run_report)

    status = actions.add_parser("status", help="ask every node; exit 1 naming each node that is not patched",
                                description="Run `COMMAND cluster report --json` for each NAME=COMMAND (COMMAND "
                                            "runs specdraft on that node: 'ssh host specdraft', 'docker exec c "
                                            "python3 -m specdraft', '/venv/bin/python -m specdraft').")
    status.add_argument("nodes", metavar="NAME=COMMAND", nargs="+", help="a node and how to run specdraft there")
    for option, meta in (("--python", "NAME=EXE"), ("--vllm-root", "NAME=DIR")):
        status.add_argument(option, metavar=meta, action="append", default=[],
                            help=f"that node's {option} for its report")
    status.add_argument("--only", metavar="ID", nargs="+", action="extend", help="only these hotfixes")
    status.add_argument("--timeout", type=float, default=REPORT_TIMEOUT_S, metavar="SECONDS",
                        help=f"how long each node may take to answer; one that does not is stopped, with what "
                             f"it started, and reported (default {REPORT_TIMEOUT_S:g})")
    status.add_argument("--json", action="store_true", help="print one JSON object per node in a list")
    status.set_defaults(run=_run_status)


def _run_report(args: argparse.Namespace) -> ExitCode:
    from specdraft.patching import locate, status
    from specdraft.patching.cluster import node_report

    install = locate(python=args.python, vllm_root=args.vllm_root)
    report = node_report(install, status(install, only=args.only))
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        words = ", ".join(f"{h['id']} {h['status']}" for h in report["hotfixes"])
        print(f"{report['install']} ({'writable' if report['writable'] else 'read-only'}): {words}")
    return ExitCode.OK


def _node_options(args: argparse.Namespace, names: set[str]) -> dict[str, list[str]]:
    options: dict[str, list[str]] = {}
    for flag, values in (("--python", args.python), ("--vllm-root", args.vllm_root)):
        for value in values:
            name, sep, path = value.partition("=")
            if not sep or name not in names or not path:
                raise UserError(f"{flag} {value!r}: expected NAME=PATH with NAME one of {', '.join(sorted(names))}",
                                hint=f"specdraft cluster status ... {flag} node1=/path")
            if name in options:
                raise UserError(f"{flag} {value!r}: node {name} has a --python or --vllm-root already",
                                hint="give one per node")
            options[name] = [flag, path]
    return options


def _nodes(args: argparse.Namespace):
    from specdraft.patching.cluster import NodeSpec, parse_node_spec

    try:
        specs = [parse_node_spec(text) for text in args.nodes]
    except ValueError as err:
        raise UserError(str(err), hint="specdraft cluster status --help") from None
    names = [spec.name for spec in specs]
    if len(set(names)) != len(names):
        raise UserError(f"node names repeat: {', '.join(names)}", hint="give every node its own NAME")
    options = _node_options(args, set(names))
    only = ["--only", *args.only] if args.only else []
    return [NodeSpec(name=s.name, command=s.command, options=(*options.get(s.name, ()), *only)) for s in specs]


def _run_status(args: argparse.Namespace) -> ExitCode:
    from specdraft.patching.cluster import ask_node, judge_nodes

    if not (math.isfinite(args.timeout) and 0 < args.timeout <= MAX_REPORT_TIMEOUT_S):
        raise UserError(f"--timeout {args.timeout:g}: expected seconds above 0 and at most {MAX_REPORT_TIMEOUT_S}",
                        hint=f"specdraft cluster status ... --timeout {REPORT_TIMEOUT_S:g}")
    nodes = _nodes(args)
    verdicts = judge_nodes([(node.name, ask_node(node, timeout_s=args.timeout)) for node in nodes])
    if args.json:
        print(json.dumps([v.to_json() for v in verdicts], indent=2))
    else:
        width = max(len(v.name) for v in verdicts)
        for verdict in verdicts:
            print(f"{verdict.name:<{width}} {'patched' if verdict.ok else 'NOT PATCHED':<11} {verdict.reason}")
        failing = [v.name for v in verdicts if not v.ok]
        print(f"{len(verdicts) - len(failing)} of {len(verdicts)} nodes patched"
              + (f"; do not start the cluster until {', '.join(failing)} "
                 f"{'is' if len(failing) == 1 else 'are'} fixed" if failing else ""))
    return ExitCode.OK if all(v.ok for v in verdicts) else ExitCode.ATTENTION

