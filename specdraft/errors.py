"""Errors meant for the person at the terminal, and the exit codes every command shares.

A ``UserError`` is printed as one line (what, where, the next command) and never as a traceback.
Anything else escaping a command is an internal error: its traceback goes to a log file.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    """Success, or nothing pending."""
    ATTENTION = 1
    """Something is pending, a check found problems, a verification failed, or a state was refused."""
    BAD_INPUT = 2
    """The input cannot be used: missing path, unknown id, unreadable file, no interpreter."""
    INTERNAL = 3
    """A bug in specdraft; the traceback is in the log file named on stderr."""


class UserError(Exception):
    """A problem with the user's input or environment; exits with ``BAD_INPUT`` unless told otherwise.

    ``hint`` is the next thing to run or change, printed after the message.
    """

    def __init__(self, message: str, *, hint: str | None = None, exit_code: ExitCode = ExitCode.BAD_INPUT):
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.exit_code = exit_code

    def __str__(self) -> str:
        return f"{self.message} (next: {self.hint})" if self.hint else self.message


class RefusedError(UserError):
    """An operation refused to act on an unsafe state (drifted anchor, file changed since apply)."""

    def __init__(self, message: str, *, hint: str | None = None):
        super().__init__(message, hint=hint, exit_code=ExitCode.ATTENTION)
