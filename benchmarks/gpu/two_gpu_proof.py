"""Two GPUs, one host: the 31B-shaped target at TP 2 with an E2B-shaped draft and with the MTP assistant, served
from the argv ``specdraft launch --gpus-per-node 2`` plans, and the same pair as two "nodes" (one GPU each,
``--nnodes 2`` over 127.0.0.1) started from the node commands ``launch --nodes 2`` plans, once with both nodes
patched and once with node 1's vLLM an unpatched copy (it must refuse to join, and ``specdraft cluster status``
must name it).

Run on the lent two-GPU machine (``nvidia-h100-x2``) after staging vLLM as docs/gpu/README.md says
(``install.sh`` and the server wheels), from the repository root, in the same call as the stage-2 install:

    bash .device/tools/install.sh "" .device/stage2 && \\
    PYTHONPATH=/tmp/site:/tmp/sdsite:$PWD VLLM_USE_FLASHINFER_SAMPLER=0 VLLM_USE_V2_MODEL_RUNNER=0 \\
        python3 benchmarks/gpu/two_gpu_proof.py --out "$OUT" --only nodes --deadline-s 520

``--only nodes`` (the two patched nodes, ~5-6 min cold, then the refusal, ~1 min, if 90 s are left, else in the
next call);
``--only tp2`` needs two or three more on the warm machine. Exit status 142 or 143: the deadline or a
signal stopped the run (every server was stopped first; the rows so far are in OUT).

Five TP-2 servers and two node runs take longer than one 10-minute call (a cold TP-2 31B start is ~260 s:
60 s imports + 118 s torch.compile; a later start of the same graph on the warm machine ~85-100 s): call it
again on the warm machine, and the scenarios already in /tmp/two-gpu-proof/rows.jsonl are skipped. A server
is started only when its start-up (cold or warm), bench and stop fit before ``--deadline-s``; every server
is a process group recorded in /tmp/two-gpu-proof/process-groups and stopped on SIGTERM, SIGINT, at the
deadline, and (left by a call that was SIGKILLed) at the start of the next call; each server gets a free
HTTP port and the node runs a free master port, so nothing an earlier call left can block them.
OUT gets rows.jsonl (one row per server: scenario, K, alpha, TP, decode tok/s, acceptance length, step ms)
and two-gpu-proof.tar.gz (server logs, bench results, plans, cluster status, patch output), two files under
the device's limit on files returned. The servers run the argv launch would exec (``exec_argv``: the planned interpreter running
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
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from serving import PY, Proof, Timing, baseline, forced, plan, refusals, specdraft  # noqa: E402  (beside this script)

from specdraft.testbed.processes import ProcessGroups, free_port, healthy  # noqa: E402

UNPATCHED = Path("/tmp/vllm-unpatched")
"""A pristine copy of the staged vLLM, made before patching: node 1's vLLM in the refusal run."""
TIMING = Timing(cold_start_s=300, warm_start_s=140)
"""A TP-2 31B start with nothing compiled took ~260 s on an H100 pair, a later start of the same graph ~85-100 s."""
REFUSAL_S = 60
"""How long node 1's hotfix check may take to refuse (seconds on the device: no vLLM starts)."""
HEADLESS_STARTED = "headless multiproc executor"
"""What vLLM's headless node logs once it starts (``vllm/entrypoints/cli/serve.py``, ``run_headless``)."""
WORK = Path("/tmp/two-gpu-proof")
"""Kept while the machine stays warm: a scenario already in its rows.jsonl is skipped by the next call."""
GROUPS = WORK / "process-groups"
ARCHIVE = "two-gpu-proof.tar.gz"


def checkpoints(work: Path) -> dict[str, Path]:
    from specdraft.testbed.dummy_checkpoint import write_dummy_checkpoint

    return {role: write_dummy_checkpoint(HERE / "configs" / folder, work / role)
            for role, folder in (("target", "target31b"), ("draft", "draftE2B"), ("assistant", "assistant31b"))}








def planned(target: Path, draft: Path | None, *options: str, port: int) -> dict:
    """The pair's plan (``draft`` None: the same plan without speculation, ``--method none``)."""
    document = plan(target, draft, *options, port=port) if draft is not None else baseline(target, *options, port=port)
    if refusals(document):
        raise SystemExit(f"launch refused the plan {options}: {refusals(document)}")
    return document


