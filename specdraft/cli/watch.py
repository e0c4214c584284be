"""``specdraft watch``: is speculation paying on a running server right now?

Reads the server's /metrics and /v1/models every --interval seconds (or once with --once: the counters since the
server started) and shows per interval and since the start: drafts, acceptance per draft position, mean acceptance
length, draft-token efficiency, generation throughput and requests running. Judges the window with tune's model
over launch's step costs for the served pair (or for --plan PLAN.json from `launch --dry-run --json`): "pays",
"marginal" or "loses" against the plan's prediction, and the K tune would pick at the observed acceptance.

Exit codes: 0 acceptance at or above the floor (or no traffic to judge); 1 attention: the mean acceptance length
since the start is below the floor (--min-acceptance, default: break-even at the server's K) or the server does not
speculate; 2 the server cannot be read (the reason is printed) or the options are wrong.
"""

from __future__ import annotations

import argparse
import json
import sys

from specdraft.errors import ExitCode
from specdraft.planning import METHODS, PROFILES
from specdraft.watch import ModelReport, WatchReport, WatchRequest, watch


def register(subparsers, name: str, help_text: str) -> None:
    parser = subparsers.add_parser(name, help=help_text, description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base-url", required=True, metavar="URL",
                        help="the vLLM server, e.g. http://localhost:8000 (a trailing /v1 is fine)")
    when = parser.add_mutually_exclusive_group()
    when.add_argument("--once", action="store_true",
                      help="read once and judge the counters since the server started (for cron and health checks)")
    when.add_argument("--interval", type=float, default=10.0, metavar="SECONDS",
                      help="seconds between readings (default 10)")
    parser.add_argument("--count", type=int, metavar="N",
                        help="stop after N intervals and exit with the verdict on all of them (default: until Ctrl-C)")
    parser.add_argument("--timeout", type=float, default=10.0, metavar="SECONDS",
                        help="seconds any one HTTP read may take (default 10)")
    parser.add_argument("--model", metavar="NAME", help="judge only this model_name (default: every model served)")
    parser.add_argument("--plan", metavar="PLAN.json",
                        help="the plan from `specdraft launch ... --dry-run --json`: its method, target, GPU profile "
                             "and prediction")
    parser.add_argument("--method", choices=sorted(METHODS), default="draft_model",
                        help="without --plan: the served method, for its step costs (default draft_model)")
    parser.add_argument("--profile", choices=sorted(PROFILES), default="h100",
                        help="without --plan: the GPU profile the step costs are taken for (default h100)")
    parser.add_argument("--enable-thinking", action="store_true",
                        help="without --plan: the server thinks (launch assumes lower acceptance then)")
    parser.add_argument("--min-acceptance", type=float, metavar="LENGTH",
                        help="exit 1 below this mean acceptance length (1 + accepted / drafts); default: where "
                             "speculation stops paying at the server's K with the pair's step costs")
    parser.add_argument("--json", action="store_true",
                        help="print JSON: one object, or with an interval one JSON line per reading")
    parser.set_defaults(run=run)


def request_of(args) -> WatchRequest:
    return WatchRequest(base_url=args.base_url, interval=args.interval, once=args.once, count=args.count,
                        timeout=args.timeout, model=args.model, plan=args.plan, method=args.method,
                        profile=args.profile, thinking=args.enable_thinking, min_acceptance=args.min_acceptance)


def _rates(report: ModelReport, which: str) -> str:
    window = report.interval if which == "interval" else report.since_start
    rates = window.spec_decode.per_position_acceptance if window.spec_decode else None
    return "-" if rates is None else "/".join(f"{a:.2f}" for a in rates)


def render_line(report: WatchReport) -> str:
    """One line per reading: each model's window, then its verdict since the start."""
    parts = []
    for m in report.models:
        w, j, s = m.interval, m.interval_judgement, m.since_start_judgement
        spec = w.spec_decode
        drafts = "no spec decode" if spec is None else f"drafts {int(spec.num_drafts)}"
        length = "-" if j.mean_acceptance_length is None else f"{j.mean_acceptance_length:.2f}"
        efficiency = spec.draft_acceptance_rate if spec is not None else None
        rate = w.to_json()["generation_tok_s"]
        fields = [m.model + (f" ({len(m.engines)} engines)" if len(m.engines) > 1 else ""), drafts,
                  f"accepted {_rates(m, 'interval')}", f"length {length}",
                  f"efficiency {'-' if efficiency is None else f'{efficiency:.0%}'}",
                  *([] if rate is None else [f"{rate:.1f} tok/s"]), f"running {w.requests_running:g}"]
        if s.speedup is not None:
            since = "" if w.seconds is None else f"since start length {s.mean_acceptance_length:.2f}: "
            verdict = (f"{since}{s.verdict} {s.speedup:.2f}x (plan {s.planned_speedup:.2f}x), tune K = {s.tuned_k} "
                       f"({s.launch_flag})")
        else:
            verdict = s.verdict
        fields.append(("ATTENTION " if s.attention else "") + verdict)
        parts.append(" | ".join(fields))
    return f"{report.at[11:19]} " + " || ".join(parts)


def render_summary(report: WatchReport) -> str:
    """What the exit code rests on, model by model."""
    lines = []
    for m in report.models:
        s = m.since_start_judgement
        lines.append(f"{m.model}: {s.verdict}: {s.reason}" + (f"; tune picks K = {s.tuned_k} ({s.launch_flag})"
                                                              if s.tuned_k is not None else ""))
        lines.append(f"  step costs: {m.costs_basis}")
    return "\n".join(lines)


def run(args) -> ExitCode:
    request = request_of(args)
    tty = sys.stdout.isatty() and not args.json
    last: WatchReport | None = None
    try:
        for report in watch(request):
            last = report
            if args.json:
                print(json.dumps(report.to_json(), indent=None if not args.once else 2), flush=True)
            elif tty and not args.once:
                print("\r" + render_line(report) + "\x1b[K", end="", flush=True)  # one line, rewritten in place
            else:
                print(render_line(report), flush=True)
    except KeyboardInterrupt:
        pass  # Ctrl-C ends an open-ended watch: judge what was watched
    if tty and not args.once and last is not None:
        print()
    if last is None:
        return ExitCode.OK
    if not args.json:
        print(render_summary(last))
    return last.exit_code
