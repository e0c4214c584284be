"""The 26B-A4B-shaped MoE target beside the E2B draft and its MTP assistant: measured speedup per K, tune's
prediction for every row, the break-even, and the host-cost entries read from the two K = 3 profiles.

usage: moe26.py RESULTS.jsonl --out OUTDIR [--also RESULTS2.jsonl ...] [--png] [--entries]

RESULTS.jsonl is one lease of the GPU machine (``docs/gpu/raw/moe26_*/results.jsonl``, jobs ``m0``, ``md1..8``,
``mm1..8`` of ``jobs.txt``). A row's speedup divides by the target alone (``m0``) of the same lease: a file given
with ``--also`` (a results.jsonl or a lane's ``laneI.jsonl`` / ``laneI-results.jsonl`` of another machine) uses its
own ``m0`` when it has one, else the first file's, and tune's prediction for the row uses that target step too.

tune's prediction for a row uses the step costs of the row's path from ``specdraft/speed/data/host_costs.json``
(entries ``COSTS`` below): the host line (``--host-costs NAME``: a least-squares fit to the path's measured step
times, ``fitted_line``), ``c`` = drafter GPU time per token / target step and ``o`` = the entry's
``gpu_overhead_ms_per_step`` (both from the ``md3`` / ``mm3`` profiles at alpha 0.85), and acceptance as measured
by the largest-K run of the path at that alpha. ``--entries`` prints what the profiles give (the same arithmetic
as the 31B entries: see ``host_entry``) and the fitted line. ``--also`` adds rows measured on other machines (only
26B rows: a lane file's other jobs are left out). Writes OUTDIR/moe26.json and, with ``--png``,
OUTDIR/speedup_vs_k_26b.png.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from analyze import latest, linear_fit, load, print_table_head, tune_report  # noqa: E402  (beside this script)
from levers import break_even, costs_of  # noqa: E402
from speedup_plot import ALPHA_COLOURS, Panel, Series, plot_speedup_panels  # noqa: E402

COSTS = {"draft_model": "vllm0.26-draft_model-e2b-async-26b", "mtp": "vllm0.26-mtp-26b-assistant"}
PROFILED = {"draft_model": "md3", "mtp": "mm3"}


def host_entry(row: dict, target_step_ms: float) -> dict:
    """The host-cost figures of a profiled row (medians per decode step of its ``--profile-tokens`` request).

    per_draft_token_ms = host time in vLLM's 'draft' phase / K; per_step_ms = step wall time - that drafting time
    - host time spent waiting for the GPU; gpu_overhead_ms_per_step = the GPU idle time per step for a host-bound
    step, else step wall time - target step - K x drafter GPU time per token (the o of the GPU line)."""
    m, k = row["profile"]["median_per_step"], row["k"]
    wait = sum(v for key, v in m.items() if key.startswith("sync_ms."))
    draft_cpu, gpu_draft = m.get("cpu_ms.draft", 0.0), m.get("gpu_ms.draft", 0.0) / k
    host_bound = wait < 0.1 * m["wall_ms"]  # the host hardly waited for the GPU: it set the pace
    # o = the GPU's own extra work per step (verifying K + 1 tokens touches more experts than decoding one); the
    # GPU idle of a host-bound step is the host line's doing and would be counted twice
    overhead = m["gpu_ms.total"] - m.get("gpu_ms.draft", 0.0) - target_step_ms
    return {"per_step_ms": round(m["wall_ms"] - draft_cpu - wait, 3), "per_draft_token_ms": round(draft_cpu / k, 3),
            "gpu_draft_ms_per_token": round(gpu_draft, 3), "gpu_idle_ms_per_step": round(m["gpu_idle_ms"], 3),
            "gpu_overhead_ms_per_step": round(max(overhead, 0.0), 3), "profiled_step_ms": m["wall_ms"],
            "host_wait_ms_per_step": round(wait, 3), "measured_at_k": k, "host_bound": host_bound}


def fitted_line(spec: list[dict], method: str) -> tuple[float, float]:
    """Least squares ``step_ms = per_step + K * per_draft_token`` over the measured rows of one path (a host-bound
    step is the host line, so its measured step times give the line without the profiler's own overhead)."""
    rows = [r for r in spec if r["method"] == method]
    per_step, per_token = linear_fit([r["k"] for r in rows], [r["step_ms"] for r in rows])
    return round(per_step, 3), round(per_token, 3)


def rows_of(rows: list[dict]) -> tuple[dict, list[dict]]:
    target = latest(rows, tag="m0")
    spec = [r for r in rows if r.get("k", 0) > 0 and "alpha" in r and "error" not in r
            and r.get("target_dir") == "target26b"]
    return target, spec


def machine_of(path: str) -> str:
    """A raw file's machine as the tables name it: its folder under docs/gpu/raw (a lane file keeps its name)."""
    folder, name = os.path.split(os.path.abspath(path))
    folder = os.path.basename(folder)
    return folder if name == "results.jsonl" else f"{folder}/{name}"


def with_baseline(path: str, first_target: dict) -> list[dict]:
    """The 26B rows of another machine, each carrying the target-alone row it divides by: the machine's own
    ``m0`` when it ran one (host-bound steps move with the host, and lanes shared a host's CPUs), else the
    first machine's."""
    own, spec = rows_of(load(path))
    base = own or first_target
    return [dict(r, other_machine=True, machine=machine_of(path), baseline=base, own_baseline=own is not None)
            for r in spec]


def predict(target: dict, spec: list[dict]) -> list[dict]:
    """Every measured row beside tune's prediction for it (over the target alone of the row's machine)."""
    out = []
    for r in sorted(spec, key=lambda r: (r["method"], -r["alpha"], r["k"])):
        base = r.get("baseline", target)
        t_ms, name = base["step_ms"], COSTS[r["method"]]
        c, o_ms = costs_of(name, t_ms)
        widest = max((x for x in spec if x["method"] == r["method"] and x["alpha"] == r["alpha"]),
                     key=lambda x: x["k"])
        table = tune_report(widest["per_position_acceptance"], c, max_k=widest["k"], overhead_ms=round(o_ms, 3),
                            target_step_ms=round(t_ms, 3), host_costs=name)
        row = table["table"][r["k"] - 1]
        speedup = r["decode_tok_s"] / base["decode_tok_s"]
        per_rep = r.get("decode_tok_s_per_rep") or [r["decode_tok_s"]]
        out.append({"tag": r["tag"], "method": r["method"], "k": r["k"], "alpha": r["alpha"],
                    "other_machine": r.get("other_machine", False), "machine": r.get("machine"),
                    "target_alone_tok_s": base["decode_tok_s"], "own_target_alone": r.get("own_baseline", True),
                    "decode_tok_s": r["decode_tok_s"], "decode_tok_s_range": [min(per_rep), max(per_rep)],
                    "speedup": round(speedup, 3), "step_ms": r.get("step_ms"),
                    "mean_acceptance_length": r.get("mean_acceptance_length"),
                    "tune_predicted": round(row["predicted_speedup"], 3), "host_bound": row.get("host_bound"),
                    "prediction_error": round(row["predicted_speedup"] / speedup - 1, 4),
                    "basis": f"host line fitted to the path's step times; c, o from the K=3 profile; acceptance from "
                             f"K={widest['k']}",
                    "tune_recommended_k": table["recommended_k"], "gpu": r["gpu"], "vllm": r["vllm"]})
    return out


def summary(target: dict, out: list[dict]) -> dict:
    """Best measured K, tune's K, and the break-even per method and alpha."""
    t_ms, result = target["step_ms"], {}
    for method, name in COSTS.items():
        c, o_ms = costs_of(name, t_ms)
        for alpha in sorted({o["alpha"] for o in out if o["method"] == method}, reverse=True):
            rows = [o for o in out if o["method"] == method and o["alpha"] == alpha]
            best = max(rows, key=lambda o: o["speedup"])
            result[f"{method}, alpha {alpha}"] = {
                "best_measured_k": best["k"], "best_measured_speedup": best["speedup"],
                "tune_k": rows[0]["tune_recommended_k"],
                "measured_at_tune_k": next((o["speedup"] for o in rows if o["k"] == rows[0]["tune_recommended_k"]), None),
                "ks_measured_below_1": [o["k"] for o in rows if o["speedup"] < 1.0]}
        for k in (1, 3, 8):  # 1.0: no acceptance below 1 breaks even
            result[f"{method}, break-even alpha at K={k}"] = break_even(k, c, o_ms, t_ms, name)
    return result


def print_report(target: dict, out: list[dict], summ: dict) -> None:
    print_table_head(target, ["drafter", "K", "alpha", "tok/s (range)", "speedup", "step ms", "acceptance length", "tune predicts", "error"])
    for o in out:
        lo, hi = o["decode_tok_s_range"]
        who = "E2B draft_model, async" if o["method"] == "draft_model" else "26B MTP assistant"
        mark = ""
        if o["other_machine"]:
            mark = f" ({o['machine']}, over {'its own' if o['own_target_alone'] else 'the first'} target alone " \
                   f"{o['target_alone_tok_s']:.1f})"
        print(f"| {who} | {o['k']} | {o['alpha']} | {o['decode_tok_s']:.1f} ({lo:.1f}-{hi:.1f}) | {o['speedup']:.3f} "
              f"| {o['step_ms']:.2f} | {o['mean_acceptance_length']} | {o['tune_predicted']:.3f}"
              f"{' h' if o['host_bound'] else ''} | {o['prediction_error']:+.1%}{mark} |")
    print("\n" + json.dumps(summ, indent=1))


def plot(out: list[dict], target: dict, path: str) -> None:
    """Measured speedup per K beside tune's prediction for the row, one panel per drafting path."""
    panels = []
    for method in ("draft_model", "mtp"):
        series = []
        for alpha, colour in ALPHA_COLOURS:
            rows = sorted((o for o in out if o["method"] == method and o["alpha"] == alpha), key=lambda o: o["k"])
            ks = [o["k"] for o in rows]
            series += [
                Series(ks, [o["tune_predicted"] for o in rows], "-", colour, f"tune with host line, alpha {alpha}"),
                Series(ks, [o["speedup"] for o in rows], "o", colour, f"measured, alpha {alpha}")]
        who = "E2B-shaped draft, draft_model + async scheduling" if method == "draft_model" else "26B MTP assistant, mtp"
        panels.append(Panel(f"26B-A4B-shaped target + {who}\n{target['gpu']}, vLLM {target['vllm']}", series))
    plot_speedup_panels(panels, path, panel_width=6.0)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("results")
    p.add_argument("--out", required=True)
    p.add_argument("--png", action="store_true")
    p.add_argument("--also", nargs="*", default=[],
                   help="results of other machines (rows RESULTS lacks), each over its own target alone if it has one")
    p.add_argument("--entries", action="store_true", help="print the host-cost entries from the profiles and stop")
    args = p.parse_args(argv)
    target, spec = rows_of(load(args.results))
    if args.entries:
        for method, tag in PROFILED.items():
            row = next(r for r in spec if r["tag"] == tag and "profile" in r)
            per_step, per_token = fitted_line(spec, method)
            print(COSTS[method], json.dumps(host_entry(row, target["step_ms"])),
                  f"fitted: per_step_ms {per_step}, per_draft_token_ms {per_token}")
        return 0
    spec = [dict(r, machine=machine_of(args.results)) for r in spec]
    for path in args.also:
        spec += with_baseline(path, target)
    out = predict(target, spec)
    summ = summary(target, out)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "moe26.json"), "w") as f:
        json.dump({"target_alone": {k: target[k] for k in ("decode_tok_s", "step_ms", "gpu", "vllm")},
                   "rows": out, "summary": summ}, f, indent=1)
    print_report(target, out, summ)
    if args.png:
        plot(out, target, os.path.join(args.out, "speedup_vs_k_26b.png"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
