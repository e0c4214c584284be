"""Issue 7's lever table: every measured configuration next to tune's prediction for it.

usage: levers.py RESULTS.jsonl OUTDIR [--tune "python -m specdraft tune"] [--png]

Reads the H100 run (``docs/gpu/raw/issue7_h100/results.jsonl``), prints a markdown table and writes
OUTDIR/levers.json. The baseline is the target alone (``k0``) of the same machine. tune's prediction for
each row comes from the CLI with, per path:
- draft_model: the host line measured by the torch profile (``--host-costs``, taken at K = 3, alpha 0.85),
  c and o from the same profile (draft GPU time per token, GPU idle per step), acceptance measured by the
  largest-K run at that alpha; so every row but K = 3 / alpha 0.85 is predicted, not fitted;
- ngram_gpu: c = 0 (the lookup is one small kernel) and o fitted to the alpha 0.85 row, so only the other
  acceptance levels are predictions.
Break-even acceptance: the alpha at which the predicted speedup crosses 1.0 (bisection over the same model).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from analyze import latest, load, tune_via_cli  # noqa: E402  (beside this script)

from specdraft.bench import known_host_costs  # noqa: E402


def tune(command: str, rates: list[float], k: int, c: float, overhead_ms: float, target_ms: float,
         host: str | None) -> dict:
    extra = ["--overhead-ms", f"{overhead_ms:.3f}", "--target-step-ms", f"{target_ms:.3f}"]
    return tune_via_cli(command, rates, c, max_k=max(k, len(rates)),
                        extra=extra + (["--host-costs", host] if host else []))


def geometric(alpha: float, k: int) -> list[float]:
    return [alpha ** i for i in range(1, k + 1)]


def break_even(command: str, k: int, c: float, overhead_ms: float, target_ms: float, host: str | None) -> float:
    lo, hi = 0.0, 1.0
    for _ in range(14):
        mid = (lo + hi) / 2
        s = tune(command, geometric(mid, k), k, c, overhead_ms, target_ms, host)["table"][k - 1]["predicted_speedup"]
        lo, hi = (lo, mid) if s >= 1.0 else (mid, hi)
    return round((lo + hi) / 2, 3)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("results")
    p.add_argument("outdir")
    p.add_argument("--tune", default=f"{sys.executable} -m specdraft tune")
    p.add_argument("--png", action="store_true", help="also plot OUTDIR/speedup_vs_k_h100.png (needs matplotlib)")
    args = p.parse_args(argv)
    rows = load(args.results)
    target = latest(rows, tag="k0")
    t_ms, t_tok = target["step_ms"], target["decode_tok_s"]
    known = known_host_costs()
    out = []

    def add(lever: str, r: dict, predicted: float | None, basis: str) -> None:
        speedup = r["decode_tok_s"] / t_tok
        out.append({"lever": lever, "tag": r["tag"], "method": r["method"], "k": r["k"], "alpha": r["alpha"],
                    "async_scheduling": r["async_scheduling"], "cudagraph_mode": r["cudagraph_mode"],
                    "decode_tok_s": r["decode_tok_s"], "speedup": round(speedup, 3),
                    "step_ms": r.get("step_ms"), "mean_acceptance_length": r.get("mean_acceptance_length"),
                    "tune_predicted": None if predicted is None else round(predicted, 3),
                    "prediction_error": None if predicted is None else round(predicted / speedup - 1, 4),
                    "basis": basis, "gpu": r["gpu"], "vllm": r["vllm"]})

    for tag, host in (("p3", "vllm0.26-draft_model-e2b-sync"), ("p2a", None), ("p3a", None), ("p4a", None),
                      ("p5a", None)):
        name = host or "vllm0.26-draft_model-e2b-async"
        h = known[name]
        for r in (x for x in rows if x["tag"] == tag and "alpha" in x and "error" not in x):
            widest = max((x for x in rows if x.get("alpha") == r["alpha"] and x.get("method") == "draft_model"
                          and x.get("async_scheduling") == r["async_scheduling"] and "error" not in x),
                         key=lambda x: x["k"])
            pred = tune(args.tune, widest["per_position_acceptance"], r["k"], h["gpu_draft_ms_per_token"] / t_ms,
                        h["gpu_idle_ms_per_step"], t_ms, name)["table"][r["k"] - 1]["predicted_speedup"]
            fitted = r["k"] == h["measured_at_k"] and r["alpha"] == 0.85
            lever = "draft_model, async scheduling " + ("on (explicit)" if r["async_scheduling"] else "off (default)")
            add(lever, r, pred, ("host line and o from this row's profile" if fitted else "predicted") +
                f"; acceptance from K={widest['k']}")
    ng = [x for x in rows if x["tag"] == "ng3g" and "alpha" in x and "error" not in x]
    if ng:
        ref = next(x for x in ng if x["alpha"] == 0.85)
        o_ms = ref["step_ms"] - t_ms
        for r in ng:
            pred = tune(args.tune, r["per_position_acceptance"], r["k"], 0.0, o_ms, t_ms, None)
            add("ngram_gpu (prompt lookup on the GPU)", r, pred["table"][r["k"] - 1]["predicted_speedup"],
                "o fitted to this row" if r is ref else "predicted (o from alpha 0.85)")
    h = known["vllm0.26-draft_model-e2b-async"]
    even = {
        "draft_model async, K=3": break_even(args.tune, 3, h["gpu_draft_ms_per_token"] / t_ms,
                                             h["gpu_idle_ms_per_step"], t_ms, "vllm0.26-draft_model-e2b-async"),
        "draft_model async, K=1": break_even(args.tune, 1, h["gpu_draft_ms_per_token"] / t_ms,
                                             h["gpu_idle_ms_per_step"], t_ms, "vllm0.26-draft_model-e2b-async"),
    }
    if ng:
        even["ngram_gpu, K=3"] = break_even(args.tune, 3, 0.0, ref["step_ms"] - t_ms, t_ms, None)
    os.makedirs(args.outdir, exist_ok=True)
    with open(os.path.join(args.outdir, "levers.json"), "w") as f:
        json.dump({"target_alone": {"decode_tok_s": t_tok, "step_ms": t_ms, "gpu": target["gpu"],
                                    "vllm": target["vllm"]}, "rows": out, "break_even_alpha": even}, f, indent=1)
    print(f"target alone: {t_tok} tok/s ({t_ms} ms/token) on {target['gpu']}, vLLM {target['vllm']}\n")
    print("| lever | K | alpha | tok/s | speedup | step ms | tune predicts | error | basis |")
    print("|---|---|---|---|---|---|---|---|---|")
    for o in out:
        print(f"| {o['lever']} | {o['k']} | {o['alpha']} | {o['decode_tok_s']:.2f} | {o['speedup']:.3f} | "
              f"{o['step_ms']:.1f} | {o['tune_predicted']:.3f} | {o['prediction_error']:+.1%} | {o['basis']} |")
    print("\nbreak-even alpha (predicted speedup = 1.0):", json.dumps(even))
    if args.png:
        plot(args.tune, out, rows, t_ms, known, os.path.join(args.outdir, "speedup_vs_k_h100.png"))
    return 0


def plot(command: str, out: list[dict], rows: list[dict], t_ms: float, known: dict, path: str) -> None:
    """Measured speedup per K (async draft_model) beside tune with and without the host line, K = 1..8."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    h = known["vllm0.26-draft_model-e2b-async"]
    c, o = h["gpu_draft_ms_per_token"] / t_ms, h["gpu_idle_ms_per_step"]
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for alpha, colour in ((0.85, "tab:blue"), (0.70, "tab:orange")):
        widest = max((x for x in rows if x.get("alpha") == alpha and x.get("method") == "draft_model"
                      and x.get("async_scheduling") and "error" not in x), key=lambda x: x["k"])
        acc = widest["per_position_acceptance"]
        with_host = tune(command, acc, 8, c, o, t_ms, "vllm0.26-draft_model-e2b-async")["table"]
        gpu_only = tune(command, acc, 8, c, o, t_ms, None)["table"]
        ks = [r["k"] for r in with_host]
        ax.plot(ks, [r["predicted_speedup"] for r in with_host], "-", color=colour,
                label=f"tune with host line, alpha {alpha}")
        ax.plot(ks, [r["predicted_speedup"] for r in gpu_only], ":", color=colour,
                label=f"tune without (textbook GPU line), alpha {alpha}")
        meas = sorted((o_["k"], o_["speedup"]) for o_ in out
                      if o_["alpha"] == alpha and o_["method"] == "draft_model" and o_["async_scheduling"])
        ax.plot([k for k, _ in meas], [v for _, v in meas], "o", color=colour, label=f"measured, alpha {alpha}")
    ax.axhline(1.0, color="grey", lw=0.8)
    ax.set_xlabel("num_speculative_tokens K")
    ax.set_ylabel("decode speedup over the target alone")
    ax.set_title("31B + E2B shapes, draft_model + async scheduling, NVIDIA H100, vLLM 0.26.0", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=130)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
