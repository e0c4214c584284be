"""K per batch size on the GPU: the planned schedule against every fixed K and against no speculation, per level.

usage: load31.py RESULTS.jsonl [RESULTS.jsonl ...] --out OUTDIR --schedule-report [--png]

The RESULTS files hold the jobs ``l0``, ``lm*``, ``lx*``, ``ld*`` of ``jobs.txt`` (other rows in them are left
out): the target alone, and per method one engine built with a schedule whose K lookup ``sweep.py`` overwrote per
variant (``k_mode`` fixed / schedule), plus a plain fixed-K engine (FULL CUDA graphs) as the cross-check. The jobs
may be split over several files, lanes and machines, and under other tags (``lm85`` / ``lm70``: the ``lm`` job at
one alpha): a row is placed by its method, ``k_mode``, K, schedule and alpha, never by its tag. The same path
measured by several runs (a repeat) is pooled: its median and range are over every request of every run, and
``runs`` gives each run's median. The target alone is the first file's that has one (``target_from``); the target
rows of the other files are compared with it per level (``target_elsewhere``: another machine's over this one's).
Compared per method, alpha and level on aggregate decode tok/s (all sequences), each with the range of its requests:

- ``schedule >= best fixed K``: the schedule's best request reaches the best fixed K's worst one (the ranges
  meet or the schedule is above); ``ratio`` = schedule median / best fixed K median.
- ``> no speculation``: the schedule's median beats the target alone's; ``clear`` when its worst request
  beats the target's best.
- ``ratio_to_plain``: schedule median / the plain fixed-K engine's median at that level, where one was measured (a
  plain engine keeps FULL CUDA graphs; a schedule makes vLLM 0.26.0's V1 runner capture PIECEWISE ones only).

A fixed K = 0 row (the drafter's first pass, nothing proposed) does not depend on acceptance: measured once,
shown at every alpha. ``ramp`` rows: 32 requests of staggered lengths, the batch shrinking 32 -> 1 while they run.
Writes OUTDIR/load_31b.schedule.json and, with ``--png``, OUTDIR/load_31b.schedule.png.
"""

from __future__ import annotations

import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from analyze import load  # noqa: E402  (beside this script)


LOAD_JOBS = ("l0", "lm", "ld", "lx", "lv", "lq")
"""The load jobs' tag prefixes (``lm85``: the ``lm`` job at alpha 0.85); rows of other jobs in a file are left out."""


def requests(row: dict) -> list[float]:
    """A row's aggregate tok/s per request."""
    if isinstance(row["concurrency"], int):
        return [row["concurrency"] * x for x in row["decode_tok_s_per_rep"]]
    return row["aggregate_decode_tok_s_per_rep"]


def spread(values: list[float]) -> dict:
    """Median and range of aggregate tok/s over requests."""
    return {"median": round(statistics.median(values), 1), "min": round(min(values), 1), "max": round(max(values), 1)}


def variant(row: dict) -> str:
    """The row's path in words: a fixed K through the lookup, a schedule (which one), or a plain engine."""
    mode = row.get("k_mode")
    if mode == "fixed":
        return f"K={row['k']}"
    if mode == "schedule":
        if len(row["schedule"]) == 1:
            return f"schedule (one range, K={row['schedule'][0][2]})"
        plans = row.get("schedules", {})
        own = plans.get(str(row.get("alpha")))
        planned = own == row["schedule"]
        return "schedule (planned for this alpha)" if planned else "schedule (launch's default acceptance)"
    return f"K={row['k']} plain engine"


def _load_rows(rows: list[dict], runner: str = "v1") -> list[dict]:
    """The load jobs' rows whose speculative engine ran on ``runner`` (``v1``, ``v2``): on V1 (vLLM 0.26.0) a
    schedule brings PIECEWISE CUDA graphs, on V2 it keeps FULL ones, so the two are never pooled. The target-alone
    rows (V1) serve both."""
    return [dict(r, run=r.get("run", r["tag"])) for r in rows
            if "error" not in r and str(r.get("tag", "")).startswith(LOAD_JOBS)
            and (r.get("method") is None or bool(r.get("v2_model_runner")) == (runner == "v2"))]


def _targets_by_run(rows: list[dict]) -> dict[str, dict]:
    """Per run (in order) holding target-alone rows: its rows per level."""
    out: dict[str, dict] = {}
    for r in rows:
        if r.get("method") is None and r["k"] == 0:
            out.setdefault(r["run"], {})[r["concurrency"]] = r
    return out


