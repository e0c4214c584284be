"""Servers started as process groups that never outlive the run that started them.

A vLLM server is its own session (``start_new_session``) so that one ``killpg`` reaches its engine core and
workers; the price is that a run killed from outside (a device command past its time limit) leaves those
groups running, holding GPU memory and ports. ``ProcessGroups`` therefore

- records every group it starts (pgid and the leader's start time) in a file, so the next run stops what an
  earlier one left (``stop_leftovers``), by those ids, never by a name pattern that could match the caller;
- stops every group on SIGTERM, SIGINT and at its deadline (SIGALRM), and when the block ends;
- asks the kernel to SIGTERM a server whose parent died (``PR_SET_PDEATHSIG``, kept across exec), for the
  case no handler sees: the parent SIGKILLed.

A process that faults inside ``malloc`` (a corrupted heap) runs its crash handler with the lock of the heap
held; a handler that allocates (apache-tvm-ffi's backtrace, loaded into every vLLM engine) then waits on that
lock forever, and the server keeps answering ``/health`` while its engine is gone. ``FatalSignalWatch`` sees
that state in ``/proc`` (a thread that blocks the fault's signal: the kernel blocks it while its handler runs)
and kills the group, so a caller fails in seconds with the reason instead of waiting out a client timeout;
``run_watched`` is ``subprocess.run`` with that watch.

``healthy()`` waits for a server's ``/health``; ``free_port()`` picks a port nobody listens on, below the ephemeral range so an outgoing connection does not
take it between the pick and the server's bind.
"""

from __future__ import annotations

import ctypes
import os
import random
import signal
import socket
import subprocess
import threading
import time
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path

STOP_GRACE_S = 20.0
FATAL_SIGNALS = (signal.SIGSEGV, signal.SIGBUS, signal.SIGILL, signal.SIGFPE, signal.SIGABRT)
STUCK_IN_HANDLER_S = 5.0
"""A crash handler that prints a backtrace and exits is done well within this; one still running is stuck."""
_PR_SET_PDEATHSIG = 1
PORT_RANGE = (20000, 32000)
"""Below Linux's default ephemeral range (32768-60999)."""


class DeadlineReached(SystemExit):
    """Raised in the main thread when the run's deadline passes or it is told to stop (SIGTERM, SIGINT)."""


def free_port(host: str = "127.0.0.1", *, tries: int = 200, rng: random.Random | None = None) -> int:
    """A TCP port in ``PORT_RANGE`` that binds on ``host`` and on every address right now."""
    rng = rng or random.Random()
    for _ in range(tries):
        port = rng.randrange(*PORT_RANGE)
        if all(_binds(address, port) for address in {host, "0.0.0.0"}):
            return port
    raise OSError(f"no free port in {PORT_RANGE[0]}-{PORT_RANGE[1]} after {tries} tries")


def healthy(port: int, processes: Sequence[subprocess.Popen], timeout_s: float) -> bool:
    """Whether the server on ``port`` answers ``/health`` within ``timeout_s``; False as soon as one of
    ``processes`` (the server and any process it needs, e.g. the other nodes) has exited."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end and all(p.poll() is None for p in processes):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as reply:
                return reply.status == 200
        except OSError:
            time.sleep(2)
    return False


def _binds(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (field 22 of /proc/PID/stat), None if gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def _members(pgid: int) -> list[int]:
    """Live processes of process group ``pgid``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                found.append(int(entry.name))
    return found


def die_with_parent() -> None:
    """In the child before exec: SIGTERM when the parent dies (the kernel keeps this across exec)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def stop_groups(pgids: Sequence[int], grace_s: float = STOP_GRACE_S) -> None:
    """SIGTERM every group, wait up to ``grace_s`` for all of them, then SIGKILL what is left."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        alive = [pgid for pgid in pgids if _members(pgid)]
        for pgid in alive:
            try:
                os.killpg(pgid, sig)
            except (ProcessLookupError, PermissionError):
                pass
        end = time.monotonic() + (grace_s if sig == signal.SIGTERM else 5)
        while alive and time.monotonic() < end:
            time.sleep(0.2)
            alive = [pgid for pgid in alive if _members(pgid)]
        if not alive:
            return


