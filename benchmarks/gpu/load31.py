"""Speculation under load: the 31B-shaped target alone and with the E2B draft / its MTP assistant at 1-32 sequences.

usage: load31.py RESULTS.jsonl [RESULTS.jsonl ...] --out OUTDIR

Reads the ``c0`` / ``l0`` (target alone; the first file's where several have one) and ``cd*`` / ``cm*`` / ``ld*`` /
``lm*`` (draft_model / mtp; ``lm85``: the ``lm`` job at one alpha) rows of
``jobs.txt``: one engine per row with ``max_num_seqs`` 32, every concurrency level measured in turn
(``sweep.py --concurrency 1,2,...``; ``ld`` / ``lm``: one engine per method, its K lookup overwritten per variant).
Prints a markdown table (per-sequence and aggregate decode tok/s, speedup over the target alone at the same
level, the engine's step) and writes OUTDIR/load_31b.json: the step costs per batch size (the target's step,
each path's speculative step and acceptance per level), and per level the fastest measured K.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from analyze import load  # noqa: E402  (beside this script)


TARGET_TAGS, SPEC_TAGS, PLAIN_TAGS = ("c0", "l0"), ("cd", "cm", "lm", "ld"), ("lvx",)
"""Target alone; speculative engines (one fixed K each, or a schedule engine whose K lookup sweep.py overwrote);
the plain one-K engines on Model Runner V2 (``lvx*``: FULL CUDA graphs, K = 3, 5 and 8 measured in one call),
whose steps ship apart: a schedule engine's are PIECEWISE on V1. The V1 plain engines (``lx*``, K = 8 only, run in
other calls) stay the schedule report's cross-check."""


def collect(paths: list[str]) -> tuple[dict, list[dict]]:
    rows = [r for p in paths for r in load(p) if "error" not in r and isinstance(r["concurrency"], int)
            and r["tag"][:2] in TARGET_TAGS + SPEC_TAGS]
    target: dict = {}
    for r in rows:  # the first file's target alone where several files (machines) have one
        if r["tag"] in TARGET_TAGS:
            target.setdefault(r["concurrency"], r)
    # a schedule row's drafter may run another K while the batch fills or drains (drafted tokens per draft off
    # the lookup's K): its step is no K's, so it stays out of the table and the step costs
    return target, [r for r in rows if r["tag"] not in TARGET_TAGS
                    and r.get("drafted_tokens_per_draft", float(r["k"])) in (None, float(r["k"]))]


def collect_plain(paths: list[str]) -> list[dict]:
    """The plain one-K engines' rows (no K lookup), at every integer level."""
    return [r for p in paths for r in load(p) if "error" not in r and isinstance(r["concurrency"], int)
            and r["tag"].startswith(PLAIN_TAGS) and r.get("k_mode") is None and r.get("method")]


def path_name(r: dict) -> str:
    how = {"fixed": " (lookup)", "schedule": " (schedule)"}.get(r.get("k_mode"), "")
    return f"{'E2B draft_model, async' if r['method'] == 'draft_model' else 'MTP assistant'} K={r['k']}{how}"


def table(target: dict, spec: list[dict]) -> list[dict]:
    out = []
    for n, t in sorted(target.items()):
        out.append({"path": "target alone", "k": 0, "alpha": None, "concurrency": n, "decode_tok_s": t["decode_tok_s"],
                    "aggregate_decode_tok_s": t["aggregate_decode_tok_s"], "speedup": 1.0, "step_ms": t["step_ms"],
                    "range": [min(t["decode_tok_s_per_rep"]), max(t["decode_tok_s_per_rep"])], "gpu": t["gpu"]})
    for r in sorted(spec, key=lambda r: (r["method"], r["k"], -r["alpha"], r["concurrency"])):
        base = target[r["concurrency"]]
        out.append({"path": path_name(r), "method": r["method"], "k": r["k"], "alpha": r["alpha"],
                    "concurrency": r["concurrency"], "decode_tok_s": r["decode_tok_s"],
                    "aggregate_decode_tok_s": r["aggregate_decode_tok_s"],
                    "speedup": round(r["decode_tok_s"] / base["decode_tok_s"], 3), "step_ms": r["step_ms"],
                    "mean_acceptance_length": r.get("mean_acceptance_length"),
                    "per_position_acceptance": r.get("per_position_acceptance"),
                    "range": [min(r["decode_tok_s_per_rep"]), max(r["decode_tok_s_per_rep"])], "gpu": r["gpu"]})
    return out


def best_per_level(rows: list[dict]) -> dict:
    """Per method, alpha and level: the measured K with the highest aggregate throughput (0 = no speculation)."""
    best: dict = {}
    for r in rows:
        if r["k"] == 0:
            continue
        key = f"{r['method']}, alpha {r['alpha']}"
        base = next(x for x in rows if x["path"] == "target alone" and x["concurrency"] == r["concurrency"])
        cur = best.setdefault(key, {}).get(r["concurrency"], {"k": 0, "aggregate_decode_tok_s": base["aggregate_decode_tok_s"]})
        if r["aggregate_decode_tok_s"] > cur["aggregate_decode_tok_s"]:
            best[key][r["concurrency"]] = {"k": r["k"], "aggregate_decode_tok_s": r["aggregate_decode_tok_s"]}
        else:
            best[key][r["concurrency"]] = cur
    return best


