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
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from sweep import geometric_rates  # noqa: E402  (beside this script)

PY = sys.executable
MODEL = "proof"
UNPATCHED = Path("/tmp/vllm-unpatched")
"""A pristine copy of the staged vLLM, made before patching: node 1's vLLM in the refusal run."""
SERVER_BUDGET_S = 240
"""Start-up (90-180 s, torch.compile) plus a bench: a server is not started with less time left."""
WORK = Path("/tmp/two-gpu-proof")
ROWS = WORK / "rows.jsonl"
"""Kept while the machine stays warm: a scenario already here is skipped by the next call."""


def record(out: Path, row: dict) -> None:
    with open(ROWS, "a") as rows:
        rows.write(json.dumps(row) + "\n")
    shutil.copy(ROWS, out / "rows.jsonl")
    print(row, flush=True)


def done(scenario: str) -> bool:
    return ROWS.exists() and any(json.loads(line).get("scenario") == scenario for line in ROWS.read_text().splitlines())


def specdraft(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([PY, "-m", "specdraft", *args], capture_output=True, text=True, env=env)


def profile() -> str:
    name = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                          text=True).stdout
    return "h200" if "H200" in name else "h100"


def checkpoints(work: Path) -> dict[str, Path]:
    from specdraft.testbed.tiny import write_dummy_checkpoint

    return {role: write_dummy_checkpoint(HERE / "configs" / folder, work / role)
            for role, folder in (("target", "target31b"), ("draft", "draftE2B"), ("assistant", "assistant31b"))}


def plan(target: Path, draft: Path, *options: str, port: int) -> dict:
    done = specdraft("launch", "--target", str(target), "--draft", str(draft), "--profile", profile(),
                     "--python", PY, "--hotfixes", "check", *options, "--dry-run", "--json",
                     "--", "--load-format", "dummy", "--port", str(port), "--served-model-name", MODEL)
    document = json.loads(done.stdout)
    errors = [f for f in document["findings"] if f["level"] == "error"]
    if errors:
        raise SystemExit(f"launch refused the plan {options}: {errors}")
    return document


def forced(argv: list[str], alpha: float | None) -> list[str]:
    """The argv launch would exec (``exec_argv``), with forced acceptance (alpha None: the target alone)."""
    index = argv.index("--speculative-config")
    if alpha is None:
        return argv[:index] + argv[index + 2:]
    config = json.loads(argv[index + 1])
    config.update(rejection_sample_method="synthetic",
                  synthetic_acceptance_rates=geometric_rates(alpha, config["num_speculative_tokens"]))
    return argv[:index + 1] + [json.dumps(config)] + argv[index + 2:]


def healthy(port: int, process: subprocess.Popen, timeout_s: float = 600) -> bool:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end and process.poll() is None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as reply:
                return reply.status == 200
        except OSError:
            time.sleep(2)
    return False


def stop(process: subprocess.Popen) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
            process.wait(timeout=30)
            return
        except (ProcessLookupError, subprocess.TimeoutExpired):
            continue


def start(argv: list[str], log: Path, env: dict | None = None) -> subprocess.Popen:
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w") as out:
        out.write(f"$ {argv}\n")
        out.flush()
        return subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                env={**os.environ, **(env or {})})


def bench(port: int, out: Path) -> dict:
    specdraft("bench", "--base-url", f"http://127.0.0.1:{port}", "--model", MODEL, "--max-tokens", "256",
              "--requests", "8", "--out", str(out))
    return json.loads(out.read_text())["levels"][0]


def serve_and_bench(name: str, argv: list[str], out: Path, row: dict) -> None:
    if done(name):
        return
    port = int(argv[argv.index("--port") + 1])
    started = time.monotonic()
    process = start(argv, out / "logs" / f"{name}.log")
    try:
        if not healthy(port, process):
            row["error"] = "not healthy"
        else:
            row["start_s"] = round(time.monotonic() - started, 1)
            level = bench(port, out / f"{name}.bench.json")
            tok_s = level.get("decode_tok_s")
            length = (level.get("spec_decode") or {}).get("mean_acceptance_length") or 1.0
            row.update(decode_tok_s=tok_s, mean_acceptance_length=length,
                       step_ms=round(1000 * length / tok_s, 2) if tok_s else None)
    finally:
        stop(process)
    record(out, {"scenario": name, **row})


