"""The lever table (docs/gpu/README.md section 5): every measured configuration next to tune's prediction for it.

usage: levers.py RESULTS.jsonl [RESULTS.jsonl ...] --out OUTDIR [--png]

Each results file is one lease of the GPU machine (``docs/gpu/raw/issue7_h100/results.jsonl``,
``docs/gpu/raw/issue7_mtp_h100/results.jsonl``); a row's speedup divides by the target alone (``k0``, or
``k0c4`` for rows sent 4 at a time) of the same lease. Prints a markdown table and writes OUTDIR/levers.json.

tune's prediction for a row comes from ``specdraft.speed.tune`` (what ``specdraft tune`` runs) with the step costs of the row's path, as measured by the torch
profile of that path (``specdraft/speed/data/host_costs.json``, all taken at K = 3, alpha 0.85):
- the host line (``--host-costs NAME``), ``c`` = the drafter's GPU time per token / the target step, ``o`` = the
  entry's ``gpu_overhead_ms_per_step``;
- acceptance as measured by the largest-K run of the same path at that alpha (in the same lease, runner and
  batch shape); so only the profiled row itself is fitted, every other row is a prediction;
- rows sent 4 at a time use the batch-1 costs over that lease's target step at batch 4;
- ngram_gpu has no profile: c = 0 and o is fitted to its alpha 0.85 row.
Break-even acceptance: the alpha at which the predicted speedup crosses 1.0 (bisection over the same model).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from analyze import latest, load, tune_table  # noqa: E402  (beside this script)
from speedup_plot import ALPHA_COLOURS, Panel, Series, plot_speedup_panels  # noqa: E402

from specdraft.speed import known_host_costs  # noqa: E402

# The measured step costs of each path: (method, async scheduling) -> host_costs.json entry.
COSTS = {("draft_model", True): "vllm0.26-draft_model-e2b-async",
         ("draft_model", False): "vllm0.26-draft_model-e2b-sync",
         ("mtp", True): "vllm0.26-mtp-31b-assistant"}


def tune(rates: list[float], k: int, c: float, overhead_ms: float, target_ms: float, host: str | None) -> list[dict]:
    """tune's per-K table; the ms figures to 3 decimals, as the published table was computed."""
    return tune_table(rates, c, max_k=max(k, len(rates)), overhead_ms=round(overhead_ms, 3),
                      target_step_ms=round(target_ms, 3), host_costs=host)


def costs_of(name: str, target_ms: float) -> tuple[float, float]:
    """``c`` and ``o`` (ms) of the GPU line for a known path, over this target step."""
    entry = known_host_costs()[name]
    return entry.gpu_draft_ms_per_token / target_ms, entry.gpu_overhead_ms_per_step


def geometric(alpha: float, k: int) -> list[float]:
    return [alpha ** i for i in range(1, k + 1)]


def break_even(k: int, c: float, overhead_ms: float, target_ms: float, host: str | None) -> float:
    lo, hi = 0.0, 1.0
    for _ in range(14):
        mid = (lo + hi) / 2
        s = tune(geometric(mid, k), k, c, overhead_ms, target_ms, host)[k - 1]["predicted_speedup"]
        lo, hi = (lo, mid) if s >= 1.0 else (mid, hi)
    return round((lo + hi) / 2, 3)


def _same_path(a: dict, b: dict) -> bool:
    keys = ("method", "async_scheduling", "v2_model_runner", "concurrency", "alpha")
    return all(a.get(key) == b.get(key) for key in keys)


def lever_name(r: dict) -> str:
    if r["method"] == "draft_model":
        name = "draft_model, async scheduling " + ("on (explicit)" if r["async_scheduling"] else "off (default)")
    elif r["method"] == "mtp":
        name = "mtp (31B assistant), " + ("Model Runner V2" if r.get("v2_model_runner") else "V1 runner")
    else:
        name = f"{r['method']}, periodic prompt" if r.get("prompt") == "periodic" else r["method"]
    return name + (f", {r['concurrency']} requests at once" if r.get("concurrency", 1) > 1 else "")


