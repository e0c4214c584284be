"""``specdraft tune``: recommend num_speculative_tokens from measured acceptance and step costs.

Predicted speedup S(K) = E(K) / (1 + K*c + o), E(K) = 1 + a_1 + ... + a_K.
Acceptance a_i: from a bench result (--from-bench) or given (--per-position-acceptance, vLLM's
unconditional per-position rates).
Cost ratio c (draft step / target step): given (--cost-ratio); measured (--step-times: bench runs of
the draft and the target each served alone); fitted with o to speculative runs at several K
(--fit-steps); or estimated from bytes read per token (--shapes: repo ids, checkpoint dirs or
config.json files; a lower bound); or fitted with o to the step costs measured per batch size
(--batch-costs NAME, at --concurrency N; with --schedule, a K per batch size from them).
Per-step overhead o (in target steps, default 0): --overhead-fraction, --overhead-ms, --measure-overhead.
Host line (optional): a step lasts max(1 + K*c + o, h_0 + K*h) when launching the drafter from the CPU takes
longer than running it: --host-ms PER_STEP,PER_DRAFT_TOKEN, or --host-costs NAME (measured per path and vLLM
release; needs the target's step time: --target-step-ms or --target-bench). A --host-costs entry also supplies
c and o (its drafter GPU time per token and per-step overhead) where no other option gives them.
"""

from __future__ import annotations

import argparse
import json

from specdraft.speed import TuneReport, TuneRequest, known_batch_step_costs, known_host_costs, tune
from specdraft.errors import ExitCode, UserError


def _float_list(text: str) -> list[float]:
    fields = text.split(",")
    for number, field in enumerate(fields, start=1):
        if not field.strip():  # dropping it would shift every later position
            raise argparse.ArgumentTypeError(f"field {number} of {text!r} is empty; give one number per position")
    try:
        return [float(x) for x in fields]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from None


