"""Every script in examples/ runs, as a user would run it, and succeeds."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((REPO / "examples").glob("*.py"))


def test_there_are_examples():
    assert EXAMPLES


@pytest.mark.parametrize("script", EXAMPLES, ids=lambda p: p.name)
def test_example_runs(script, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_CACHE": str(tmp_path / "hub")}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip()


def test_seed_example_prints_the_validated_speculative_config(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_CACHE": str(tmp_path / "hub")}
    done = subprocess.run([sys.executable, str(REPO / "examples" / "launch_seed_pairing.py")], capture_output=True,
                          text=True, env=env, cwd=tmp_path, check=True)
    assert ('speculative config: {"model": "mikeytag/gemma-4-E2B-it-NVFP4", "num_speculative_tokens": 4, '
            '"draft_tensor_parallel_size": 1, "quantization": "modelopt"}') in done.stdout
    assert "ready to launch: yes" in done.stdout