def prepare(rows: list[dict], runner: str = "v1") -> tuple[dict, list[dict]]:
    """The target alone per level (the first run that has one), and the speculative paths with their spread:
    one entry per method, path, alpha and level, pooling the runs that measured it (``runs``: each one's median;
    ``members``: its rows). A fixed K = 0 does not depend on acceptance: pooled over every alpha (alpha None)."""
    rows = _load_rows(rows, runner)
    targets = _targets_by_run(rows)
    first = next(iter(targets.values()), {})
    target = {level: dict(r, **spread(requests(r))) for level, r in first.items()}
    pooled: dict[tuple, list[dict]] = {}
    for r in rows:
        if r.get("method") is None:
            continue
        path = variant(r)
        alpha = None if path == "K=0" else r.get("alpha")
        pooled.setdefault((r["method"], path, alpha, r["concurrency"]), []).append(dict(r, path=path))
    spec = []
    for (_, _, alpha, _), members in pooled.items():
        values = [v for m in members for v in requests(m)]
        runs = {m["run"]: spread(requests(m))["median"] for m in members}
        spec.append(dict(members[0], alpha=alpha, members=members, runs=runs, **spread(values)))
    return target, spec


def target_elsewhere(rows: list[dict]) -> dict:
    """The target alone of every other run against the baseline's (``prepare``'s), per level: its median over the
    baseline's (a different machine, or a repeat)."""
    targets = _targets_by_run(_load_rows(rows))
    runs = list(targets)
    if len(runs) < 2:
        return {}
    base = {level: spread(requests(r))["median"] for level, r in targets[runs[0]].items()}
    return {"baseline": runs[0],
            **{run: {str(level): round(spread(requests(r))["median"] / base[level], 3)
                     for level, r in levels.items() if level in base} for run, levels in targets.items()
               if run != runs[0]}}


def compare_level(base: dict, rows: list[dict]) -> dict:
    """One method, alpha and level: every path, the best fixed K (through the lookup), the best plain engine, and
    each schedule's verdicts."""
    fixed = [r for r in rows if r.get("k_mode") == "fixed" and r["path"] != "K=0"]
    best = max(fixed, key=lambda r: r["median"]) if fixed else None
    plain = [r for r in rows if r.get("k_mode") is None]
    best_plain = max(plain, key=lambda r: r["median"]) if plain else None
    out = {"no speculation": {k: base[k] for k in ("median", "min", "max")},
           "paths": {r["path"]: {**{k: r[k] for k in ("median", "min", "max")}, "k": r["k"],
                                 "drafted_tokens_per_draft": r.get("drafted_tokens_per_draft"),
                                 "runs": r.get("runs", {})} for r in rows},
           "best_fixed": None if best is None else best["path"],
           "best_plain": None if best_plain is None else best_plain["path"]}
    for r in rows:
        if r.get("k_mode") != "schedule" or best is None:
            continue
        verdict = dict(ratio_to_best_fixed=round(r["median"] / best["median"], 3),
                       at_least_best_fixed=r["max"] >= best["min"],
                       beats_no_speculation=r["median"] > base["median"], clearly=r["min"] > base["max"])
        if best_plain is not None:
            verdict.update(ratio_to_plain=round(r["median"] / best_plain["median"], 3),
                           at_least_plain=r["max"] >= best_plain["min"])
        out["paths"][r["path"]].update(verdict)
    return out


def compare(target: dict, spec: list[dict]) -> dict:
    """Per method and alpha, per level (and the ramp): ``compare_level``."""
    out: dict = {}
    alphas = sorted({r.get("alpha") for r in spec if r["path"] != "K=0"}, key=lambda a: -(a or 0))
    for method in sorted({r["method"] for r in spec}):
        for alpha in alphas:
            key = f"{method}, alpha {alpha}"
            for level in sorted(target, key=lambda c: (isinstance(c, str), c)):
                rows = [r for r in spec if r["method"] == method and r["concurrency"] == level
                        and (r.get("alpha") == alpha or r["path"] == "K=0")]
                if any(r.get("alpha") == alpha and r["path"] != "K=0" for r in rows):
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
                        "k": plain["k"], "plain": plain["median"], "plain_range": [plain["min"], plain["max"]],
                        "through_lookup": twin["median"], "through_lookup_range": [twin["min"], twin["max"]],
                        "lookup_over_plain": round(twin["median"] / plain["median"], 3),
                        "cudagraph_mode": [plain["cudagraph_mode"], twin["cudagraph_mode"]],
                        "runs": [sorted(plain.get("runs", {})), sorted(twin.get("runs", {}))]})
    return out


