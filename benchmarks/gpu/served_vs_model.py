"""launch's plans served over HTTP against what specdraft's speed model predicts for the same plan.

usage: served_vs_model.py [--profile h200]

Reads the served rows (``RUNS``: real-stack-h200x4-m5/rows.jsonl, real-stack-h200-m4/rows.jsonl,
real-stack-h200-m3/rows.jsonl, real-stack-h200/rows-machine*.jsonl). A row that failed (``error``) carries no figures
and is left out; where its scenario was served again in the same run (m5's 12B + MTP: a config problem, since fixed),
the later row stands. Only the built-in prompts' figures (``c<N>_``) are compared: the ``ctx<N>_`` figures of a
``long`` row (1K-64K token prompts) belong to the long-context analysis, not to this model of one step cost.

Each speculative row divides by its baseline, the row of the same run served with launch's ``--method none`` plan of
the same request (``alone``: same target, KV request, extra flags, max_num_seqs and concurrency; served_real.py's
definition, see ``baseline_of``): served speedup = its decode tok/s / the baseline's, served step = acceptance length
x baseline tok/s / its tok/s, in target steps (tune's ``E(K) / S(K)``). The prediction at concurrency 1 is tune's
``predict_speedup`` with ``step_model(method, shape, profile)`` (what ``--method auto`` ranks with) and the row's
forced acceptance ``alpha**i``; at a larger concurrency, tune's model with the step costs per batch size launch plans
a K schedule from (``modelled_costs``), where there are any.

A row is *held* (tests/benchmarks/test_served_rows.py keeps it within 10%) at concurrency 1 on launch's own plan;
rows run with a flag launch did not plan (``--attention-backend``) or at a larger concurrency are printed, not held,
and so is a row that gave ``--kv-cache-dtype`` where the same run also served the pair with the plan's own KV: the
model has one step cost per method and target shape, and the default plan is the one it answers for (the 31B + E2B
pair served 1.11x with the plan's fp8 KV and 1.38x with bf16 given). So is a host-bound plan served again on another
host (``HOST_CALIBRATED``) where the two speedups differ by more than 10%: its entry passes through one host's row.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass, replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from specdraft.speed import best_k_per_batch_size, known_batch_step_cost, predict_speedup  # noqa: E402
from specdraft.checkpoints import inspect_checkpoint  # noqa: E402
from specdraft.planning.decisions.k_costs import modelled_costs  # noqa: E402
from specdraft.speed import step_model  # noqa: E402

RAW = REPO / "benchmarks/gpu/raw"
RUNS = {"real-stack-h200x4-m5": ("rows.jsonl",),
        "real-stack-h200-m4": ("rows.jsonl",),
        "real-stack-h200-m3": ("rows.jsonl",),
        "real-stack-h200": ("rows-machine1.jsonl", "rows-machine2.jsonl")}
"""One served run per folder; a row's baseline comes from its own run (the first run's two machines: the 26B-A4B
alone at bf16 ran on the first, the MTP pair on the second, as docs/gpu/served-real-stack.md divides them)."""
SHAPES = {"target31b": "31b", "target26b": "26b", "target12b": "12b"}
TARGET_REPOS = {"31b": "google/gemma-4-31B-it", "26b": "google/gemma-4-26B-A4B-it", "12b": "google/gemma-4-12B-it"}
BOUND = 0.10
RUN_HOSTS = {"real-stack-h200x4-m5": "4 x H200, 64 CPU cores", "real-stack-h200-m4": "2 x H200, 32 CPU cores",
             "real-stack-h200-m3": "4 x H200, 64 CPU cores", "real-stack-h200": "4 x H200, 64 CPU cores"}
"""The machine each run was lent (its env.txt lists the GPUs; the host-cost entries name the cores)."""
HOST_CALIBRATED = {("31b", "draft_model"): ("real-stack-h200-m4", "vllm0.26-draft_model-e2b-async-served")}
"""(shape, method) of a host-bound step -> the run its ``-served`` entry passes through, and the entry. The same plan
served on another host is printed, not held, where its speedup differs by more than ``BOUND``: one entry cannot hold
a step that the host sets (the 31B + E2B plan, identical argv and hotfixes, served 1.11x on m4 and 1.72x on m5)."""


@dataclass(frozen=True)
class ServedRow:
    source: str
    scenario: str
    shape: str
    method: str
    k: int
    alpha: float
    max_num_seqs: int
    concurrency: int
    baseline_tok_s: float
    tok_s: float
    acceptance_length: float
    held: bool
    why_not_held: str = ""

    @property
    def speedup(self) -> float:
        return self.tok_s / self.baseline_tok_s

    @property
    def step(self) -> float:
        """The served speculative step in target steps."""
        return self.acceptance_length * self.baseline_tok_s / self.tok_s

    @property
    def run(self) -> str:
        return self.source.split("/")[0]

    @property
    def plan(self) -> tuple[str, int]:
        """The served plan and its level: ``long`` only benches the same server at longer prompts afterwards."""
        return self.scenario.removesuffix(":long"), self.concurrency


LEVEL = re.compile(r"c(\d+)_decode_tok_s")
"""A concurrency level's figure on the built-in prompts; ``ctx<N>_decode_tok_s`` (a prompt length) is not one."""


