"""``specdraft tune``: recommend num_speculative_tokens from measured acceptance and step costs.

Predicted speedup S(K) = E(K) / (1 + K*c + o), E(K) = 1 + a_1 + ... + a_K.
Acceptance a_i: from a bench result (--from-bench) or given (--per-position-acceptance, vLLM's
unconditional per-position rates).
Cost ratio c (draft step / target step): given (--cost-ratio); measured (--step-times: bench runs of
the draft and the target each served alone); fitted with o to speculative runs at several K
(--fit-steps); or estimated from bytes read per token (--shapes: repo ids, checkpoint dirs or
config.json files; a lower bound).
Per-step overhead o (in target steps, default 0): --overhead-fraction, --overhead-ms, --measure-overhead.
Host line (optional): a step lasts max(1 + K*c + o, h_0 + K*h) when launching the drafter from the CPU takes
longer than running it: --host-ms PER_STEP,PER_DRAFT_TOKEN, or --host-costs NAME (measured per path and vLLM
release; needs the target's step time: --target-step-ms or --target-bench). A --host-costs entry also supplies
c and o (its drafter GPU time per token and per-step overhead) where no other option gives them.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path

from specdraft.bench import (
    HostCost,
    Recommendation,
    SchedulePoint,
    acceptance_from_result,
    cost_ratio_from_results,
    estimate_cost_ratio,
    fit_step_costs,
    footprint_of,
    host_cost_from_ms,
    host_cost_named,
    known_host_costs,
    load_result,
    measured_speedup,
    overhead_fraction,
    overhead_from_results,
    recommend,
    recommend_schedule,
    round_ratio,
    speculative_step_ms,
    step_ms,
    validate_acceptance,
)
from specdraft.errors import ExitCode, UserError


@dataclass(frozen=True)
class _Inputs:
    acceptance: tuple[float, ...]
    acceptance_source: str
    cost_ratio: float
    cost_source: str
    overhead: float
    overhead_source: str
    measured: tuple[int, float] | None = None
    """(K the benched server ran, its measured speedup), when a baseline of the same workload is at hand."""
    host: HostCost | None = None


def _float_list(text: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from None


def register(subparsers, name: str, help_text: str) -> None:
    parser = subparsers.add_parser(name, help=help_text, description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--from-bench", metavar="RESULT.json", type=Path,
                        help="acceptance measured by `specdraft bench` against the speculative server")
    source.add_argument("--per-position-acceptance", metavar="A1,A2,...", type=_float_list,
                        help="unconditional acceptance per draft position, as vLLM reports it")
    cost = parser.add_mutually_exclusive_group()
    cost.add_argument("--cost-ratio", metavar="C", type=float, help="draft step time / target step time")
    cost.add_argument("--step-times", nargs=2, metavar=("DRAFT_ONLY.json", "TARGET_ONLY.json"), type=Path,
                      help="bench results of the draft and the target each served alone (same workload)")
    cost.add_argument("--fit-steps", nargs="+", metavar="SPEC_RUN.json", type=Path,
                      help="fit c and the per-step overhead to speculative runs at two or more K (same workload); "
                           "needs the target's step time (--target-bench or --target-step-ms)")
    cost.add_argument("--shapes", nargs=2, metavar=("TARGET", "DRAFT"),
                      help="estimate c from bytes read per token (a lower bound); each a repo id such as "
                           "google/gemma-4-31B-it, a checkpoint directory or a config.json")
    parser.add_argument("--target-dtype", default="auto",
                        help="with --shapes: auto (from the checkpoint's quantization), bf16, fp8, nvfp4 or bytes/weight")
    parser.add_argument("--draft-dtype", default="auto",
                        help="with --shapes: auto (from the checkpoint's quantization), bf16, fp8, nvfp4 or bytes/weight")
    parser.add_argument("--context", type=int, default=2048, metavar="TOKENS",
                        help="with --shapes: context length whose KV cache each token reads (default 2048)")
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
    parser.add_argument("--target-step-ms", type=float, metavar="MS",
                        help="target decode step time, for --overhead-ms, --fit-steps and the host line")
    parser.add_argument("--target-bench", type=Path, metavar="TARGET_ONLY.json",
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


def _inputs(args) -> _Inputs:
    if args.fit_steps and (args.overhead_fraction is not None or args.overhead_ms is not None or args.measure_overhead):
        raise UserError("--fit-steps fits the per-step overhead itself; drop the --overhead option")
    result = load_result(args.from_bench) if args.from_bench else None
    if result is not None:
        acceptance = acceptance_from_result(result, args.concurrency)
        where = "pooled over all levels" if args.concurrency is None else f"at concurrency {args.concurrency}"
        acceptance_source = f"measured by bench ({args.from_bench}, {where})"
    else:
        acceptance = validate_acceptance(args.per_position_acceptance)
        acceptance_source = "given"

    draft_only = None
    target_only = load_result(args.target_bench) if args.target_bench else None
    known = known_host_costs()[args.host_costs] if args.host_costs else None
    fitted_overhead = None
    if args.cost_ratio is not None:
        cost_ratio, cost_source = args.cost_ratio, "given"
    elif args.fit_steps:
        fit = fit_step_costs([speculative_step_ms(load_result(path), args.concurrency) for path in args.fit_steps],
                             _target_step_ms(args, target_only, "--fit-steps"))
        cost_ratio, fitted_overhead = fit.cost_ratio, fit.overhead
        cost_source = (f"fitted: a speculative step takes {fit.fixed_ms:.2f} ms + K x {fit.per_draft_token_ms:.2f} ms "
                       f"over runs at K = {', '.join(str(k) for k, _ in fit.points)} (largest residual "
                       f"{fit.max_residual_ms:.2f} ms), per {fit.target_step_ms:.2f} ms target step")
    elif args.step_times:
        draft_only, target_only = load_result(args.step_times[0]), load_result(args.step_times[1])
        cost_ratio = cost_ratio_from_results(draft_only, target_only, args.concurrency)
        cost_source = f"measured: draft step / target step from {args.step_times[0]} and {args.step_times[1]}"
    elif args.shapes:
        target = footprint_of(args.shapes[0], dtype=args.target_dtype, context_tokens=args.context)
        draft = footprint_of(args.shapes[1], dtype=args.draft_dtype, context_tokens=args.context)
        cost_ratio = estimate_cost_ratio(draft, target)
        cost_source = (f"estimated from bytes read per token at {args.context} tokens of context: draft "
                       f"{draft.bytes_per_token / 1e9:.2f} GB ({draft.basis}) / target "
                       f"{target.bytes_per_token / 1e9:.2f} GB ({target.basis}); a lower bound: small drafts "
                       "rarely reach full memory bandwidth")
    elif known is not None:
        target_ms = _target_step_ms(args, target_only, "--host-costs")
        cost_ratio = known["gpu_draft_ms_per_token"] / target_ms
        cost_source = (f"known: {known['gpu_draft_ms_per_token']} ms of drafter GPU time per token "
                       f"({args.host_costs}) over a {target_ms:.2f} ms target step")
    else:
        raise UserError("tune needs the cost ratio c of a draft step to a target step",
                        hint="add --cost-ratio C, --step-times DRAFT_ONLY.json TARGET_ONLY.json, "
                             "--shapes TARGET DRAFT, or --host-costs NAME --target-step-ms MS")

    if fitted_overhead is not None:
        overhead, overhead_source = fitted_overhead, "fitted with c (the intercept beyond one target step)"
    elif args.overhead_fraction is not None:
        overhead, overhead_source = args.overhead_fraction, "given"
    elif args.overhead_ms is not None:
        target_ms = _target_step_ms(args, target_only, "--overhead-ms")
        overhead = overhead_fraction(args.overhead_ms, target_ms)
        overhead_source = f"given: {args.overhead_ms} ms per step over a {target_ms:.2f} ms target step"
    elif args.measure_overhead:
        if result is None or draft_only is None:
            raise UserError("--measure-overhead needs the speculative run and both step-time runs",
                            hint="add --from-bench SPEC.json --step-times DRAFT_ONLY.json TARGET_ONLY.json")
        overhead = overhead_from_results(result, draft_only, target_only, args.concurrency)
        overhead_source = (f"measured: the step time of {args.from_bench} beyond one target step plus "
                           f"K draft steps")
    elif known is not None:
        target_ms = _target_step_ms(args, target_only, "--host-costs")
        overhead = overhead_fraction(known["gpu_overhead_ms_per_step"], target_ms)
        overhead_source = (f"known: {known['gpu_overhead_ms_per_step']} ms per step ({args.host_costs}) over a "
                           f"{target_ms:.2f} ms target step")
    else:
        overhead, overhead_source = 0.0, "none modelled"
    measured = measured_speedup(result, target_only, args.concurrency) if result is not None else None
    return _Inputs(acceptance, acceptance_source, cost_ratio, cost_source, overhead, overhead_source, measured,
                   _host(args, target_only))


def _host(args, target_only) -> HostCost | None:
    if args.host_costs:
        return host_cost_named(args.host_costs, _target_step_ms(args, target_only, "--host-costs"))
    if args.host_ms is None:
        return None
    if len(args.host_ms) != 2:
        raise UserError(f"--host-ms takes two numbers, PER_STEP,PER_DRAFT_TOKEN (ms), got {len(args.host_ms)}",
                        hint="e.g. --host-ms 5.3,10.4")
    target_ms = _target_step_ms(args, target_only, "--host-ms")
    return host_cost_from_ms(args.host_ms[0], args.host_ms[1], target_ms,
                             source=f"given: {args.host_ms[0]} ms per step + {args.host_ms[1]} ms per drafted "
                                    f"token over a {target_ms:.2f} ms target step")


def _target_step_ms(args, target_only, needed_by: str) -> float:
    if args.target_step_ms is not None:
        return args.target_step_ms
    if target_only is not None:
        return step_ms(target_only, args.concurrency, "target-only")
    raise UserError(f"{needed_by} needs the target's step time to compare against",
                    hint="add --target-step-ms MS, --target-bench TARGET_ONLY.json, "
                         "or --step-times DRAFT_ONLY.json TARGET_ONLY.json")


def _measured_vs_predicted(rec: Recommendation, measured: tuple[int, float] | None) -> dict | None:
    if measured is None:
        return None
    k, speedup = measured
    row = next((r for r in rec.table if r.k == k), None)
    predicted = row.predicted_speedup if row else None
    return {"k": k, "measured_speedup": round_ratio(speedup),
            "predicted_speedup": None if predicted is None else round_ratio(predicted),
            "prediction_error": None if predicted is None else round(predicted / speedup - 1, 4)}


def _schedule(args) -> list[tuple[int, int, int]]:
    if not (args.from_bench and args.step_times):
        raise UserError("--schedule needs per-concurrency measurements",
                        hint="add --from-bench SPEC.json --step-times DRAFT_ONLY.json TARGET_ONLY.json "
                             "(each benched with the same --concurrency levels)")
    spec = load_result(args.from_bench)
    draft_only, target_only = load_result(args.step_times[0]), load_result(args.step_times[1])
    points = []
    for level in spec.levels:
        n = level.concurrency
        if args.measure_overhead:
            overhead = overhead_from_results(spec, draft_only, target_only, n)
        elif args.overhead_ms is not None:  # the same ms is a different share of each batch size's target step
            overhead = overhead_fraction(args.overhead_ms, step_ms(target_only, n, "target-only"))
        else:
            overhead = args.overhead_fraction or 0.0
        points.append(SchedulePoint(
            batch_size=n,
            per_position_acceptance=acceptance_from_result(spec, n),
            cost_ratio=cost_ratio_from_results(draft_only, target_only, n),
            overhead=overhead,
        ))
    return recommend_schedule(points, max_k=args.max_k,
                              extrapolation="none" if args.no_extrapolation else "geometric")


def _render(rec: Recommendation, inputs: _Inputs, schedule, check: dict | None) -> str:
    lines = []
    if rec.speculate:
        lines.append(f"recommended num_speculative_tokens: {rec.recommended_k} "
                     f"(predicted speedup {rec.predicted_speedup:.2f}x over the target alone)")
    else:
        lines.append("recommended: no speculation (no K is predicted to beat the target alone)")
    model = "(1 + K*c + o)" if rec.host is None else "max(1 + K*c + o, h_0 + K*h)"
    lines += [
        f"model: S(K) = E(K) / {model}, E(K) = 1 + a_1 + ... + a_K",
        f"  acceptance a_i: {inputs.acceptance_source}: {', '.join(f'{a:.3f}' for a in inputs.acceptance)}",
        f"  c = {inputs.cost_ratio:.4f}: {inputs.cost_source}",
        f"  o = {inputs.overhead:.4f}: {inputs.overhead_source}",
        *([] if rec.host is None else
          [f"  h_0 = {rec.host.per_step:.4f}, h = {rec.host.per_draft_token:.4f}: {rec.host.source}"]),
        f"  {rec.extrapolation.explain()}",
        "",
        "   K    a_K   E(K)   cost  speedup",
    ]
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
    lines += [f"note: {n}" for n in rec.notes]
    if check is not None and check["predicted_speedup"] is not None:
        lines.append(f"measured at K = {check['k']} (the benched server): {check['measured_speedup']:.2f}x decode "
                     f"speedup; predicted {check['predicted_speedup']:.2f}x ({check['prediction_error']:+.1%})")
    if schedule is not None:
        lines.append(f"num_speculative_tokens_per_batch_size: {json.dumps([list(s) for s in schedule])}")
    return "\n".join(lines)


def run(args) -> ExitCode:
    inputs = _inputs(args)
    rec = recommend(inputs.acceptance, inputs.cost_ratio, max_k=args.max_k, overhead=inputs.overhead,
                    extrapolation="none" if args.no_extrapolation else "geometric", host=inputs.host)
    schedule = _schedule(args) if args.schedule else None
    check = _measured_vs_predicted(rec, inputs.measured)
    if args.json:
        out = rec.to_json()
        out["sources"] = {"acceptance": inputs.acceptance_source, "cost_ratio": inputs.cost_source,
                          "overhead": inputs.overhead_source,
                          "host_cost": None if inputs.host is None else inputs.host.source}
        if schedule is not None:
            out["num_speculative_tokens_per_batch_size"] = [list(s) for s in schedule]
        out["measured"] = check
        print(json.dumps(out, indent=2))
    else:
        print(_render(rec, inputs, schedule, check))
    return ExitCode.OK
