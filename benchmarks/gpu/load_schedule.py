"""K per batch size on the GPU: the planned schedule against every fixed K and against no speculation, per level.

usage: load_schedule.py RESULTS.jsonl --out OUTDIR [--png]

RESULTS.jsonl is one lease (jobs ``l0``, ``lm``, ``lx8``, ``ld`` of ``jobs.txt``): the target alone, and per
method one engine built with a schedule whose K lookup ``sweep.py`` overwrote per variant (``k_mode`` fixed /
schedule), plus a plain fixed-K engine (FULL CUDA graphs) as the cross-check. Compared per method, alpha and
level on aggregate decode tok/s (all sequences), each with the range of its 3 requests:

- ``schedule >= best fixed K``: the schedule's best request reaches the best fixed K's worst one (the ranges
  meet or the schedule is above); ``ratio`` = schedule median / best fixed K median.
- ``> no speculation``: the schedule's median beats the target alone's; ``clear`` when its worst request
  beats the target's best.

A fixed K = 0 row (the drafter's first pass, nothing proposed) does not depend on acceptance: measured once,
shown at every alpha. ``ramp`` rows: 32 requests of staggered lengths, the batch shrinking 32 -> 1 while they run.
Writes OUTDIR/load_schedule.json and, with ``--png``, OUTDIR/load_schedule.png.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from analyze import load  # noqa: E402  (beside this script)


def spread(row: dict) -> dict:
    """Median and range of a row's aggregate tok/s over its requests."""
    if isinstance(row["concurrency"], int):
        reps = [row["concurrency"] * x for x in row["decode_tok_s_per_rep"]]
    else:
        reps = row["aggregate_decode_tok_s_per_rep"]
    return {"median": round(statistics.median(reps), 1), "min": round(min(reps), 1), "max": round(max(reps), 1)}


def variant(row: dict) -> str:
    """The row's path in words: a fixed K through the lookup, a schedule (which one), or a plain engine."""
    mode = row.get("k_mode")
    if mode == "fixed":
        return f"K={row['k']}"
    if mode == "schedule":
        plans = row.get("schedules", {})
        own = plans.get(str(row.get("alpha")))
        return "schedule (planned for this alpha)" if own == row["schedule"] else "schedule (launch's default acceptance)"
    return f"K={row['k']} plain engine"


def prepare(rows: list[dict]) -> tuple[dict, list[dict]]:
    """The target alone per level, and the speculative rows with their path and spread."""
    rows = [r for r in rows if "error" not in r]
    target = {r["concurrency"]: dict(r, **spread(r)) for r in rows if r.get("method") is None and r["k"] == 0}
    spec = []
    for r in rows:
        if r.get("method") is None:
            continue
        spec.append(dict(r, path=variant(r), **spread(r)))
    return target, spec


def compare_level(base: dict, rows: list[dict]) -> dict:
    """One method, alpha and level: every path, the best fixed K, and each schedule's verdicts."""
    fixed = [r for r in rows if r.get("k_mode") == "fixed" and r["path"] != "K=0"]
    best = max(fixed, key=lambda r: r["median"]) if fixed else None
    out = {"no speculation": {k: base[k] for k in ("median", "min", "max")},
           "paths": {r["path"]: {**{k: r[k] for k in ("median", "min", "max")}, "k": r["k"],
                                 "drafted_tokens_per_draft": r.get("drafted_tokens_per_draft")} for r in rows},
           "best_fixed": None if best is None else best["path"]}
    for r in rows:
        if r.get("k_mode") != "schedule" or best is None:
            continue
        out["paths"][r["path"]].update(
            ratio_to_best_fixed=round(r["median"] / best["median"], 3),
            at_least_best_fixed=r["max"] >= best["min"],
            beats_no_speculation=r["median"] > base["median"], clearly=r["min"] > base["max"])
    return out


def compare(target: dict, spec: list[dict]) -> dict:
    """Per method and alpha, per level (and the ramp): ``compare_level``."""
    out: dict = {}
    alphas = sorted({r.get("alpha") for r in spec}, key=lambda a: -(a or 0))
    for method in sorted({r["method"] for r in spec}):
        for alpha in alphas:
            key = f"{method}, alpha {alpha}"
            for level in sorted(target, key=lambda c: (isinstance(c, str), c)):
                rows = [r for r in spec if r["method"] == method and r["concurrency"] == level
                        and (r.get("alpha") == alpha or r["path"] == "K=0")]
                if any(r.get("alpha") == alpha for r in rows):
                    out.setdefault(key, {})[str(level)] = compare_level(target[level], rows)
    return out


