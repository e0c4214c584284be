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
    """moe26.json in docs/gpu is what moe26.py computes now from the two H200 leases and the three lane calls
    (the command of docs/gpu/README.md section 6)."""
    also = ["issue20_h200/results.jsonl", "h200x2_lanes/lane1.jsonl", "h200x4_call1/lane2-results.jsonl",
            "h200x4_call2/lane2-results.jsonl"]
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks/gpu/moe26.py"), str(RAW / "issue17_h200/results.jsonl"),
         "--also", *(str(RAW / a) for a in also), "--out", str(tmp_path)],
        capture_output=True, text=True, cwd=REPO, timeout=600)
    assert done.returncode == 0, done.stderr
    fresh = json.loads((tmp_path / "moe26.json").read_text())
    assert fresh == json.loads((REPO / "docs/gpu/moe26.json").read_text())
    lanes = {(r["method"], r["k"]): r for r in fresh["rows"] if r["alpha"] == 0.85 and r["k"] in (5, 7)}
    # a lane that ran the target alone divides by its own; the MTP K = 7 lane ran none
    assert lanes[("draft_model", 5)]["target_alone_tok_s"] == 247.606
    assert lanes[("draft_model", 7)]["target_alone_tok_s"] == 241.761
    assert lanes[("mtp", 7)]["target_alone_tok_s"] == fresh["target_alone"]["decode_tok_s"] == 248.067
