"""A process stuck in a crash handler is seen and killed within seconds, with the reason; healthy ones are not.

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
from contextlib import contextmanager

import pytest

from specdraft.testbed.processes import FatalSignalWatch, fatal_signal_in_handler, run_watched

STUCK = textwrap.dedent("""\
    import signal, sys, time
    print("serving", flush=True)
    time.sleep(float(sys.argv[1]))
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGSEGV})  # what the kernel does while a handler runs
    print("in the handler", flush=True)
    time.sleep(3600)
""")
BUSY_WITHOUT_A_CRASH = "import signal, time; signal.pthread_sigmask(signal.SIG_BLOCK, set(signal.Signals)); time.sleep(8)"


def test_run_watched_kills_a_process_stuck_in_its_segfault_handler_within_seconds():
    started = time.monotonic()
    with pytest.raises(RuntimeError) as failed:
        run_watched([sys.executable, "-c", STUCK, "0.5"], timeout=300)
    assert time.monotonic() - started < 20
    assert "inside its SIGSEGV handler" in str(failed.value) and "in the handler" in str(failed.value)


def test_a_thread_that_blocks_every_signal_is_not_taken_for_a_crash():
    # ZeroMQ's I/O threads block everything; they must not read as crashed
    done = run_watched([sys.executable, "-c", BUSY_WITHOUT_A_CRASH], timeout=60)
    assert done.returncode == 0


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