def lookup_mismatches(spec: list[dict]) -> list[str]:
    """Rows whose drafter proposed another number of tokens per step than the lookup's K."""
    return [f"{r['tag']} {r['path']} alpha {r.get('alpha')} at {r['concurrency']}: {r.get('drafted_tokens_per_draft')}"
            for entry in spec for r in entry.get("members", [entry])
            if r.get("k_mode") and isinstance(r["concurrency"], int) and r["k"]
            and r.get("drafted_tokens_per_draft") != float(r["k"])]


def print_tables(result: dict) -> None:
    for key, levels in result.items():
        paths = sorted({p for lv in levels.values() for p in lv["paths"]}, key=lambda p: (not p.startswith("K="), p))
        print(f"\n### {key}: aggregate decode tok/s, median (range over the requests of every run)\n")
        print("| sequences | no speculation | " + " | ".join(paths) + " | best fixed | schedule verdicts |")
        print("|---" * (len(paths) + 4) + "|")
        for level, lv in levels.items():
            cells = [_cell(lv["paths"].get(p)) for p in paths]
            verdicts = "; ".join(f"{p.split('(')[1][:-1]}: x{v['ratio_to_best_fixed']}"
                                 f"{'' if v['at_least_best_fixed'] else ' SLOWER'}"
                                 f"{'' if v['beats_no_speculation'] else ' LOSES TO NO SPEC'}"
                                 + (f", x{v['ratio_to_plain']} of plain{'' if v['at_least_plain'] else ' SLOWER'}"
                                    if "ratio_to_plain" in v else "")
                                 for p, v in lv["paths"].items() if "ratio_to_best_fixed" in v)
            print(f"| {level} | {_cell(lv['no speculation'])} | " + " | ".join(cells)
                  + f" | {lv['best_fixed']} | {verdicts} |")


def _cell(v: dict | None) -> str:
    if v is None:
        return "-"
    k = f" K={v['k']}" if v.get("k") is not None and "ratio_to_best_fixed" in v else ""
    return f"{v['median']:.0f} ({v['min']:.0f}-{v['max']:.0f}){k}"


def plot(result: dict, target: dict, path: str, runner: str = "v1") -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = list(result)
    cols = min(2, len(keys))
    grid = (-(-len(keys) // cols), cols)
    fig, axes = plt.subplots(*grid, figsize=(6.5 * grid[1], 4.6 * grid[0]), squeeze=False)
    for ax, key in zip(axes.flat, keys):
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
    fig.suptitle(f"31B-shaped target, {gpu}, vLLM 0.26.0, {'Model Runner V2' if runner == 'v2' else 'V1 runner'}: "
                 "K per batch size vs fixed K (bars: range over requests and runs)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=130)


def run_label(path: str, tag: str) -> str:
    """A run in words: its tag and the folder/file it came from (lanes and machines differ by folder)."""
    folder, name = os.path.split(os.path.abspath(path))
    return f"{tag} ({os.path.basename(folder)}/{name.split('.')[0]})"


def schedule_report(results: list[str], out: str, png: bool, runner: str = "v1") -> None:
    """Print the tables and checks of ``runner``'s runs in ``results``; write OUTDIR/load_31b.schedule.json (V2:
    load_31b.v2.schedule.json) and the plot."""
    rows = [dict(r, run=run_label(path, r.get("tag", ""))) for path in results for r in load(path)]
    target, spec = prepare(rows, runner)
    result = compare(target, spec)
    checks = {"target_from": next(iter(target.values()))["run"] if target else None,
              "target_elsewhere": target_elsewhere(rows), "cross_check": cross_check(spec),
              "lookup_mismatches": lookup_mismatches(spec)}
    print_tables(result)
    print("\n" + json.dumps(checks, indent=1))
    os.makedirs(out, exist_ok=True)
    name = "load_31b.schedule" if runner == "v1" else f"load_31b.{runner}.schedule"
    with open(os.path.join(out, f"{name}.json"), "w") as f:
        json.dump({"results": results, "runner": runner, "levels": result, **checks}, f, indent=1)
    if png:
        plot(result, target, os.path.join(out, f"{name}.png"), runner)
