"""The commands patching waits on (the target interpreter, a node's specdraft), each bounded in time and output.

A child runs in its own process group, so a timeout, an overflow or an interrupt of specdraft kills what it
started too (a shell script's ``sleep``, ``ssh`` and whatever runs behind it locally); killing only the direct
child would leave a grandchild holding the pipes open, and the reads waiting for it.

``interpreter_timeout_s()`` is how long an interpreter given as ``--python`` may take to say where its vLLM
is: ``SPECDRAFT_PYTHON_TIMEOUT`` seconds, 60 by default (the question imports nothing, so a healthy
interpreter answers in well under a second; a slow network file system or a container wrapper may need more).
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from specdraft.errors import UserError

PYTHON_TIMEOUT_VARIABLE = "SPECDRAFT_PYTHON_TIMEOUT"
DEFAULT_PYTHON_TIMEOUT_S = 60.0
_DRAIN_S = 1.0
"""How long the output of a child that has exited is still read (a pipe held open by what it left running)."""


def interpreter_timeout_s() -> float:
    """Seconds an interpreter behind ``--python`` may take to answer (``SPECDRAFT_PYTHON_TIMEOUT``)."""
    text = os.environ.get(PYTHON_TIMEOUT_VARIABLE, "").strip()
    if not text:
        return DEFAULT_PYTHON_TIMEOUT_S
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 0 < value <= 86400):
        raise UserError(f"{PYTHON_TIMEOUT_VARIABLE}={text!r} is not a number of seconds from 0 to 86400",
                        hint=f"unset it, or export {PYTHON_TIMEOUT_VARIABLE}=120")
    return value


@dataclass(frozen=True)
class Captured:
    """What a bounded child did."""

    returncode: int | None
    """None: ended by the timeout or the size cap."""
    stdout: bytes
    stderr: bytes
    over: bool
    """True when it wrote more than the cap."""

    @property
    def timed_out(self) -> bool:
        return self.returncode is None and not self.over


def run_bounded(argv: Sequence[str], *, timeout_s: float, max_bytes: int = 16 * 2**20,
                env: Mapping[str, str] | None = None, cwd: str | None = None) -> Captured:
    """Run ``argv`` with no input, keeping at most ``max_bytes`` of each output stream, for at most ``timeout_s``.

    Raises ``OSError`` when ``argv[0]`` cannot be started. Whatever ends the wait (the child, the timeout, the
    cap, an exception in this thread such as ``KeyboardInterrupt``), no process of the group is left running."""
    process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               start_new_session=True, env=None if env is None else dict(env), cwd=cwd)
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
    finished = False
    try:
        for reader in readers:
            reader.start()
        end = time.monotonic() + timeout_s
        while process.poll() is None and not over.is_set() and time.monotonic() < end:
            try:
                process.wait(timeout=0.05)
            except subprocess.TimeoutExpired:
                pass
        finished = process.poll() is not None and not over.is_set()
        if finished:
            # What it wrote before exiting is in the pipes; what it left running may hold them open for good.
            drained_by = min(end, time.monotonic() + _DRAIN_S)
            for reader in readers:
                reader.join(max(0.0, drained_by - time.monotonic()))
    finally:
        _kill_group(process)  # after a normal exit too: what it left running in the background goes with it
        for reader, stream in zip(readers, (process.stdout, process.stderr)):
            reader.join(_DRAIN_S)
            if not reader.is_alive():  # one still reading holds a pipe of a process outside the group
                stream.close()
    return Captured(returncode=process.returncode if finished else None, stdout=bytes(buffers["stdout"]),
                    stderr=bytes(buffers["stderr"]), over=over.is_set())


def _kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):  # the group is gone already
        pass
    process.wait()
