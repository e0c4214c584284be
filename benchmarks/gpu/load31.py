"""Speculation under load: the 31B-shaped target alone and with the E2B draft / its MTP assistant at 1-32 sequences.

usage: load31.py RESULTS.jsonl [RESULTS.jsonl ...] --out OUTDIR

Reads the ``c0`` (target alone) and ``cd*`` / ``cm*`` (draft_model / mtp) rows of ``jobs.txt``: one engine per
row with ``max_num_seqs`` 32, every concurrency level measured in turn (``sweep.py --concurrency 1,2,...``).
Prints a markdown table (per-sequence and aggregate decode tok/s, speedup over the target alone at the same
level, the engine's step) and writes OUTDIR/load_31b.json: the step costs per batch size (the target's step,
each path's speculative step and acceptance per level), and per level the fastest measured K.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from analyze import load  # noqa: E402  (beside this script)


def collect(paths: list[str]) -> tuple[dict, list[dict]]:
    rows = [r for p in paths for r in load(p) if "error" not in r and r["tag"][:2] in ("c0", "cd", "cm")]
    target = {r["concurrency"]: r for r in rows if r["tag"] == "c0"}
    return target, [r for r in rows if r["tag"] != "c0"]


def path_name(r: dict) -> str:
    return f"{'E2B draft_model, async' if r['method'] == 'draft_model' else 'MTP assistant'} K={r['k']}"


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
        base = next(x for x in rows if x["k"] == 0 and x["concurrency"] == r["concurrency"])
        cur = best.setdefault(key, {}).get(r["concurrency"], {"k": 0, "aggregate_decode_tok_s": base["aggregate_decode_tok_s"]})
        if r["aggregate_decode_tok_s"] > cur["aggregate_decode_tok_s"]:
            best[key][r["concurrency"]] = {"k": r["k"], "aggregate_decode_tok_s": r["aggregate_decode_tok_s"]}
        else:
            best[key][r["concurrency"]] = cur
    return best


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("results", nargs="+")
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
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
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
