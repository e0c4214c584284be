"""Served speedups and attention backends on the real kernel stack (FA4 + FlashInfer + quack, as vLLM 0.26.0
declares them), one server per GPU, started in parallel and benched one at a time.

Each scenario is ``TARGET:DRAFT:KV:ALPHA:SEQS[:EXTRA]`` (folders of benchmarks/gpu/configs, short names below):
``specdraft launch --target T --draft D --method M --kv-cache-dtype KV --max-num-seqs SEQS --dry-run --json --
--load-format dummy ...`` plans it on this machine's profile (KV ``plan``: no ``--kv-cache-dtype``, the plan's own
choice; M from the draft's kind); its ``exec_argv`` is served, with forced acceptance alpha^i added to
``--speculative-config`` (ALPHA ``alone``: the baseline, launch's ``--method none`` plan of the target; EXTRA
``triton``: ``--attention-backend TRITON_ATTN`` planned in after ``--``; ``tp2``: ``--tensor-parallel-size 2`` and
two GPUs; ``long``: also benched at prompts of 1K, 16K and 64K tokens, ``CONTEXTS``). Servers of one batch start together, each on its own GPUs (``CUDA_VISIBLE_DEVICES``), so their
torch.compile runs overlap; once all are up (or dead) they are benched side by side (``specdraft bench``, 256
tokens: 8 requests at concurrency 1, then, when SEQS > 1, 2 x SEQS requests at concurrency SEQS, on the same
server), then all are stopped.

Every row records the attention backends the engine log names (``VLLM_LOG_MODEL_INSPECTION=1`` also prints the
per-layer view), and a server that dies records its log's tail: the reported MTP + fp8 KV start-up crash
shows up here. Run from the repository root with the real stack installed (install_parts.sh):

    PYTHONPATH=/tmp/site:/tmp/sdsite:$PWD python3 benchmarks/gpu/realstack/served_real.py --out "$OUT" \\
        --deadline-s 540 t26:a26:fp8:0.85:1 t26:a26:fp8:alone:1 ...

Rows accumulate in /tmp/realstack/rows.jsonl (a scenario already there is skipped while the machine stays warm);
OUT gets rows.jsonl and one tar.gz of plans, bench JSON and server logs.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

GPU_DIR = Path.cwd() / "benchmarks" / "gpu"
"""serving.py, sweep.py and configs/: run from the repository root (this script may travel as a copy elsewhere)."""
sys.path.insert(0, str(GPU_DIR))
from serving import MODEL, baseline, forced, plan, profile, refusals, specdraft  # noqa: E402  (benchmarks/gpu)

from specdraft.testbed.processes import DeadlineReached, ProcessGroups, free_port, healthy  # noqa: E402

WORK = Path("/tmp/realstack")
FOLDERS = {"t26": "target26b", "a26": "assistant26b", "t31": "target31b", "a31": "assistant31b",
           "t12": "target12b", "a12": "assistant12b", "e2b": "draftE2B", "eg31": "eagle3_31b", "df31": "dflash_31b",
           "ds31": "dspark_31b"}
METHODS = {"a26": "mtp", "a31": "mtp", "a12": "mtp", "e2b": "draft_model", "eg31": "eagle3", "df31": "dflash",
           "ds31": "dspark"}
EXTRAS = {"": (), "triton": ("--attention-backend", "TRITON_ATTN"), "tp2": (), "long": ()}
PLAN_OPTIONS = {"": (), "triton": (), "tp2": ("--tensor-parallel-size", "2", "--gpus-per-node", "2"), "long": ()}
GPUS_NEEDED = {"": 1, "triton": 1, "tp2": 2, "long": 1}
CONTEXTS = (1024, 16384, 65536)
"""Prompt lengths (tokens) a ``long`` scenario is also benched at, after the built-in prompts: one request at a time,
distinct random token ids per request (so the prefix cache cannot serve them), 256 tokens generated each."""
CONTEXT_REQUESTS = {1024: 4, 16384: 4, 65536: 3}
BENCH_S = int(os.environ.get("BENCH_S", "90"))  # seconds kept for a batch's benches (side by side)
STOP_S = 30
BACKEND_LINE = re.compile(
    r"backend|FlashAttention|flash_attn|FA4|FA3|FlashInfer|flashinfer|TRITON|Triton|kv.cache.dtype|fp8|"
    r"model runner|Traceback|Error|error:", re.IGNORECASE)
NOISE = re.compile(r"^\$ \[|GET /health|POST /v1|Avg prompt throughput|metrics")


def checkpoints(needed: set[str]) -> dict[str, Path]:
    """Dummy checkpoints of the config folders: Gemma 4 configs get tokenizer files, a speculator is its config."""
    from specdraft.testbed.dummy_checkpoint import write_dummy_checkpoint

    out = {}
    for short in needed:
        source, target = GPU_DIR / "configs" / FOLDERS[short], WORK / "ck" / short
        if not (target / "config.json").exists():
            if "speculators_model_type" in json.loads((source / "config.json").read_text()):
                shutil.copytree(source, target, dirs_exist_ok=True)
            else:
                write_dummy_checkpoint(source, target)
        out[short] = target
    return out


def _bench(port: int, out: Path, timeout: float, *options: str) -> dict:
    """One ``specdraft bench`` level against the server, 256 tokens a request; its figures (raises on a failed
    bench)."""
    done = specdraft("bench", "--base-url", f"http://127.0.0.1:{port}", "--model", MODEL, "--max-tokens", "256",
                     *options, "--out", str(out), timeout=timeout)
    if not out.exists():
        raise ValueError(f"bench wrote nothing: {(done.stderr or done.stdout)[-800:]}")
    level = json.loads(out.read_text())["levels"][0]
    return {"decode_tok_s": level.get("decode_tok_s"), "output_tok_s": level.get("output_tok_s"),
            "ttft_s": level.get("ttft_s"),
            "mean_acceptance_length": (level.get("spec_decode") or {}).get("mean_acceptance_length")}


def bench(port: int, concurrency: int, out: Path, timeout: float) -> dict:
    """The built-in prompts at ``concurrency``."""
    return _bench(port, out, timeout, "--requests", str(8 if concurrency == 1 else 2 * concurrency),
                  "--concurrency", str(concurrency))


def context_prompts(length: int, count: int) -> Path:
    """A prompts file of ``count`` prompts of ``length`` random token ids (seeded: every server gets the same), ids
    clear of Gemma 4's special tokens (below 1000 and from 255999 up)."""
    import random

    path = WORK / f"prompts-{length}.jsonl"
    if not path.exists():
        rng = random.Random(length)
        part = path.with_suffix(".part")  # renamed into place whole: a file cut short is never taken for the prompts
        part.write_text("".join(json.dumps({"prompt": [rng.randrange(1000, 255000) for _ in range(length)]}) + "\n"
                                for _ in range(count + 1)))
        part.replace(path)
    return path