def _levels(row: dict) -> dict[int, tuple[float, float | None]]:
    """Concurrency -> (decode tok/s, mean acceptance length) of one row (the first run wrote one level, at
    max_num_seqs, without a prefix)."""
    if "decode_tok_s" in row:
        return {row["max_num_seqs"]: (row["decode_tok_s"], row.get("mean_acceptance_length"))}
    return {int(level[1]): (value, row.get(key.replace("decode_tok_s", "mean_acceptance_length")))
            for key, value in row.items() for level in [LEVEL.fullmatch(key)] if level}


def baseline_of(row: dict, alone: list[dict]) -> dict | None:
    """The served baseline of a speculative row: launch's ``--method none`` plan of the same request, i.e. the
    ``alone`` row with the same target, KV request (``plan``, ``auto``, ``fp8``), extra flags and max_num_seqs.

    Where the run served no ``alone`` row for that KV request, an ``alone`` row that left KV to the plan stands in
    when launch planned it the dtype the row asked for: ``--method none --kv-cache-dtype auto`` and ``--method none``
    planned ``auto`` are the same argv. The speculative row's own resolved dtype never picks the baseline: the
    31B + E2B plan runs fp8 where the same request with ``--method none`` runs bf16, and that bf16 server is what
    the plan is an alternative to."""
    same = [r for r in alone if (r["target"], r.get("extra", ""), r["max_num_seqs"])
            == (row["target"], row.get("extra", ""), row["max_num_seqs"])]
    exact = [r for r in same if r["kv"] == row["kv"]]
    planned_alike = [r for r in same if row["kv"] != "plan" and r["kv"] == "plan" and r.get("planned_kv") == row["kv"]]
    return (exact or planned_alike or [None])[0]


def _run_rows(run: str, files: tuple[str, ...]) -> list[tuple[str, dict]]:
    """(source, row) of one run's rows that carry figures (a failed row, ``error``, has none)."""
    rows = [(f"{run}/{name}", json.loads(line)) for name in files
            for line in (RAW / run / name).read_text().splitlines() if line.strip()]
    return [(source, row) for source, row in rows if "error" not in row]


def _why_not_held(row: dict, concurrency: int, default_planned: set) -> str:
    """Why a row is printed but not held ("" where it is held), before comparing runs."""
    if "--attention-backend" in row.get("extra", ""):
        return "not launch's plan: " + row["extra"] + " given"
    if row["kv"] != "plan" and (row["target"], row["draft"], row.get("extra", ""), row["max_num_seqs"]) \
            in default_planned:
        return f"--kv-cache-dtype {row['kv']} given: the plan's own KV is held"
    return f"concurrency {concurrency}: step costs per batch size" if concurrency > 1 else ""


