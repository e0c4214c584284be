"""`serve_tiny_pair`, through the example of docs/proof.md: a real `vllm serve` of the tiny pair, speculating."""

from __future__ import annotations

import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.documented import blocks, read

pytestmark = pytest.mark.e2e


def _documented_example() -> str:
    (example,) = blocks(read("docs/proof.md"), "python")
    return example.body


def test_the_documented_example_serves_the_pair_speculating_and_stops_it(tmp_path):
    namespace: dict = {}
    exec(_documented_example().replace("/tmp/my-vllm", str(tmp_path / "my-vllm")), namespace)
    reply, metrics, served = namespace["reply"], namespace["metrics"], namespace["served"]
    drafted = sum(float(line.rsplit(" ", 1)[1]) for line in metrics.splitlines()
                  if line.startswith("vllm:spec_decode_num_draft_tokens_total{"))
    print(f"\ncompletion {reply.choices[0].text!r}; usage {reply.usage}; draft tokens {drafted}")
    assert reply.usage.completion_tokens == 16
    assert drafted > 0
    assert "--speculative-config" in served.log.read_text().splitlines()[0]
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(served.base_url.removesuffix("/v1") + "/health", timeout=5)
    assert namespace["copy"].parent.parent == tmp_path / "my-vllm"


def _engine_core(served) -> int:
    """The pid of the server's engine core: the member of its process group named VLLM::EngineCore."""
    from specdraft.process_groups import group_members, process_name

    port = served.base_url.rsplit(":", 1)[1].split("/")[0]
    for pid in Path("/proc").iterdir():
        if pid.name.isdigit():
            try:
                argv = (pid / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if port.encode() in argv and b"vllm.entrypoints.openai.api_server" in argv:
                found = [m for m in group_members(int(pid.name)) if process_name(m).startswith("VLLM::EngineCor")]
                assert found, "no engine core in the server's process group"
                return found[0]
    raise AssertionError("no server process found")


def test_an_engine_that_dies_in_use_fails_the_block_within_seconds_with_the_servers_log(tmp_path):
    import os
    import signal
    import time

    import httpx

    from specdraft.errors import UserError
    from specdraft.testbed import serve_tiny_pair

    with pytest.raises(UserError) as stopped:
        with serve_tiny_pair(speculative=False, log_path=tmp_path / "serve.log", progress=lambda line: None) as served:
            os.kill(_engine_core(served), signal.SIGKILL)
            started = time.monotonic()
            httpx.post(f"{served.base_url}/completions", timeout=600,
                       json={"model": served.model, "prompt": "Hello", "max_tokens": 64}).raise_for_status()
    elapsed = time.monotonic() - started
    print(f"\nfailed after {elapsed:.1f} s: {stopped.value}")
    assert elapsed < 60
    assert "vllm serve stopped while in use" in str(stopped.value) and str(tmp_path / "serve.log") in str(stopped.value)
