"""``--method auto`` against the GPU: at a forced acceptance alpha, the order it ranks the methods in is the order
their best measured speedups came in on one machine (benchmarks/gpu/methods_costs.py reads the raw rows)."""

import sys
from pathlib import Path

import pytest

from specdraft.bench import known_host_costs
from specdraft.checkpoints import inspect_checkpoint
from specdraft.planning._method_ranking import rank_methods

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks/gpu"))

import methods_costs  # noqa: E402  (a script beside the GPU tools, not a package)

DRAFTS = {"draft_model": "google/gemma-4-E2B-it", "mtp": "google/gemma-4-31B-it-assistant",
          "eagle3": str(REPO / "benchmarks/gpu/configs/eagle3_31b"),
          "dflash": str(REPO / "benchmarks/gpu/configs/dflash_31b")}
LEASES = {"issue7_h100": "docs/gpu/raw/issue7_h100/results.jsonl",
          "issue7_mtp_h100": "docs/gpu/raw/issue7_mtp_h100/results.jsonl"}
"""One machine each: the rows a ranking is measured on."""


def measured_order(path: str, alpha: float) -> list[str]:
    rows = methods_costs.load(str(REPO / path))
    out = methods_costs.predict(methods_costs.target_alone(rows), methods_costs.speculative_rows(rows))
    return [o["method"] for o in methods_costs.measured_ranking(out)[alpha]]


@pytest.mark.parametrize("alpha", [0.85, 0.70])
@pytest.mark.parametrize("lease", sorted(LEASES))
def test_auto_ranks_the_measured_methods_in_their_measured_order(lease, alpha):
    measured = measured_order(LEASES[lease], alpha)
    assert len(measured) >= 2
    ranking = rank_methods(inspect_checkpoint("google/gemma-4-31B-it"),
                           [inspect_checkpoint(DRAFTS[m]) for m in measured if m in DRAFTS], version="0.26.0",
                           profile="h100",
                           measured={m: tuple(alpha ** i for i in range(1, 9)) for m in measured})
    assert [row.method for row in ranking.ranked if row.method in measured] == measured


def test_a_profiled_row_gives_the_shipped_entry_of_its_path():
    """The arithmetic the EAGLE-3 and DFlash entries will come from reproduces the MTP assistant's shipped entry
    from its own raw row (a GPU-bound step: o is the step beyond the target's and the drafting)."""
    rows = methods_costs.load(str(REPO / LEASES["issue7_mtp_h100"]))
    target = methods_costs.target_alone(rows)
    row = next(r for r in methods_costs.speculative_rows(rows) if r["tag"] == "mtp3" and "profile" in r)
    entry = methods_costs.profile_entry(row, target["step_ms"])
    shipped = known_host_costs()["vllm0.26-mtp-31b-assistant"]
    for field in ("per_step_ms", "per_draft_token_ms", "gpu_draft_ms_per_token", "gpu_idle_ms_per_step",
                  "gpu_overhead_ms_per_step"):
        assert entry[field] == pytest.approx(getattr(shipped, field), abs=0.01), field
