"""benchmarks/gpu/levers.py: issue 7's lever table is what the committed raw GPU rows and today's tune give."""

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RAW = REPO / "docs/gpu/raw"


def test_the_committed_lever_table_is_reproduced_from_the_raw_rows_by_tune(tmp_path):
    """levers.json in docs/gpu is exactly what levers.py computes now: a change to tune's model or to the
    measured host costs that moves a documented prediction fails here until the docs are regenerated."""
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks/gpu/levers.py"), str(RAW / "issue7_h100/results.jsonl"),
         str(RAW / "issue7_mtp_h100/results.jsonl"), "--out", str(tmp_path)],
        capture_output=True, text=True, cwd=REPO, timeout=600)
    assert done.returncode == 0, done.stderr
    fresh = json.loads((tmp_path / "levers.json").read_text())
    assert fresh == json.loads((REPO / "docs/gpu/levers.json").read_text())
    one_sequence = [r for r in fresh["rows"] if r["concurrency"] == 1]
    best = max((r for r in one_sequence if r["alpha"] == 0.85), key=lambda r: r["speedup"])
    assert (best["method"], best["k"], best["speedup"]) == ("mtp", 9, 3.839)
    assert "| issue7_mtp_h100 | mtp (31B assistant), V1 runner | 9 | 0.85 |" in done.stdout


def test_the_committed_26b_table_is_reproduced_from_the_raw_rows_by_tune(tmp_path):
    """moe26.json in docs/gpu is what moe26.py computes now from the two H200 leases."""
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks/gpu/moe26.py"), str(RAW / "issue17_h200/results.jsonl"),
         "--also", str(RAW / "issue20_h200/results.jsonl"), "--out", str(tmp_path)],
        capture_output=True, text=True, cwd=REPO, timeout=600)
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "moe26.json").read_text()) == json.loads((REPO / "docs/gpu/moe26.json").read_text())
