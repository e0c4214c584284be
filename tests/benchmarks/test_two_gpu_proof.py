"""benchmarks/gpu/two_gpu_proof.py: no server outlives the call, none starts without the time to finish, and
what comes back is two files. The server here is a dummy long-running process that never answers /health
(what a vLLM still compiling looks like from outside); vLLM itself is proven by the GPU run."""

import json
import sys
import tarfile
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks" / "gpu"))
import two_gpu_proof as proof  # noqa: E402

from specdraft.testbed.processes import ProcessGroups, _members  # noqa: E402


@pytest.fixture
def work(tmp_path, monkeypatch):
    monkeypatch.setattr(proof, "WORK", tmp_path / "work")
    monkeypatch.setattr(proof, "ROWS", tmp_path / "work" / "rows.jsonl")
    (tmp_path / "work").mkdir()
    (tmp_path / "out").mkdir()
    return tmp_path


def test_a_server_that_cannot_start_bench_and_stop_before_the_deadline_is_not_started(work):
    cold = proof.COLD_START_S + proof.BENCH_S + proof.STOP_S
    with ProcessGroups(work / "groups", deadline_s=cold - 10) as groups:
        proof.serve_and_bench(groups, "tp2-draft-0.85", "tp2-draft", ["sleep", "300", "--port", "1"], work / "out",
                              {})
        assert groups.processes == [] and not proof.ROWS.exists()
        proof.compiled("tp2-draft")  # the same graph started once on this machine: a warm start fits
        assert proof.start_budget(groups, "tp2-draft") == pytest.approx(proof.COLD_START_S - 10, abs=2)


def test_a_server_never_healthy_is_stopped_when_its_start_budget_ends(work, monkeypatch):
    monkeypatch.setattr(proof, "COLD_START_S", 1)
    monkeypatch.setattr(proof, "BENCH_S", 1)
    monkeypatch.setattr(proof, "STOP_S", 1)
    started = time.monotonic()
    with ProcessGroups(work / "groups", deadline_s=5, grace_s=1) as groups:
        proof.serve_and_bench(groups, "tp2-target-alone", "tp2-target",
                              ["bash", "-c", "sleep 300 & wait", "--port", "9"], work / "out", {"tp": 2})
        (process,) = groups.processes
        assert not _members(process.pid), "stopped with its whole group"
    assert time.monotonic() - started < 5
    (row,) = [json.loads(line) for line in proof.ROWS.read_text().splitlines()]
    assert row == {"scenario": "tp2-target-alone", "tp": 2, "error": "not healthy"}


def test_out_is_the_rows_and_one_archive_of_everything_else(work):
    out = work / "out"
    (out / "logs").mkdir()
    for name in ("tp2-target-alone.log", "nodes-node0.log", "nodes-node1.log"):
        (out / "logs" / name).write_text(name)
    for name in ("rows.jsonl", "plan-nodes.json", "cluster-status-nodes.json", "patch-apply.txt", "a.bench.json"):
        (out / name).write_text("{}")
    proof.pack(out)
    assert sorted(p.name for p in out.iterdir()) == ["rows.jsonl", proof.ARCHIVE]
    with tarfile.open(out / proof.ARCHIVE) as archive:
        names = set(archive.getnames())
    assert {"logs/nodes-node1.log", "plan-nodes.json", "cluster-status-nodes.json", "a.bench.json"} <= names
