"""What importing the speed model, a plan and bench's results loads: the speed model sits below planning and beside
the bench client, so a plan never pays for the HTTP stack."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PRINT_LOADED = "print(json.dumps(sorted(m for m in sys.modules if m in WATCHED or m.startswith('specdraft.planning'))))"


def _loaded_after(module: str, watched: tuple[str, ...]) -> list[str]:
    script = f"import json, sys\nWATCHED = {watched!r}\nimport {module}\n{PRINT_LOADED}"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_speed_model_loads_neither_the_bench_client_nor_planning():
    assert _loaded_after("specdraft.speed", ("httpx", "specdraft.bench.client")) == []


@pytest.mark.parametrize("module", ["specdraft.bench", "specdraft.planning"])
def test_reading_results_or_planning_does_not_load_the_bench_client(module):
    loaded = _loaded_after(module, ("httpx", "specdraft.bench.client"))
    assert [m for m in loaded if not m.startswith("specdraft.planning")] == []


def test_the_bench_client_loads_httpx():
    """The watched names are the right ones: the client itself pulls them in."""
    assert _loaded_after("specdraft.bench.client", ("httpx", "specdraft.bench.client")) == ["httpx",
                                                                                             "specdraft.bench.client"]