def cross_check(spec: list[dict]) -> list[dict]:
    """The plain engine against the same K through the lookup of the schedule engine, per alpha and level."""
    out = []
    for plain in (r for r in spec if r.get("k_mode") is None):
        twin = next((r for r in spec if r.get("k_mode") == "fixed" and r["method"] == plain["method"]
                     and r.get("alpha") == plain.get("alpha") and r["concurrency"] == plain["concurrency"]
                     and r["k"] == plain["k"]), None)
        if twin is not None:
            out.append({"method": plain["method"], "alpha": plain.get("alpha"), "concurrency": plain["concurrency"],
                        "k": plain["k"], "plain": plain["median"], "through_lookup": twin["median"],
                        "lookup_over_plain": round(twin["median"] / plain["median"], 3),
                        "cudagraph_mode": [plain["cudagraph_mode"], twin["cudagraph_mode"]]})
    return out


def lookup_mismatches(spec: list[dict]) -> list[str]:
    """Rows whose drafter proposed another number of tokens per step than the lookup's K."""
    return [f"{r['tag']} {r['path']} alpha {r.get('alpha')} at {r['concurrency']}: {r.get('drafted_tokens_per_draft')}"
            for r in spec if r.get("k_mode") and isinstance(r["concurrency"], int) and r["k"]
            and r.get("drafted_tokens_per_draft") != float(r["k"])]


def print_tables(result: dict) -> None:
    for key, levels in result.items():
        paths = sorted({p for lv in levels.values() for p in lv["paths"]}, key=lambda p: (not p.startswith("K="), p))
        print(f"\n### {key}: aggregate decode tok/s, median (range of 3)\n")
        print("| sequences | no speculation | " + " | ".join(paths) + " | best fixed | schedule verdicts |")
        print("|---" * (len(paths) + 4) + "|")
        for level, lv in levels.items():
            cells = [_cell(lv["paths"].get(p)) for p in paths]
            verdicts = "; ".join(f"{p.split('(')[1][:-1]}: x{v['ratio_to_best_fixed']}"
                                 f"{'' if v['at_least_best_fixed'] else ' SLOWER'}"
                                 f"{'' if v['beats_no_speculation'] else ' LOSES TO NO SPEC'}"
                                 for p, v in lv["paths"].items() if "ratio_to_best_fixed" in v)
            print(f"| {level} | {_cell(lv['no speculation'])} | " + " | ".join(cells)
                  + f" | {lv['best_fixed']} | {verdicts} |")


def _cell(v: dict | None) -> str:
    if v is None:
        return "-"
    k = f" K={v['k']}" if v.get("k") is not None and "ratio_to_best_fixed" in v else ""
    return f"{v['median']:.0f} ({v['min']:.0f}-{v['max']:.0f}){k}"


def plot(result: dict, target: dict, path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = list(result)
    fig, axes = plt.subplots(1, len(keys), figsize=(5.2 * len(keys), 4.4), squeeze=False)
    for ax, key in zip(axes[0], keys):
        levels = [lv for lv in result[key] if lv != "ramp"]
        paths = sorted({p for lv in levels for p in result[key][lv]["paths"]})
        for p in paths:
            xs = [int(lv) for lv in levels if p in result[key][lv]["paths"]]
            ys = [result[key][str(x)]["paths"][p] for x in xs]
            base = [result[key][str(x)]["no speculation"]["median"] for x in xs]
            style = dict(lw=2.5, marker="s") if p.startswith("schedule") else dict(lw=1, marker="o", alpha=0.7)
            ax.errorbar(xs, [y["median"] / b for y, b in zip(ys, base)],
                        yerr=[[(y["median"] - y["min"]) / b for y, b in zip(ys, base)],
                              [(y["max"] - y["median"]) / b for y, b in zip(ys, base)]], label=p, capsize=2, **style)
        ax.axhline(1.0, color="k", lw=0.8)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("sequences decoding together")
        ax.set_ylabel("aggregate tok/s / target alone")
        ax.set_title(key, fontsize=9)
        ax.legend(fontsize=6)
    gpu = next(iter(target.values()))["gpu"]
    fig.suptitle(f"31B-shaped target, {gpu}, vLLM 0.26.0: K per batch size vs fixed K (bars: range of 3)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=130)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("results")
    p.add_argument("--out", required=True)
    p.add_argument("--png", action="store_true")
    args = p.parse_args(argv)
    target, spec = prepare(load(args.results))
    result = compare(target, spec)
    checks = {"cross_check": cross_check(spec), "lookup_mismatches": lookup_mismatches(spec)}
    print_tables(result)
    print("\n" + json.dumps(checks, indent=1))
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "load_schedule.json"), "w") as f:
        json.dump({"levels": result, **checks}, f, indent=1)
    if args.png:
        plot(result, target, os.path.join(args.out, "load_schedule.png"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
