"""EAGLE-3 and DFlash speculators beside the 31B-shaped target: measured speedup per K and alpha, the host-cost
entries read from their step profiles, tune's prediction for every row, and the methods ranked by measured speedup
at each alpha (what ``--method auto`` must reproduce).

usage: methods_costs.py RESULTS.jsonl [RESULTS.jsonl ...] --out OUTDIR [--entries]

The RESULTS.jsonl files are one machine, one file per GPU where lanes.sh ran the jobs side by side (jobs ``e3ks``,
``df7``, ``e3k3``, ``df3`` of ``jobs.txt``, beside the target alone: ``k0r``, or ``l0``'s one-sequence row, and,
when they ran on the same machine, the one-sequence fixed-K rows of ``lm`` (MTP) and ``ld`` (E2B draft_model)). A
row's speedup divides by the target alone of the same machine. ``--entries`` prints the host-cost entries the
profiled rows give (moe26.py's ``host_entry``, the arithmetic of every entry in
specdraft/bench/data/host_costs.json) and the line fitted to each path's measured step times, then stops. Otherwise
tune predicts every row from the shipped entries (``COSTS``) and the acceptance the path's largest K measured at
that alpha. Writes OUTDIR/methods.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from analyze import latest, print_table_head, load, tune_report  # noqa: E402  (beside this script)
from levers import costs_of  # noqa: E402
from moe26 import fitted_line, host_entry  # noqa: E402

COSTS = {"eagle3": "vllm0.26-eagle3-31b-speculator", "dflash": "vllm0.26-dflash-31b-speculator",
         "mtp": "vllm0.26-mtp-31b-assistant", "draft_model": "vllm0.26-draft_model-e2b-async"}
"""The host-cost entry tune predicts each path with."""
PROFILED = {"eagle3": "e3ks", "dflash": "df7"}


def load_all(paths: list[str]) -> list[dict]:
    """The rows of several results files of one machine, in the order given (a later row supersedes an earlier one
    where ``latest`` picks)."""
    return [row for path in paths for row in load(path)]


def target_alone(rows: list[dict]) -> dict | None:
    """The 31B-shaped target alone at one sequence: ``k0r`` or ``k0``, else ``l0``'s one-sequence row."""
    return latest(rows, tag="k0r") or latest(rows, tag="k0") or latest(rows, tag="l0", concurrency=1, k=0)


def speculative_rows(rows: list[dict]) -> list[dict]:
    """One-sequence rows at a fixed K beside the bf16 31B shape on the V1 runner (the path launch plans; a schedule
    or a ramp measures something else)."""
    return [r for r in rows if "error" not in r and r.get("method") and (r.get("k") or 0) > 0 and "alpha" in r
            and r.get("concurrency", 1) == 1 and r.get("k_mode") in (None, "fixed")
            and r.get("target_dir", "target31b") == "target31b" and "decode_tok_s" in r
            and not r.get("v2_model_runner") and not r.get("quant") and not r.get("draft_quant")]


def profile_entry(row: dict, target_step_ms: float) -> dict:
    """The host-cost figures of a profiled row: moe26.py's ``host_entry``, except that a step the host did not set
    the pace of (GPU-bound, as the 31B MTP assistant's) gets the 31B entries' o: what the step lasted beyond the
    target's step and K drafted tokens of GPU time (host_costs.json's ``_about``). A DFlash drafter proposes the
    whole block in one forward: its per-token figures are that forward / K, exact at the measured K."""
    entry = host_entry(row, target_step_ms)
    if not entry["host_bound"]:
        entry["gpu_overhead_ms_per_step"] = round(entry["profiled_step_ms"] - target_step_ms
                                                  - row["k"] * entry["gpu_draft_ms_per_token"], 3)
    return entry


def entries(target: dict, spec: list[dict]) -> dict:
    """Per profiled path: the host-cost figures of its profile and the line through its measured step times."""
    out = {}
    for method, tag in PROFILED.items():
        row = next((r for r in spec if r["tag"] == tag and "profile" in r), None)
        if row is None:
            continue
        ks = {r["k"] for r in spec if r["method"] == method}
        out[method] = {"profile": profile_entry(row, target["step_ms"]), "target_step_ms": target["step_ms"],
                       "fitted": fitted_line(spec, method) if len(ks) > 1 else None, "ks": sorted(ks)}
    return out


