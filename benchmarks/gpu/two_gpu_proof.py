"""Two GPUs, one host: the 31B-shaped target at TP 2 with an E2B-shaped draft and with the MTP assistant, served
from the argv ``specdraft launch --gpus-per-node 2`` plans, and the same pair as two "nodes" (one GPU each,
``--nnodes 2`` over 127.0.0.1) started from the node commands ``launch --nodes 2`` plans, once with both nodes
patched and once with node 1's vLLM an unpatched copy (it must refuse to join, and ``specdraft cluster status``
must name it).

Run on the lent two-GPU machine after staging vLLM as docs/gpu/README.md says (``install.sh`` and the server
wheels), from the repository root:

    PYTHONPATH=/tmp/site:/tmp/sdsite:$PWD VLLM_USE_FLASHINFER_SAMPLER=0 VLLM_USE_V2_MODEL_RUNNER=0 \\
        python3 benchmarks/gpu/two_gpu_proof.py --out "$OUT" [--only tp2|nodes] [--deadline-s 540]

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
import tarfile
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from sweep import geometric_rates  # noqa: E402  (beside this script)

from specdraft.testbed.processes import ProcessGroups, free_port  # noqa: E402

PY = sys.executable
MODEL = "proof"
UNPATCHED = Path("/tmp/vllm-unpatched")
"""A pristine copy of the staged vLLM, made before patching: node 1's vLLM in the refusal run."""
COLD_START_S = 300
"""A TP-2 31B start with nothing compiled (~260 s measured on an H100 pair)."""
WARM_START_S = 140
"""A start whose graph this machine compiled before (~85-100 s measured)."""
BENCH_S = 60
STOP_S = 30
"""SIGTERM, the 20 s grace of ``ProcessGroups``, then SIGKILL."""
REFUSAL_S = 120
"""How long node 1's hotfix check may take to refuse."""
WORK = Path("/tmp/two-gpu-proof")
ROWS = WORK / "rows.jsonl"
"""Kept while the machine stays warm: a scenario already here is skipped by the next call."""
GROUPS = WORK / "process-groups"
ARCHIVE = "two-gpu-proof.tar.gz"


def record(out: Path, row: dict) -> None:
    with open(ROWS, "a") as rows:
        rows.write(json.dumps(row) + "\n")
    shutil.copy(ROWS, out / "rows.jsonl")
    print(row, flush=True)


def done(scenario: str) -> bool:
    return ROWS.exists() and any(json.loads(line).get("scenario") == scenario for line in ROWS.read_text().splitlines())