COSTS_ABOUT = ("Step costs per batch size, measured on a lent GPU with benchmarks/gpu/sweep.py (dummy weights, bf16, "
               "one in-process vLLM engine per path, every level's sequences decoding together) and written by "
               "benchmarks/gpu/load31.py --costs-out: per batch size, the target's decode step alone and the "
               "speculative engine's step at each measured K (ms; mean over the acceptance levels measured). tune's "
               "model fits step(K) = fixed + K * per_token through each batch size's K (c = per_token / target step, "
               "o = fixed / target step - 1); launch --max-num-seqs plans K per batch size from it.")
# What each measured path is, for the shipped step costs (specdraft/speed/data/batch_step_costs.json).
PATH_FACTS = {
    "draft_model": dict(drafter="E2B-shaped (35 layers, 20 KV-shared), bf16, async scheduling",
                        key="draft_model-e2b-async"),
    "mtp": dict(drafter="the 31B's MTP assistant (4 layers, shares the target's KV cache), bf16",
                key="mtp-31b-assistant"),
}
TARGET_SHAPE = {"hidden_size": 5376, "num_hidden_layers": 60}
"""benchmarks/gpu/configs/target31b: the 31B-shaped target the rows were measured with."""


def step_cost_entries(target: dict, spec: list[dict], source: str, suffix: str = "") -> dict:
    """Per path: the target's step and the speculative engine's step at each measured K, per batch size.

    A K measured at several acceptance levels (or twice) gets the mean of its step times: the step's work does
    not depend on how much of the draft is accepted. ``suffix`` tells the plain engines' entries apart."""
    entries = {}
    for method, facts in PATH_FACTS.items():
        rows = [r for r in spec if r["method"] == method and isinstance(r["concurrency"], int) and r["k"]]
        if not rows:
            continue
        gpu, vllm = rows[0]["gpu"], rows[0]["vllm"]
        levels = []
        for n in sorted(target):
            ks = sorted({r["k"] for r in rows if r["concurrency"] == n})
            steps = {str(k): round(statistics.mean(r["step_ms"] for r in rows
                                                   if r["concurrency"] == n and r["k"] == k), 3) for k in ks}
            if steps:
                levels.append({"batch_size": n, "target_step_ms": target[n]["step_ms"], "step_ms": steps})
        name = f"vllm{'.'.join(vllm.split('.')[:2])}-{facts['key']}-{gpu.split()[-1].lower()}{suffix}"
        entries[name] = {"method": method, "vllm": vllm, "gpu": gpu, "target": "31B-shaped, bf16",
                         "target_shape": TARGET_SHAPE, "drafter": facts["drafter"],
                         "cudagraph_mode": sorted({r["cudagraph_mode"] for r in rows}),
                         "model_runner": sorted({"v2" if r.get("v2_model_runner") else "v1" for r in rows}),
                         "source": source, "levels": levels}
    return entries


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("results", nargs="+")
    p.add_argument("--out", required=True)
    p.add_argument("--costs-out", default=None,
                   help="also write the step costs per batch size in the shape tune reads (batch_step_costs.json)")
    p.add_argument("--costs-source", default="docs/gpu/README.md section 7",
                   help="where the shipped step costs say they come from")
    p.add_argument("--schedule-report", action="store_true",
                   help="the l0/lm/lx/ld jobs (any number of files, lanes and machines): the schedule against every fixed K "
                        "(load_schedule.py)")
    p.add_argument("--png", action="store_true", help="with --schedule-report: also the plot")
    p.add_argument("--runner", choices=("v1", "v2"), default="v1",
                   help="with --schedule-report: the model runner whose speculative rows are compared")
    args = p.parse_args(argv)
    if args.schedule_report:
        from load_schedule import schedule_report  # beside this script

        schedule_report(args.results, args.out, args.png, args.runner)
        return 0
    target, spec = collect(args.results)
    rows = table(target, spec)
    best = best_per_level(rows)
    print("| path | alpha | sequences | tok/s per sequence (range of 3) | aggregate tok/s | speedup | engine step ms "
          "| acceptance length |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        lo, hi = r["range"]
        print(f"| {r['path']} | {r['alpha'] or '-'} | {r['concurrency']} | {r['decode_tok_s']:.1f} ({lo:.1f}-{hi:.1f}) "
              f"| {r['aggregate_decode_tok_s']:.0f} | {r['speedup']:.2f} | {r['step_ms']:.2f} "
              f"| {r.get('mean_acceptance_length') or '-'} |")
    print("\nfastest measured K per level:", json.dumps(best))
    steps = {"target_step_ms": {n: t["step_ms"] for n, t in sorted(target.items())},
             "paths": [{k: r[k] for k in ("method", "k", "alpha", "concurrency", "step_ms", "mean_acceptance_length",
                                          "per_position_acceptance", "decode_tok_s", "aggregate_decode_tok_s")}
                       for r in rows if r["k"]],
             "fastest_k_per_level": best}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "load_31b.json"), "w") as f:
        json.dump({"rows": rows, "step_costs": steps}, f, indent=1)
    if args.costs_out:
        source = f"{args.costs_source}; raw rows: {', '.join(args.results)}"
        entries = {**step_cost_entries(target, spec, source),
                   **step_cost_entries(target, collect_plain(args.results), source, suffix="-full")}
        with open(args.costs_out, "w") as f:
            json.dump({"_about": COSTS_ABOUT, **entries}, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
