"""``specdraft patch {list,status,diff,apply,verify,revert}``: the patch engine from the terminal.

Exit codes: 0 ok / nothing pending; 1 something pending (``diff``, ``status --check``), a failed
verification or a refused state (drifted, changed since apply, or an ``apply`` / ``revert`` that a
signal stopped before its first write or that finished in spite of one); 2 bad input; 3 internal error.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections import Counter

from specdraft.errors import ExitCode
from specdraft.patching.locate import DEFAULT_INTERPRETER


def register(subparsers, name: str, help_text: str) -> None:
    parser = subparsers.add_parser(name, help=help_text, description=(
        "Apply, verify, revert or dry-run the hotfixes vLLM 0.19-0.33 needs for Gemma 4 speculative "
        "decoding: a KV-sharing E2B/E4B draft (its KV layout, the drafter's attention groups), an MTP "
        "assistant, a MoE checkpoint that stores each expert apart, V2 drafter CUDA graphs (patch list names "
        "each with its releases). The engine edits the "
        "installed sources with libcst and never imports vLLM."))
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)

    listing = actions.add_parser("list", help="the hotfix catalog",
                                 description="the hotfix catalog: id, vLLM releases, what each fixes")
    listing.add_argument("--json", action="store_true", help="print a JSON list")
    listing.set_defaults(run=_run_list)

    for action, help_line, run in (
        ("status", "where each hotfix stands: pending, applied, fixed-upstream, drifted, not-applicable", _run_status),
        ("diff", "print the unified diff apply would write; exit 1 while anything is pending", _run_diff),
        ("apply", "apply the pending hotfixes (atomic, backed up, journaled; twice changes nothing)", _run_apply),
        ("verify", "confirm the fixes are present; --probe also exercises them in the target interpreter", _run_verify),
        ("revert", "restore the original bytes of the patched files", _run_revert),
    ):
        sub = actions.add_parser(action, help=help_line, description=help_line)
        target = sub.add_mutually_exclusive_group()
        target.add_argument("--python", metavar="EXE", help=f"the interpreter whose vLLM to patch ({DEFAULT_INTERPRETER})")
        target.add_argument("--vllm-root", metavar="DIR",
                            help="a directory containing the vllm package: site-packages, unpacked wheel, container file system")
        sub.add_argument("--only", metavar="ID", nargs="+", action="extend", help="only these hotfixes (see `patch list`)")
        sub.add_argument("--json", action="store_true", help="print a JSON list of reports")
        if action == "status":
            sub.add_argument("--check", action="store_true", help="exit 1 while any hotfix is pending (for CI)")
        if action == "verify":
            sub.add_argument("--probe", action="store_true",
                             help="also run each hotfix's behavioural probe in the target interpreter (slow: imports vLLM)")
        if action == "apply":
            sub.add_argument("--dry-run", action="store_true",
                             help="print the diff apply would write and change nothing (as `patch diff`; exit 1 "
                                  "while anything is pending)")
        if action == "revert":
            sub.add_argument("--force", action="store_true", help="restore the original even if the file changed since apply")
        sub.set_defaults(run=run)


def _run_list(args: argparse.Namespace) -> ExitCode:
    from specdraft.patching import list_hotfixes

    hotfixes = list_hotfixes()
    if args.json:
        print(json.dumps([
            {"id": h.id, "title": h.title, "why": h.why, "package": h.package, "versions": h.versions,
             "function": h.function, "modules": list(h.modules)}
            for h in hotfixes
        ], indent=2))
        return ExitCode.OK
    width = max((len(h.id) for h in hotfixes), default=0)
    for h in hotfixes:
        print(f"{h.id:<{width}} {h.package}{h.versions:<10} {h.title}")
    print(f"{len(hotfixes)} hotfixes")
    return ExitCode.OK


def _run_status(args: argparse.Namespace) -> ExitCode:
    from specdraft.patching import Status, status

    install = _locate(args)
    reports = status(install, only=args.only)
    _render(args, install, reports)
    _warn_of_transformers(install)
    counts = Counter(r.status for r in reports)
    if counts[Status.DRIFTED] or (args.check and counts[Status.PENDING]):
        return ExitCode.ATTENTION
    return ExitCode.OK


def _run_diff(args: argparse.Namespace) -> ExitCode:
    from specdraft.patching import Status, diff

    install = _locate(args)
    reports = diff(install, only=args.only)
    if args.json:
        print(json.dumps([r.to_json() for r in reports], indent=2))
    else:
        sys.stdout.write("".join(r.diff for r in reports))
        _render(args, install, reports, stream=sys.stderr)
    pending_or_drifted = any(r.status in (Status.PENDING, Status.DRIFTED) for r in reports)
    return ExitCode.ATTENTION if pending_or_drifted else ExitCode.OK


def _run_apply(args: argparse.Namespace) -> ExitCode:
    from specdraft.patching import apply

    if args.dry_run:
        return _run_diff(argparse.Namespace(**{**vars(args), "action": "diff"}))
    return _change(args, lambda install: apply(install, only=args.only))


def _run_verify(args: argparse.Namespace) -> ExitCode:
    from specdraft.patching import Outcome, verify

    install = _locate(args)
    if args.probe:
        print(f"probing in {install.python or sys.executable} (imports vLLM; may take a minute) ...", file=sys.stderr)
    reports = verify(install, only=args.only, probe=args.probe)
    _render(args, install, reports)
    return ExitCode.ATTENTION if any(r.outcome is Outcome.FAILED for r in reports) else ExitCode.OK


def _run_revert(args: argparse.Namespace) -> ExitCode:
    from specdraft.patching import revert

    return _change(args, lambda install: revert(install, only=args.only, force=args.force))


def _change(args: argparse.Namespace, operation) -> ExitCode:
    """Run apply or revert and render it under one signal guard: a SIGINT or SIGTERM stops it before its first
    write, or is held until it has finished (and rendered); either way the last line says which (exit 1)."""
    from specdraft.patching import Outcome
    from specdraft.patching.interruptions import (Interrupted, SignalStop, finished_despite, guarded,
                                                  stopped_before_writing)

    with guarded() as guard:
        try:
            install = _locate(args)
            reports = operation(install)
        except (KeyboardInterrupt, SignalStop, Interrupted) as stop:
            guard.hold()  # stopping now: a second signal must not cut this message short
            message = stop.message if isinstance(stop, Interrupted) else stopped_before_writing(args.action).message
            print(f"specdraft: {message}", file=sys.stderr)
            return ExitCode.ATTENTION
        _render(args, install, reports)
        if guard.received:
            guard.hold()
            summary = ", ".join(f"{r.id} {r.outcome}" for r in reports)
            print(f"specdraft: {finished_despite(guard, args.action, summary).message}", file=sys.stderr)
            return ExitCode.ATTENTION
    return ExitCode.ATTENTION if any(r.outcome is Outcome.REFUSED for r in reports) else ExitCode.OK


def _warn_of_transformers(install) -> None:
    """On stderr (``--json`` keeps stdout strict JSON): a transformers this vLLM release cannot read Gemma 4
    configs with. A warning, not an exit code: the hotfix statuses stand either way."""
    from specdraft.patching.transformers_support import transformers_finding

    finding = transformers_finding(install.version, install.transformers_version, install.python)
    if finding is not None:
        print(f"warning: {finding.message}\nnext: {finding.hint}", file=sys.stderr)


def _locate(args: argparse.Namespace):
    from specdraft.patching import locate

    return locate(python=args.python, vllm_root=args.vllm_root)


def _render(args, install, reports, stream=None) -> None:
    """One line per hotfix, then a summary line (or, with --json, the reports as a JSON list)."""
    from specdraft.patching import Status

    stream = stream or sys.stdout
    if args.json:
        print(json.dumps([r.to_json() for r in reports], indent=2), file=stream)
        return
    width = max((len(r.id) for r in reports), default=0)
    for r in reports:
        done = f"{r.outcome}: " if r.outcome else ""
        where = f"  [{r.function}]" if r.file else ""
        print(f"{r.id:<{width}} {r.status.value:<15} {done}{r.detail}{where}", file=stream)
    counts = Counter(r.status.value for r in reports)
    summary = ", ".join(f"{n} {word}" for word, n in sorted(counts.items()))
    print(f"{install.describe()}: {summary}", file=stream)
    target = _target_flags(args)
    pending = [r.id for r in reports if r.status is Status.PENDING]
    drifted = [r.id for r in reports if r.status is Status.DRIFTED]
    if drifted:
        print(f"next: vLLM's code around {', '.join(drifted)} is not what the hotfix expects, so it is never edited; "
              f"compare the function named above with `specdraft patch list`", file=stream)
        if pending and args.action in ("status", "diff", "apply"):
            print(f"next: to apply the others anyway: specdraft patch apply --only {' '.join(pending)}{target}", file=stream)
    elif pending and args.action in ("status", "diff", "verify"):
        print(f"next: specdraft patch apply{target}", file=stream)
    changed = [r.id for r in reports if r.changed_since_apply]
    if changed:
        print(f"next: the file of {', '.join(changed)} changed since apply (the fix is still there); "
              f"to restore the originals anyway, losing that change: specdraft patch revert --force{target}", file=stream)


def _target_flags(args: argparse.Namespace) -> str:
    if args.python:
        return f" --python {shlex.quote(args.python)}"
    if args.vllm_root:
        return f" --vllm-root {shlex.quote(args.vllm_root)}"
    return ""
