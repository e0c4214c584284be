"""``specdraft bench``: measure decode tok/s, TTFT, latency and acceptance of a running vLLM server.

Streams the prompt set (built in, or ``--prompts FILE.jsonl``) at each ``--concurrency`` level, times every
token, and reads vLLM's speculative-decoding counters from ``/metrics`` before and after each level.
``--compare OTHER_URL`` runs the same workload against a second server (the baseline: the same plan without
speculation, served by ``specdraft launch ... --method none``) and reports the speedup; ``--compare-results A.json B.json`` compares two saved runs
(A over B) without any server.
"""

from __future__ import annotations

import argparse
import json
import sys

from specdraft.bench import (
    BUILTIN_PROMPTS,
    BenchResult,
    check_result_path,
    load_prompts,
    load_result,
    where_speculation_pays,
)
from specdraft.bench.client import (
    DEFAULT_TIMEOUT_S,
    MAX_CONCURRENCY,
    Progress,
    QUESTION_TIMEOUT_S,
    run_bench,
    served_models,
)
from specdraft.errors import ExitCode, UserError


def _int_list(text: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not values:
        raise argparse.ArgumentTypeError("expected at least one concurrency level")
    if min(values) < 1:
        raise argparse.ArgumentTypeError(f"a concurrency level is 1 request in flight or more, got {min(values)}")
    return values


def register(subparsers, name: str, help_text: str) -> None:
    parser = subparsers.add_parser(name, help=help_text, description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base-url", help="the server to bench, e.g. http://localhost:8000")
    parser.add_argument("--model", help="model name as the server serves it (see its /v1/models)")
    parser.add_argument("--prompts", metavar="FILE.jsonl",
                        help='one {"prompt": "..."}, {"prompt": [token ids]} or {"messages": [...]} per line '
                             "(default: a built-in set)")
    parser.add_argument("--concurrency", type=_int_list, default=[1], metavar="N[,N...]",
                        help=f"requests in flight, one level after another (default 1, at most {MAX_CONCURRENCY})")
    parser.add_argument("--max-tokens", type=int, default=128, metavar="N",
                        help="tokens generated per request; EOS is ignored so every request makes N (default 128)")
    amount = parser.add_mutually_exclusive_group()
    amount.add_argument("--requests", type=int, metavar="N",
                        help="requests per level (default: the number of prompts, at least the concurrency)")
    amount.add_argument("--duration", type=float, metavar="SECONDS",
                        help="measure each level for this long, every slot sending its next request as soon as "
                             "its last one ends (requests in flight at the end finish and count)")
    parser.add_argument("--warmup", type=int, metavar="N",
                        help="unmeasured requests per level before its clock and counters start, sent at the "
                             "level's concurrency (default: one per slot; 0: none)")
    parser.add_argument("--temperature", type=float, default=0.0, help="sampling temperature (default 0: greedy)")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, metavar="SECONDS",
                        help=f"how long a request waits for the server's next bytes before bench stops (default "
                             f"{DEFAULT_TIMEOUT_S:g}; /v1/models and /metrics wait at most {QUESTION_TIMEOUT_S:g})")
    compare = parser.add_mutually_exclusive_group()
    compare.add_argument("--compare", metavar="OTHER_URL",
                         help="also bench this server and report the speedup over it; the baseline is the same plan without "
                              "speculation: specdraft launch ... --method none")
    compare.add_argument("--compare-results", nargs=2, metavar=("A.json", "B.json"),
                         help="speedup of saved run A over saved run B; needs no server")
    parser.add_argument("--compare-model", metavar="NAME",
                        help="model name on the --compare server (default: --model, or the one it serves)")
    parser.add_argument("--out", metavar="RESULT.json", help="write the result as JSON")
    parser.add_argument("--json", action="store_true", help="print the result as JSON instead of a table")
    parser.set_defaults(run=run)


class _ProgressBar:
    """A one-line bar on stderr per level and phase, redrawn after each finished request."""

    def __init__(self, label: str):
        self.label = label
        self.width = 30
        self.phase: tuple[int, bool] | None = None

    def __call__(self, event: Progress) -> None:
        stream = sys.stderr  # looked up now: whoever runs the command may have replaced it since import
        if self.phase is not None and self.phase != (event.concurrency, event.warmup):
            stream.write("\n")
        self.phase = (event.concurrency, event.warmup)
        if event.total is None:  # a level measured for a duration: the bar is its time
            share, count = event.elapsed_s / (event.duration_s or 1.0), f"{event.done} done, {event.elapsed_s:.0f} s"
        else:
            share, count = event.done / max(event.total, 1), f"{event.done}/{event.total}"
        filled = min(self.width, int(self.width * share))
        bar = "#" * filled + "." * (self.width - filled)
        phase = "warm-up" if event.warmup else "measure"
        stream.write(f"\r{self.label} concurrency {event.concurrency:>3} {phase} [{bar}] {count}")
        stream.flush()

    def close(self) -> None:
        if self.phase is not None:
            sys.stderr.write("\n")
            sys.stderr.flush()
        self.phase = None


def _fmt(value: float | None, spec: str) -> str:
    """``value`` in ``spec``; a missing one is "-" at the same width, so the columns stay aligned."""
    if value is None:
        width = spec.split(".")[0]
        return "-".rjust(int(width) if width.isdigit() else 1)
    return format(value, spec)


def render(result: BenchResult) -> str:
    """The result as a table for people."""
    lines = [f"{result.model} at {result.base_url}: {result.num_prompts} prompts ({result.prompts_source}), "
             f"{result.max_tokens} tokens each, temperature {result.temperature}",
             "  conc  reqs  in flight  per-seq tok/s  aggregate tok/s  TTFT ms p50  e2e s p50  accept len  "
             "draft acc  per-position"]
    for lv in result.levels:
        spec = lv.spec_decode
        per_pos = spec.per_position_acceptance if spec else None
        lines.append(
            f"  {lv.concurrency:>4}  {lv.requests:>4}  {_fmt(lv.mean_in_flight, '9.1f')}"
            f"  {_fmt(lv.decode_tok_s, '13.1f')}  {lv.output_tok_s:15.1f}"
            f"  {_fmt(lv.ttft_s and lv.ttft_s.p50 * 1000, '11.1f')}"
            f"  {_fmt(lv.e2e_s and lv.e2e_s.p50, '9.2f')}  {_fmt(spec and spec.mean_acceptance_length, '10.2f')}"
            f"  {_fmt(spec and spec.draft_acceptance_rate, '9.3f')}  "
            + (", ".join(f"{a:.3f}" for a in per_pos) if per_pos else "-")
        )
    lines += [f"note: {n}" for n in result.notes]
    if result.speedups:
        baseline = result.baseline
        lines.append(f"speedup over {baseline.model} at {baseline.base_url}:" if baseline else "speedup:")
        lines.append("  conc  per-seq tok/s  aggregate tok/s  e2e latency")
        for s in result.speedups:
            lines.append(f"  {s.concurrency:>4}  {_fmt(s.decode_tok_s, '12.2f')}x  {_fmt(s.output_tok_s, '14.2f')}x"
                         f"  {_fmt(s.e2e, '10.2f')}x")
        lines += [where.sentence() for where in where_speculation_pays(result.speedups)]
    return "\n".join(lines)


def _compare_model(args) -> str:
    if args.compare_model:
        return args.compare_model
    import httpx

    with httpx.Client(timeout=10.0) as client:
        models = served_models(client, args.compare)
    if args.model in models or len(models) != 1:
        return args.model
    return models[0]


def _bench_with_bar(label: str, base_url: str, model: str, common: dict) -> BenchResult:
    bar = _ProgressBar(label)
    try:
        return run_bench(base_url, model, progress=bar, **common)
    finally:
        bar.close()


def run(args) -> ExitCode:
    if args.out:  # before measuring: a run that cannot be saved should not start
        check_result_path(args.out)
    result = _compared(args) if args.compare_results else _measured(args)
    print(json.dumps(result.to_json(), indent=2) if args.json else render(result))
    if args.out:
        _save(result, args)
    return ExitCode.OK


def _compared(args) -> BenchResult:
    return load_result(args.compare_results[0]).with_baseline(load_result(args.compare_results[1]))


def _measured(args) -> BenchResult:
    if not args.base_url or not args.model:
        raise UserError("bench needs --base-url and --model (or --compare-results A.json B.json)",
                        hint="python -m specdraft bench --base-url http://localhost:8000 --model NAME")
    prompts = load_prompts(args.prompts) if args.prompts else BUILTIN_PROMPTS
    source = str(args.prompts) if args.prompts else "built-in"
    common = dict(prompts=prompts, prompts_source=source, concurrency=args.concurrency,
                  max_tokens=args.max_tokens, requests=args.requests, duration_s=args.duration,
                  warmup=args.warmup, temperature=args.temperature, timeout_s=args.timeout)
    result = _bench_with_bar("bench", args.base_url, args.model, common)
    if args.compare:
        result = result.with_baseline(_bench_with_bar("compare", args.compare, _compare_model(args), common))
    return result


def _save(result: BenchResult, args) -> None:
    """Write ``--out``; if that fails after all (the disk filled, the directory went away), the measurement
    is printed as JSON so that it is not lost."""
    try:
        result.save(args.out)
    except OSError as err:
        if not args.json:
            print(json.dumps(result.to_json(), indent=2))
        raise UserError(f"cannot write the result to {args.out}: {err.strerror or err}; it is printed above as JSON",
                        hint="save that JSON to a file; tune --from-bench and bench --compare-results read it") from None
