"""Waits with an end: an interpreter behind --python or a node command that never answers is stopped at its
timeout, with every process it started, and the command says so (exit 2 for an interpreter, a NOT PATCHED node
for cluster status); a timeout that is not a number of seconds is bad input."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.stalls import hanging_executable, kill_leftovers, started_pids, still_running

from .conftest import run_specdraft


@pytest.mark.parametrize("action", ["status", "apply", "verify", "revert"])
def test_an_interpreter_that_never_answers_is_stopped_and_patch_exits_2(tmp_path, monkeypatch, action):
    monkeypatch.setenv("SPECDRAFT_PYTHON_TIMEOUT", "1")
    python, pids = hanging_executable(tmp_path)
    started = time.monotonic()
    done = run_specdraft("patch", action, "--python", python, timeout=60)
    elapsed = time.monotonic() - started
    started_by_it = started_pids(pids)
    try:
        assert done.returncode == 2, done.stderr
        assert done.stderr.startswith(f"specdraft: error: interpreter {python} did not answer within 1 s")
        assert "SPECDRAFT_PYTHON_TIMEOUT=300" in done.stderr and "Traceback" not in done.stderr
        assert elapsed < 20
        assert len(started_by_it) == 2 and still_running(started_by_it) == []
    finally:
        kill_leftovers(started_by_it)


def test_launch_with_an_interpreter_that_never_answers_ends(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECDRAFT_PYTHON_TIMEOUT", "1")
    python, pids = hanging_executable(tmp_path)
    done = run_specdraft("launch", "--dry-run", "--python", python, "--target", "google/gemma-4-31B-it",
                         "--draft", "google/gemma-4-E2B-it", timeout=60)
    started_by_it = started_pids(pids)
    try:
        assert done.returncode in (1, 2) and "Traceback" not in done.stderr
        assert "did not answer within 1 s" in done.stdout + done.stderr
        assert still_running(started_by_it) == []
    finally:
        kill_leftovers(started_by_it)


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "x", "1e9"])
def test_a_python_timeout_that_is_not_seconds_is_bad_input(tmp_path, monkeypatch, value):
    monkeypatch.setenv("SPECDRAFT_PYTHON_TIMEOUT", value)
    python, _ = hanging_executable(tmp_path)
    done = run_specdraft("patch", "status", "--python", python, timeout=60)
    assert done.returncode == 2 and done.stderr.startswith(f"specdraft: error: SPECDRAFT_PYTHON_TIMEOUT={value!r}")
    assert not (tmp_path / "python.pids").exists()  # refused before the interpreter was started


def test_cluster_status_gives_up_on_a_node_at_its_timeout_with_what_it_started(tmp_path):
    node, pids = hanging_executable(tmp_path, "node")
    started = time.monotonic()
    done = run_specdraft("cluster", "status", f"n1={node}", "--timeout", "1", timeout=60)
    started_by_it = started_pids(pids)
    try:
        assert done.returncode == 1, done.stderr
        assert done.stdout.splitlines()[0] == f"n1 NOT PATCHED no answer within 1 s from {node} cluster report --json"
        assert time.monotonic() - started < 20
        assert len(started_by_it) == 2 and still_running(started_by_it) == []
    finally:
        kill_leftovers(started_by_it)


@pytest.mark.parametrize("value", ["0", "-5", "nan", "inf", "100000"])
def test_a_cluster_timeout_that_is_not_seconds_is_bad_input(tmp_path, value):
    node, pids = hanging_executable(tmp_path, "node")
    done = run_specdraft("cluster", "status", f"n1={node}", "--timeout", value, timeout=60)
    assert done.returncode == 2 and done.stderr.startswith(f"specdraft: error: --timeout {float(value):g}")
    assert not pids.exists()


def test_an_apply_waits_for_the_lock_of_another_run_only_so_long(tree_of, monkeypatch, capsys):
    from specdraft.cli import main
    from specdraft.patching import journal

    root = tree_of("0.31.0")
    holder = subprocess.Popen([sys.executable, "-c", "import fcntl, os, sys, time\n"
                               "handle = os.open(sys.argv[1], os.O_RDONLY)\nfcntl.flock(handle, fcntl.LOCK_EX)\n"
                               "print('held', flush=True)\ntime.sleep(60)", str(root / "vllm")],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        before = {p: p.read_bytes() for p in (root / "vllm").rglob("*.py")}
        monkeypatch.setattr(journal, "LOCK_TIMEOUT_S", 0.5)
        started = time.monotonic()
        code = main(["patch", "apply", "--vllm-root", str(root)])
        err = capsys.readouterr().err
        assert code == 2 and err.startswith(f"specdraft: error: another process has held the lock on {root / 'vllm'} "
                                            "for 0.5 s; nothing was changed")
        assert time.monotonic() - started < 10
        assert {p: p.read_bytes() for p in (root / "vllm").rglob("*.py")} == before
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.parametrize("action", ["status", "apply"])
def test_a_vllm_module_that_is_a_fifo_is_refused_not_waited_on(tree_of, capsys, action):
    from specdraft.cli import main
    from specdraft.patching import locate, status

    root = tree_of("0.31.0")
    module = Path(next(r.file for r in status(locate(vllm_root=root)) if r.file))
    module.unlink()
    os.mkfifo(module)

    def hung(*_):
        raise TimeoutError("waited on the FIFO")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(20)
    try:
        code = main(["patch", action, "--vllm-root", str(root)])
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    err = capsys.readouterr().err
    # the engine reads only regular files: the module reads as missing, so its hotfix is drifted (nothing written)
    assert code in (1, 2) and "Traceback" not in err
    assert stat.S_ISFIFO(os.stat(module).st_mode)