def tp2(models: dict[str, Path], out: Path, deadline: float) -> None:
    """Target alone, E2B draft (draft TP = target TP, vLLM's rule for draft_model) and MTP assistant at TP 2."""
    for draft_role in ("draft", "assistant"):
        planned = plan(models["target"], models[draft_role], "--gpus-per-node", "2", port=8100)
        (out / f"plan-tp2-{draft_role}.json").write_text(json.dumps(planned, indent=2))
        alphas = [None, 0.85, 0.70] if draft_role == "draft" else [0.85, 0.70]
        for alpha in alphas:
            if deadline - time.monotonic() < SERVER_BUDGET_S:
                return
            name = f"tp2-{draft_role if alpha else 'target'}-{alpha or 'alone'}"
            serve_and_bench(name, forced(planned["exec_argv"], alpha), out,
                            {"tp": planned["parallel"]["tensor_parallel_size"], "alpha": alpha,
                             "k": None if alpha is None else planned["speculative_config"]["num_speculative_tokens"]})


def shims(work: Path) -> dict:
    """``specdraft`` on PATH as the staged interpreter's module (the staged install has no console scripts),
    so the node scripts run unchanged."""
    bin_dir = work / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name, module in (("specdraft", "specdraft"),):
        (bin_dir / name).write_text(f"#!/bin/sh\nexec {PY} -m {module} \"$@\"\n")
        (bin_dir / name).chmod(0o755)
    return {"PATH": f"{bin_dir}:{os.environ['PATH']}"}


def two_nodes(models: dict[str, Path], out: Path, work: Path, *, node1_unpatched: bool) -> None:
    planned = plan(models["target"], models["draft"], "--nodes", "2", "--hosts", "127.0.0.1,127.0.0.1",
                   "--master-addr", "127.0.0.1", port=8200)
    tag = "nodes-unpatched1" if node1_unpatched else "nodes"
    if done(tag):
        return
    (out / f"plan-{tag}.json").write_text(json.dumps(planned, indent=2))
    env = shims(work)
    site = os.environ.get("PYTHONPATH", "")
    node_env = [{**env, "CUDA_VISIBLE_DEVICES": "0"},
                {**env, "CUDA_VISIBLE_DEVICES": "1",
                 "PYTHONPATH": f"{UNPATCHED}:{site}" if node1_unpatched else site}]
    status = specdraft("cluster", "status", f"n0={PY} -m specdraft", f"n1=env PYTHONPATH={node_env[1]['PYTHONPATH']} "
                       f"{PY} -m specdraft", "--python", f"n0={PY}", "--python", f"n1={PY}", "--json")
    (out / f"cluster-status-{tag}.json").write_text(status.stdout + status.stderr)
    processes = [start(["bash", "-c", node["script"]], out / "logs" / f"{tag}-node{node['rank']}.log", node_env[i])
                 for i, node in enumerate(planned["nodes"])]
    row = {"cluster_status_rc": status.returncode}
    try:
        if node1_unpatched:
            row["node1_rc"] = processes[1].wait(timeout=120)
        else:
            row["served"] = healthy(8200, processes[0])
            if row["served"]:
                row["decode_tok_s"] = bench(8200, out / f"{tag}.bench.json").get("decode_tok_s")
    finally:
        for process in processes:
            stop(process)
    record(out, {"scenario": tag, **row})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--only", choices=["tp2", "nodes"])
    parser.add_argument("--deadline-s", type=float, default=540)
    args = parser.parse_args()
    deadline = time.monotonic() + args.deadline_s
    work = WORK
    args.out.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    models = checkpoints(work)
    staged = Path(json.loads(specdraft("cluster", "report", "--python", PY, "--json").stdout)["root"])
    if not UNPATCHED.exists():
        shutil.copytree(staged / "vllm", UNPATCHED / "vllm")
    applied = specdraft("patch", "apply", "--python", PY)
    (args.out / "patch-apply.txt").write_text(applied.stdout + applied.stderr)
    if args.only in (None, "tp2"):
        tp2(models, args.out, deadline)
    if args.only in (None, "nodes") and deadline - time.monotonic() > 2 * SERVER_BUDGET_S:
        two_nodes(models, args.out, work, node1_unpatched=True)
        two_nodes(models, args.out, work, node1_unpatched=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
