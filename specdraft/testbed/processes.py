"""Servers started as process groups that never outlive the run that started them.

A vLLM server is its own session (``start_new_session``) so that one ``killpg`` reaches its engine core and
workers (``specdraft.process_groups`` holds the group mechanics); the price is that a run killed from outside
(a device command past its time limit) leaves those groups running, holding GPU memory and ports.
``ProcessGroups`` therefore

- records every group it starts (pgid and the leader's start time) in a file, so the next run stops what an
  earlier one left (``stop_leftovers``), by those ids, never by a name pattern that could match the caller;
- stops every group on SIGTERM, SIGINT and at its deadline (SIGALRM), and when the block ends;
- asks the kernel to SIGTERM a server whose parent died (``PR_SET_PDEATHSIG``, kept across exec), for the
  case no handler sees: the parent SIGKILLed.

``healthy()`` waits for a server's ``/health``; ``free_port()`` picks a port nobody listens on, below the
ephemeral range so an outgoing connection does not take it between the pick and the server's bind.
"""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path

from specdraft.process_groups import STOP_GRACE_S, die_with_parent, group_members, stop_groups

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
            if pgid not in own and (leader is None or leader == started) and group_members(pgid):
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
