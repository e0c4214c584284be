"""EAGLE-3 and DFlash speculators beside the 31B-shaped target (and EAGLE-3 beside the 26B-A4B): measured speedup
per K and alpha, the host-cost entries read from their rows and step profiles, tune's prediction for every row, and
the methods ranked by measured speedup at each alpha (what ``--method auto`` must reproduce).

usage: methods_costs.py RESULTS.jsonl [RESULTS.jsonl ...] --out OUTDIR [--entries] [--shape 26b]

The RESULTS.jsonl files are one machine, one file per GPU where lanes.sh ran the jobs side by side (jobs ``e3ks``,
``df7``, ``e3k3`` ... ``e3k7``, ``df1`` ... ``df8`` of ``jobs.txt``, beside the target alone: ``k0r``, or ``l0``'s
one-sequence row, and, when they ran on the same machine, the one-sequence fixed-K rows of ``lm``/``mtp8p`` (MTP)
and ``ld`` (E2B draft_model)). A row's speedup divides by the target alone of the same machine. ``--shape 26b``
reads the 26B-A4B rows instead (``e3m3``, ``mm*``, ``md*``); the lane calls that ran ``e3m3`` ran no 26B target
alone, so name with them the file of the machine whose ``m0`` they divide by (section 6's rule: the first
machine's, ``issue17_h200``). ``--entries`` prints, per path, the host-cost figures its entry ships (``shipped``,
by the rule ``entry_figures`` states), the profile they start from (moe26.py's ``host_entry``, the arithmetic of
every entry in specdraft/speed/data/host_costs.json) and the lines fitted to its measured step times, then stops.
Otherwise tune predicts every row from the shipped entries (``COSTS``) and the acceptance the path's largest K
measured at that alpha. Writes OUTDIR/methods.json (``methods-26b.json`` for the 26B).
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

COSTS = {"31b": {"eagle3": "vllm0.26-eagle3-31b-speculator-plain", "dflash": "vllm0.26-dflash-31b-speculator-flat",
                 "mtp": "vllm0.26-mtp-31b-assistant", "draft_model": "vllm0.26-draft_model-e2b-async"},
         "26b": {"eagle3": "vllm0.26-eagle3-26b-speculator", "mtp": "vllm0.26-mtp-26b-assistant",
                 "draft_model": "vllm0.26-draft_model-e2b-async-26b"}}
"""The host-cost entry tune predicts each path with, per target shape (the ones ``--method auto`` uses)."""
PROFILED = {"31b": {"eagle3": ("e3k3", "e3ks"), "dflash": ("df7",)}, "26b": {"eagle3": ("e3m3",)}}
"""The job whose step profile an entry starts from, per path: a plain engine (``e3k3``) before the K lookup
engine (``e3ks``) where both ran."""
BLOCK_DRAFTERS = ("dflash",)
"""Paths whose drafter proposes the whole block in one forward."""
TARGET_DIRS = {"31b": "target31b", "26b": "target26b"}


def load_all(paths: list[str]) -> list[dict]:
    """The rows of several results files of one machine, in the order given (a later row supersedes an earlier one
    where ``latest`` picks)."""
    return [row for path in paths for row in load(path)]


def target_alone(rows: list[dict], shape: str = "31b") -> dict | None:
    """The target alone at one sequence: for the 31B ``k0r`` or ``k0``, else ``l0``'s one-sequence row; for the
    26B-A4B ``m0``."""
    if shape == "26b":
        return latest(rows, tag="m0")
    return latest(rows, tag="k0r") or latest(rows, tag="k0") or latest(rows, tag="l0", concurrency=1, k=0)


def speculative_rows(rows: list[dict], shape: str = "31b") -> list[dict]:
    """One-sequence rows at a fixed K beside the bf16 target of ``shape`` on the V1 runner (the path launch plans;
    a schedule or a ramp measures something else)."""
    return [r for r in rows if "error" not in r and r.get("method") and (r.get("k") or 0) > 0 and "alpha" in r
            and r.get("concurrency", 1) == 1 and r.get("k_mode") in (None, "fixed")
            and r.get("target_dir", "target31b") == TARGET_DIRS[shape] and "decode_tok_s" in r
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


def flat_step(spec: list[dict], method: str) -> dict:
    """A block drafter's measured step taken as one figure at every K: its mean, and the largest distance of a row
    from it beside the largest from the least-squares line (the flat model fits when the line's rise over the
    measured K is within the flat model's own scatter)."""
    rows = [r for r in spec if r["method"] == method]
    mean = sum(r["step_ms"] for r in rows) / len(rows)
    per_step, per_k = fitted_line(spec, method)
    ks = [r["k"] for r in rows]
    scatter = max(abs(r["step_ms"] - mean) for r in rows)
    return {"step_ms": round(mean, 3), "max_residual_ms": round(scatter, 3),
            "line_max_residual_ms": round(max(abs(r["step_ms"] - per_step - per_k * r["k"]) for r in rows), 3),
            "line_rise_ms": round(per_k * (max(ks) - min(ks)), 3),
            "fits": abs(per_k) * (max(ks) - min(ks)) <= scatter}


def entries(target: dict, spec: list[dict], shape: str = "31b") -> dict:
    """Per path measured beside ``shape``: the profile its entry starts from (None where no job of ``PROFILED``
    was profiled on this machine), the line through its measured step times, the flat step of a block drafter,
    and the figures its entry ships (``entry_figures``)."""
    out = {}
    for method in sorted({r["method"] for r in spec} & set(PROFILED[shape])):
        row = next((r for tag in PROFILED[shape][method] for r in spec if r["tag"] == tag and "profile" in r), None)
        ks = sorted({r["k"] for r in spec if r["method"] == method})
        found = {"profile": profile_entry(row, target["step_ms"]) if row else None,
                 "profiled": row["tag"] if row else None, "target_step_ms": target["step_ms"],
                 "fitted": fitted_line(spec, method) if len(ks) > 1 else None, "ks": ks,
                 "mean_step_ms": round(sum(r["step_ms"] for r in spec if r["method"] == method)
                                       / sum(1 for r in spec if r["method"] == method), 3)}
        if method in BLOCK_DRAFTERS and len(ks) > 1:
            found["flat"] = flat_step(spec, method)
        found["shipped"] = entry_figures(method, found)
        out[method] = found
    return out


def entry_figures(method: str, found: dict) -> dict | None:
    """The figures a path's entry ships, by what its rows support (``rule`` says which):

    - a block drafter whose step is flat in K: the GPU line is the mean measured step, all of it o (c = 0); its
      host line is another profile's (None here: the rows hold none);
    - a GPU-bound profile with rows at several K: the GPU line is the least-squares line through the measured
      steps (c = its slope, o = its intercept - the target's step), the host line the profile's;
    - a host-bound profile with rows at several K: the host line is that least-squares line (the profiler's own
      overhead stays out), c and o the profile's (e3ks, the 26B entries);
    - a host-bound profile at one K: the profile's host split scaled to the mean measured step (least squares at
      one K), c and o the profile's;
    - a GPU-bound profile at one K: the profile as it is (df7)."""
    profile, fitted, t_ms = found["profile"], found["fitted"], found["target_step_ms"]
    if found.get("flat", {}).get("fits"):
        return {"rule": "flat", "gpu_draft_ms_per_token": 0.0, "per_draft_token_ms": 0.0,
                "gpu_overhead_ms_per_step": round(found["flat"]["step_ms"] - t_ms, 3), "measured_at_k": max(found["ks"])}
    if profile is None:
        return None
    figures = {k: profile[k] for k in ("per_step_ms", "per_draft_token_ms", "gpu_draft_ms_per_token",
                                       "gpu_idle_ms_per_step", "gpu_overhead_ms_per_step", "measured_at_k")}
    if fitted and not profile["host_bound"]:
        return figures | {"rule": "GPU line fitted", "gpu_draft_ms_per_token": fitted[1],
                          "gpu_overhead_ms_per_step": round(fitted[0] - t_ms, 3)}
    if fitted:
        return figures | {"rule": "host line fitted", "per_step_ms": fitted[0], "per_draft_token_ms": fitted[1]}
    if profile["host_bound"]:
        scale = found["mean_step_ms"] / (profile["profiled_step_ms"] - profile["host_wait_ms_per_step"])
        return figures | {"rule": "host line scaled", "per_step_ms": round(profile["per_step_ms"] * scale, 3),
                          "per_draft_token_ms": round(profile["per_draft_token_ms"] * scale, 3)}
    return figures | {"rule": "profile"}


def predict(target: dict, spec: list[dict], shape: str = "31b") -> list[dict]:
    """Every measured row with its speedup and, where its path has a shipped entry, tune's prediction."""
    t_ms, out = target["step_ms"], []
    for r in sorted(spec, key=lambda r: (r["method"], -r["alpha"], r["k"])):
        row = {"tag": r["tag"], "method": r["method"], "k": r["k"], "alpha": r["alpha"],
               "decode_tok_s": r["decode_tok_s"], "speedup": round(r["decode_tok_s"] / target["decode_tok_s"], 3),
               "step_ms": r.get("step_ms"), "mean_acceptance_length": r.get("mean_acceptance_length"),
               "k_mode": r.get("k_mode"), "gpu": r["gpu"], "vllm": r["vllm"]}
        widest = max((x for x in spec if x["method"] == r["method"] and x["alpha"] == r["alpha"]
                      and x.get("per_position_acceptance")), key=lambda x: x["k"], default=None)
        name = COSTS[shape].get(r["method"])
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
    p.add_argument("--shape", choices=sorted(COSTS), default="31b", help="the target shape whose rows to read")
    args = p.parse_args(argv)
    rows = load_all(args.results)
    target, spec = target_alone(rows, args.shape), speculative_rows(rows, args.shape)
    if target is None:
        alone = "m0" if args.shape == "26b" else "k0r, or l0 at one sequence"
        raise SystemExit(f"{' '.join(args.results)}: no target-alone row ({alone})")
    if args.entries:
        print(json.dumps(entries(target, spec, args.shape), indent=1))
        return 0
    out = predict(target, spec, args.shape)
    ranking = measured_ranking(out)
    os.makedirs(args.out, exist_ok=True)
    name = "methods.json" if args.shape == "31b" else f"methods-{args.shape}.json"
    with open(os.path.join(args.out, name), "w") as f:
        json.dump({"target_alone": {k: target[k] for k in ("decode_tok_s", "step_ms", "gpu", "vllm")}, "rows": out,
                   "measured_ranking": {str(a): [[o["method"], o["k"], o["speedup"]] for o in rows]
                                        for a, rows in ranking.items()}}, f, indent=1)
    print_report(target, out, ranking)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
