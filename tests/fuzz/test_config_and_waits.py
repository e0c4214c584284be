"""The contract on generated config.json values and on waits that must end: exit 1 or 2 as the case allows (a
value no model has is refused, exit 2), never a traceback, the case's own time bound, and no process the
command started left running.

Cases come from ``config_wait_cases.generate`` with the seed of ``test_contract`` (``SPECDRAFT_FUZZ_SEED``;
``SPECDRAFT_FUZZ_WAIT_CASES`` widens the search). They run in-process, like the contract's cases, under the
same alarm: a command that waited without an end is stopped there and reported as still running.
"""

from __future__ import annotations

import os
import tempfile
from contextlib import nullcontext
from pathlib import Path

import pytest

from tests.stalls import kill_leftovers, started_pids, still_running, stalled_server

from .config_wait_cases import WaitCase, generate
from .conftest import OUTCOMES
from .test_contract import SECONDS, _breach, _run_in_process

SEED = int(os.environ.get("SPECDRAFT_FUZZ_SEED", "16"))
COUNT = int(os.environ.get("SPECDRAFT_FUZZ_WAIT_CASES", "42"))
CASES = generate(SEED, COUNT)


@pytest.mark.parametrize("case", [pytest.param(case, id=case.id) for case in CASES])
def test_generated_values_and_waits_keep_the_contract(case: WaitCase, tmp_path: Path, monkeypatch):
    for variable, value in {"SPECDRAFT_CACHE": tmp_path / "cache", "HF_HOME": tmp_path / "hf",
                            "HF_HUB_CACHE": tmp_path / "hf" / "hub", "HF_HUB_OFFLINE": "1", "TMPDIR": tmp_path,
                            **case.env}.items():
        monkeypatch.setenv(variable, str(value))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    work = tmp_path / "case"
    work.mkdir()
    argv = case.build(work)
    with stalled_server(**case.server) if case.server is not None else nullcontext("") as url:
        code, out, err, seconds = _run_in_process([arg.replace("{server}", url) for arg in argv])
    started = started_pids(work / case.pids, wait_s=0) if case.pids else []
    try:
        breach = _breach(code, out, err, sorted(tmp_path.glob("specdraft-crash-*.log")), argv)
        if breach is None and code not in case.allowed:
            breach = f"exit {code}, where the contract allows {sorted(case.allowed)}: {err.strip()[:200]!r}"
        if breach is None and case.pids and not started:
            breach = "the hanging executable never ran, so the wait was not tested"
        if breach is None and still_running(started):
            breach = f"left running: {still_running(started)} of the processes it started"
        OUTCOMES.append({"id": case.id, "command": case.command, "kind": case.kind, "code": code,
                         "seconds": seconds, "breach": breach, "known": None,
                         "said": (err.strip().splitlines() or [""])[0][:150]})
        assert breach is None, f"{case.kind}: specdraft {' '.join(argv)}"
        assert seconds < SECONDS
    finally:
        kill_leftovers(started)