def register(subparsers, name: str, help_text: str) -> None:
    parser = subparsers.add_parser(name, help=help_text, description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_acceptance_and_cost(parser)
    _add_overhead_and_host(parser)
    parser.add_argument("--target-step-ms", type=float, metavar="MS",
                        help="target decode step time, for --overhead-ms, --fit-steps and the host line")
    parser.add_argument("--target-bench", metavar="TARGET_ONLY.json",
                        help="bench result of the target served alone: its step time, for --overhead-ms, "
                             "--fit-steps and the host line")
    parser.add_argument("--concurrency", type=int, metavar="N",
                        help="use the bench results at this concurrency (default: acceptance pooled over all "
                             "levels, step times at the lowest)")
    parser.add_argument("--max-k", type=int, default=8, metavar="N", help="largest K to consider (default 8)")
    parser.add_argument("--no-extrapolation", action="store_true",
                        help="consider only measured positions (K up to the server's num_speculative_tokens)")
    parser.add_argument("--schedule", action="store_true",
                        help="also give num_speculative_tokens_per_batch_size, one K per measured concurrency "
                             "(needs --from-bench and --step-times with several levels)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(run=run)


def _add_acceptance_and_cost(parser) -> None:
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--from-bench", metavar="RESULT.json",
                        help="acceptance measured by `specdraft bench` against the speculative server")
    source.add_argument("--per-position-acceptance", metavar="A1,A2,...", type=_float_list,
                        help="unconditional acceptance per draft position, as vLLM reports it")
    cost = parser.add_mutually_exclusive_group()
    cost.add_argument("--cost-ratio", metavar="C", type=float, help="draft step time / target step time")
    cost.add_argument("--step-times", nargs=2, metavar=("DRAFT_ONLY.json", "TARGET_ONLY.json"),
                      help="bench results of the draft and the target each served alone (same workload)")
    cost.add_argument("--fit-steps", nargs="+", metavar="SPEC_RUN.json",
                      help="fit c and the per-step overhead to speculative runs at two or more K (same workload); "
                           "needs the target's step time (--target-bench or --target-step-ms)")
    cost.add_argument("--shapes", nargs=2, metavar=("TARGET", "DRAFT"),
                      help="estimate c from bytes read per token (a lower bound); each a repo id such as "
                           "google/gemma-4-31B-it, a checkpoint directory or a config.json")
    cost.add_argument("--batch-costs", metavar="NAME", choices=sorted(known_batch_step_costs()),
                      help="step costs measured per batch size (c and o fitted at --concurrency, else the smallest; "
                           "with --schedule, the best K at each measured batch size): "
                           + "; ".join(sorted(known_batch_step_costs())))
    parser.add_argument("--target-dtype", default="auto",
                        help="with --shapes: auto (from the checkpoint's quantization), bf16, fp8, nvfp4 or bytes/weight")
    parser.add_argument("--draft-dtype", default="auto",
                        help="with --shapes: auto (from the checkpoint's quantization), bf16, fp8, nvfp4 or bytes/weight")
    parser.add_argument("--context", type=int, default=2048, metavar="TOKENS",
                        help="with --shapes: context length whose KV cache each token reads (default 2048)")


def _add_overhead_and_host(parser) -> None:
    overhead = parser.add_mutually_exclusive_group()
    overhead.add_argument("--overhead-fraction", type=float, metavar="O",
                          help="fixed cost per speculative step, in target steps (default 0)")
    overhead.add_argument("--overhead-ms", type=float, metavar="MS",
                          help="fixed cost per speculative step in ms (needs --target-step-ms or --step-times)")
    overhead.add_argument("--measure-overhead", action="store_true",
                          help="derive the overhead from --from-bench and --step-times (same workload)")
    host = parser.add_mutually_exclusive_group()
    host.add_argument("--host-ms", metavar="PER_STEP,PER_DRAFT_TOKEN", type=_float_list,
                      help="host (CPU) time per speculative step outside drafting and per drafted token, in ms: "
                           "a step then lasts the longer of the GPU and the host line")
    host.add_argument("--host-costs", metavar="NAME", choices=sorted(known_host_costs()),
                      help="a measured path (host line, and c and o where not given otherwise): "
                           + "; ".join(sorted(known_host_costs())))


def request_of(args) -> TuneRequest:
    """The library request the parsed options describe; a value out of range is refused with its option."""
    from pydantic import ValidationError

    from specdraft.planning import describe_validation_error

    try:
        return _request_of(args)
    except ValidationError as err:
        message = describe_validation_error(err)
        for name in ("context", "concurrency", "max_k"):
            message = message.replace(f"{name}:", f"--{name.replace('_', '-')}:")
        raise UserError(f"tune: {message}", hint="specdraft tune --help") from None


def _request_of(args) -> TuneRequest:
    return TuneRequest(
        from_bench=args.from_bench, per_position_acceptance=args.per_position_acceptance,
        cost_ratio=args.cost_ratio, step_times=args.step_times, fit_steps=args.fit_steps, shapes=args.shapes,
        target_dtype=args.target_dtype, draft_dtype=args.draft_dtype, context=args.context,
        overhead_fraction=args.overhead_fraction, overhead_ms=args.overhead_ms,
        measure_overhead=args.measure_overhead, host_ms=args.host_ms, host_costs=args.host_costs,
        batch_costs=args.batch_costs, target_step_ms=args.target_step_ms, target_bench=args.target_bench,
        concurrency=args.concurrency,
        max_k=args.max_k, extrapolation="none" if args.no_extrapolation else "geometric", schedule=args.schedule)


def _render(report: TuneReport) -> str:
    rec, inputs = report.recommendation, report.inputs
    if rec.speculate:
        lines = [f"recommended num_speculative_tokens: {rec.recommended_k} "
                 f"(predicted speedup {rec.predicted_speedup:.2f}x over the target alone)"]
    else:
        lines = ["recommended: no speculation (no K is predicted to beat the target alone)"]
    model = "(1 + K*c + o)" if rec.host is None else "max(1 + K*c + o, h_0 + K*h)"
    lines += [
        f"model: S(K) = E(K) / {model}, E(K) = 1 + a_1 + ... + a_K",
        f"  acceptance a_i: {inputs.acceptance.source}: {', '.join(f'{a:.3f}' for a in inputs.acceptance.value)}",
        f"  c = {inputs.cost_ratio.value:.4f}: {inputs.cost_ratio.source}",
        f"  o = {inputs.overhead.value:.4f}: {inputs.overhead.source}",
        *([] if rec.host is None else
          [f"  h_0 = {rec.host.per_step:.4f}, h = {rec.host.per_draft_token:.4f}: {rec.host.source}"]),
        f"  {rec.extrapolation.explain()}",
        "",
        *_render_table(rec),
    ]
    check = report.check
    if check is not None and check["predicted_speedup"] is not None:
        error = check["prediction_error"]
        off = "no relative error: the measured speedup is too close to 0" if error is None else f"{error:+.1%}"
        lines.append(f"measured at K = {check['k']} (the benched server): {check['measured_speedup']:.2f}x decode "
                     f"speedup; predicted {check['predicted_speedup']:.2f}x ({off})")
    if report.schedule is not None:
        lines.append(f"num_speculative_tokens_per_batch_size: {json.dumps([list(s) for s in report.schedule])}")
    return "\n".join(lines)


def _render_table(rec) -> list[str]:
    lines = ["   K    a_K   E(K)   cost  speedup"]
    for row in rec.table:
        mark = "*" if row.extrapolated else " "
        bound = "h" if row.host_bound else " "
        pick = "  <- recommended" if row.k == rec.recommended_k else ""
        lines.append(f"  {row.k:2d}  {row.acceptance:.3f}{mark} {row.expected_tokens_per_step:5.2f}  "
                     f"{row.step_cost:5.2f}{bound} {row.predicted_speedup:5.2f}x{pick}")
    if any(row.extrapolated for row in rec.table):
        lines.append("  * extrapolated, not measured")
    if any(row.host_bound for row in rec.table):
        lines.append("  h host-bound: launching the drafter takes longer than the GPU work")
    return lines + [f"note: {n}" for n in rec.notes]


def run(args) -> ExitCode:
    report = tune(request_of(args))
    print(json.dumps(report.to_json(), indent=2) if args.json else _render(report))
    return ExitCode.OK