def bench_context(port: int, length: int, out: Path, timeout: float) -> dict:
    """Decode speed with a ``length``-token prompt: one warm-up request, then the measured ones at concurrency 1."""
    count = CONTEXT_REQUESTS[length]
    return _bench(port, out, timeout, "--prompts", str(context_prompts(length, count)), "--requests", str(count),
                  "--warmup", "1", "--concurrency", "1")


def backend_lines(log: Path) -> list[str]:
    """Distinct log lines naming an attention backend (timestamps and PIDs cut), in order of appearance."""
    seen, lines = set(), []
    for line in log.read_text(errors="replace").splitlines():
        if not BACKEND_LINE.search(line) or NOISE.search(line):
            continue
        text = re.sub(r"^.*?\] ", "", re.sub(r"\x1b\[[0-9;]*m", "", line)).strip()[:400]
        if text and text not in seen:
            seen.add(text)
            lines.append(text)
    return lines[:80]


def flag(argv: list[str], name: str) -> str | None:
    return argv[argv.index(name) + 1] if name in argv else None


def batches(todo: list[str], gpus: int) -> list[list[str]]:
    """Scenarios in order, grouped so that each group's GPUs fit on the machine."""
    out, used = [[]], 0
    for scenario in todo:
        parts = scenario.split(":")
        need = GPUS_NEEDED[parts[5] if len(parts) > 5 else ""]
        if used + need > gpus:
            out.append([])
            used = 0
        out[-1].append(scenario)
        used += need
    return [batch for batch in out if batch]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--deadline-s", type=float, default=540)
    parser.add_argument("--gpus", default=None, help="comma-separated GPU indices (default: all)")
    parser.add_argument("scenarios", nargs="+")
    args = parser.parse_args()
    t0 = time.monotonic()
    args.out.mkdir(parents=True, exist_ok=True)
    (WORK / "logs").mkdir(parents=True, exist_ok=True)
    rows_path = WORK / "rows.jsonl"
    done = {row["scenario"] for row in map(json.loads, rows_path.read_text().splitlines())
            if "error" not in row} if rows_path.exists() else set()  # a failed scenario named again runs again
    gpus = (args.gpus or os.environ.get("GPUS") or ",".join(
        str(i) for i in range(len(subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
                                  .stdout.strip().splitlines())))).split(",")
    todo = [s for s in args.scenarios if s not in done]
    needed = {part for s in todo for part in s.split(":")[:2]}
    models = checkpoints(needed)
    prof = profile()
    print(f"profile {prof}, GPUs {gpus}, to do {todo}", flush=True)

    def record(row: dict) -> None:
        with open(rows_path, "a") as f:
            f.write(json.dumps(row) + "\n")
        print("ROW", json.dumps({k: v for k, v in row.items() if k not in ("backends", "error_tail")}), flush=True)

    try:
        with ProcessGroups(WORK / "process-groups", deadline_s=args.deadline_s) as groups:
            for batch in batches(todo, len(gpus)):
                if groups.left_s() < 200 + BENCH_S + STOP_S:
                    print(f"not starting {batch}: {groups.left_s():.0f} s left", flush=True)
                    break
                live, free = [], list(gpus)
                for scenario in batch:
                    target, draft, kv, alpha, seqs, *extra = scenario.split(":")
                    extra = extra[0] if extra else ""
                    mine, free = free[:GPUS_NEEDED[extra]], free[GPUS_NEEDED[extra]:]
                    port = free_port()
                    options = (*(() if kv == "plan" else ("--kv-cache-dtype", kv)), "--max-num-seqs", seqs,
                               *PLAN_OPTIONS[extra])
                    document = (baseline(models[target], *options, port=port, serve_args=EXTRAS[extra])
                                if alpha == "alone" else
                                plan(models[target], models[draft], "--method", METHODS[draft], *options, port=port,
                                     serve_args=EXTRAS[extra]))
                    safe = scenario.replace(":", "_")
                    (WORK / "logs" / f"{safe}.plan.json").write_text(json.dumps(document, indent=2))
                    row = {"scenario": scenario, "target": FOLDERS[target], "draft": FOLDERS[draft], "kv": kv,
                           "alpha": None if alpha == "alone" else float(alpha), "max_num_seqs": int(seqs),
                           "gpu": ",".join(mine), "profile": prof, "extra": extra}
                    if refusals(document) or not document.get("exec_argv"):
                        row["error"] = f"plan refused: {refusals(document)}"[:1000]
                        record(row)
                        continue
                    spec = document["speculative_config"] or {}
                    row.update(method=spec.get("method"), k=spec.get("num_speculative_tokens"),
                               planned_kv=flag(document["exec_argv"], "--kv-cache-dtype"),
                               planned_backend=flag(document["exec_argv"], "--attention-backend"))
                    argv = document["exec_argv"] if alpha == "alone" else forced(document["exec_argv"], float(alpha))
                    log = WORK / "logs" / f"{safe}.log"
                    env = {"CUDA_VISIBLE_DEVICES": ",".join(mine), "VLLM_LOG_MODEL_INSPECTION": "1",
                           "VLLM_CACHE_ROOT": f"/tmp/vllm-cache-{'-'.join(mine)}"}
                    process = groups.start(argv, log, env)
                    live.append((scenario, safe, row, process, port, log, time.monotonic()))
                up = {}
                for scenario, safe, row, process, port, log, started in live:
                    ok = healthy(port, [process], max(groups.left_s() - BENCH_S - STOP_S, 1))
                    up[scenario] = ok
                    row["start_s"] = round(time.monotonic() - started, 1)
                    if not ok:
                        row["error"] = "not healthy" if process.poll() is None else f"exited {process.returncode}"
                        groups.stop(process)

                def measure(entry) -> None:
                    scenario, safe, row, process, port, log, started = entry
                    levels = (1, row["max_num_seqs"]) if row["max_num_seqs"] > 1 else (1,)
                    try:
                        for concurrency in levels:
                            figures = bench(port, concurrency, WORK / "logs" / f"{safe}.c{concurrency}.bench.json",
                                            max(groups.left_s() - STOP_S, 1))
                            row.update({f"c{concurrency}_{key}": value for key, value in figures.items()})
                        for length in CONTEXTS if row["extra"] == "long" else ():
                            figures = bench_context(port, length, WORK / "logs" / f"{safe}.ctx{length}.bench.json",
                                                    max(groups.left_s() - STOP_S, 1))
                            row.update({f"ctx{length}_{key}": value for key, value in figures.items()})
                    except (subprocess.TimeoutExpired, OSError, ValueError, KeyError, IndexError) as exc:
                        row["error"] = f"bench: {type(exc).__name__}: {exc}"[:800]

                with ThreadPoolExecutor(max_workers=len(live) or 1) as pool:
                    list(pool.map(measure, [entry for entry in live if up[entry[0]]]))
                for scenario, safe, row, process, port, log, started in live:
                    groups.stop(process)
                    row["backends"] = backend_lines(log)
                    if "error" in row:
                        row["error_tail"] = log.read_text(errors="replace").splitlines()[-60:]
                    record(row)
    except DeadlineReached:
        print("deadline reached", flush=True)
    finally:
        (args.out / "rows.jsonl").write_text(rows_path.read_text() if rows_path.exists() else "")
        with tarfile.open(args.out / "realstack.tar.gz", "w:gz") as tar:
            tar.add(WORK / "logs", arcname="logs")
        print(f"driver done in {time.monotonic() - t0:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
