"""``specdraft template``: prove a Gemma 4 chat template cannot leak thoughts, or probe a live server.

    specdraft template check FILE [--variant e|large] [--reference REF] [--json]
    specdraft template probe --base-url URL --model NAME [--json]
    specdraft template path [--variant e|large]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from specdraft.errors import ExitCode, UserError
from specdraft.paths import refuse_special_file
from specdraft.templates.probe import PROBE_TIMEOUT_S


def register(subparsers: argparse._SubParsersAction, name: str, help_text: str) -> None:
    parser = subparsers.add_parser(name, help=help_text, description=help_text)
    commands = parser.add_subparsers(dest="template_command", metavar="SUBCOMMAND", required=True)
    _register_check(commands)
    _register_probe(commands)
    path = commands.add_parser("path", help="print the path of the template specdraft ships",
                               description="Print the path of the chat template specdraft ships for a variant "
                                           "(e: E2B/E4B, large: 31B and 26B-A4B), to pass to vllm serve --chat-template.")
    path.add_argument("--variant", choices=["e", "large"], required=True)
    path.set_defaults(run=run_path)


def _register_check(commands: argparse._SubParsersAction) -> None:
    check = commands.add_parser(
        "check",
        help="render the scenario matrix (both content formats) and report every leak or format defect",
        description="Render FILE the way vLLM does on every scenario, in the 'string' and 'openai' content "
        "formats, and report each rule it breaks (and, with --reference, each drift from the reference's prompts). "
        "Exit 0: no findings; 1: findings; 2: unreadable or broken template.",
    )
    check.add_argument("file", metavar="FILE", help="the Jinja chat template to check")
    check.add_argument(
        "--variant",
        choices=["e", "large"],
        help="the model size it serves: e (E2B/E4B) or large (26B-A4B/31B); default: detected from the "
        "template's thinking-off generation prompt",
    )
    check.add_argument(
        "--reference",
        metavar="REF",
        help="also compare with a reference template (a file, or a checkpoint directory carrying Google's "
        "template) and report format-drift wherever the prompts differ outside the leak fixes",
    )
    check.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    check.set_defaults(run=run_check)


def _register_probe(commands: argparse._SubParsersAction) -> None:
    probe = commands.add_parser(
        "probe",
        help="send scenario requests (streaming and not) to a running server and scan the answers for leaks",
        description="Send chat requests to an OpenAI-compatible server and scan every answer (content and "
        "tool calls) for Gemma 4 thought-channel markers. Exit 0: clean; 1: leaks or failed requests; "
        "2: server unreachable.",
    )
    probe.add_argument("--base-url", required=True, help="OpenAI API root, e.g. http://localhost:8000/v1")
    probe.add_argument("--model", required=True, help="the served model name")
    probe.add_argument("--api-key", help="bearer token, if the server wants one")
    probe.add_argument("--max-tokens", type=int, default=64, help="max_tokens per request (default 64)")
    probe.add_argument(
        "--extra-body",
        metavar="JSON",
        help='a JSON object merged into every request, e.g. \'{"chat_template_kwargs": {"enable_thinking": false}}\'',
    )
    probe.add_argument("--timeout", type=float, default=PROBE_TIMEOUT_S, metavar="SECONDS",
                       help=f"how long each request waits for the server's answer (default {PROBE_TIMEOUT_S:g})")
    probe.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    probe.set_defaults(run=run_probe)


def run_check(args: argparse.Namespace) -> ExitCode:
    from specdraft.templates import TemplateSourceError, check_template
    from specdraft.templates.check import detect_variant
    from specdraft.templates.reference import ReferenceSourceError, compare_to_reference

    file = args.file  # as typed (``./x`` keeps its ``./``): every message names it so
    source = _read_template(file)
    reference_path, reference = _read_reference(args.reference) if args.reference else (None, None)
    try:
        variant = args.variant or detect_variant(source)
        if reference is None:
            findings, reference_findings = check_template(source, variant), []
        else:
            comparison = compare_to_reference(source, reference, variant)
            findings, reference_findings = comparison.ours + comparison.drift, comparison.reference
    except ReferenceSourceError as err:
        raise _syntax_error(reference_path, err) from None
    except TemplateSourceError as err:
        raise _syntax_error(file, err) from None
    detected = "" if args.variant else " (detected; pass --variant to choose)"
    if args.json:
        report = {"file": file, "variant": variant, "ok": not findings, "findings": [f.to_dict() for f in findings]}
        if reference_path is not None:
            report["reference"] = {"file": str(reference_path), "findings": [f.to_dict() for f in reference_findings]}
        print(json.dumps(report, indent=2))
        return ExitCode.ATTENTION if findings else ExitCode.OK
    for finding in findings:
        _print_finding(finding)
    rules = sorted({f.rule for f in findings})
    verdict = f"{len(findings)} finding(s): {', '.join(rules)}" if findings else "no findings"
    print(f"{file}: variant {variant}{detected}: {verdict}")
    if reference_path is not None:
        own = sorted({f.rule for f in reference_findings})
        print(f"reference {reference_path}: {len(reference_findings)} finding(s) of its own"
              + (f" ({', '.join(own)}): where our prompt differs for these, that is the fix" if own else ""))
    if any(f.rule != "format-drift" for f in findings):
        print(f"next: use specdraft's own template: {_shipped_hint(variant)}", file=sys.stderr)
    elif findings:
        print("next: make the template render what the reference renders in these scenarios (see the diffs)",
              file=sys.stderr)
    return ExitCode.ATTENTION if findings else ExitCode.OK


def _read_template(file: str | Path) -> str:
    refuse_special_file(file, what="chat template", hint="pass the path of a Jinja chat template")
    try:
        return Path(file).read_text(encoding="utf-8")
    except OSError as err:  # its strerror alone: the error's own text names the path normalised
        raise UserError(f"cannot read {file}: {err.strerror or err}", hint="pass the path of a Jinja chat template") from None
    except UnicodeDecodeError as err:
        raise UserError(f"cannot read {file}: {err}", hint="pass the path of a Jinja chat template") from None


def _read_reference(reference: str) -> tuple[str | Path, str]:
    from specdraft.templates.reference import find_checkpoint_template

    if not Path(reference).is_dir():
        return reference, _read_template(reference)
    found = find_checkpoint_template(Path(reference))
    if found is None:
        raise UserError(f"--reference {reference}: the directory carries no chat template (chat_template.jinja, or "
                        "chat_template in tokenizer_config.json / processor_config.json)",
                        hint="pass the template file itself")
    return found


def _syntax_error(file: str | Path, err) -> UserError:
    return UserError(
        f"{file}:{err.lineno or '?'}: template syntax error: {err.message}",
        hint=f"fix line {err.lineno or '?'} of {file}, then rerun `specdraft template check`",
    )


def _print_finding(finding) -> None:
    where = f" [{finding.content_format}]" if finding.content_format else ""
    print(f"{finding.rule}  {finding.scenario}{where}: {finding.message}")
    if finding.excerpt:
        print(f"    {finding.excerpt}")
    for line in finding.diff.splitlines():
        print(f"    {line}")
    print(f"    fix: {finding.fix}")


def _shipped_hint(variant: str) -> str:
    from specdraft.templates import shipped_template

    return f"--chat-template {shipped_template(variant)}"


def run_probe(args: argparse.Namespace) -> ExitCode:
    import httpx

    from specdraft.templates import probe_server

    if not (math.isfinite(args.timeout) and 0 < args.timeout <= 86400):
        raise UserError(f"--timeout must be seconds above 0 and at most 86400, got {args.timeout}",
                        hint=f"--timeout {PROBE_TIMEOUT_S:g} (the default)")
    extra_body = _extra_body(args.extra_body)

    def show(result) -> None:
        if not args.json:
            print(_probe_line(result), flush=True)

    try:
        results = probe_server(
            args.base_url, args.model, api_key=args.api_key, max_tokens=args.max_tokens,
            extra_body=extra_body, progress=show, timeout_s=args.timeout,
        )
    except httpx.TimeoutException:
        raise UserError(f"{args.base_url} sent nothing for {args.timeout:g} s (or took no connection); probe stopped",
                        hint="check the server's log, or give it longer with --timeout SECONDS") from None
    except httpx.TransportError as err:
        raise UserError(
            f"cannot reach {args.base_url}: {err}",
            hint="start the server (specdraft launch ...) or fix --base-url (it ends in /v1)",
        ) from None
    bad = [r for r in results if not r.ok]
    failed = [r for r in results if r.error]
    leaked = [r for r in results if r.leaks]
    if args.json:
        print(json.dumps({"base_url": args.base_url, "model": args.model, "ok": not bad,
                          "leaked": len(leaked), "failed": len(failed),
                          "results": [r.to_dict() for r in results]}, indent=2))
    elif failed and len(failed) == len(results):
        # An answer that never came is not a leak: say the server failed, not "0 clean".
        print(f"{args.base_url}: the server failed all {len(results)} requests ({failed[0].error[:120]}); "
              "nothing was checked for leaks")
        print(f"next: check the server's log and --model (the names it serves: curl {args.base_url.rstrip('/')}"
              "/models)", file=sys.stderr)
    else:
        print(f"{args.base_url}: {len(results) - len(bad)} of {len(results)} answers clean, {len(leaked)} leaked"
              + (f", {len(failed)} failed (the server answered an HTTP error: not checked)" if failed else ""))
        if leaked:
            print("next: serve with --reasoning-parser gemma4 and specdraft's template "
                  "(`specdraft template path --variant e|large`)", file=sys.stderr)
    return ExitCode.ATTENTION if bad else ExitCode.OK


def _extra_body(text: str | None) -> dict | None:
    """``--extra-body`` as a JSON object; ``UserError`` for anything else."""
    if not text:
        return None
    try:
        extra_body = json.loads(text)
    except json.JSONDecodeError as err:
        raise UserError(f"--extra-body is not JSON: {err}", hint="pass a JSON object, e.g. '{}'") from None
    if not isinstance(extra_body, dict):
        raise UserError("--extra-body must be a JSON object", hint="wrap the fields in {...}")
    return extra_body


def _probe_line(result) -> str:
    """One probed request in one line: its name, streamed or not, and what came back."""
    mode = "stream" if result.stream else "plain "
    if result.error:
        status = f"ERROR {result.error}"
    elif result.leaks:
        status = "LEAK  " + "; ".join(f"{leak.marker!r} in {leak.where}: {leak.excerpt}" for leak in result.leaks)
    else:
        status = "ok"
    if result.note:
        status += f" ({result.note})"
    return f"{result.request:<22} {mode}  {status}"


def run_path(args: argparse.Namespace) -> ExitCode:
    from specdraft.templates import shipped_template

    print(shipped_template(args.variant))
    return ExitCode.OK