def predict(target: dict, spec: list[dict]) -> list[dict]:
    """Every measured row with its speedup and, where its path has a shipped entry, tune's prediction."""
    t_ms, out = target["step_ms"], []
    for r in sorted(spec, key=lambda r: (r["method"], -r["alpha"], r["k"])):
        row = {"tag": r["tag"], "method": r["method"], "k": r["k"], "alpha": r["alpha"],
               "decode_tok_s": r["decode_tok_s"], "speedup": round(r["decode_tok_s"] / target["decode_tok_s"], 3),
               "step_ms": r.get("step_ms"), "mean_acceptance_length": r.get("mean_acceptance_length"),
               "k_mode": r.get("k_mode"), "gpu": r["gpu"], "vllm": r["vllm"]}
        widest = max((x for x in spec if x["method"] == r["method"] and x["alpha"] == r["alpha"]
                      and x.get("per_position_acceptance")), key=lambda x: x["k"], default=None)
        name = COSTS.get(r["method"])
        if widest is not None and name is not None:
            try:
                c, o_ms = costs_of(name, t_ms)
            except KeyError:  # the entry is not shipped yet (--entries prints it)
                c = None
            if c is not None:
                table = tune_report(widest["per_position_acceptance"], c, max_k=widest["k"],
                                    overhead_ms=round(o_ms, 3), target_step_ms=round(t_ms, 3), host_costs=name)
                predicted = table["table"][r["k"] - 1]["predicted_speedup"]
                row.update(tune_predicted=round(predicted, 3),
                           prediction_error=round(predicted / row["speedup"] - 1, 4),
                           tune_recommended_k=table["recommended_k"])
        out.append(row)
    return out


def measured_ranking(out: list[dict]) -> dict[float, list[dict]]:
    """Per alpha: each method's best measured row, fastest first."""
    ranking = {}
    for alpha in sorted({o["alpha"] for o in out}, reverse=True):
        best = {}
        for o in out:
            if o["alpha"] == alpha and o["speedup"] > best.get(o["method"], {}).get("speedup", 0):
                best[o["method"]] = o
        ranking[alpha] = sorted(best.values(), key=lambda o: -o["speedup"])
    return ranking


def print_report(target: dict, out: list[dict], ranking: dict) -> None:
    print_table_head(target, ["method", "K", "alpha", "tok/s", "speedup", "step ms", "acceptance length",
                              "tune predicts", "error"])
    for o in out:
        tune = f"{o['tune_predicted']:.3f} | {o['prediction_error']:+.1%}" if "tune_predicted" in o else "- | -"
        print(f"| {o['method']} | {o['k']} | {o['alpha']} | {o['decode_tok_s']:.1f} | {o['speedup']:.3f} "
              f"| {o['step_ms']:.2f} | {o['mean_acceptance_length']} | {tune} |")
    for alpha, rows in ranking.items():
        print(f"\nalpha {alpha}, measured: " + " > ".join(f"{o['method']} (K = {o['k']}, {o['speedup']:.2f}x)"
                                                        for o in rows))


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("results", nargs="+", help="results files of one machine (lanes.sh writes one per GPU)")
    p.add_argument("--out", required=True)
    p.add_argument("--entries", action="store_true", help="print the host-cost entries from the profiles and stop")
    args = p.parse_args(argv)
    rows = load_all(args.results)
    target, spec = target_alone(rows), speculative_rows(rows)
    if target is None:
        raise SystemExit(f"{' '.join(args.results)}: no target-alone row (k0r, or l0 at one sequence)")
    if args.entries:
        print(json.dumps(entries(target, spec), indent=1))
        return 0
    out = predict(target, spec)
    ranking = measured_ranking(out)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "methods.json"), "w") as f:
        json.dump({"target_alone": {k: target[k] for k in ("decode_tok_s", "step_ms", "gpu", "vllm")}, "rows": out,
                   "measured_ranking": {str(a): [[o["method"], o["k"], o["speedup"]] for o in rows]
                                        for a, rows in ranking.items()}}, f, indent=1)
    print_report(target, out, ranking)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
