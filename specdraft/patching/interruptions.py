"""Signals during ``apply`` and ``revert``: they stop a run before its first write, or wait for its end.

An apply or revert decides everything first (reads, parses, rewrites, compiles, backups to restore)
and only then writes. A SIGINT or SIGTERM before the first write stops it at once: nothing was
changed. Once writing has begun, stopping midway would leave some hotfixes applied and others not
(the half state in which vLLM fails at start), so the signal is only noted: the run finishes and
the caller says so (``Interrupted``).

``guarded()`` routes both signals to one handler for the block it wraps. Blocks nest and share one
``Guard``, so the CLI can guard a whole command (its rendering too) while the engine marks, with
``Guard.hold()``, where its writes begin. A signal the process ignores (a job started in
the background ignores SIGINT) stays ignored. Outside the main thread Python cannot route signals;
the guard then only keeps the state.
"""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator

from specdraft.errors import ExitCode, UserError

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@dataclass
class Guard:
    """Where a guarded run stands: whether it has begun writing, and the signals that came."""

    holding: bool = False
    received: list[str] = field(default_factory=list)
    """The names of the signals received (``SIGINT``, ``SIGTERM``), in order."""

    def hold(self) -> None:
        """From here on a signal no longer stops the run (its writes begin, or it is already stopping): it is
        only noted, and the run finishes."""
        self.holding = True


class SignalStop(BaseException):
    """Raised where the code is when a signal stops a guarded run before ``Guard.hold()``.

    Not ``KeyboardInterrupt``: CPython remembers a KeyboardInterrupt that crossed code run through
    ``PyRun_*`` (libcst's native parser does) and, at exit, kills its own process with SIGINT, even
    when the interrupt was handled. Not an ``Exception``, so no ``except Exception`` swallows it.
    """


class Interrupted(UserError):
    """A signal stopped ``apply`` or ``revert`` before its first write (``finished`` False: nothing changed),
    or came once it had begun writing (``finished`` True: it finished first). Exits 1: the run did not end as asked."""

    def __init__(self, message: str, *, finished: bool):
        super().__init__(message, exit_code=ExitCode.ATTENTION)
        self.finished = finished


_active: Guard | None = None


def is_guarded() -> bool:
    """Whether a ``guarded()`` block is open (an inner block leaves the reporting to the outer one)."""
    return _active is not None


@contextmanager
def guarded() -> Iterator[Guard]:
    """Route SIGINT and SIGTERM for this block: ``SignalStop`` before ``Guard.hold()``, noted after."""
    global _active
    if _active is not None:
        yield _active
        return
    guard = Guard()

    def handle(signum, _frame) -> None:
        guard.received.append(signal.Signals(signum).name)
        if not guard.holding:
            raise SignalStop

    previous = {}
    if threading.current_thread() is threading.main_thread():
        for number in _SIGNALS:
            if signal.getsignal(number) is not signal.SIG_IGN:
                previous[number] = signal.signal(number, handle)
    _active = guard
    try:
        yield guard
    finally:
        _active = None
        for number, handler in previous.items():
            signal.signal(number, handler if handler is not None else signal.SIG_DFL)


def stopped_before_writing(action: str) -> Interrupted:
    return Interrupted(f"interrupted before {action} wrote anything: nothing was changed", finished=False)


def finished_despite(guard: Guard, action: str, outcome: str) -> Interrupted:
    """What to say when signals came while ``action`` wrote: it finished, with ``outcome``."""
    names = ", ".join(dict.fromkeys(guard.received))
    return Interrupted(f"{names} came once {action} had begun writing; {action} finished first, so nothing is half done: "
                       f"{outcome}", finished=True)
