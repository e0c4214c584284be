"""Where a speculative step's time goes, from a torch-profiler chrome trace of one vLLM request.

The trace must come from an in-process engine with ``VLLM_CUSTOM_SCOPES_FOR_PROFILING=1`` (``sweep.py
--profile-tokens``): vLLM then wraps each model-runner phase in a ``gpu_model_runner: <phase>`` range
(preprocess, forward, postprocess, sample, draft, bookkeep, ...). A step is the time from one target
``forward`` to the next; the first (the prompt's prefill) is left out. Each GPU kernel, copy and memset
is charged to the phase whose range holds the CUDA call that launched it (matched by correlation id), so
"draft" is the GPU time of the drafter's K forwards and "forward" the target's verification of K + 1
tokens. GPU idle = step time - GPU time launched in the step (one stream at a time here). Host syncs are
the runtime calls that wait for the GPU.

usage: step_profile.py TRACE.json.gz [--png OUT.png] [--title TEXT]   (prints the summary as JSON)
"""

from __future__ import annotations

import argparse
import bisect
import gzip
import json
import statistics
import sys
from collections import defaultdict

SCOPE_PREFIX = "gpu_model_runner: "
GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")
RUNTIME_CATS = ("cuda_runtime", "cuda_driver")
SYNC_CALLS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpy",
              "cuStreamSynchronize", "cuEventSynchronize")
GRAPH_LAUNCH = ("cudaGraphLaunch", "cuGraphLaunch")


def load_events(path: str) -> list[dict]:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        data = json.load(f)
    return data["traceEvents"] if isinstance(data, dict) else data


class Trace:
    """The parts of a trace the summary needs: phase ranges, CUDA calls and GPU work, all in microseconds."""

    def __init__(self, events: list[dict]):
        x = [e for e in events if e.get("ph") == "X" and "ts" in e]
        self.scopes = sorted(((e["ts"], e["ts"] + e.get("dur", 0), e["name"][len(SCOPE_PREFIX):])
                              for e in x if e.get("cat") == "user_annotation"
                              and str(e.get("name", "")).startswith(SCOPE_PREFIX)))
        self.runtime = sorted(((e["ts"], e.get("dur", 0), e["name"], (e.get("args") or {}).get("correlation"))
                               for e in x if e.get("cat") in RUNTIME_CATS))
        self.gpu = [(e["ts"], e.get("dur", 0), e["name"], (e.get("args") or {}).get("correlation"))
                    for e in x if e.get("cat") in GPU_CATS]
        self.launch_ts = {c: ts for ts, _, _, c in self.runtime if c is not None}
        self.forwards = [s for s in self.scopes if s[2] == "forward"]

    def scope_at(self, ts: float) -> str:
        """The innermost phase range holding ``ts`` ("other" if none)."""
        best = None
        i = bisect.bisect_right(self.scopes, (ts, float("inf"), "")) - 1
        while i >= 0:  # ranges are few per step; walk back over the ones that started before ts
            start, end, name = self.scopes[i]
            if start <= ts <= end and (best is None or start >= best[0]):
                best = (start, name)
            if ts - start > 5e6:  # no phase lasts 5 s
                break
            i -= 1
        return best[1] if best else "other"

    def steps(self) -> list[tuple[float, float]]:
        starts = [s[0] for s in self.forwards]
        return list(zip(starts[1:-1], starts[2:]))  # the first interval is the prompt's prefill


