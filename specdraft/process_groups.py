"""Children run as their own process group, so that one kill reaches everything they started.

Killing only the direct child would leave a grandchild (a shell script's ``sleep``, ``ssh`` and whatever runs
behind it locally, a vLLM engine core) running and holding the pipes open, the reads waiting for it. So a child
is its own session (``start_new_session``), the kernel SIGTERMs it when the process that started it dies
(``die_with_parent``: ``PR_SET_PDEATHSIG``, kept across exec, for the case no handler sees, a SIGKILL), and
``stop_groups`` ends a group by its id, never by a name pattern that could match the caller.

``run_bounded`` is the one runner of a command whose end specdraft waits for (the interpreter behind
``--python``, a node's command, the probe; the test bench's engine runs): bounded in time and output, and
whatever ends the wait, no process of the group is left running.

A process that faults inside ``malloc`` (a corrupted heap) runs its crash handler with the lock of the heap
held; a handler that allocates (apache-tvm-ffi's backtrace, loaded into every vLLM engine) then waits on that
lock forever, and a server keeps answering ``/health`` while its engine is gone. ``FatalSignalWatch`` sees
that state in ``/proc`` (a thread that blocks the fault's signal: the kernel blocks it while its handler runs)
and kills the group, so a caller fails in seconds with the reason instead of waiting out its timeout;
``run_bounded(..., watch_crash_handlers=True)`` runs a command under that watch.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from functools import cache
from pathlib import Path

STOP_GRACE_S = 20.0
_KILLED_GONE_S = 5.0
"""How long processes SIGKILLed are waited for (the kernel reaps them within a moment)."""
FATAL_SIGNALS = (signal.SIGSEGV, signal.SIGBUS, signal.SIGILL, signal.SIGFPE, signal.SIGABRT)
STUCK_IN_HANDLER_S = 5.0
"""A crash handler that prints a backtrace and exits is done well within this; one still running is stuck."""
_PR_SET_PDEATHSIG = 1
_DRAIN_S = 1.0
"""How long the output of a child that has exited is still read (a pipe held open by what it left running)."""


def group_members(pgid: int) -> list[int]:
    """Live processes of process group ``pgid`` (zombies excluded)."""
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


def process_name(pid: int) -> str:
    """The process's command name (``/proc/PID/comm``), ``?`` once it is gone."""
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return "?"


@cache
def _prctl():
    # looked up in the parent where it can be: the child between fork and exec should do as little as it can
    return ctypes.CDLL(None, use_errno=True).prctl


def die_with_parent() -> None:
    """In the child before exec: SIGTERM when the parent dies (the kernel keeps this across exec)."""
    _prctl()(_PR_SET_PDEATHSIG, signal.SIGTERM)


def stop_groups(pgids: Sequence[int], grace_s: float = STOP_GRACE_S) -> None:
    """SIGTERM every group and wait up to ``grace_s`` for all of them, then SIGKILL what is left and wait for
    it to go; ``grace_s=0`` kills at once."""
    steps = ([(signal.SIGTERM, grace_s)] if grace_s > 0 else []) + [(signal.SIGKILL, _KILLED_GONE_S)]
    for sig, wait_s in steps:
        alive = [pgid for pgid in pgids if group_members(pgid)]
        for pgid in alive:
            try:
                os.killpg(pgid, sig)
            except (ProcessLookupError, PermissionError):  # the group is gone already
                pass
        end = time.monotonic() + wait_s
        while alive and time.monotonic() < end:
            time.sleep(0.1)
            alive = [pgid for pgid in alive if group_members(pgid)]
        if not alive:
            return


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
                for pid in group_members(pgid):
                    sig = fatal_signal_in_handler(pid)
                    if sig is None:
                        since.pop(pid, None)
                        continue
                    if now - since.setdefault(pid, now) >= self.stuck_s:
                        self.reason = (f"process {pid} ({process_name(pid)}) has been inside its {sig.name} handler "
                                       f"for {self.stuck_s:.0f} s: it crashed and its crash handler hangs; the "
                                       f"process group {pgid} was killed")
                        for group in self.pgids:
                            try:
                                os.killpg(group, signal.SIGKILL)
                            except (ProcessLookupError, PermissionError):
                                pass
                        return


