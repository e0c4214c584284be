"""Two GPUs, one host: the 31B-shaped target at TP 2 with an E2B-shaped draft and with the MTP assistant, served
from the argv ``specdraft launch --gpus-per-node 2`` plans, and the same pair as two "nodes" (one GPU each,
``--nnodes 2`` over 127.0.0.1) started from the node commands ``launch --nodes 2`` plans, once with both nodes
patched and once with node 1's vLLM an unpatched copy (it must refuse to join, and ``specdraft cluster status``
must name it).

Run on the lent two-GPU machine after staging vLLM as docs/gpu/README.md says (``install.sh`` and the server
wheels), from the repository root:

    PYTHONPATH=/tmp/site:/tmp/sdsite:$PWD VLLM_USE_FLASHINFER_SAMPLER=0 VLLM_USE_V2_MODEL_RUNNER=0 \\
        python3 benchmarks/gpu/two_gpu_proof.py --out "$OUT" [--only tp2|nodes] [--deadline-s 540]

Five TP-2 servers and two node runs take longer than one 10-minute call (start-up is 90-180 s a server):
call it again on the warm machine, and the scenarios already in /tmp/two-gpu-proof/rows.jsonl are skipped.
Rows go to OUT/rows.jsonl (one per server: scenario, K, alpha, TP, decode tok/s, acceptance length, step ms),
server logs to OUT/logs/. The servers run the argv launch would exec (``exec_argv``: the planned interpreter running
``-m vllm.entrypoints.cli.main serve``) and the node scripts as planned; the only changes: random weights
(``--load-format dummy``, passed after ``--`` so launch plans it) and forced acceptance added to
``--speculative-config``
(``rejection_sample_method: synthetic``, rates alpha^i as benchmarks/gpu/sweep.py).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from serving import (PY, Rows, bench, forced, free_port, healthy, plan, refusals, serve_and_bench,  # noqa: E402
                     specdraft, start, stop, stop_started_on_exit)

UNPATCHED = Path("/tmp/vllm-unpatched")
"""A pristine copy of the staged vLLM, made before patching: node 1's vLLM in the refusal run."""
SERVER_BUDGET_S = 240
"""Start-up (90-180 s, torch.compile) plus a bench: a server is not started with less time left."""
WORK = Path("/tmp/two-gpu-proof")
ROWS = WORK / "rows.jsonl"
"""Kept while the machine stays warm: a scenario already here is skipped by the next call."""


def checkpoints(work: Path) -> dict[str, Path]:
    from specdraft.testbed.tiny import write_dummy_checkpoint

    return {role: write_dummy_checkpoint(HERE / "configs" / folder, work / role)
            for role, folder in (("target", "target31b"), ("draft", "draftE2B"), ("assistant", "assistant31b"))}


def planned(target: Path, draft: Path, *options: str, port: int) -> dict:
    document = plan(target, draft, *options, port=port)
    if refusals(document):
        raise SystemExit(f"launch refused the plan {options}: {refusals(document)}")
    return document


def tp2(rows: Rows, models: dict[str, Path], out: Path, deadline: float) -> None:
    """Target alone, E2B draft (draft TP = target TP, vLLM's rule for draft_model) and MTP assistant at TP 2."""
    for draft_role in ("draft", "assistant"):
        document = planned(models["target"], models[draft_role], "--gpus-per-node", "2", port=free_port())
        (out / f"plan-tp2-{draft_role}.json").write_text(json.dumps(document, indent=2))
        alphas = [None, 0.85, 0.70] if draft_role == "draft" else [0.85, 0.70]
        for alpha in alphas:
            if deadline - time.monotonic() < SERVER_BUDGET_S:
                return
            name = f"tp2-{draft_role if alpha else 'target'}-{alpha or 'alone'}"
            serve_and_bench(rows, name, forced(document["exec_argv"], alpha), out,
                            {"tp": document["parallel"]["tensor_parallel_size"], "alpha": alpha,
                             "k": None if alpha is None else document["speculative_config"]["num_speculative_tokens"]})


def shims(work: Path) -> dict:
    """``specdraft`` on PATH as the staged interpreter's module (the staged install has no console scripts),
    so the node scripts run unchanged."""
    bin_dir = work / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name, module in (("specdraft", "specdraft"),):
        (bin_dir / name).write_text(f"#!/bin/sh\nexec {PY} -m {module} \"$@\"\n")
        (bin_dir / name).chmod(0o755)
    return {"PATH": f"{bin_dir}:{os.environ['PATH']}"}


def two_nodes(rows: Rows, models: dict[str, Path], out: Path, work: Path, *, node1_unpatched: bool) -> None:
    port = free_port()
    document = planned(models["target"], models["draft"], "--nodes", "2", "--hosts", "127.0.0.1,127.0.0.1",
                       "--master-addr", "127.0.0.1", port=port)
    tag = "nodes-unpatched1" if node1_unpatched else "nodes"
    if rows.done(tag):
        return
    (out / f"plan-{tag}.json").write_text(json.dumps(document, indent=2))
    env = shims(work)
    site = os.environ.get("PYTHONPATH", "")
    node_env = [{**env, "CUDA_VISIBLE_DEVICES": "0"},
                {**env, "CUDA_VISIBLE_DEVICES": "1",
                 "PYTHONPATH": f"{UNPATCHED}:{site}" if node1_unpatched else site}]
    status = specdraft("cluster", "status", f"n0={PY} -m specdraft", f"n1=env PYTHONPATH={node_env[1]['PYTHONPATH']} "
                       f"{PY} -m specdraft", "--python", f"n0={PY}", "--python", f"n1={PY}", "--json")
    (out / f"cluster-status-{tag}.json").write_text(status.stdout + status.stderr)
    processes = [start(["bash", "-c", node["script"]], out / "logs" / f"{tag}-node{node['rank']}.log", node_env[i])
                 for i, node in enumerate(document["nodes"])]
    row = {"cluster_status_rc": status.returncode}
    try:
        if node1_unpatched:
            row["node1_rc"] = processes[1].wait(timeout=120)
        else:
            row["served"] = healthy(port, processes[0])
            if row["served"]:
                row["decode_tok_s"] = bench(port, out / f"{tag}.bench.json").get("decode_tok_s")
    finally:
        for process in processes:
            stop(process)
    rows.record({"scenario": tag, **row})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--only", choices=["tp2", "nodes"])
    parser.add_argument("--deadline-s", type=float, default=540)
    args = parser.parse_args()
    stop_started_on_exit()
    deadline = time.monotonic() + args.deadline_s
    work = WORK
    args.out.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    rows = Rows(ROWS, args.out)
    models = checkpoints(work)
    staged = Path(json.loads(specdraft("cluster", "report", "--python", PY, "--json").stdout)["root"])
    if not UNPATCHED.exists():
        shutil.copytree(staged / "vllm", UNPATCHED / "vllm")
    applied = specdraft("patch", "apply", "--python", PY)
    (args.out / "patch-apply.txt").write_text(applied.stdout + applied.stderr)
    if args.only in (None, "tp2"):
        tp2(rows, models, args.out, deadline)
    if args.only in (None, "nodes") and deadline - time.monotonic() > 2 * SERVER_BUDGET_S:
        two_nodes(rows, models, args.out, work, node1_unpatched=True)
        two_nodes(rows, models, args.out, work, node1_unpatched=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