def specdraft(*args: str, env: dict | None = None, timeout: float | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([PY, "-m", "specdraft", *args], capture_output=True, text=True, env=env, timeout=timeout)


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


def healthy(port: int, process: subprocess.Popen, timeout_s: float) -> bool:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end and process.poll() is None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as reply:
                return reply.status == 200
        except OSError:
            time.sleep(2)
    return False


def start_budget(groups: ProcessGroups, graph: str) -> float | None:
    """Seconds a server of ``graph`` may take to start, or None when it could not start, bench and stop
    before the deadline (it is then left for the next call)."""
    needed = WARM_START_S if (WORK / f"compiled-{graph}").exists() else COLD_START_S
    left = groups.left_s() - BENCH_S - STOP_S
    if left < needed:
        print(f"not starting {graph}: {groups.left_s():.0f} s left, it needs {needed + BENCH_S + STOP_S} s", flush=True)
        return None
    return left


def compiled(graph: str) -> None:
    (WORK / f"compiled-{graph}").touch()


def bench(groups: ProcessGroups, port: int, out: Path) -> dict:
    specdraft("bench", "--base-url", f"http://127.0.0.1:{port}", "--model", MODEL, "--max-tokens", "256",
              "--requests", "8", "--out", str(out), timeout=max(groups.left_s() - STOP_S, 1))
    return json.loads(out.read_text())["levels"][0]


def serve_and_bench(groups: ProcessGroups, name: str, graph: str, argv: list[str], out: Path, row: dict) -> None:
    budget = start_budget(groups, graph)
    if done(name) or budget is None:
        return
    port = int(argv[argv.index("--port") + 1])
    started = time.monotonic()
    process = groups.start(argv, out / "logs" / f"{name}.log")
    try:
        if not healthy(port, process, budget):
            row["error"] = "not healthy" if process.poll() is None else f"exited {process.returncode}"
        else:
            compiled(graph)
            row["start_s"] = round(time.monotonic() - started, 1)
            level = bench(groups, port, out / f"{name}.bench.json")
            tok_s = level.get("decode_tok_s")
            length = (level.get("spec_decode") or {}).get("mean_acceptance_length") or 1.0
            row.update(decode_tok_s=tok_s, mean_acceptance_length=length,
                       step_ms=round(1000 * length / tok_s, 2) if tok_s else None)
    finally:
        groups.stop(process)
    record(out, {"scenario": name, **row})


def tp2(groups: ProcessGroups, models: dict[str, Path], out: Path) -> None:
    """Target alone, E2B draft (draft TP = target TP, vLLM's rule for draft_model) and MTP assistant at TP 2."""
    for draft_role in ("draft", "assistant"):
        planned = plan(models["target"], models[draft_role], "--gpus-per-node", "2", port=free_port())
        (out / f"plan-tp2-{draft_role}.json").write_text(json.dumps(planned, indent=2))
        alphas = [None, 0.85, 0.70] if draft_role == "draft" else [0.85, 0.70]
        for alpha in alphas:
            name = f"tp2-{draft_role if alpha else 'target'}-{alpha or 'alone'}"
            graph = f"tp2-{draft_role if alpha else 'target'}"
            serve_and_bench(groups, name, graph, forced(planned["exec_argv"], alpha), out,
                            {"tp": planned["parallel"]["tensor_parallel_size"], "alpha": alpha,
                             "k": None if alpha is None else planned["speculative_config"]["num_speculative_tokens"]})


def shims(work: Path) -> dict:
    """``specdraft`` on PATH as the staged interpreter's module (the staged install has no console scripts),
    so the node scripts run unchanged."""
    bin_dir = work / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    (bin_dir / "specdraft").write_text(f"#!/bin/sh\nexec {PY} -m specdraft \"$@\"\n")
    (bin_dir / "specdraft").chmod(0o755)
    return {"PATH": f"{bin_dir}:{os.environ['PATH']}"}


def two_nodes(groups: ProcessGroups, models: dict[str, Path], out: Path, work: Path, *,
              node1_unpatched: bool) -> None:
    tag = "nodes-unpatched1" if node1_unpatched else "nodes"
    budget = REFUSAL_S if node1_unpatched else start_budget(groups, "nodes")
    if done(tag) or budget is None or groups.left_s() < budget + STOP_S:
        return
    port = free_port()
    planned = plan(models["target"], models["draft"], "--nodes", "2", "--hosts", "127.0.0.1,127.0.0.1",
                   "--master-addr", "127.0.0.1", "--master-port", str(free_port()), port=port)
    (out / f"plan-{tag}.json").write_text(json.dumps(planned, indent=2))
    env = shims(work)
    site = os.environ.get("PYTHONPATH", "")
    node_env = [{**env, "CUDA_VISIBLE_DEVICES": "0"},
                {**env, "CUDA_VISIBLE_DEVICES": "1",
                 "PYTHONPATH": f"{UNPATCHED}:{site}" if node1_unpatched else site}]
    status = specdraft("cluster", "status", f"n0={PY} -m specdraft", f"n1=env PYTHONPATH={node_env[1]['PYTHONPATH']} "
                       f"{PY} -m specdraft", "--python", f"n0={PY}", "--python", f"n1={PY}", "--json", timeout=120)
    (out / f"cluster-status-{tag}.json").write_text(status.stdout + status.stderr)
    processes = [groups.start(["bash", "-c", node["script"]], out / "logs" / f"{tag}-node{node['rank']}.log",
                              node_env[i]) for i, node in enumerate(planned["nodes"])]
    row = {"cluster_status_rc": status.returncode}
    try:
        if node1_unpatched:
            row["node1_rc"] = processes[1].wait(timeout=budget)
        else:
            row["served"] = healthy(port, processes[0], budget)
            if row["served"]:
                compiled("nodes")
                row["decode_tok_s"] = bench(groups, port, out / f"{tag}.bench.json").get("decode_tok_s")
    except subprocess.TimeoutExpired:
        row["node1_rc"] = None
    finally:
        for process in processes:
            groups.stop(process)
    record(out, {"scenario": tag, **row})


def pack(out: Path) -> None:
    """Everything in OUT but rows.jsonl into one archive (the device returns at most 8 files)."""
    packed = [path for path in sorted(out.iterdir()) if path.name not in ("rows.jsonl", ARCHIVE)]
    if not packed:
        return
    with tarfile.open(out / ARCHIVE, "w:gz") as archive:
        for path in packed:
            archive.add(path, arcname=path.name)
    for path in packed:
        shutil.rmtree(path) if path.is_dir() else path.unlink()


def run(groups: ProcessGroups, args: argparse.Namespace) -> None:
    models = checkpoints(WORK)
    staged = Path(json.loads(specdraft("cluster", "report", "--python", PY, "--json").stdout)["root"])
    if not UNPATCHED.exists():
        shutil.copytree(staged / "vllm", UNPATCHED / "vllm")
    applied = specdraft("patch", "apply", "--python", PY)
    (args.out / "patch-apply.txt").write_text(applied.stdout + applied.stderr)
    if args.only in (None, "tp2"):
        tp2(groups, models, args.out)
    if args.only in (None, "nodes"):
        two_nodes(groups, models, args.out, WORK, node1_unpatched=True)
        two_nodes(groups, models, args.out, WORK, node1_unpatched=False)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--only", choices=["tp2", "nodes"])
    parser.add_argument("--deadline-s", type=float, default=540,
                        help="stop every server and return by then (the device's limit is 600 s a call)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    WORK.mkdir(parents=True, exist_ok=True)
    try:
        with ProcessGroups(GROUPS, deadline_s=args.deadline_s) as groups:
            print(f"stopped groups an earlier call left: {groups.left_over or 'none'}", flush=True)
            run(groups, args)
    finally:
        pack(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