@dataclass(frozen=True)
class Captured:
    """What a bounded child did."""

    returncode: int | None
    """None: ended by the timeout or the size cap."""
    stdout: bytes
    stderr: bytes
    over: bool
    """True when it wrote more than the cap."""
    crashed: str | None = None
    """Why the crash-handler watch killed the group (which process, which signal), else None."""

    @property
    def timed_out(self) -> bool:
        return self.returncode is None and not self.over

    def output_tail(self, chars: int = 3000) -> str:
        """The end of stdout and stderr, one after the other, as text."""
        return (self.stdout.decode(errors="replace") + self.stderr.decode(errors="replace"))[-chars:]


def run_bounded(argv: Sequence[str], *, timeout_s: float, max_bytes: int = 16 * 2**20,
                env: Mapping[str, str] | None = None, cwd: str | os.PathLike | None = None, grace_s: float = 0.0,
                watch_crash_handlers: bool = False) -> Captured:
    """Run ``argv`` as its own process group with no input, keeping at most ``max_bytes`` of each output
    stream, for at most ``timeout_s``; the group gets ``grace_s`` after a SIGTERM before it is SIGKILLed.

    With ``watch_crash_handlers``, a ``FatalSignalWatch`` kills the group as soon as a member hangs in a crash
    handler, and ``Captured.crashed`` says why. Raises ``OSError`` when ``argv[0]`` cannot be started. Whatever
    ends the wait (the child, the timeout, the cap, the watch, an exception in this thread such as
    ``KeyboardInterrupt``, the death of this process), no process of the group is left running."""
    _prctl()  # resolved here, so that the child only calls it
    process = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               start_new_session=True, env=None if env is None else dict(env), cwd=cwd,
                               preexec_fn=die_with_parent)
    buffers = {"stdout": bytearray(), "stderr": bytearray()}
    over = threading.Event()

    def pump(stream, buffer: bytearray) -> None:
        while chunk := stream.read1(1 << 16):
            if len(buffer) + len(chunk) > max_bytes:
                over.set()
                return
            buffer += chunk

    readers = [threading.Thread(target=pump, args=(getattr(process, name), buffer), daemon=True)
               for name, buffer in buffers.items()]
    watch = FatalSignalWatch([process.pid]) if watch_crash_handlers else None
    finished = False
    try:
        with watch or nullcontext():
            for reader in readers:
                reader.start()
            end = time.monotonic() + timeout_s
            finished = _exited_within(process, over, end)
            if finished:
                # What it wrote before exiting is in the pipes; what it left running may hold them open for good.
                drained_by = min(end, time.monotonic() + _DRAIN_S)
                for reader in readers:
                    reader.join(max(0.0, drained_by - time.monotonic()))
    finally:
        stop_groups([process.pid], grace_s)  # after a normal exit too: what it left running goes with it
        process.wait()
        for reader, stream in zip(readers, (process.stdout, process.stderr)):
            reader.join(_DRAIN_S)
            if not reader.is_alive():  # one still reading holds a pipe of a process outside the group
                stream.close()
    return Captured(returncode=process.returncode if finished else None, stdout=bytes(buffers["stdout"]),
                    stderr=bytes(buffers["stderr"]), over=over.is_set(), crashed=watch.reason if watch else None)


def _exited_within(process: subprocess.Popen, over: threading.Event, end: float) -> bool:
    """Wait until ``process`` exits, an output stream passes its cap (``over``) or ``end`` comes; whether it exited
    with both streams within their caps."""
    while process.poll() is None and not over.is_set() and time.monotonic() < end:
        try:
            process.wait(timeout=0.05)
        except subprocess.TimeoutExpired:
            pass
    return process.poll() is not None and not over.is_set()
