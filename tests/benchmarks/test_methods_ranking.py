"""``--method auto`` against the GPU: at a forced acceptance alpha, the order it ranks the methods in is the order
their best measured speedups came in on one machine (benchmarks/gpu/methods_costs.py reads the raw rows)."""

import sys
from pathlib import Path

import pytest

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