class ProcessGroups:
    """Start servers as process groups recorded in ``record``; stop them all on leaving the block."""

    def __init__(self, record: Path, *, deadline_s: float | None = None, grace_s: float = STOP_GRACE_S):
        self.record = Path(record)
        self.deadline = None if deadline_s is None else time.monotonic() + deadline_s
        self.grace_s = grace_s
        self.processes: list[subprocess.Popen] = []
        self._previous: dict[int, object] = {}
        self.left_over: list[int] = []
        """The groups an earlier run left, stopped on entering the block."""

    def left_s(self) -> float:
        return float("inf") if self.deadline is None else self.deadline - time.monotonic()

    def __enter__(self) -> "ProcessGroups":
        self.left_over = self.stop_leftovers()
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGALRM):
            self._previous[sig] = signal.signal(sig, self._on_signal)
        if self.deadline is not None:
            signal.setitimer(signal.ITIMER_REAL, max(self.left_s(), 0.01))
        return self

    def __exit__(self, *exc) -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        try:
            self.stop_all()
        finally:
            for sig, handler in self._previous.items():
                signal.signal(sig, handler)

    def _on_signal(self, signum: int, _frame) -> None:
        # stop once: a second signal during the stop must not abandon it halfway
        for sig in self._previous:
            signal.signal(sig, signal.SIG_IGN)
        self.stop_all()
        raise DeadlineReached(128 + signum)

    def start(self, argv: Sequence[str], log: Path, env: Mapping[str, str] | None = None) -> subprocess.Popen:
        """Run ``argv`` as a new process group, output to ``log``, recorded before anything else happens."""
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "w") as out:
            out.write(f"$ {list(argv)}\n")
            out.flush()
            process = subprocess.Popen(list(argv), stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                       env={**os.environ, **(env or {})}, preexec_fn=die_with_parent)
        self.record.parent.mkdir(parents=True, exist_ok=True)
        with open(self.record, "a") as record:
            record.write(f"{process.pid} {_start_time(process.pid)}\n")
        self.processes.append(process)
        return process

    def stop(self, process: subprocess.Popen) -> None:
        stop_groups([process.pid], self.grace_s)
        process.poll()

    def stop_all(self) -> None:
        stop_groups([p.pid for p in self.processes], self.grace_s)
        for process in self.processes:
            process.poll()
        self._forget(p.pid for p in self.processes)

    def stop_leftovers(self) -> list[int]:
        """Stop the groups an earlier run recorded and left alive; returns their ids."""
        try:
            lines = self.record.read_text().split("\n")
        except FileNotFoundError:
            return []
        own = {os.getpgrp(), os.getsid(0)}
        left = []
        for line in filter(None, lines):
            pgid, started = int(line.split()[0]), line.split()[1]
            leader = _start_time(pgid)
            # a live leader with another start time is a new process that got the id: not ours
            if pgid not in own and (leader is None or leader == started) and _members(pgid):
                left.append(pgid)
        stop_groups(left, self.grace_s)
        self.record.write_text("")
        return left

    def _forget(self, pgids) -> None:
        gone = {str(pgid) for pgid in pgids}
        try:
            kept = [line for line in self.record.read_text().splitlines() if line.split()[0] not in gone]
        except FileNotFoundError:
            return
        self.record.write_text("".join(f"{line}\n" for line in kept))


def fatal_signal_in_handler(pid: int) -> signal.Signals | None:
    """The fault signal one of ``pid``'s threads is handling right now, if any.

    The kernel blocks a signal while its handler runs. A thread that blocks a fault signal but not SIGTERM is
    taken to be in that handler; threads that block everything (ZeroMQ's I/O threads do) are not.
    """
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return None
    for task in tasks:
        try:
            line = next(l for l in (task / "status").read_text().splitlines() if l.startswith("SigBlk:"))
        except (OSError, StopIteration):
            continue
        blocked = int(line.split()[1], 16)
        if blocked & (1 << (signal.SIGTERM - 1)):
            continue
        for sig in FATAL_SIGNALS:
            if blocked & (1 << (sig - 1)):
                return sig
    return None


class FatalSignalWatch:
    """Watch process groups from a thread; kill a group any member of which stays in a fault handler.

    ``reason`` says which process was stuck in which handler once the watch has acted, else None. Use as a
    context manager around the time the groups run.
    """

    def __init__(self, pgids: Sequence[int], *, stuck_s: float = STUCK_IN_HANDLER_S, poll_s: float = 1.0):
        self.pgids = list(pgids)
        self.stuck_s, self.poll_s = stuck_s, poll_s
        self.reason: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="fatal-signal-watch", daemon=True)

    def __enter__(self) -> "FatalSignalWatch":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        since: dict[int, float] = {}
        while not self._stop.wait(self.poll_s):
            now = time.monotonic()
            for pgid in self.pgids:
                for pid in _members(pgid):
                    sig = fatal_signal_in_handler(pid)
                    if sig is None:
                        since.pop(pid, None)
                        continue
                    if now - since.setdefault(pid, now) >= self.stuck_s:
                        self.reason = (f"process {pid} ({_name(pid)}) has been inside its {sig.name} handler for "
                                       f"{self.stuck_s:.0f} s: it crashed and its crash handler hangs; the process "
                                       f"group {pgid} was killed")
                        for group in self.pgids:
                            try:
                                os.killpg(group, signal.SIGKILL)
                            except (ProcessLookupError, PermissionError):
                                pass
                        return


def run_watched(argv: Sequence[str], *, timeout: float, env: Mapping[str, str] | None = None,
                cwd: str | os.PathLike | None = None) -> subprocess.CompletedProcess:
    """``subprocess.run(argv, capture_output=True, text=True)`` as its own process group, which dies with the
    caller, is killed at ``timeout`` (``subprocess.TimeoutExpired``) and as soon as a member hangs in a crash
    handler (``RuntimeError`` with the reason and the output's tail)."""
    process = subprocess.Popen(list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=None if env is None else dict(env), cwd=cwd, start_new_session=True,
                               preexec_fn=die_with_parent)
    with FatalSignalWatch([process.pid]) as watch:
        try:
            out, err = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            stop_groups([process.pid], grace_s=5)
            out, err = process.communicate()
            raise subprocess.TimeoutExpired(list(argv), timeout, out, err) from None
        finally:
            stop_groups([process.pid], grace_s=5)
    if watch.reason:
        raise RuntimeError(f"{watch.reason}; its output ended: {(out + err)[-3000:]}")
    return subprocess.CompletedProcess(list(argv), process.returncode, out, err)


def _name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return "?"