def summarize(path: str) -> dict:
    """Median per decode step: wall ms, GPU ms per phase, CPU ms per phase, launches, host-sync ms, GPU idle."""
    tr = Trace(load_events(path))
    steps = tr.steps()
    if not steps:
        return {"error": "no decode steps found (no 'gpu_model_runner: forward' ranges: was "
                         "VLLM_CUSTOM_SCOPES_FOR_PROFILING=1 set before vLLM was imported?)",
                "n_forward_ranges": len(tr.forwards)}
    starts = [a for a, _ in steps]
    per_step = [defaultdict(float) for _ in steps]

    def step_of(ts: float) -> int | None:
        i = bisect.bisect_right(starts, ts) - 1
        return i if 0 <= i < len(steps) and ts < steps[i][1] else None

    for start, end, name in tr.scopes:
        i = step_of(start)
        if i is not None:
            per_step[i][f"cpu_ms.{name}"] += (end - start) / 1e3
    for ts, dur, name, _ in tr.runtime:
        i = step_of(ts)
        if i is None:
            continue
        scope = tr.scope_at(ts)
        if name in GRAPH_LAUNCH:
            per_step[i][f"graph_launches.{scope}"] += 1
        elif "LaunchKernel" in name:
            per_step[i][f"kernel_launches.{scope}"] += 1
        if name in SYNC_CALLS:
            per_step[i][f"sync_ms.{scope}"] += dur / 1e3
    for ts, dur, name, corr in tr.gpu:
        launch = tr.launch_ts.get(corr)
        if launch is None:
            continue
        i = step_of(launch)
        if i is None:
            continue
        per_step[i][f"gpu_ms.{tr.scope_at(launch)}"] += dur / 1e3
        per_step[i]["gpu_ms.total"] += dur / 1e3
    for i, (a, b) in enumerate(steps):
        per_step[i]["wall_ms"] = (b - a) / 1e3
        per_step[i]["gpu_idle_ms"] = per_step[i]["wall_ms"] - per_step[i]["gpu_ms.total"]
    keys = sorted({k for d in per_step for k in d})
    median = {k: round(statistics.median(d.get(k, 0.0) for d in per_step), 3) for k in keys}
    return {"n_steps": len(steps), "median_per_step": median,
            "wall_ms_per_step": [round(d["wall_ms"], 3) for d in per_step]}


COLOURS = {"forward": "#1f77b4", "draft": "#ff7f0e", "sample": "#2ca02c", "bookkeep": "#9467bd",
           "preprocess": "#8c564b", "postprocess": "#e377c2", "other": "#7f7f7f"}


def render(path: str, png: str, title: str, n_steps: int = 3) -> None:
    """A timeline of ``n_steps`` decode steps from the middle of the request: CPU phases above, GPU work below."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    tr = Trace(load_events(path))
    steps = tr.steps()
    mid = max(0, len(steps) // 2 - n_steps // 2)
    window = steps[mid:mid + n_steps]
    t0, t1 = window[0][0], window[-1][1]
    fig, ax = plt.subplots(figsize=(13, 3.2))
    for start, end, name in tr.scopes:
        if end >= t0 and start <= t1:
            ax.broken_barh([((start - t0) / 1e3, (end - start) / 1e3)], (10, 8),
                           color=COLOURS.get(name, COLOURS["other"]))
    for ts, dur, _, corr in tr.gpu:
        if ts + dur >= t0 and ts <= t1:
            launch = tr.launch_ts.get(corr)
            scope = tr.scope_at(launch) if launch is not None else "other"
            ax.broken_barh([((ts - t0) / 1e3, max(dur / 1e3, 0.01))], (0, 8), color=COLOURS.get(scope, COLOURS["other"]))
    for a, _ in window:
        ax.axvline((a - t0) / 1e3, color="black", lw=0.6, ls=":")
    ax.set_yticks([4, 14])
    ax.set_yticklabels(["GPU (by launching phase)", "CPU phases"])
    ax.set_xlim(0, (t1 - t0) / 1e3)
    ax.set_xlabel("ms (dotted: start of a step = the target's forward)")
    ax.set_title(title, fontsize=10)
    ax.legend(handles=[Patch(color=c, label=n) for n, c in COLOURS.items()], ncol=7, fontsize=8,
              loc="upper center", bbox_to_anchor=(0.5, -0.28))
    fig.tight_layout()
    fig.savefig(png, dpi=130)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("trace")
    p.add_argument("--png", default=None)
    p.add_argument("--title", default="one speculative step")
    args = p.parse_args(argv)
    print(json.dumps(summarize(args.trace), indent=1))
    if args.png:
        render(args.trace, args.png, args.title)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
