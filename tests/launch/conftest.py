import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def specdraft_cli(tmp_path):
    """Run ``python -m specdraft`` from this checkout on a machine with no models and no vLLM on PATH."""
    def run(*args: str, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
        environment = {**os.environ, "HF_HUB_CACHE": str(tmp_path / "empty-hub"), "PATH": "/usr/bin:/bin",
                       "PYTHONPATH": str(REPO), **(env or {})}
        return subprocess.run([sys.executable, "-m", "specdraft", *args], capture_output=True, text=True,
                              env=environment, timeout=timeout, cwd=tmp_path)
    return run


@pytest.fixture
def offline_empty_hub(tmp_path, monkeypatch):
    """No Hugging Face cache, no `vllm` on PATH and no API key from the caller's environment: plans from the
    shipped shape facts alone, as on a machine that has downloaded nothing."""
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.delenv("VLLM_API_KEY", raising=False)