def _host_bound_elsewhere(rows: list[ServedRow]) -> list[ServedRow]:
    """``rows`` with a host-bound plan served on a host its entry was not calibrated to marked not held, where its
    speedup differs from the calibrated run's row of the same plan by more than ``BOUND``."""
    out = []
    for row in rows:
        home, entry = HOST_CALIBRATED.get((row.shape, row.method), (None, None))
        twin = next((other for other in rows if other.run == home and other.plan == row.plan), None)
        if row.held and twin is not None and row.run != home and abs(row.speedup / twin.speedup - 1) > BOUND:
            row = replace(row, held=False, why_not_held=(
                f"host-bound: the same plan served {row.speedup:.2f}x ({row.tok_s:.1f} tok/s) on {row.run} "
                f"({RUN_HOSTS[row.run]}) and {twin.speedup:.2f}x ({twin.tok_s:.1f} tok/s) on {home} "
                f"({RUN_HOSTS[home]}) over {row.baseline_tok_s:.1f} and {twin.baseline_tok_s:.1f} tok/s alone; "
                f"{entry} is calibrated to {home}"))
        out.append(row)
    return out


def served_rows() -> list[ServedRow]:
    out = []
    for run, files in RUNS.items():
        rows = _run_rows(run, files)
        alone = [r for _, r in rows if r["alpha"] is None]
        default_planned = {(r["target"], r["draft"], r.get("extra", ""), r["max_num_seqs"])
                           for _, r in rows if r["alpha"] is not None and r["kv"] == "plan"}
        for source, r in rows:
            baseline = baseline_of(r, alone) if r["alpha"] is not None else None
            if baseline is None:
                continue
            for n, (tok_s, length) in _levels(r).items():
                base = _levels(baseline).get(n, (None,))[0]
                if base is None:
                    continue
                why = _why_not_held(r, n, default_planned)
                out.append(ServedRow(source=source, scenario=r["scenario"], shape=SHAPES[r["target"]],
                                     method=r["method"], k=r["k"], alpha=r["alpha"], max_num_seqs=r["max_num_seqs"],
                                     concurrency=n, baseline_tok_s=base, tok_s=tok_s, acceptance_length=length,
                                     held=not why, why_not_held=why))
    return _host_bound_elsewhere(out)


def predicted_speedup(row: ServedRow, profile: str = "h200") -> float | None:
    """What the model predicts for the row's plan (None: no costs for that concurrency)."""
    rates = [row.alpha ** i for i in range(1, max(row.k, 8) + 1)]
    if row.concurrency == 1:
        model = step_model(row.method, row.shape, profile)
        return predict_speedup(rates, row.k, model.cost_ratio, model.overhead, model.host)
    costs = modelled_costs(row.method, inspect_checkpoint(TARGET_REPOS[row.shape]), profile=profile,
                           parallel=(1, 1), thinking=False, positions=len(rates))
    if isinstance(costs, str):
        return None
    choices = best_k_per_batch_size(known_batch_step_cost(costs.costs_name), rates, max_k=len(rates))
    at = next((c for c in choices if c.batch_size == row.concurrency), None)
    return None if at is None else at.predicted[row.k - 1]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="h200")
    args = parser.parse_args(argv)
    print(f"{'scenario':<28} {'method':<12} {'K':>2} {'alpha':>5} {'conc':>4} {'served':>7} {'step':>6} "
          f"{'predicted':>9} {'error':>7}  held")
    for row in served_rows():
        predicted = predicted_speedup(row, args.profile)
        error = "-" if predicted is None else f"{predicted / row.speedup - 1:+.1%}"
        shown = "-" if predicted is None else f"{predicted:.2f}x"
        held = "yes" if row.held else f"no ({row.why_not_held})"
        print(f"{row.scenario:<28} {row.method:<12} {row.k:>2} {row.alpha:>5} {row.concurrency:>4} "
              f"{row.speedup:>6.2f}x {row.step:>6.3f} {shown:>9} {error:>7}  {held}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