def lease_rows(path: str) -> tuple[dict, list[dict]]:
    """The target-alone row and the lever rows of one lease (one results file)."""
    rows = load(path)
    lease = os.path.basename(os.path.dirname(os.path.abspath(path)))
    target = latest(rows, tag="k0")
    baselines = {1: target, 4: latest(rows, tag="k0c4")}
    spec = [r for r in rows if r.get("k", 0) > 0 and "alpha" in r and "error" not in r]
    out = []
    for r in spec:
        base = baselines[r.get("concurrency", 1)]
        t_ms, concurrency = base["step_ms"], r.get("concurrency", 1)
        name = COSTS.get((r["method"], r["async_scheduling"]))
        if name:
            c, o_ms = costs_of(name, t_ms)
            widest = max((x for x in spec if _same_path(x, r)), key=lambda x: x["k"])
            known = known_host_costs()[name]
            trace = known.trace.split("/")
            profiled = trace[-3] == lease and trace[-1] == f"{r['tag']}.trace.json.gz" and r["alpha"] == 0.85
            basis = ("costs from this row's profile" if profiled else "predicted" if trace[-3] == lease
                     else f"predicted, costs from the {trace[-3]} profile") + f"; acceptance from K={widest['k']}"
            if concurrency > 1:
                basis += f"; batch-1 costs over the batch-{concurrency} target step"
            if r.get("v2_model_runner"):
                basis += "; costs from the V1 profile"
        elif r["method"] == "ngram_gpu":
            ref = next(x for x in spec if x["method"] == "ngram_gpu" and x["alpha"] == 0.85)
            name, c, o_ms, widest = None, 0.0, ref["step_ms"] - t_ms, r
            basis = "o fitted to this row" if r is ref else "predicted (o from alpha 0.85)"
        else:
            continue
        predicted = tune(widest["per_position_acceptance"], r["k"], c, o_ms, t_ms, name)[r["k"] - 1]["predicted_speedup"]
        speedup = r["decode_tok_s"] / base["decode_tok_s"]
        per_rep = r.get("decode_tok_s_per_rep") or [r["decode_tok_s"]]
        out.append({"lever": lever_name(r), "lease": lease, "tag": r["tag"], "method": r["method"], "k": r["k"],
                    "alpha": r["alpha"], "async_scheduling": r["async_scheduling"],
                    "v2_model_runner": r.get("v2_model_runner"), "concurrency": concurrency,
                    "cudagraph_mode": r["cudagraph_mode"], "decode_tok_s": r["decode_tok_s"],
                    "decode_tok_s_range": [min(per_rep), max(per_rep)], "baseline_tok_s": base["decode_tok_s"],
                    "speedup": round(speedup, 3),
                    # a step of a batch serves every sequence once: the engine's step, not the per-sequence share
                    "step_ms": None if r.get("step_ms") is None else round(r["step_ms"] * concurrency, 3),
                    "mean_acceptance_length": r.get("mean_acceptance_length"),
                    "per_position_acceptance": r.get("per_position_acceptance"),
                    "tune_predicted": round(predicted, 3), "prediction_error": round(predicted / speedup - 1, 4),
                    "basis": basis, "gpu": r["gpu"], "vllm": r["vllm"]})
    return target, out


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("results", nargs="+", help="one results.jsonl per lease")
    p.add_argument("--out", required=True, help="folder for levers.json (and the plot)")
    p.add_argument("--png", action="store_true", help="also plot OUT/speedup_vs_k_h100.png (needs matplotlib)")
    args = p.parse_args(argv)
    targets, out = {}, []
    for path in args.results:
        target, rows = lease_rows(path)
        targets[os.path.basename(os.path.dirname(os.path.abspath(path)))] = {
            key: target[key] for key in ("decode_tok_s", "step_ms", "gpu", "vllm")}
        out += rows
    t_ms = next(iter(targets.values()))["step_ms"]  # the first lease's target step
    c, o_ms = costs_of("vllm0.26-draft_model-e2b-async", t_ms)
    even = {"draft_model async, K=3": break_even(3, c, o_ms, t_ms, "vllm0.26-draft_model-e2b-async"),
            "draft_model async, K=1": break_even(1, c, o_ms, t_ms, "vllm0.26-draft_model-e2b-async")}
    ng = next((r for r in out if r["method"] == "ngram_gpu" and r["alpha"] == 0.85), None)
    if ng:
        even["ngram_gpu, K=3"] = break_even(3, 0.0, ng["step_ms"] - t_ms, t_ms, None)
    for lease, target in targets.items():
        if any(r["method"] == "mtp" for r in out if r["lease"] == lease):
            c, o_ms = costs_of("vllm0.26-mtp-31b-assistant", target["step_ms"])
            for k in (3, 9):
                even[f"mtp, K={k}"] = break_even(k, c, o_ms, target["step_ms"], "vllm0.26-mtp-31b-assistant")
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "levers.json"), "w") as f:
        json.dump({"target_alone": targets, "rows": out, "break_even_alpha": even}, f, indent=1)
    for lease, target in targets.items():
        print(f"{lease}: target alone {target['decode_tok_s']} tok/s ({target['step_ms']} ms/token) on "
              f"{target['gpu']}, vLLM {target['vllm']}")
    print("\n| lease | lever | K | alpha | tok/s (range) | speedup | step ms | tune predicts | error | basis |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for o in out:
        lo, hi = o["decode_tok_s_range"]
        print(f"| {o['lease']} | {o['lever']} | {o['k']} | {o['alpha']} | {o['decode_tok_s']:.2f} ({lo:.1f}-{hi:.1f}) | "
              f"{o['speedup']:.3f} | {o['step_ms']:.1f} | {o['tune_predicted']:.3f} | {o['prediction_error']:+.1%} | "
              f"{o['basis']} |")
    print("\nbreak-even alpha (predicted speedup = 1.0):", json.dumps(even))
    if args.png:
        plot(out, targets, os.path.join(args.out, "speedup_vs_k_h100.png"))
    return 0


def plot(out: list[dict], targets: dict, path: str) -> None:
    """Measured speedup per K beside tune with and without the host line, one panel per profiled path."""
    paths = [(method, name) for (method, async_on), name in COSTS.items()
             if async_on and any(r["method"] == method and r["async_scheduling"] for r in out)]
    plot_speedup_panels([_panel(out, targets, method, name) for method, name in paths], path)


def _panel(out: list[dict], targets: dict, method: str, name: str) -> Panel:
    """One profiled path: its measured rows of the lease that has most of them, and tune's two lines."""
    measured = [r for r in out if r["method"] == method and r["async_scheduling"] and r["concurrency"] == 1
                and not r["v2_model_runner"]]
    lease = max({r["lease"] for r in measured}, key=lambda x: sum(r["lease"] == x for r in measured))
    t_ms = targets[lease]["step_ms"]
    c, o = costs_of(name, t_ms)
    max_k = max(8, max(r["k"] for r in measured) + 3)
    series = []
    for alpha, colour in ALPHA_COLOURS:
        rows = sorted((r for r in measured if r["lease"] == lease and r["alpha"] == alpha), key=lambda r: r["k"])
        acc = rows[-1]["per_position_acceptance"]
        with_host = tune(acc, max_k, c, o, t_ms, name)
        gpu_only = tune(acc, max_k, c, o, t_ms, None)
        ks = [r["k"] for r in with_host]
        series += [
            Series(ks, [r["predicted_speedup"] for r in with_host], "-", colour, f"tune with host line, alpha {alpha}"),
            Series(ks, [r["predicted_speedup"] for r in gpu_only], ":", colour, f"tune, GPU line only, alpha {alpha}"),
            Series([r["k"] for r in rows], [r["speedup"] for r in rows], "o", colour, f"measured, alpha {alpha}")]
    drafter = "E2B draft, draft_model + async scheduling" if method == "draft_model" else "31B MTP assistant, mtp"
    return Panel(f"31B target + {drafter}\nNVIDIA H100, vLLM 0.26.0 ({lease})", series)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
