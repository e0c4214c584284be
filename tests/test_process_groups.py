"""A child runs as its own process group: whatever ends the wait, nothing it started is left running; a
process stuck in a crash handler is seen and killed within seconds, with the reason; healthy ones are not.

The stand-in for an engine whose crash handler deadlocks (a fault inside ``malloc``, then a handler that
allocates) is a real process that blocks SIGSEGV and sleeps: to ``/proc`` it looks exactly like a thread
inside its SIGSEGV handler, which is what ``FatalSignalWatch`` reads.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time

import pytest

from specdraft.process_groups import FatalSignalWatch, fatal_signal_in_handler, run_bounded
from tests.stalls import hanging_executable, kill_leftovers, started_pids, still_running

STUCK = textwrap.dedent("""\
    import signal, sys, time
    print("serving", flush=True)
    time.sleep(float(sys.argv[1]))
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGSEGV})  # what the kernel does while a handler runs
    print("in the handler", flush=True)
    time.sleep(3600)
""")
BUSY_WITHOUT_A_CRASH = "import signal, time; signal.pthread_sigmask(signal.SIG_BLOCK, set(signal.Signals)); time.sleep(8)"


def test_what_a_finished_child_left_running_is_stopped_with_it():
    done = run_bounded(["sh", "-c", "sleep 300 & echo $!"], timeout_s=30)
    left = [int(done.stdout.split()[0])]
    try:
        assert done.returncode == 0 and still_running(left) == []
    finally:
        kill_leftovers(left)


def test_a_child_past_its_timeout_is_stopped_with_what_it_started(tmp_path):
    script, pids = hanging_executable(tmp_path)
    started = time.monotonic()
    done = run_bounded([str(script)], timeout_s=1, grace_s=2)
    started_by_it = started_pids(pids)
    try:
        assert done.timed_out and done.returncode is None and time.monotonic() - started < 15
        assert len(started_by_it) == 2 and still_running(started_by_it) == []
    finally:
        kill_leftovers(started_by_it)


def test_an_interrupted_wait_stops_the_child(tmp_path):
    script, pids = hanging_executable(tmp_path)

    def interrupt(*_):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 1.0)
    try:
        with pytest.raises(KeyboardInterrupt):
            run_bounded([str(script)], timeout_s=60)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    started_by_it = started_pids(pids)
    try:
        assert len(started_by_it) == 2 and still_running(started_by_it) == []
    finally:
        kill_leftovers(started_by_it)


def test_a_child_whose_parent_is_killed_is_stopped_by_the_kernel(tmp_path):
    # the parent SIGKILLed: no handler of it runs, PR_SET_PDEATHSIG is what stops the child
    child_pid = tmp_path / "child.pid"
    parent = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""\
        from specdraft.process_groups import run_bounded
        run_bounded(["sh", "-c", "echo $$ > {child_pid}.tmp; mv {child_pid}.tmp {child_pid}; exec sleep 300"],
                    timeout_s=300)
    """)])
    left = started_pids(child_pid, wait_s=60)
    try:
        assert left and still_running(left, grace_s=0) == left
        parent.kill()
        parent.wait()
        assert still_running(left, grace_s=10) == []
    finally:
        parent.kill()
        parent.wait()
        kill_leftovers(left)


def test_the_watch_kills_a_process_stuck_in_its_segfault_handler_within_seconds():
    started = time.monotonic()
    done = run_bounded([sys.executable, "-c", STUCK, "0.5"], timeout_s=300, watch_crash_handlers=True)
    assert time.monotonic() - started < 20
    assert done.returncode == -signal.SIGKILL and "inside its SIGSEGV handler" in done.crashed
    assert "in the handler" in done.output_tail()


def test_without_the_watch_a_process_stuck_in_its_handler_runs_to_the_timeout():
    done = run_bounded([sys.executable, "-c", STUCK, "0"], timeout_s=8)
    assert done.timed_out and done.crashed is None


def test_a_thread_that_blocks_every_signal_is_not_taken_for_a_crash():
    # ZeroMQ's I/O threads block everything; they must not read as crashed
    done = run_bounded([sys.executable, "-c", BUSY_WITHOUT_A_CRASH], timeout_s=60, watch_crash_handlers=True)
    assert done.returncode == 0 and done.crashed is None


def test_the_watch_leaves_a_healthy_group_alone_and_reports_nothing():
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(7)"], start_new_session=True)
    with FatalSignalWatch([process.pid], stuck_s=2, poll_s=0.5) as watch:
        assert process.wait(timeout=30) == 0
    assert watch.reason is None


def test_fatal_signal_in_handler_reads_the_blocked_signal():
    process = subprocess.Popen([sys.executable, "-c", STUCK, "0"], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout.readline() == "serving\n" and process.stdout.readline() == "in the handler\n"
        assert fatal_signal_in_handler(process.pid) is signal.SIGSEGV
    finally:
        process.kill()
        process.wait()
    assert fatal_signal_in_handler(process.pid) is None  # gone