def tp2(proof: Proof, groups: ProcessGroups, models: dict[str, Path]) -> None:
    """Target alone, E2B draft (draft TP = target TP, vLLM's rule for draft_model) and MTP assistant at TP 2."""
    alone = planned(models["target"], None, "--gpus-per-node", "2", port=free_port())
    (proof.out / "plan-tp2-target.json").write_text(json.dumps(alone, indent=2))
    proof.serve_and_bench(groups, "tp2-target-alone", "tp2-target", alone["exec_argv"],
                          {"tp": alone["parallel"]["tensor_parallel_size"], "alpha": None, "k": None})
    for draft_role in ("draft", "assistant"):
        document = planned(models["target"], models[draft_role], "--gpus-per-node", "2", port=free_port())
        (proof.out / f"plan-tp2-{draft_role}.json").write_text(json.dumps(document, indent=2))
        for alpha in (0.85, 0.70):
            proof.serve_and_bench(groups, f"tp2-{draft_role}-{alpha}", f"tp2-{draft_role}",
                                  forced(document["exec_argv"], alpha),
                                  {"tp": document["parallel"]["tensor_parallel_size"], "alpha": alpha,
                                   "k": document["speculative_config"]["num_speculative_tokens"]})


def shims(work: Path) -> dict:
    """``specdraft`` on PATH as the staged interpreter's module (the staged install has no console scripts),
    so the node scripts run unchanged."""
    bin_dir = work / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    (bin_dir / "specdraft").write_text(f"#!/bin/sh\nexec {PY} -m specdraft \"$@\"\n")
    (bin_dir / "specdraft").chmod(0o755)
    return {"PATH": f"{bin_dir}:{os.environ['PATH']}"}


def two_nodes(proof: Proof, groups: ProcessGroups, models: dict[str, Path], *, node1_unpatched: bool) -> None:
    tag = "nodes-unpatched1" if node1_unpatched else "nodes"
    budget = REFUSAL_S if node1_unpatched else proof.start_budget(groups, "nodes")
    if proof.done(tag) or budget is None or groups.left_s() < budget + proof.timing.stop_s:
        return
    port, out = free_port(), proof.out
    document = planned(models["target"], models["draft"], "--nodes", "2", "--hosts", "127.0.0.1,127.0.0.1",
                       "--master-addr", "127.0.0.1", "--master-port", str(free_port()), port=port)
    (out / f"plan-{tag}.json").write_text(json.dumps(document, indent=2))
    env = shims(proof.work)
    site = os.environ.get("PYTHONPATH", "")
    node_env = [{**env, "CUDA_VISIBLE_DEVICES": "0"},
                {**env, "CUDA_VISIBLE_DEVICES": "1",
                 "PYTHONPATH": f"{UNPATCHED}:{site}" if node1_unpatched else site}]
    status = specdraft("cluster", "status", f"n0={PY} -m specdraft", f"n1=env PYTHONPATH={node_env[1]['PYTHONPATH']} "
                       f"{PY} -m specdraft", "--python", f"n0={PY}", "--python", f"n1={PY}", "--json", timeout=120)
    (out / f"cluster-status-{tag}.json").write_text(status.stdout + status.stderr)
    processes = [groups.start(["bash", "-c", node["script"]], out / "logs" / f"{tag}-node{node['rank']}.log",
                              node_env[i]) for i, node in enumerate(document["nodes"])]
    row = {"cluster_status_rc": status.returncode}
    try:
        if node1_unpatched:
            row["node1_rc"] = processes[1].wait(timeout=budget)
        else:
            row["served"] = healthy(port, processes, budget)
            if row["served"]:
                proof.compiled("nodes")
                row["decode_tok_s"] = proof.bench(groups, port, tag).get("decode_tok_s")
    except subprocess.TimeoutExpired:
        row["node1_rc"] = None
    finally:
        row["exits"] = [process.poll() for process in processes]
        for process in processes:
            groups.stop(process)
    node1_log = (out / "logs" / f"{tag}-node1.log").read_text(errors="replace").split("\n", 1)[-1]
    row["node1_vllm_started"] = HEADLESS_STARTED in node1_log
    proof.record({"scenario": tag, **row})



def run(proof: Proof, groups: ProcessGroups, only: str | None) -> None:
    models = checkpoints(proof.work)
    staged = Path(json.loads(specdraft("cluster", "report", "--python", PY, "--json").stdout)["root"])
    if not UNPATCHED.exists():
        shutil.copytree(staged / "vllm", UNPATCHED / "vllm")
    applied = specdraft("patch", "apply", "--python", PY)
    (proof.out / "patch-apply.txt").write_text(applied.stdout + applied.stderr)
    if only in (None, "tp2"):
        tp2(proof, groups, models)
    if only in (None, "nodes"):
        # the served run first: it needs a cold start's time, the refusal a minute
        two_nodes(proof, groups, models, node1_unpatched=False)
        two_nodes(proof, groups, models, node1_unpatched=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--only", choices=["tp2", "nodes"])
    parser.add_argument("--deadline-s", type=float, default=540,
                        help="stop every server and return by then (the device's limit is 600 s a call)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    WORK.mkdir(parents=True, exist_ok=True)
    proof = Proof(work=WORK, out=args.out, timing=TIMING)
    try:
        with ProcessGroups(GROUPS, deadline_s=args.deadline_s) as groups:
            print(f"stopped groups an earlier call left: {groups.left_over or 'none'}", flush=True)
            run(proof, groups, args.only)
    finally:
        proof.pack(ARCHIVE)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
