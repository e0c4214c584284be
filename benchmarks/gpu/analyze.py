"""Turn the GPU sweep's raw results into the table, tune's predictions, the overhead fit and the plot.

usage: analyze.py RESULTS.jsonl OUTDIR [--repeat RESULTS2.jsonl] [--no-plot]

Prints the table and writes OUTDIR/sweep.csv, OUTDIR/analysis.json and (with matplotlib) OUTDIR/speedup_vs_k.png.

The prediction is tune's textbook model, S(K) = E(K) / (K*c + 1) with E(K) = 1 + a_1 + ... + a_K:
- a_i is the unconditional acceptance at position i as vLLM counts it, taken from the run with the largest K
  at that acceptance level (it measures every position 1..K_max);
- c = draft step / target step, both measured alone (``draft`` and ``k0`` rows), the same way.
The recommendation comes from ``specdraft.speed.tune``; analysis.json names the equivalent command
(``python -m specdraft tune --per-position-acceptance A --cost-ratio C --max-k 8 --json``).

The measured step time of a speculative step is fitted as ``step_ms = fixed + per_draft * K`` over every
speculative row; ``fixed - target step`` is the per-step overhead that the textbook model leaves out.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys

from specdraft.speed import TuneRequest, tune
from specdraft.jsonl import read_jsonl


def load(path: str) -> list[dict]:
    return [row for _, row in read_jsonl(path, what="results file", hint="give a results.jsonl written by sweep.py")]


def latest(rows: list[dict], **match) -> dict | None:
    """The last successful row with these field values (a re-run supersedes an earlier one)."""
    found = [r for r in rows if "error" not in r and all(r.get(k) == v for k, v in match.items())]
    return found[-1] if found else None


def print_table_head(target: dict, columns: list[str]) -> None:
    """The target-alone line every speedup divides by, then a markdown table's header."""
    print(f"target alone: {target['decode_tok_s']} tok/s ({target['step_ms']} ms/token) on {target['gpu']}, "
          f"vLLM {target['vllm']}")
    print("\n| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))


def textbook_speedup(rates: list[float], k: int, c: float, overhead: float = 0.0) -> float:
    return 1.0 if k == 0 else (1 + sum(rates[:k])) / (1 + k * c + overhead)


def linear_fit(xs: list[float], ys: list[float]) -> tuple[float, float]:
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return my - slope * mx, slope


def tune_report(rates: list[float], c: float, overhead: float = 0.0, max_k: int | None = None,
                **options) -> dict:
    """``tune --json`` for these inputs, with acceptance, c and o to 5 decimals (as the published analyses were
    computed); ``options`` are further ``TuneRequest`` fields (e.g. ``host_costs=NAME``). ``"command"`` is the
    equivalent ``specdraft tune`` command line when no further options are given."""
    rates, c, overhead = [round(a, 5) for a in rates], round(c, 5), round(overhead, 5)
    request = TuneRequest(per_position_acceptance=rates, cost_ratio=c, max_k=max_k or len(rates),
                          overhead_fraction=overhead or None, **options)
    command = (f"python -m specdraft tune --per-position-acceptance {','.join(f'{a:.5f}' for a in rates)} "
               f"--cost-ratio {c:.5f} --max-k {request.max_k} --json"
               + (f" --overhead-fraction {overhead:.5f}" if overhead else ""))
    return tune(request).to_json() | {"command": command}


def tune_table(rates: list[float], c: float, **options) -> list[dict]:
    """tune's per-K table (see ``tune_report``)."""
    return tune_report(rates, c, **options)["table"]


def analyse(rows: list[dict]) -> dict:
    target = latest(rows, tag="k0")
    draft = latest(rows, tag="draft")
    if not target or not draft:
        raise SystemExit("need the k0 (target alone) and draft (draft alone) rows")
    t_target, t_draft = target["step_ms"], draft["step_ms"]
    c = t_draft / t_target
    spec = [r for r in rows if "error" not in r and r["tag"] == f"k{r['k']}" and r["k"] > 0]
    alphas = sorted({r["alpha"] for r in spec}, reverse=True)
    fixed, per_draft = linear_fit([r["k"] for r in spec], [r["step_ms"] for r in spec])
    overhead = (fixed - t_target) / t_target
    c_fit = per_draft / t_target
    out = {"gpu": target["gpu"], "vllm": target["vllm"], "torch": target["torch"],
           "target_tok_s": target["decode_tok_s"], "target_step_ms": t_target,
           "draft_tok_s": draft["decode_tok_s"], "draft_step_ms": t_draft, "cost_ratio_c": round(c, 4),
           "step_fit": {"fixed_ms": round(fixed, 3), "per_draft_token_ms": round(per_draft, 3),
                        "overhead_ms": round(fixed - t_target, 3), "overhead_in_target_steps": round(overhead, 4),
                        "c_fitted": round(c_fit, 4), "rows": len(spec)},
           "levels": []}
    for alpha in alphas:
        runs = {r["k"]: r for r in spec if r["alpha"] == alpha}
        k_max = max(runs)
        rates = runs[k_max]["per_position_acceptance"]
        tuned, tuned_o = tune_report(rates, c), tune_report(rates, c_fit, max(overhead, 0.0))
        recommended, source = tuned["recommended_k"], tuned["command"]
        overhead_k, overhead_source = tuned_o["recommended_k"], tuned_o["command"]
        table = []
        for k in range(0, k_max + 1):
            r = runs.get(k)
            measured = (r["decode_tok_s"] / target["decode_tok_s"]) if r else (1.0 if k == 0 else None)
            predicted = textbook_speedup(rates, k, c)
            with_overhead = textbook_speedup(rates, k, c_fit, max(overhead, 0.0))
            best_rep = (max(r["decode_tok_s_per_rep"]) / target["decode_tok_s"]) if r else (1.0 if k == 0 else None)
            worst_rep = (min(r["decode_tok_s_per_rep"]) / target["decode_tok_s"]) if r else (1.0 if k == 0 else None)
            table.append({
                "k": k, "decode_tok_s": r["decode_tok_s"] if r else (target["decode_tok_s"] if k == 0 else None),
                "measured_speedup": None if measured is None else round(measured, 4),
                "best_rep_speedup": None if best_rep is None else round(best_rep, 4),
                "worst_rep_speedup": None if worst_rep is None else round(worst_rep, 4),
                "reps": r["reps"] if r else None,
                "step_ms_per_rep": r.get("step_ms_per_rep") if r else None,
                "predicted_speedup": round(predicted, 4),
                "prediction_error": None if not measured else round(predicted / measured - 1, 4),
                "overhead_model_speedup": round(with_overhead, 4),
                "overhead_model_error": None if not measured else round(with_overhead / measured - 1, 4),
                "expected_tokens_per_step": None if not r else r["expected_tokens_per_step"],
                "mean_acceptance_length": None if not r else r["mean_acceptance_length"],
                "step_ms": r["step_ms"] if r else (t_target if k == 0 else None),
            })
        measured_rows = [row for row in table if row["measured_speedup"] is not None]
        best = max(measured_rows, key=lambda row: row["measured_speedup"])
        at_rec = next((row for row in table if row["k"] == recommended), None)
        gap = None if not at_rec or at_rec["measured_speedup"] is None else \
            1 - at_rec["measured_speedup"] / best["measured_speedup"]
        out["levels"].append({
            "alpha": alpha, "per_position_acceptance": rates, "measured_in_run_k": k_max,
            "recommended_k": recommended, "recommendation_source": source,
            "predicted_speedup_at_recommended": round(textbook_speedup(rates, recommended, c), 4),
            "measured_speedup_at_recommended": None if not at_rec else at_rec["measured_speedup"],
            "best_measured_k": best["k"], "best_measured_speedup": best["measured_speedup"],
            "shortfall_vs_best": None if gap is None else round(gap, 4),
            "within_5_percent_of_best": None if gap is None else gap <= 0.05,
            "overhead_model_recommended_k": overhead_k, "overhead_model_source": overhead_source,
            "best_rep_k": max((row for row in measured_rows), key=lambda row: row["best_rep_speedup"])["k"],
            "table": table})
    return out


def write_csv(analysis: dict, path: str) -> None:
    fields = ["alpha", "k", "reps", "decode_tok_s", "measured_speedup", "worst_rep_speedup", "best_rep_speedup",
              "predicted_speedup", "prediction_error", "overhead_model_speedup", "overhead_model_error",
              "expected_tokens_per_step", "mean_acceptance_length", "step_ms"]
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        for level in analysis["levels"]:
            for row in level["table"]:
                w.writerow({"alpha": level["alpha"], **row})


def _fmt(x, spec: str) -> str:
    return "-" if x is None else format(x, spec)


def print_report(a: dict) -> None:
    print(f"{a['gpu']} | vLLM {a['vllm']} | target alone {a['target_tok_s']} tok/s ({a['target_step_ms']} ms/step), "
          f"draft alone {a['draft_tok_s']} tok/s ({a['draft_step_ms']} ms/step), c = {a['cost_ratio_c']}")
    f = a["step_fit"]
    print(f"speculative step = {f['fixed_ms']} ms + {f['per_draft_token_ms']} ms x K  "
          f"(overhead over a target step: {f['overhead_ms']} ms = {f['overhead_in_target_steps']} target steps; "
          f"fitted c = {f['c_fitted']})")
    for level in a["levels"]:
        print(f"\nalpha {level['alpha']}: tune recommends K = {level['recommended_k']} "
              f"(predicted {level['predicted_speedup_at_recommended']}x, measured "
              f"{level['measured_speedup_at_recommended']}x); best measured K = {level['best_measured_k']} "
              f"({level['best_measured_speedup']}x); shortfall {level['shortfall_vs_best']}, "
              f"within 5%: {level['within_5_percent_of_best']}; overhead-aware tune recommends K = "
              f"{level['overhead_model_recommended_k']}; best single request at K = {level['best_rep_k']}")
        print(" K reps  tok/s   speedup (worst..best rep)  tune S(K)  error   overhead-model  E(K)  accept-len  step ms")
        for r in level["table"]:
            print(f"{r['k']:2d} {_fmt(r['reps'], '>4')} {_fmt(r['decode_tok_s'], '7.2f')}  {_fmt(r['measured_speedup'], '6.3f')}"
                  f" ({_fmt(r['worst_rep_speedup'], '.2f')}..{_fmt(r['best_rep_speedup'], '.2f')})"
                  f"        {r['predicted_speedup']:6.3f}  {_fmt(r['prediction_error'], '+.0%'):>6}"
                  f"  {r['overhead_model_speedup']:6.3f}        {_fmt(r['expected_tokens_per_step'], '5.2f')}"
                  f"  {_fmt(r['mean_acceptance_length'], '5.2f')}      {_fmt(r['step_ms'], '6.1f')}")


def plot(a: dict, path: str, repeat: dict | None = None) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(14, 5.5))
    colors = ["tab:blue", "tab:orange", "tab:green", "tab:red"]
    for level, color in zip(a["levels"], colors):
        ks = [r["k"] for r in level["table"]]
        meas = [r for r in level["table"] if r["measured_speedup"] is not None]
        ax1.errorbar([r["k"] for r in meas], [r["measured_speedup"] for r in meas],
                     yerr=[[r["measured_speedup"] - r["worst_rep_speedup"] for r in meas],
                           [r["best_rep_speedup"] - r["measured_speedup"] for r in meas]],
                     fmt="o-", color=color, capsize=3,
                     label=f"measured (median, bars: worst..best request), alpha={level['alpha']}")
        ax1.plot(ks, [r["predicted_speedup"] for r in level["table"]], "--", color=color,
                 label=f"tune S(K)=E(K)/(Kc+1), alpha={level['alpha']}")
        ax1.plot(ks, [r["overhead_model_speedup"] for r in level["table"]], ":", color=color,
                 label=f"fitted step cost, alpha={level['alpha']}")
        rec = level["recommended_k"]
        rec_row = next(r for r in level["table"] if r["k"] == rec)
        if rec_row["measured_speedup"] is not None:
            ax1.plot([rec], [rec_row["measured_speedup"]], "*", ms=18, color=color, mec="black", zorder=5)
    if repeat:
        for level, color in zip(repeat["levels"], colors):
            rows = [r for r in level["table"] if r["k"] > 0 and r["measured_speedup"] is not None]
            ax1.plot([r["k"] + 0.12 for r in rows], [r["measured_speedup"] for r in rows], "s", mfc="none",
                     color=color, ms=8, label=f"repeat run, 8 requests, alpha={level['alpha']}")
    ax1.axhline(1.0, color="gray", lw=0.8)
    ax1.set_xlabel("num_speculative_tokens K (0 = no speculation)")
    ax1.set_ylabel("decode speedup over the target alone")
    ax1.set_title("Speedup vs K (star: K recommended by specdraft tune)")
    ax1.legend(fontsize=6.5, loc="lower left", ncol=2)
    ax1.set_ylim(0.35, 2.25)
    ax1.grid(alpha=0.3)
    f = a["step_fit"]
    for level, color in zip(a["levels"], colors):
        pts = [(r["k"], r["step_ms"]) for r in level["table"] if r["step_ms"] is not None and r["k"] > 0]
        ax2.plot([k for k, _ in pts], [s for _, s in pts], "o", color=color,
                 label=f"measured (median request), alpha={level['alpha']}")
    if repeat:
        for level, color in zip(repeat["levels"], colors):
            for r in level["table"]:
                if r["k"] > 0 and r["step_ms_per_rep"]:
                    ax2.plot([r["k"] + 0.12] * len(r["step_ms_per_rep"]), r["step_ms_per_rep"], "_", color=color,
                             ms=10)
        ax2.plot([], [], "_", color="gray", ms=10, label="repeat run: each request")
    ks = list(range(0, 9))
    ax2.plot(ks, [f["fixed_ms"] + f["per_draft_token_ms"] * k for k in ks], "k-",
             label=f"fit: {f['fixed_ms']:.1f} + {f['per_draft_token_ms']:.2f} K ms")
    ax2.plot(ks, [a["target_step_ms"] + a["draft_step_ms"] * k for k in ks], "k--",
             label=f"target step + K x draft step, each alone ({a['target_step_ms']:.1f} + {a['draft_step_ms']:.2f} K)")
    ax2.set_xlabel("K")
    ax2.set_ylabel("ms per speculative step")
    ax2.set_title("Cost of one speculative step")
    ax2.legend(fontsize=7.5, loc="upper left")
    ax2.grid(alpha=0.3)
    fig.suptitle(f"Gemma-4-31B-shaped target + E2B-shaped draft (dummy weights, bf16), vLLM {a['vllm']} draft_model, "
                 f"forced acceptance, {a['gpu']}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("results")
    p.add_argument("outdir")
    p.add_argument("--no-plot", action="store_true")
    p.add_argument("--repeat", default=None, help="a second results file (same K, more requests) to overlay")
    args = p.parse_args(argv)
    analysis = analyse(load(args.results))
    repeat = analyse(load(args.repeat)) if args.repeat else None
    if repeat:
        analysis["repeat_run"] = repeat
    os.makedirs(args.outdir, exist_ok=True)
    with open(os.path.join(args.outdir, "analysis.json"), "w") as f:
        json.dump(analysis, f, indent=1)
    write_csv(analysis, os.path.join(args.outdir, "sweep.csv"))
    print_report(analysis)
    if repeat:
        print("\n=== repeat run ===")
        print_report(repeat)
    if not args.no_plot:
        plot(analysis, os.path.join(args.outdir, "speedup_vs_k.png"), repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
